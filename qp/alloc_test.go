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
	// An unsignaled one takes postFast: no slot, no completion.
	uns := []SendWR{{Op: WRWrite, SGL: wr[0].SGL, RemoteKey: b.mr.Key()}}
	a.qp.mu.Lock()
	tail := a.qp.tail
	a.qp.mu.Unlock()
	if n := testing.AllocsPerRun(200, func() {
		if _, err := a.qp.PostSend(uns); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("unsignaled PostSend from a handler: %.1f allocations per Write", n)
	}
	a.qp.mu.Lock()
	if a.qp.tail != tail {
		t.Errorf("unsignaled PostSend from a handler took %d send-queue slots", a.qp.tail-tail)
	}
	a.qp.mu.Unlock()
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

// wireConn is a transport for engine tests on one goroutine: it keeps
// what the engine wrote in out, for the test to feed to the peer's
// input.
type wireConn struct {
	discard
	out []byte
}

func (c *wireConn) Write(b []byte) (int, error) {
	c.out = append(c.out, b...)
	return len(b), nil
}

func (c *wireConn) TryWrite(b []byte) (int, error) { return c.Write(b) }

// wireSide is one end of wirePair: a queue pair in RTS over a wireConn,
// with a 128-byte region whose second half the peer writes (wr: buf[:64]
// to the peer's buf[64:]).
type wireSide struct {
	q   *QP
	c   *wireConn
	cq  *CQ
	buf []byte
	mr  *MR
	wr  [1]SendWR
	// onInput, if set, is the queue pair's OnInput handler.
	onInput func()
}

// wirePair returns two queue pairs wired by wireConns, on one device.
func wirePair(t testing.TB) (x, y *wireSide) {
	dev := NewDevice()
	pd := dev.AllocPD()
	mk := func() *wireSide {
		s := &wireSide{c: &wireConn{}, buf: make([]byte, 128)}
		s.cq, _ = dev.CreateCQ(64)
		cfg := DefaultQPConfig(s.cq, s.cq)
		cfg.OnInput = func() {
			if s.onInput != nil {
				s.onInput()
			}
		}
		q, err := pd.CreateQP(cfg)
		if err != nil {
			t.Fatal(err)
		}
		q.Modify(StateInit)
		s.q = q
		q.conn, q.tryW, q.state = s.c, s.c, StateRTS
		s.mr, _ = pd.RegMR(s.buf, LocalWrite|RemoteWrite|RemoteRead)
		return s
	}
	x, y = mk(), mk()
	x.wr[0] = SendWR{Op: WRWrite, SGL: []SGE{{0, 64, x.mr.Key()}}, RemoteKey: y.mr.Key(), RemoteOffset: 64}
	y.wr[0] = SendWR{Op: WRWrite, SGL: []SGE{{0, 64, y.mr.Key()}}, RemoteKey: x.mr.Key(), RemoteOffset: 64}
	return x, y
}

// feed hands what s wrote to to's input, then runs to's handler.
func (s *wireSide) feed(to *wireSide) {
	to.q.consumeData(s.c.out)
	s.c.out = s.c.out[:0]
	to.q.afterInput()
}

// BenchmarkEngineHandlerRoundTrip is the queue pairs' own work in a
// 64-byte write_lat round trip from OnInput handlers, without a
// transport: each side's Write is fed to the other's input on one
// goroutine, whose handler answers with a Write of its own. Per round
// trip: two posts, encodings and CRCs, two inputs with their CRC checks
// and placements, two handler calls. BenchmarkMemHandlerPingPong and
// BenchmarkMemQueuePairHandlerPingPong in package stack add the TCP
// around it.
func BenchmarkEngineHandlerRoundTrip(b *testing.B) { engineRoundTrip(b, 0) }

// BenchmarkEngineHandlerRoundTripSignaled is
// BenchmarkEngineHandlerRoundTrip with signaled Writes, whose
// completions each handler polls.
func BenchmarkEngineHandlerRoundTripSignaled(b *testing.B) { engineRoundTrip(b, Signaled) }

func engineRoundTrip(b *testing.B, flags SendFlags) {
	x, y := wirePair(b)
	var rounds, completions [2]int
	for i, s := range []*wireSide{x, y} {
		tag := byte(0)
		s.wr[0].Flags = flags
		var wc [4]WC
		s.onInput = func() {
			if s.buf[127] == tag {
				return
			}
			tag = s.buf[127]
			rounds[i]++
			if flags&Signaled != 0 {
				// The completion of this side's last Write.
				for n := s.cq.Poll(wc[:]); n > 0; n-- {
					if wc[n-1].Status != StatusSuccess {
						b.Fatalf("completion %+v", wc[n-1])
					}
					completions[i]++
				}
			}
			s.buf[63] = tag + 1
			if _, err := s.q.PostSend(s.wr[:]); err != nil {
				b.Fatal(err)
			}
		}
	}
	x.buf[63] = 1
	x.q.PostSend(x.wr[:])
	b.ReportAllocs()
	for b.Loop() {
		x.feed(y) // y answers
		y.feed(x) // x answers: the next round's Write
	}
	if rounds[0] == 0 || rounds[0] != rounds[1] || x.q.Err() != nil || y.q.Err() != nil {
		b.Fatalf("rounds %v (%v, %v)", rounds, x.q.Err(), y.q.Err())
	}
	if flags&Signaled != 0 && (completions[0] != rounds[0] || completions[1] != rounds[1]-1) {
		b.Fatalf("%v completions in %v rounds", completions, rounds)
	}
}
