package stack

import (
	"encoding/binary"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/xsk"
)

// BenchmarkMemPingPong measures a 64-byte TCP round trip between two
// stacks over the in-memory wire: netstack and ustack's endpoint with no
// kernel involved, so it bounds what ustack's own software adds to a
// round trip on this machine.
func BenchmarkMemPingPong(b *testing.B) {
	for _, policy := range []PollPolicy{Spin, Adaptive, Blocking} {
		b.Run(policy.String(), func(b *testing.B) {
			mp := newMemPair(b, policy)
			ln, err := mp.b.Listen("tcp4", ":7")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			echo(b, ln)
			c, err := mp.a.Dial("tcp4", netip.AddrPortFrom(memB4.Addr(), 7).String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Minute))
			msg := make([]byte, 64)
			buf := make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Write(msg)
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/rtt")
		})
	}
}

// nopDispatcher consumes delivered packets, so the benchmark below measures
// ustack's RX path alone.
type nopDispatcher struct{ n int }

func (d *nopDispatcher) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *gstack.PacketBuffer) {
	d.n++
}
func (d *nopDispatcher) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *gstack.PacketBuffer) {}

// BenchmarkEndpointRxTx pushes batches of 64 frames through the endpoint's
// RX path (receive, copy into a netstack buffer, deliver, recycle) and its
// TX path (copy each packet into a frame, enqueue), over the memory wire.
// It must report 0 allocs/op: ustack's own per-packet code allocates
// nothing.
func BenchmarkEndpointRxTx(b *testing.B) {
	pa, pb, err := newMemWire(1024, 2048)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{}
	cfg.setDefaults()
	rx := newEndpoint([]port{pb}, 1500, "\x02\x00\x00\x00\x00\x02", &cfg)
	tx := newEndpoint([]port{pa}, 1500, "\x02\x00\x00\x00\x00\x01", &cfg)
	d := &nopDispatcher{}
	rx.dispatcher = d // no workers: the benchmark drives RX itself

	// A batch of 64 UDP-sized packets for the TX side.
	var pkts gstack.PacketBufferList
	for i := 0; i < batchSize; i++ {
		payload := make([]byte, 64)
		pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{ReserveHeaderBytes: 14 + 20 + 8, Payload: buffer.MakeWithData(payload)})
		h := pkt.NetworkHeader().Push(20)
		binary.BigEndian.PutUint16(h[2:], 92)
		eth := header.Ethernet(pkt.LinkHeader().Push(14))
		eth.Encode(&header.EthernetFields{Type: header.IPv4ProtocolNumber})
		pkts.PushBack(pkt)
	}
	defer pkts.DecRef()
	q := rx.queues[0]
	b.ReportAllocs()
	b.SetBytes(batchSize * (14 + 20 + 64))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := tx.WritePackets(pkts); err != nil || n != batchSize {
			b.Fatalf("wrote %d: %v", n, err)
		}
		n := q.p.Receive(q.rxDescs[:])
		rx.deliver(q, q.rxDescs[:n])
		q.p.Recycle(q.rxDescs[:n])
		if n != batchSize {
			b.Fatalf("received %d", n)
		}
	}
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds()/1e6, "Mpps")
	_ = xsk.Desc{}
}
