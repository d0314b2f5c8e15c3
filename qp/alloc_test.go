package qp

import (
	"context"
	"testing"
	"time"
)

// writeFPDU is one full-size tagged Write FPDU into the engine's region.
func writeFPDU(n int) []byte {
	seg := make([]byte, taggedHdrLen+n)
	putTagged(seg, OpWrite, true, fuzzKey, 0)
	return frame(seg)
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	// Input: deframe, check CRC, parse, look up the key, place.
	q, _, _ := engine(t)
	f := writeFPDU(64)
	if n := testing.AllocsPerRun(1000, func() { q.input(f) }); n != 0 {
		t.Errorf("input: %.1f allocations per FPDU", n)
	}
	// Input cut in two: the partial FPDU is staged without allocating.
	if n := testing.AllocsPerRun(1000, func() { q.input(f[:7]); q.input(f[7:]) }); n != 0 {
		t.Errorf("input in pieces: %.1f allocations per FPDU", n)
	}
	// Encode: a 64-byte Write from registered memory into the transmit
	// buffer.
	sgl := []SGE{{0, 64, fuzzKey}}
	if n := testing.AllocsPerRun(1000, func() {
		p := newPayload(nil, sgl)
		q.txn, q.txSealed = 0, 0
		q.sendTagged(OpWrite, 0x555, 0, &p)
	}); n != 0 {
		t.Errorf("encode: %.1f allocations per Write", n)
	}
	// Post and poll over loopback TCP, end to end.
	a, b := newPair(t, pairOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wc [4]WC
	// allocs is the allocations of posting wr and polling its completion
	// (waiting on the CQ: AllocsPerRun runs at GOMAXPROCS 1, where a
	// goroutine spinning on Poll starves the engines' goroutines).
	allocs := func(runs int, wr []SendWR) float64 {
		return testing.AllocsPerRun(runs, func() {
			if _, err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			for a.scq.Poll(wc[:]) == 0 {
				a.scq.Wait(ctx)
			}
		})
	}
	wr := []SendWR{{ID: 1, Op: WRWrite, Flags: Signaled, SGL: []SGE{{0, 64, a.mr.Key()}}, RemoteKey: b.mr.Key()}}
	if n := allocs(200, wr); n != 0 {
		t.Errorf("PostSend + Poll: %.1f allocations per Write", n)
	}
	// Posting as an OnInput handler does: the pump that never waits,
	// non-blocking write(2)s on the kernel socket.
	a.qp.inHandler.Store(true)
	if n := allocs(200, wr); n != 0 {
		t.Errorf("PostSend from a handler + Poll: %.1f allocations per Write", n)
	}
	a.qp.inHandler.Store(false)
	// A Read: the request, the peer's engine answering it, the response
	// placed.
	rd := []SendWR{{ID: 2, Op: WRRead, Flags: Signaled, SGL: []SGE{{0, 64, a.mr.Key()}}, RemoteKey: b.mr.Key()}}
	if n := allocs(200, rd); n != 0 {
		t.Errorf("Read round trip: %.1f allocations", n)
	}
	// A 64 KiB Write: many FPDUs, several transmit-buffer flushes.
	wr[0].SGL[0].Len = 64 << 10
	if n := allocs(50, wr); n != 0 {
		t.Errorf("PostSend + Poll: %.1f allocations per 64 KiB Write", n)
	}
}

func BenchmarkInputWrite(b *testing.B) {
	for _, n := range []int{64, 1448 - fpduOverhead - taggedHdrLen} {
		b.Run(itoa(n), func(b *testing.B) {
			q, _, _ := engine(b)
			// The engine's region is 64 bytes: place bigger ones in a
			// bigger region.
			buf := make([]byte, 4096)
			mr, _ := q.pd.RegMR(buf, LocalWrite|RemoteWrite)
			seg := make([]byte, taggedHdrLen+n)
			putTagged(seg, OpWrite, true, mr.Key(), 0)
			f := frame(seg)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				q.input(f)
			}
		})
	}
}

// BenchmarkInputWriteRun is input of a 64 KiB Write as a coalesced
// packet brings it: 46 FPDUs back to back in one call.
func BenchmarkInputWriteRun(b *testing.B) {
	q, _, _ := engine(b)
	buf := make([]byte, 64<<10)
	mr, _ := q.pd.RegMR(buf, LocalWrite|RemoteWrite)
	most := maxPayload(1448, taggedHdrLen)
	var run []byte
	for off := 0; off < len(buf); off += most {
		n := min(most, len(buf)-off)
		seg := make([]byte, taggedHdrLen+n)
		putTagged(seg, OpWrite, off+n == len(buf), mr.Key(), uint64(off))
		run = append(run, frame(seg)...)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		q.input(run)
	}
}

func BenchmarkEncodeWrite(b *testing.B) {
	for _, n := range []int{64, 65536} {
		b.Run(itoa(n), func(b *testing.B) {
			q, _, _ := engine(b)
			buf := make([]byte, n)
			mr, _ := q.pd.RegMR(buf, 0)
			sgl := []SGE{{0, uint32(n), mr.Key()}}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				p := newPayload(nil, sgl)
				q.txn, q.txSealed = 0, 0
				q.sendTagged(OpWrite, 0x555, 0, &p)
				q.txFlush()
			}
		})
	}
}

// BenchmarkWriteLatencyLoopback is write_lat over loopback kernel TCP:
// each side writes 64 bytes with immediate into the other's memory and
// waits for the other's.
func BenchmarkWriteLatencyLoopback(b *testing.B) {
	a, c := newPair(b, pairOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A receive is always posted before the peer can send: the first one
	// now, then the next round's before this round's answer.
	c.qp.PostRecv([]RecvWR{{}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wc [1]WC
		wr := []SendWR{{Op: WRWriteWithImm, SGL: []SGE{{0, 64, c.mr.Key()}}, RemoteKey: a.mr.Key()}}
		for ctx.Err() == nil {
			for c.rcq.Poll(wc[:]) == 0 {
				if c.rcq.Wait(ctx) != nil || c.qp.State() != StateRTS {
					return
				}
			}
			c.qp.PostRecv([]RecvWR{{}})
			c.qp.PostSend(wr)
		}
	}()
	var wc [1]WC
	wr := []SendWR{{Op: WRWriteWithImm, SGL: []SGE{{0, 64, a.mr.Key()}}, RemoteKey: c.mr.Key()}}
	b.ReportAllocs()
	for b.Loop() {
		a.qp.PostRecv([]RecvWR{{}})
		a.qp.PostSend(wr)
		for a.rcq.Poll(wc[:]) == 0 {
			a.rcq.Wait(ctx) // spinning starves the engines' goroutines on a small machine
		}
		if wc[0].Status != StatusSuccess || wc[0].Op != WCRecvWithImm {
			b.Fatalf("completion %+v (%v)", wc[0], a.qp.Err())
		}
	}
	cancel()
	c.qp.Close()
	<-done
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// wireConn is a transport for engine benchmarks on one goroutine: it
// keeps what the engine wrote in out, for the benchmark to feed to the
// peer's input.
type wireConn struct {
	discard
	out []byte
}

func (c *wireConn) Write(b []byte) (int, error) {
	c.out = append(c.out, b...)
	return len(b), nil
}

func (c *wireConn) TryWrite(b []byte) (int, error) { return c.Write(b) }

// BenchmarkEngineHandlerRoundTrip is the queue pairs' own work in a
// 64-byte write_lat round trip from OnInput handlers, without a
// transport: each side's Write is fed to the other's input on one
// goroutine, whose handler answers with a Write of its own. Per round
// trip: two posts, encodings and CRCs, two inputs with their CRC checks
// and placements, two handler calls. BenchmarkMemHandlerPingPong and
// BenchmarkMemQueuePairHandlerPingPong in package stack add the TCP
// around it.
func BenchmarkEngineHandlerRoundTrip(b *testing.B) {
	type side struct {
		q    *QP
		c    *wireConn
		buf  []byte
		tag  byte
		wr   [1]SendWR
		seen int
	}
	dev := NewDevice()
	pd := dev.AllocPD()
	mk := func(s *side) {
		cq, _ := dev.CreateCQ(64)
		cfg := DefaultQPConfig(cq, cq)
		cfg.OnInput = func() {
			if s.buf[127] == s.tag {
				return
			}
			s.tag = s.buf[127]
			s.seen++
			s.buf[63] = s.tag + 1
			if _, err := s.q.PostSend(s.wr[:]); err != nil {
				b.Fatal(err)
			}
		}
		q, err := pd.CreateQP(cfg)
		if err != nil {
			b.Fatal(err)
		}
		q.Modify(StateInit)
		s.q, s.c, s.buf = q, &wireConn{}, make([]byte, 128)
		q.conn, q.tryW, q.state = s.c, s.c, StateRTS
	}
	var x, y side
	mk(&x)
	mk(&y)
	mrx, _ := pd.RegMR(x.buf, LocalWrite|RemoteWrite)
	mry, _ := pd.RegMR(y.buf, LocalWrite|RemoteWrite)
	x.wr[0] = SendWR{Op: WRWrite, SGL: []SGE{{0, 64, mrx.Key()}}, RemoteKey: mry.Key(), RemoteOffset: 64}
	y.wr[0] = SendWR{Op: WRWrite, SGL: []SGE{{0, 64, mry.Key()}}, RemoteKey: mrx.Key(), RemoteOffset: 64}
	feed := func(from, to *side) {
		to.q.consumeData(from.c.out)
		from.c.out = from.c.out[:0]
		to.q.afterInput()
	}
	x.buf[63] = 1
	x.q.PostSend(x.wr[:])
	b.ReportAllocs()
	for b.Loop() {
		feed(&x, &y) // y answers
		feed(&y, &x) // x answers: the next round's Write
	}
	if x.seen == 0 || x.seen != y.seen || x.q.Err() != nil || y.q.Err() != nil {
		b.Fatalf("rounds %d and %d (%v, %v)", x.seen, y.seen, x.q.Err(), y.q.Err())
	}
}
