package link

import (
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/stack/internal/memwire"
)

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
	pa, pb, err := memwire.New(1024, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	rx := New([]frameio.IO{pb}, testOptions(Adaptive, 2))
	tx := New([]frameio.IO{pa}, testOptions(Adaptive, 1))
	rx.dispatcher = &nopDispatcher{} // no workers: the caller drives RX
	pkts := udpBatch(BatchSize)
	tb.Cleanup(func() { pkts.DecRef() })
	q := rx.queues[0]
	return func() int {
		if n, err := tx.WritePackets(pkts); err != nil || n != BatchSize {
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
	b.SetBytes(BatchSize * (14 + 20 + 64))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := round(); n != BatchSize {
			b.Fatalf("received %d", n)
		}
	}
	b.ReportMetric(float64(b.N*BatchSize)/b.Elapsed().Seconds()/1e6, "Mpps")
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
		if n := round(); n != BatchSize {
			t.Fatalf("received %d", n)
		}
	}); a != 0 {
		t.Errorf("%.1f allocations per batch of %d, want 0", a, BatchSize)
	}
}
