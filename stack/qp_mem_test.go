package stack

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/qptest"
	"github.com/ustack-dev/ustack/qp"
)

// qpEnd is a queue pair with a 256 KiB region on one stack.
type qpEnd struct {
	pd  *qp.PD
	cq  *qp.CQ
	q   *qp.QP
	mr  *qp.MR
	buf []byte
}

func newQPEnd(t *testing.T) *qpEnd { return newQPEndCfg(t, false) }

// newQPEndCfg is newQPEnd with QPConfig.ReaderGoroutine set to reader.
func newQPEndCfg(t *testing.T, reader bool) *qpEnd {
	t.Helper()
	return newQPEndWith(t, func(c *qp.QPConfig) { c.ReaderGoroutine = reader })
}

// newQPEndWith is newQPEnd with its QPConfig changed by cfg.
func newQPEndWith(t testing.TB, cfg func(*qp.QPConfig)) *qpEnd {
	t.Helper()
	dev := qp.NewDevice()
	e := &qpEnd{pd: dev.AllocPD(), buf: make([]byte, 256<<10)}
	var err error
	if e.cq, err = dev.CreateCQ(256); err != nil {
		t.Fatal(err)
	}
	if e.mr, err = e.pd.RegMR(e.buf, qp.LocalWrite|qp.RemoteWrite|qp.RemoteRead|qp.RemoteAtomic); err != nil {
		t.Fatal(err)
	}
	c := qp.DefaultQPConfig(e.cq, e.cq)
	if cfg != nil {
		cfg(&c)
	}
	if e.q, err = e.pd.CreateQP(c); err != nil {
		t.Fatal(err)
	}
	if err := e.q.Modify(qp.StateInit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.q.Close() })
	return e
}

func (e *qpEnd) wait(t testing.TB, id uint64) qp.WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wc [1]qp.WC
	for e.cq.Poll(wc[:]) == 0 {
		if err := e.cq.Wait(ctx); err != nil {
			t.Fatalf("waiting for completion %d: %v (qp err %v)", id, err, e.q.Err())
		}
	}
	if wc[0].ID != id || wc[0].Status != qp.StatusSuccess {
		t.Fatalf("completion %+v, want id %d success", wc[0], id)
	}
	return wc[0]
}

// connectQPOverPair connects a queue pair on mp.a to one on mp.b over
// ustack's TCP (QPConfig.ReaderGoroutine set to reader on both).
func connectQPOverPair(t *testing.T, mp *memPair, reader bool) (a, b *qpEnd) {
	t.Helper()
	ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 4791).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a, b = newQPEndCfg(t, reader), newQPEndCfg(t, reader)
	qptest.Link(t, a.q, b.q, func(ctx context.Context) (net.Conn, error) {
		return mp.a.DialContext(ctx, "tcp4", ln.Addr().String())
	}, ln, []byte("initiator"), []byte("ustack responder"))
	return a, b
}

// exerciseQP runs every operation from a against b and checks the bytes.
func exerciseQP(t *testing.T, a, b *qpEnd) {
	t.Helper()
	for i := range a.buf {
		a.buf[i] = byte(i * 13)
	}
	// 200 KiB Write, then a Send that proves it landed.
	b.q.PostRecv([]qp.RecvWR{{ID: 10, SGL: []qp.SGE{{Offset: 250 << 10, Len: 1024, Key: b.mr.Key()}}}})
	a.q.PostSend([]qp.SendWR{
		{ID: 1, Op: qp.WRWrite, Flags: qp.Signaled, SGL: []qp.SGE{{Offset: 0, Len: 200 << 10, Key: a.mr.Key()}}, RemoteKey: b.mr.Key()},
		{ID: 2, Op: qp.WRSend, Flags: qp.Signaled | qp.Inline, Inline: []byte("after the write")},
	})
	a.wait(t, 1)
	a.wait(t, 2)
	wc := b.wait(t, 10)
	if string(b.buf[250<<10:250<<10+wc.Len]) != "after the write" || !bytes.Equal(b.buf[:200<<10], a.buf[:200<<10]) {
		t.Fatal("write or send data differs")
	}
	// 100 KiB Read back into a's second half.
	a.q.PostSend([]qp.SendWR{{ID: 3, Op: qp.WRRead, Flags: qp.Signaled,
		SGL: []qp.SGE{{Offset: 128 << 10, Len: 100 << 10, Key: a.mr.Key()}}, RemoteKey: b.mr.Key(), RemoteOffset: 1000}})
	a.wait(t, 3)
	if !bytes.Equal(a.buf[128<<10:228<<10], b.buf[1000:1000+100<<10]) {
		t.Fatal("read data differs")
	}
	// Fetch-add on b's word at 8 KiB, set by a Write first and checked
	// through a's completions (b's memory is b's engine's alone).
	var hundred [8]byte
	binary.NativeEndian.PutUint64(hundred[:], 100)
	a.q.PostSend([]qp.SendWR{
		{Op: qp.WRWrite, Flags: qp.Inline, Inline: hundred[:], RemoteKey: b.mr.Key(), RemoteOffset: 8 << 10},
		{ID: 4, Op: qp.WRFetchAdd, Flags: qp.Signaled, SGL: []qp.SGE{{Offset: 0, Len: 8, Key: a.mr.Key()}}, RemoteKey: b.mr.Key(), RemoteOffset: 8 << 10, CompareAdd: 5},
		{ID: 6, Op: qp.WRFetchAdd, Flags: qp.Signaled | qp.Fence, SGL: []qp.SGE{{Offset: 8, Len: 8, Key: a.mr.Key()}}, RemoteKey: b.mr.Key(), RemoteOffset: 8 << 10},
	})
	a.wait(t, 4)
	a.wait(t, 6)
	if binary.NativeEndian.Uint64(a.buf) != 100 || binary.NativeEndian.Uint64(a.buf[8:]) != 105 {
		t.Fatal("fetch-add")
	}
	// An access violation ends it with a Terminate on both ends.
	a.q.PostSend([]qp.SendWR{{ID: 5, Op: qp.WRRead, Flags: qp.Signaled,
		SGL: []qp.SGE{{Offset: 0, Len: 8, Key: a.mr.Key()}}, RemoteKey: b.mr.Key(), RemoteOffset: 256 << 10}})
	var got [1]qp.WC
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for a.cq.Poll(got[:]) == 0 {
		if err := a.cq.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got[0].ID != 5 || got[0].Status != qp.StatusRemoteAccess || !errors.Is(a.q.Err(), qp.ErrRemoteAccess) {
		t.Fatalf("out-of-bounds read: %+v, err %v", got[0], a.q.Err())
	}
}

// TestMemQueuePairOverUstack runs every operation between queue pairs on
// two ustack stacks, with the engine on the worker (the default over a
// ustack connection) and on reader goroutines, under each polling policy.
func TestMemQueuePairOverUstack(t *testing.T) {
	for _, poll := range []PollPolicy{Spin, Adaptive, Blocking} {
		for _, reader := range []bool{false, true} {
			name := poll.String() + "/worker"
			if reader {
				name = poll.String() + "/goroutine"
			}
			t.Run(name, func(t *testing.T) {
				mp := newMemPair(t, poll)
				a, b := connectQPOverPair(t, mp, reader)
				if a.q.Polled() == reader || b.q.Polled() == reader {
					t.Fatalf("engine on the worker: %v and %v, want %v", a.q.Polled(), b.q.Polled(), !reader)
				}
				exerciseQP(t, a, b)
				st := mp.b.Stats()
				t.Logf("b's worker-read bytes: %d from the frame, %d from the receive queue", st.FastPath.Poll.Direct, st.FastPath.Poll.Queued)
				if !reader && st.FastPath.Poll.Direct == 0 {
					t.Error("the fast path placed no byte from the frame")
				}
			})
		}
	}
}

// TestMemQueuePairOnInputOnWorker: queue pairs on two ustack stacks
// answer each other's Writes from their OnInput handlers, which run on
// the workers and post from there without waiting (TryWrite; what the
// send buffer cannot take goes out from the transmit goroutine). Every
// message of 1 byte to 300 KiB arrives intact, in order.
func TestMemQueuePairOnInputOnWorker(t *testing.T) {
	for _, poll := range []PollPolicy{Spin, Blocking} {
		t.Run(poll.String(), func(t *testing.T) {
			mp := newMemPair(t, poll)
			ca, cb := dialPair(t, mp, 4792)
			pp := qptest.New(200)
			var offWorker atomic.Int32
			onWorker := func(h func()) func() {
				return func() {
					var st [8 << 10]byte
					if !strings.Contains(string(st[:runtime.Stack(st[:], false)]), "link.(*Endpoint).worker(") {
						offWorker.Add(1)
					}
					h()
				}
			}
			a, b := qptest.NewSide(t, onWorker(pp.OnInputA)), qptest.NewSide(t, onWorker(pp.OnInputB))
			pp.Play(t, a, b, ca, cb)
			if n := offWorker.Load(); n != 0 {
				t.Fatalf("%d handler calls off the worker", n)
			}
		})
	}
}

// BenchmarkMemQueuePairHandlerPingPong: 64-byte RDMA Writes bounced
// between queue pairs on two stacks by their OnInput handlers, on the
// workers: the queue pairs' hot path end to end (read on the worker,
// placement, the handler's post, TryWrite), with no application
// goroutine involved. It reports the allocations of every goroutine.
func BenchmarkMemQueuePairHandlerPingPong(b *testing.B) {
	mp := newMemPair(b, Spin)
	ca, cb := dialPair(b, mp, 4793)
	// Each side answers a Write that lands (a new tag in its inbox's last
	// byte, at 127) with one of its own (tag+1, at the peer's 127).
	type side struct {
		qptest.Side
		wr  [1]qp.SendWR
		tag byte
	}
	var a, c side
	var rounds atomic.Int64
	done := make(chan struct{}, 1)
	target := int64(b.N)
	bounce := func(s *side, count bool) func() {
		return func() {
			if s.Buf[127] == s.tag { // nothing new
				return
			}
			s.tag = s.Buf[127]
			if count && rounds.Add(1) >= target {
				select {
				case done <- struct{}{}:
				default:
				}
				return
			}
			s.Buf[63] = s.tag + 1
			s.QP.PostSend(s.wr[:])
		}
	}
	a.Side, c.Side = qptest.NewSide(b, bounce(&a, true)), qptest.NewSide(b, bounce(&c, false))
	a.wr[0] = qp.SendWR{Op: qp.WRWrite, SGL: []qp.SGE{{Len: 64, Key: a.MR.Key()}}, RemoteKey: c.MR.Key(), RemoteOffset: 64}
	c.wr[0] = qp.SendWR{Op: qp.WRWrite, SGL: []qp.SGE{{Len: 64, Key: c.MR.Key()}}, RemoteKey: a.MR.Key(), RemoteOffset: 64}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := qptest.Connect(ctx, a.QP, c.QP, ca, cb); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	f0, o0 := pairTxPackets(mp), pairOwnedSegs(mp)
	b.ResetTimer()
	a.Buf[63] = 1
	a.QP.PostSend(a.wr[:])
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d rounds (%v, %v)", rounds.Load(), b.N, a.QP.Err(), c.QP.Err())
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/rtt")
	b.ReportMetric(float64(pairTxPackets(mp)-f0)/float64(b.N), "packets/rtt")
	b.ReportMetric(float64(pairOwnedSegs(mp)-o0)/float64(b.N), "owned-segs/rtt")
}

// BenchmarkMemQueuePairWriteBW is write_bw over the in-memory wire: lists
// of four 64 KiB Writes, two lists in flight, with the transmit buffer
// lent to the connection (the default over ustack) or copied into its
// send buffer (QPConfig.CopyTransmit). ns/op is both stacks' CPU per
// 256 KiB.
func BenchmarkMemQueuePairWriteBW(b *testing.B) {
	for _, lend := range []bool{true, false} {
		name := "lend"
		if !lend {
			name = "copy"
		}
		b.Run(name, func(b *testing.B) {
			mp := newMemPair(b, Spin)
			ln, err := mp.b.Listen("tcp4", netip.AddrPortFrom(memB4.Addr(), 4795).String())
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			a := newQPEndWith(b, func(c *qp.QPConfig) { c.CopyTransmit = !lend })
			c := newQPEndWith(b, nil)
			qptest.Link(b, a.q, c.q, func(ctx context.Context) (net.Conn, error) {
				return mp.a.DialContext(ctx, "tcp4", ln.Addr().String())
			}, ln, []byte("initiator"), []byte("ustack responder"))
			const msg, list = 64 << 10, 4
			wrs := make([]qp.SendWR, list)
			for k := range wrs {
				wrs[k] = qp.SendWR{ID: uint64(k), Op: qp.WRWrite, SGL: []qp.SGE{{Len: msg, Key: a.mr.Key()}}, RemoteKey: c.mr.Key()}
			}
			wrs[list-1].Flags = qp.Signaled
			b.SetBytes(msg * list)
			b.ReportAllocs()
			b.ResetTimer()
			out := 0
			for i := 0; i < b.N; i++ {
				if _, err := a.q.PostSend(wrs); err != nil {
					b.Fatal(err)
				}
				for out++; out >= 2; out-- {
					a.wait(b, list-1)
				}
			}
			for ; out > 0; out-- {
				a.wait(b, list-1)
			}
			// A Send lands after every Write before it.
			c.q.PostRecv([]qp.RecvWR{{ID: 7}})
			a.q.PostSend([]qp.SendWR{{ID: 8, Op: qp.WRSend, Flags: qp.Signaled}})
			a.wait(b, 8)
			c.wait(b, 7)
			b.StopTimer()
		})
	}
}

// TestMemQueuePairStackClose: closing a stack under a queue pair its
// worker reads fails that queue pair's peer (its connection is reset)
// and neither queue pair's Close hangs.
func TestMemQueuePairStackClose(t *testing.T) {
	mp := newMemPair(t, Spin)
	ca, cb := dialPair(t, mp, 4794)
	a, b := qptest.NewSide(t, nil), qptest.NewSide(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := qptest.Connect(ctx, a.QP, b.QP, ca, cb); err != nil {
		t.Fatal(err)
	}
	mp.b.Close()
	// The stack resets its connections as it closes: the peer fails.
	for deadline := time.Now().Add(10 * time.Second); a.QP.Err() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the peer's queue pair did not fail after the stack closed")
		}
	}
	var ce *qp.ConnError
	if !errors.As(a.QP.Err(), &ce) {
		t.Fatalf("peer's error %v, want a connection error", a.QP.Err())
	}
	done := make(chan struct{})
	go func() { b.QP.Close(); a.QP.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("queue pair Close hangs after its stack closed")
	}
}

// TestMemQueuePairYieldsForWaiters: a queue pair's engine on the worker
// makes the worker yield its P after input only when the input notified
// a channel an application goroutine waits on (here the CQ's): a waiting
// application is run at once, and input nobody waits for (handlers, or
// an application that polls without blocking) costs no yield.
func TestMemQueuePairYieldsForWaiters(t *testing.T) {
	const sends = 60
	for _, blocking := range []bool{false, true} {
		t.Run(map[bool]string{false: "poll-only", true: "cq-waiter"}[blocking], func(t *testing.T) {
			mp := newMemPair(t, Spin)
			ln, err := mp.b.Listen("tcp4", ":4795")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			a, b := newQPEnd(t), newQPEnd(t)
			qptest.Link(t, a.q, b.q, func(ctx context.Context) (net.Conn, error) {
				return mp.a.DialContext(ctx, "tcp4", netip.AddrPortFrom(memB4.Addr(), 4795).String())
			}, ln, []byte("initiator"), []byte("ustack responder"))
			if !b.q.Polled() {
				t.Fatal("queue pair over ustack not polled on the worker")
			}
			yields := func() (n uint64) {
				for i := range mp.b.ep.NumQueues() {
					n += mp.b.ep.Counters(i).RxYields
				}
				return n
			}
			sge := []qp.SGE{{Len: 64, Key: b.mr.Key()}}
			before := yields()
			for i := 1; i <= sends; i++ {
				if _, err := b.q.PostRecv([]qp.RecvWR{{ID: uint64(i), SGL: sge}}); err != nil {
					t.Fatal(err)
				}
				if _, err := a.q.PostSend([]qp.SendWR{{ID: uint64(i), Op: qp.WRSend, Flags: qp.Inline, Inline: []byte{byte(i)}}}); err != nil {
					t.Fatal(err)
				}
				if blocking {
					b.wait(t, uint64(i)) // blocks on the CQ's Notify
					continue
				}
				var wc [1]qp.WC
				for deadline := time.Now().Add(10 * time.Second); b.cq.Poll(wc[:]) == 0; time.Sleep(50 * time.Microsecond) {
					if time.Now().After(deadline) {
						t.Fatalf("Send %d not received (%v)", i, b.q.Err())
					}
				}
			}
			got := yields() - before
			if blocking && got < sends/2 {
				t.Errorf("%d yields for %d Sends a goroutine waited for", got, sends)
			}
			if !blocking && got > 5 {
				t.Errorf("%d yields for %d Sends nobody waited for", got, sends)
			}
		})
	}
}

// TestMemQueuePairPlacesFromTheFrame: 64 KiB RDMA Writes, 4 MiB in all,
// from a queue pair on one stack to one on another, with the engines on
// the workers. With the fast path, the receiving engine is handed the
// bytes straight from the receive frames (netstack's SetFastConsumer):
// most of them (all in a quiet run), each copied once, into the region;
// without it
// (Config.Debug.NoFastPath) every byte comes through netstack's receive queue,
// a second copy. With faults on the wire (loss, reordering, duplicates,
// corruption) the segments out of order take the queue, and placement
// resumes once it is empty. The region ends up with the bytes each way.
func TestMemQueuePairPlacesFromTheFrame(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    func(*Config)
		direct bool
	}{
		{"fast-path", nil, true},
		{"no-fast-path", func(c *Config) { c.Debug.NoFastPath = true }, false},
		{"faults", func(c *Config) {
			c.Faults = &Faults{Seed: 7, RX: FaultRates{Drop: 0.01, Reorder: 0.01, Duplicate: 0.01, Corrupt: 0.01}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp := newMemPairCfg(t, Adaptive, tc.cfg, tc.cfg)
			a, b := connectQPOverPair(t, mp, false)
			const chunk, total = 64 << 10, 4 << 20
			before := mp.b.Stats()
			for i := 0; i < total/chunk; i++ {
				for j := range a.buf[:chunk] {
					a.buf[j] = byte(i*7 + j*13)
				}
				// The Write, then a Send whose arrival proves it landed.
				b.q.PostRecv([]qp.RecvWR{{ID: uint64(i), SGL: []qp.SGE{{Offset: 250 << 10, Len: 1024, Key: b.mr.Key()}}}})
				a.q.PostSend([]qp.SendWR{
					{Op: qp.WRWrite, SGL: []qp.SGE{{Offset: 0, Len: chunk, Key: a.mr.Key()}}, RemoteKey: b.mr.Key(), RemoteOffset: uint64(i%3) * chunk},
					{ID: uint64(i), Op: qp.WRSend, Flags: qp.Signaled | qp.Inline, Inline: []byte("landed")},
				})
				a.wait(t, uint64(i))
				b.wait(t, uint64(i))
				if !bytes.Equal(b.buf[(i%3)*chunk:(i%3+1)*chunk], a.buf[:chunk]) {
					t.Fatalf("write %d: the region's bytes differ from the sent", i)
				}
			}
			st := mp.b.Stats()
			direct, queued := st.FastPath.Poll.Direct-before.FastPath.Poll.Direct, st.FastPath.Poll.Queued-before.FastPath.Poll.Queued
			t.Logf("%d bytes from the frame, %d from the receive queue", direct, queued)
			if direct+queued < total {
				t.Fatalf("the engine was given %d bytes, fewer than the %d written", direct+queued, total)
			}
			switch {
			case !tc.direct && direct != 0:
				t.Errorf("%d bytes placed from the frame with the fast path off", direct)
			case tc.direct && tc.cfg == nil && queued > direct:
				// Which way a segment goes depends on whether the
				// connection's lock was free when it came (the queue
				// pair's own goroutines take it too): 100% from the
				// frame in plain runs, 97% under the race detector.
				t.Errorf("%d bytes came through the receive queue beside %d from the frame: want most from the frame", queued, direct)
			case tc.direct && direct == 0:
				t.Error("no byte placed from the frame")
			}
			// Every byte read from the queue was counted as it was
			// left there, with its reason.
			left := [...]uint64{st.FastPath.Poll.LeftSlow - before.FastPath.Poll.LeftSlow, st.FastPath.Poll.LeftBehind - before.FastPath.Poll.LeftBehind,
				st.FastPath.Poll.LeftRefused - before.FastPath.Poll.LeftRefused, st.FastPath.Poll.LeftLarge - before.FastPath.Poll.LeftLarge,
				st.FastPath.Poll.LeftBefore - before.FastPath.Poll.LeftBefore}
			t.Logf("left in the queue: slow %d, behind %d, refused %d, large %d, before %d", left[0], left[1], left[2], left[3], left[4])
			sum := left[0] + left[1] + left[2] + left[3] + left[4]
			switch {
			case !tc.direct && sum != 0:
				t.Errorf("%d bytes counted left with the fast path off, where there is no consumer", sum)
			case tc.direct && sum != queued:
				t.Errorf("%d bytes counted left by reason, %d read from the queue", sum, queued)
			case tc.cfg != nil && tc.direct && left[0] == 0:
				t.Error("no byte left to the slow path with loss and reordering on the wire")
			}
		})
	}
}
