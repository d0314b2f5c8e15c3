package stack

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
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
		benchMemPingPong(b, newMemPairWith(b, Spin, func(c *Config) { c.NoEarlyDemux = true }))
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

// nopDispatcher consumes delivered packets, so the benchmark below measures
// ustack's RX path alone.
type nopDispatcher struct{ n int }

func (d *nopDispatcher) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *gstack.PacketBuffer) {
	d.n++
}
func (d *nopDispatcher) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *gstack.PacketBuffer) {}

// rxTxRound returns a function that pushes one batch of 64 frames
// through the endpoint's TX path (copy each packet into a frame, enqueue)
// and its RX path (receive, copy into a netstack buffer, deliver,
// recycle) over the memory wire, and reports how many frames made it.
func rxTxRound(tb testing.TB) func() int {
	pa, pb, err := newMemWire(1024, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{}
	cfg.setDefaults()
	rx := newEndpoint([]frameIO{pb}, linkInfo{mtu: 1500, mac: net.HardwareAddr{2, 0, 0, 0, 0, 2}}, &cfg)
	tx := newEndpoint([]frameIO{pa}, linkInfo{mtu: 1500, mac: net.HardwareAddr{2, 0, 0, 0, 0, 1}}, &cfg)
	rx.dispatcher = &nopDispatcher{} // no workers: the caller drives RX
	pkts := udpBatch(batchSize)
	tb.Cleanup(func() { pkts.DecRef() })
	q := rx.queues[0]
	return func() int {
		if n, err := tx.WritePackets(pkts); err != nil || n != batchSize {
			tb.Fatalf("wrote %d: %v", n, err)
		}
		n := q.io.Receive(q.rxDescs[:])
		rx.deliver(q, q.rxDescs[:n])
		q.io.Recycle(q.rxDescs[:n])
		return n
	}
}

// BenchmarkEndpointRxTx measures rxTxRound; TestEndpointRxTxAllocates
// Nothing holds it to 0 allocs/op.
func BenchmarkEndpointRxTx(b *testing.B) {
	round := rxTxRound(b)
	b.ReportAllocs()
	b.SetBytes(batchSize * (14 + 20 + 64))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := round(); n != batchSize {
			b.Fatalf("received %d", n)
		}
	}
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds()/1e6, "Mpps")
}

// TestEndpointRxTxAllocatesNothing: ustack's own per-packet code
// allocates nothing. netstack's pooled buffers are warmed up first.
func TestEndpointRxTxAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops items at random")
	}
	round := rxTxRound(t)
	for i := 0; i < 10; i++ {
		round()
	}
	if a := testing.AllocsPerRun(200, func() {
		if n := round(); n != batchSize {
			t.Fatalf("received %d", n)
		}
	}); a != 0 {
		t.Errorf("%.1f allocations per batch of %d, want 0", a, batchSize)
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
