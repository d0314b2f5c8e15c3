package stack

import (
	"context"
	"io"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMemPingPong measures a 64-byte TCP round trip between two
// stacks over the in-memory wire: netstack and ustack's endpoint with no
// kernel involved, so it bounds what ustack's own software adds to a
// round trip on this machine.
func BenchmarkMemPingPong(b *testing.B) {
	for _, policy := range []PollPolicy{Spin, Adaptive, Blocking} {
		b.Run(policy.String(), func(b *testing.B) {
			benchMemPingPong(b, newMemPair(b, policy))
		})
	}
	// Spin, the server a Handler on the worker; and the same two with
	// the server's latency breakdown (request frame off the RX ring to
	// the reply's on the TX ring, rx→txring-µs).
	b.Run("spin-handler", func(b *testing.B) {
		benchMemPingPong(b, newMemPair(b, Spin))
	})
	trace := func(c *Config) { c.Trace = true }
	b.Run("spin-trace", func(b *testing.B) {
		benchMemPingPong(b, newMemPairWith(b, Spin, trace))
	})
	b.Run("spin-trace-handler", func(b *testing.B) {
		benchMemPingPong(b, newMemPairWith(b, Spin, trace))
	})
	// Spin with netstack's whole receive path for every segment.
	b.Run("spin-no-early-demux", func(b *testing.B) {
		benchMemPingPong(b, newMemPairWith(b, Spin, func(c *Config) { c.Debug.NoEarlyDemux = true }))
	})
}

func benchMemPingPong(b *testing.B, mp *memPair) {
	if strings.HasSuffix(b.Name(), "-handler") {
		ln, err := mp.b.ListenHandler("tcp4", ":7", &echoHandler{})
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
	} else {
		ln, err := mp.b.Listen("tcp4", ":7")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		echo(b, ln)
	}
	c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Minute))
	msg := make([]byte, 64)
	buf := make([]byte, 64)
	for i := 0; i < 100; i++ {
		c.Write(msg)
		io.ReadFull(c, buf)
	}
	mp.b.ResetTrace()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Write(msg)
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/rtt")
	if ts := mp.b.Stats().Trace; ts != nil {
		for _, st := range ts.Stages {
			if st.Stage == StageTxRing && st.Count > 0 {
				b.ReportMetric(float64(st.P50.Nanoseconds())/1e3, "rx→txring-µs")
			}
		}
	}
}

// BenchmarkMemConnect measures a connection's life over the in-memory
// wire: connect, a 100-byte echo, close (client first). Its CPU and
// allocations per operation are what connection setup and teardown cost
// netstack and ustack, both ends together.
func BenchmarkMemConnect(b *testing.B) {
	mp := newMemPair(b, Adaptive)
	ln, err := mp.b.Listen("tcp4", ":7")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	echo(b, ln)
	addr := netip.AddrPortFrom(memB4.Addr(), 7).String()
	msg := make([]byte, 100)
	buf := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := mp.a.Dial("tcp4", addr)
		if err != nil {
			b.Fatal(err)
		}
		c.Write(msg)
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// bounceHandler answers every 64-byte message with one of its own, on the
// worker, and counts the round trips it began (the dialing side's).
type bounceHandler struct {
	msg    [64]byte
	have   int
	rounds atomic.Int64
	target int64
	done   chan struct{}
}

func (h *bounceHandler) OnOpen(*Stream) {}

func (h *bounceHandler) OnTraffic(s *Stream, b []byte) {
	for h.have += len(b); h.have >= len(h.msg); h.have -= len(h.msg) {
		if h.done != nil && h.rounds.Add(1) >= h.target {
			select {
			case h.done <- struct{}{}:
			default:
			}
			return
		}
		s.Write(h.msg[:])
	}
}

func (h *bounceHandler) OnClose(*Stream, error) {}

// BenchmarkMemHandlerPingPong: 64-byte messages bounced between handlers
// on two stacks' workers over the memory wire, with no application
// goroutine: the TCP counterpart of BenchmarkMemQueuePairHandlerPingPong
// (the difference is what the queue pairs' framing and engine add).
func BenchmarkMemHandlerPingPong(b *testing.B) {
	mp := newMemPair(b, Spin)
	ln, err := mp.b.ListenHandler("tcp4", ":7", &bounceHandler{})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	h := &bounceHandler{target: int64(b.N), done: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := mp.a.DialHandler(ctx, "tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String(), h)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	f0, o0 := pairTxPackets(mp), pairOwnedSegs(mp)
	b.ResetTimer()
	if err := s.AsyncWrite(h.msg[:]); err != nil {
		b.Fatal(err)
	}
	select {
	case <-h.done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d rounds", h.rounds.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/rtt")
	b.ReportMetric(float64(pairTxPackets(mp)-f0)/float64(b.N), "packets/rtt")
	b.ReportMetric(float64(pairOwnedSegs(mp)-o0)/float64(b.N), "owned-segs/rtt")
}

// pairOwnedSegs is the segments both stacks of mp's owned fast paths have
// received: a ping-pong the owned fast path carries counts 2 a round
// trip.
func pairOwnedSegs(mp *memPair) uint64 {
	return mp.a.Stats().FastPath.Owned.SegmentsIn + mp.b.Stats().FastPath.Owned.SegmentsIn
}

// pairTxPackets is the packets both stacks of mp have written: a round trip
// that takes more than two sent an ACK of its own somewhere.
func pairTxPackets(mp *memPair) uint64 {
	var n uint64
	for _, st := range []Stats{mp.a.Stats(), mp.b.Stats()} {
		for _, q := range st.Queues {
			n += q.TxPackets
		}
	}
	return n
}
