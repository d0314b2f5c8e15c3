package stack

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/link"
)

// fastCounts is the fast path's receive counters: hits, then the misses
// by reason, indexed by tcp.FastMiss.
func fastCounts(st Stats) [tcp.NumFastMiss]uint64 {
	return [tcp.NumFastMiss]uint64{
		tcp.FastHit: st.FastPath.Received, tcp.FastMissBusy: st.FastPath.MissBusy, tcp.FastMissState: st.FastPath.MissState,
		tcp.FastMissHeader: st.FastPath.MissHeader, tcp.FastMissSequence: st.FastPath.MissSequence,
		tcp.FastMissAck: st.FastPath.MissAck, tcp.FastMissRecovery: st.FastPath.MissRecovery,
	}
}

var fastMissNames = [tcp.NumFastMiss]string{"hit", "busy", "state", "header", "sequence", "ack", "recovery"}

// fastVerdicts waits until the worker has counted n more fast-path
// verdicts than from holds, and returns the counters then. The worker
// counts a segment's verdict when ReceiveFast returns, which for a
// segment a consumer took (a handler's request) is after Taken: after
// the reply Taken wrote, and FlushIfSolo kicked, may have reached the
// peer. Counters read as the reply arrives can lack the request.
func (p *scriptPeer) fastVerdicts(from [tcp.NumFastMiss]uint64, n uint64) [tcp.NumFastMiss]uint64 {
	p.t.Helper()
	sum := func(c [tcp.NumFastMiss]uint64) (s uint64) {
		for _, v := range c {
			s += v
		}
		return s
	}
	for deadline := time.Now().Add(scriptWait); ; {
		now := fastCounts(p.s.Stats())
		if sum(now)-sum(from) >= n {
			return now
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d fast-path verdicts counted in %v, want %d: counters %v → %v", sum(now)-sum(from), scriptWait, n, from, now)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// expectAck waits for ustack's next segment and wants it to acknowledge
// ack, whatever else it carries (a D-SACK, say).
func (p *scriptPeer) expectAck(ack uint32) {
	p.t.Helper()
	s, ok := p.next(scriptWait)
	if !ok {
		p.t.Fatalf("no ACK of %d came", ack)
	}
	if s.Flags != "A" || s.Ack != ack {
		p.t.Fatalf("got %v, want an ACK of %d", s, ack)
	}
}

// TestScriptFastReceive: header prediction takes an in-order data segment
// of a quiet established connection, and leaves every other segment to
// netstack, counted by why, where netstack handles it as before: one
// script per condition of the prediction. Each opens a connection and
// sends "hello" (which the fast path takes), then the case's segments;
// it checks the peer's view (ACKs, SACK blocks, what is dropped), the
// bytes the application reads, and the counters.
func TestScriptFastReceive(t *testing.T) {
	// inOrder sends the next bytes in sequence: the fast path's case.
	inOrder := func(p *scriptPeer, c net.Conn) string {
		p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte(" world")})
		p.expectAck(12)
		return "hello world"
	}
	for _, tc := range []struct {
		name   string
		ts, v6 bool
		want   tcp.FastMiss
		// run plays the case after "hello" (peer's bytes 1–5, ustack
		// has sent nothing) and returns what the application must
		// read after it, "hello" included.
		run func(p *scriptPeer, c net.Conn) string
	}{
		{"in-order", false, false, tcp.FastHit, inOrder},
		{"in-order/timestamps", true, false, tcp.FastHit, inOrder},
		{"in-order/ipv6", true, true, tcp.FastHit, inOrder},
		{"acknowledges-reply", true, false, tcp.FastHit, func(p *scriptPeer, c net.Conn) string {
			if _, err := c.Write([]byte("resp")); err != nil {
				t.Fatal(err)
			}
			p.Expect(seg{Flags: "PA", Seq: 1, Ack: 6, Payload: []byte("resp")})
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 5, Payload: []byte("next")})
			p.expectAck(10)
			return "hellonext"
		}},
		{"fin", false, false, tcp.FastMissHeader, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "FPA", Seq: 6, Ack: 1, Payload: []byte("bye")})
			p.expectAck(10)
			return "hellobye"
		}},
		{"urgent", false, false, tcp.FastMissHeader, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "UPA", Seq: 6, Ack: 1, Payload: []byte("u")})
			p.expectAck(7)
			return "hellou"
		}},
		{"sack-option", false, false, tcp.FastMissHeader, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("abc"), SACK: [][2]uint32{{1, 1}}})
			p.expectAck(9)
			return "helloabc"
		}},
		{"pure-ack", false, false, tcp.FastMissHeader, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "A", Seq: 6, Ack: 1})
			p.ExpectNothing(50 * time.Millisecond)
			return "hello"
		}},
		{"out-of-order", false, false, tcp.FastMissSequence, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "PA", Seq: 11, Ack: 1, Payload: []byte("world")})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 6, SACK: [][2]uint32{{11, 16}}})
			// The hole's data is next in sequence, but out-of-order
			// data is held: netstack's.
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("abcde")})
			p.expectAck(16)
			return "helloabcdeworld"
		}},
		{"duplicate", false, false, tcp.FastMissSequence, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
			p.expectAck(6)
			return "hello"
		}},
		{"ack-of-unsent", false, false, tcp.FastMissAck, func(p *scriptPeer, c net.Conn) string {
			// RFC 9293 §3.10.7.4: an ACK of data not yet sent is
			// answered with an ACK and the segment dropped.
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 100, Payload: []byte("zzz")})
			p.expectAck(6)
			return "hello"
		}},
		{"paws", true, false, tcp.FastMissAck, func(p *scriptPeer, c net.Conn) string {
			// RFC 7323 §5.3: a TSval older than TS.Recent is dropped
			// with an ACK.
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("old"), TSval: 1})
			p.expectAck(6)
			return "hello"
		}},
		{"zero-window", false, false, tcp.FastMissRecovery, func(p *scriptPeer, c net.Conn) string {
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("abc"), Win: zeroWin})
			p.expectAck(9)
			return "helloabc"
		}},
		{"shrunk-window", false, false, tcp.FastMissRecovery, func(p *scriptPeer, c net.Conn) string {
			// RFC 9293 §3.8.6.2.1: a window whose right edge moved
			// left is honoured; the fast path, which acts on a
			// segment's ACK after the reply, leaves it to netstack.
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("abc"), Win: 100})
			p.expectAck(9)
			if _, err := c.Write(make([]byte, 300)); err != nil {
				t.Fatal(err)
			}
			p.Expect(seg{Flags: "PA", Seq: 1, Ack: 9, Payload: make([]byte, 100)})
			return "helloabc"
		}},
		{"fin-wait-1", false, false, tcp.FastMissState, func(p *scriptPeer, c net.Conn) string {
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			p.Expect(seg{Flags: "FA", Seq: 1, Ack: 6})
			p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("abc")})
			p.Expect(seg{Flags: "A", Seq: 2, Ack: 9})
			return "helloabc"
		}},
		{"queued-ahead", false, false, tcp.FastMissBusy, func(p *scriptPeer, c net.Conn) string {
			// The first (URG) goes to netstack's queue; the second,
			// though predicted, must not overtake it.
			p.SendBatch(seg{Flags: "UPA", Seq: 6, Ack: 1, Payload: []byte("u")}, seg{Flags: "PA", Seq: 7, Ack: 1, Payload: []byte("v")})
			p.expectAck(8)
			return "hellouv"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{Timestamps: tc.ts, IPv6: tc.v6, Config: func(c *Config) { c.DelayedAck = -1 }})
			c := p.Connect()
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
			p.expectAck(6)
			// The first segment armed the fast path's ACK backstop (1
			// ms), which its ACK disables without stopping: when it
			// fires it takes the connection's lock for nothing, and a
			// segment arriving then is left to netstack as busy. Let it
			// pass (on a loaded machine, late).
			time.Sleep(20 * time.Millisecond)
			before := fastCounts(p.s.Stats())
			if before[tcp.FastHit] != 1 {
				t.Fatalf("the first data segment: fast path counters %v, want one hit", before)
			}
			want := tc.run(p, c)
			after := fastCounts(p.s.Stats())
			if got := readUpTo(t, c, len(want)); string(got) != want {
				t.Errorf("the application read %q, want %q", got, want)
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			var extra [64]byte
			if n, _ := c.Read(extra[:]); n > 0 {
				t.Errorf("the application read %q more", extra[:n])
			}
			if after[tc.want] == before[tc.want] {
				t.Errorf("no %s counted: counters %v → %v", fastMissNames[tc.want], before, after)
			}
			if tc.want != tcp.FastHit && after[tcp.FastHit] != before[tcp.FastHit] {
				t.Errorf("the fast path took a segment it should have left: hits %d → %d", before[tcp.FastHit], after[tcp.FastHit])
			}
		})
	}
}

// TestEndpointSizeClass: netstack's TCP endpoint, plus the 8-byte header
// the Go allocator puts before an object of its size with pointers,
// stays in the 1,536-byte size class (its small fields packed into the
// holes alignment leaves; a field added where alignment leaves no hole
// moves it to the 1,792-byte class, 256 bytes on every connection).
func TestEndpointSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(tcp.Endpoint{}); n+8 > 1536 {
		t.Fatalf("tcp.Endpoint is %d bytes: with the allocator's header past the 1,536-byte size class", n)
	}
}

// TestScriptFlowCacheReusedTuple: a connection reset and opened again on
// the same four-tuple gets its segments, not the old connection's cache
// entry in early demux (which counts only while its endpoint is
// established).
func TestScriptFlowCacheReusedTuple(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Config: func(c *Config) { c.DelayedAck = -1 }})
	ln := p.listen()
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	for round, msg := range []string{"first", "second"} {
		accepted := p.start(ln.Accept)
		p.synced = false
		p.Send(seg{Flags: "S", Seq: 0})
		p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
		p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
		c := accepted("no connection accepted")
		p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte(msg)})
		p.expectAck(1 + uint32(len(msg)))
		if got := readUpTo(t, c, len(msg)); string(got) != msg {
			t.Fatalf("round %d: read %q, want %q", round, got, msg)
		}
		// Reset it: ustack's endpoint closes at once, its cache
		// entry stays behind.
		p.Send(seg{Flags: "R", Seq: 1 + uint32(len(msg))})
		deadline := time.Now().Add(scriptWait)
		for p.s.Stats().TCP.CurrentEstablished != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the reset connection stayed established")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if hits := p.s.Stats().FastPath.Received; hits != 2 {
		t.Errorf("%d segments on the fast path, want the two connections' data", hits)
	}
}

// TestScriptFastReceiveOwedAckAfterUserLock: when the application holds
// the connection's lock as the worker ends its batch (so RunDeferred
// cannot decide the ACK the fast path left owed), the application's
// unlock sends it at once if it must go at once: here more than one
// full segment is unacknowledged, with a 400 ms delayed-ACK timeout that
// would otherwise hold it.
func TestScriptFastReceiveOwedAckAfterUserLock(t *testing.T) {
	// No GRO: the batch's segments reach TCP one by one, as from a
	// peer that does not send them back to back.
	p := newScriptPeer(t, scriptOptions{Config: func(c *Config) { c.DelayedAck = 400 * time.Millisecond; c.Debug.NoGRO = true }})
	c := p.Connect()
	ep := c.(*tcpConn).ep
	locked := make(chan struct{})
	var once sync.Once
	var unlock sync.Once
	hook := func() {
		// On the worker, after a full batch was delivered and before
		// RunDeferred: take the lock as an application does.
		once.Do(func() {
			ep.LockUser()
			t.Cleanup(func() { unlock.Do(ep.UnlockUser) })
			close(locked)
		})
	}
	p.s.ep.SetBetweenRxBatches(hook)
	defer p.s.ep.SetBetweenRxBatches(nil)
	// A full batch, inside ustack's initial window.
	const n, size = link.BatchSize, 400
	segs := make([]seg, n)
	for i := range segs {
		segs[i] = seg{Flags: "A", Seq: 1 + uint32(i*size), Ack: 1, Payload: make([]byte, size)}
	}
	p.SendBatch(segs...)
	select {
	case <-locked:
	case <-time.After(scriptWait):
		t.Fatal("the worker took no full batch")
	}
	if hits := p.s.Stats().FastPath.Received; hits != n {
		t.Fatalf("%d of %d segments took the fast path", hits, n)
	}
	// Let the worker run RunDeferred against the held lock.
	time.Sleep(20 * time.Millisecond)
	unlock.Do(ep.UnlockUser)
	s, ok := p.next(100 * time.Millisecond)
	if !ok {
		t.Fatal("no ACK within 100 ms of the unlock: it waited for the delayed-ACK timer")
	}
	if s.Flags != "A" || s.Ack != 1+n*size {
		t.Fatalf("got %v, want the ACK of all %d bytes", s, n*size)
	}
}

// echoRequestSize is the length of the requests echoRequests sends.
const echoRequestSize = 10

// echoRequests has the peer send rounds requests ("request NN", one
// segment each) to an echo on ustack's end and expect each echoed, then
// nothing more. With ackEchoes every request acknowledges the echoes
// before it; without, none (a client streaming its writes ahead).
func (p *scriptPeer) echoRequests(rounds int, ackEchoes bool) {
	p.t.Helper()
	seq, ack := uint32(1), uint32(1)
	for i := range rounds {
		req := []byte(fmt.Sprintf("request %02d", i))
		p.Send(seg{Flags: "PA", Seq: seq, Ack: ack, Payload: req})
		echo := 1 + uint32(i*echoRequestSize)
		seq += echoRequestSize
		p.Expect(seg{Flags: "PA", Seq: echo, Ack: seq, Payload: req})
		if ackEchoes {
			ack = echo + echoRequestSize
		}
	}
	p.ExpectNothing(20 * time.Millisecond)
}

// TestScriptReaderReplyBeforeAck: a request the fast path's receive
// queues for a goroutine's Read reaches the application before netstack
// processes the ACK it carries (the fast path's runLateAckLocked,
// run from the worker's deferred work after its yield), so the reply is
// not held up by that bookkeeping: with one P, the server reading a
// request sees the previous reply still unacknowledged, though the
// request acknowledges it. (Most requests show it; the scheduler may
// run the peer's goroutine first now and then.) Without it no request
// does. The ACKs are acted on all the same: nothing is outstanding but
// the last reply, and each reply carries its ACK.
func TestScriptReaderReplyBeforeAck(t *testing.T) {
	if raceEnabled {
		// The order it checks is the scheduler's with one P, and the
		// detector's slowness reorders it about once in a hundred runs
		// (2-4 failures in 300 at this commit and before it). The
		// plain test step checks it.
		t.Skip("the order of a reader goroutine and the worker under the race detector")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// A delayed ACK far longer than a loaded machine's scheduling
	// delay: the reply, not the timer, carries each ACK, which the
	// script expects.
	p := newScriptPeer(t, scriptOptions{Config: func(c *Config) { c.DelayedAck = 200 * time.Millisecond }})
	c := p.Connect()
	const rounds, size = 8, echoRequestSize
	una := make(chan uint32, rounds)
	go func() {
		defer close(una)
		buf := make([]byte, size)
		for range rounds {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			una <- uint32(c.(*tcpConn).ep.FastState().SndUna - p.irs)
			c.Write(buf)
		}
	}()
	p.echoRequests(rounds, true)
	// Request i (from 1) acknowledges reply i-1: SND.UNA 1+size*i once
	// its ACK is processed, 1+size*(i-1) before.
	var seen []uint32
	ahead := 0
	for u := range una {
		if i := uint32(len(seen)); i > 0 && u == 1+size*(i-1) {
			ahead++
		}
		seen = append(seen, u)
	}
	t.Logf("SND.UNA (from ustack's ISN) as the server read each request: %v; %d of %d requests read before their ACK's processing", seen, ahead, rounds-1)
	if len(seen) != rounds || ahead == 0 {
		t.Errorf("no request reached the reader before the ACK it carried was processed")
	}
	fs := c.(*tcpConn).ep.FastState()
	if out := fs.SndNxt - fs.SndUna; out != size {
		t.Errorf("%d bytes outstanding after the last request, want the last reply's %d: an ACK went unprocessed", out, size)
	}
	if fs.RcvNxt != fs.MaxSentAck {
		t.Errorf("RCV.NXT %d, last ACK sent %d: a reply did not carry its ACK", fs.RcvNxt, fs.MaxSentAck)
	}
}

// TestScriptReaderLateAckIsNoDuplicate: the ACK a request carries, left
// for after the reader's reply, is processed as the segment it came in,
// payload and all: a request that acknowledges nothing new (a client
// streaming its writes ahead of the echoes), without SACK, is not taken
// for a duplicate ACK once the reader has consumed its bytes. Taken for
// one, it would turn the connection's fast path off (recovery state)
// and bring fast retransmit one duplicate nearer.
func TestScriptReaderLateAckIsNoDuplicate(t *testing.T) {
	if raceEnabled {
		// The order it checks is the scheduler's with one P, and the
		// detector's slowness reorders it about once in a hundred runs
		// (2-4 failures in 300 at this commit and before it). The
		// plain test step checks it.
		t.Skip("the order of a reader goroutine and the worker under the race detector")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newScriptPeer(t, scriptOptions{NoSACK: true})
	c := p.Connect()
	const rounds, size = 5, echoRequestSize
	go func() {
		buf := make([]byte, size)
		for range rounds {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			c.Write(buf)
		}
	}()
	before := fastCounts(p.s.Stats())
	p.echoRequests(rounds, false)
	after := fastCounts(p.s.Stats())
	if hits, rec := after[tcp.FastHit]-before[tcp.FastHit], after[tcp.FastMissRecovery]-before[tcp.FastMissRecovery]; hits != rounds || rec != 0 {
		t.Errorf("%d of %d requests on the fast path, %d left for recovery state: a late ACK passed for a duplicate", hits, rounds, rec)
	}
}

// TestScriptWorkerReaderReplyBeforeAck: a worker-read connection
// (PollOnWorker, as a queue pair's engine) given a request's bytes
// straight from the frame runs consumed before netstack processes the
// ACK the request carried (FastConsumer.Taken), so what it writes from
// there goes out first: consumed reading the second request sees the
// first reply still unacknowledged, though the request acknowledges
// it, every time. The ACKs are acted on after. Once the owned fast path
// carries the connection (after the first request), it takes each
// request and its ACK itself and consumed's reply still carries the ACK:
// no pure ACK goes out, and every request after the first is the owned
// path's.
func TestScriptWorkerReaderReplyBeforeAck(t *testing.T) {
	for _, owned := range []bool{false, true} {
		t.Run(map[bool]string{false: "netstack", true: "owned"}[owned], func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{Config: func(c *Config) { c.Debug.NetstackFastPath = !owned }})
			c := p.Connect().(*tcpConn)
			const rounds, size = 5, echoRequestSize
			var mu sync.Mutex
			var got []byte
			var una []uint32
			err := c.PollOnWorker(func(b []byte) {
				mu.Lock()
				got = append(got, b...)
				mu.Unlock()
			}, func() bool {
				mu.Lock()
				req := got
				got = nil
				mu.Unlock()
				una = append(una, uint32(c.ep.FastState().SndUna-p.irs))
				if n, err := c.TryWrite(req); n != len(req) || err != nil {
					t.Errorf("TryWrite: %d of %d, %v", n, len(req), err)
				}
				return false
			}, func(error) {})
			if err != nil {
				t.Fatal(err)
			}
			p.echoRequests(rounds, true)
			if len(una) != rounds {
				t.Errorf("consumed ran %d times for %d requests", len(una), rounds)
			}
			if owned {
				o := p.s.Stats().FastPath.Owned
				if o.Promotions != 1 || o.Demotions != 0 || o.SegmentsIn != rounds-1 || o.PureAcks != 0 {
					t.Errorf("owned fast path: %d promotions, %d demotions, %d segments in, %d pure ACKs; want 1, 0, %d, 0", o.Promotions, o.Demotions, o.SegmentsIn, o.PureAcks, rounds-1)
				}
				return
			}
			for i, u := range una {
				if i > 0 && u != 1+size*uint32(i-1) {
					t.Errorf("SND.UNA (from ustack's ISN) as consumed ran for each request: %v; want request %d's ACK not yet processed (%d)", una, i, 1+size*(i-1))
					break
				}
			}
			fs := c.ep.FastState()
			if out := fs.SndNxt - fs.SndUna; out != size {
				t.Errorf("%d bytes outstanding after the last request, want the last reply's %d: an ACK went unprocessed", out, size)
			}
		})
	}
}
