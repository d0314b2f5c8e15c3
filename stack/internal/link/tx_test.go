package link

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/stack/internal/memwire"
	"github.com/ustack-dev/ustack/xsk"
)

// udpBatch returns n 64-byte-payload IPv4 packets with their link headers
// pushed, as netstack hands them to WritePackets. The caller owns the list.
func udpBatch(n int) gstack.PacketBufferList {
	var pkts gstack.PacketBufferList
	for i := 0; i < n; i++ {
		pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{ReserveHeaderBytes: 14 + 20 + 8, Payload: buffer.MakeWithData(make([]byte, 64))})
		h := pkt.NetworkHeader().Push(20)
		binary.BigEndian.PutUint16(h[2:], 92)
		eth := header.Ethernet(pkt.LinkHeader().Push(14))
		eth.Encode(&header.EthernetFields{Type: header.IPv4ProtocolNumber})
		pkts.PushBack(pkt)
	}
	return pkts
}

// writeEndpoint builds a link endpoint without a worker over one end of a
// memory wire, as port wraps it, and returns it and the wire's other end.
func writeEndpoint(t *testing.T, poll Poll, port func(*memEnd) frameio.IO) (*Endpoint, *memEnd) {
	t.Helper()
	pa, pb, err := memwire.New(1024, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return New([]frameio.IO{port(pa)}, testOptions(poll, 1)), pb
}

// memEnd is one end of a memory wire.
type memEnd = memwire.End

// testOptions are an endpoint's options as stack's defaults set them, on
// a link of MTU 1500 whose MAC ends in mac.
func testOptions(poll Poll, mac byte) Options {
	return Options{MTU: 1500, MAC: tcpip.LinkAddress([]byte{2, 0, 0, 0, 0, mac}), Poll: poll, SpinBudget: 50 * time.Microsecond}
}

// failingKickPort is a memory wire end whose kicks fail: what is enqueued
// stays on its TX ring, as on an AF_XDP socket until a kick succeeds.
type failingKickPort struct {
	*memEnd
}

var errKick = errors.New("kick failed")

func (p *failingKickPort) Kick() error { return errKick }

// TestWritePacketsCountsQueuedDespiteKickFailure: packets WritePackets put
// on the TX ring are reported written even when the kick after them fails,
// both for a small batch and for a full one (which kicks at once).
func TestWritePacketsCountsQueuedDespiteKickFailure(t *testing.T) {
	for _, n := range []int{3, BatchSize} {
		var pa *memEnd
		ep, pb := writeEndpoint(t, Blocking, func(m *memEnd) frameio.IO { pa = m; return &failingKickPort{memEnd: m} })
		pkts := udpBatch(n)
		got, terr := ep.WritePackets(pkts)
		pkts.DecRef()
		if got != n || terr != nil {
			t.Errorf("batch of %d: WritePackets = (%d, %v), want (%d, nil)", n, got, terr, n)
		}
		if q := pa.TxQueued(); q != n {
			t.Errorf("batch of %d: %d frames left on the TX ring", n, q)
		}
		// The next kick that works sends them.
		pa.Kick()
		descs := make([]xsk.Desc, 2*BatchSize)
		if m := pb.Receive(descs); m != n {
			t.Errorf("batch of %d: %d frames on the wire after a kick", n, m)
		}
	}
}

// countingKickPort is a memory wire end that counts its kicks.
type countingKickPort struct {
	*memEnd
	kicks int
}

func (p *countingKickPort) Kick() error { p.kicks++; return p.memEnd.Kick() }

// TestWritePacketsKickPolicy: while the worker spins, a writer leaves
// the kick for a reply of a few frames to the worker's next turn, but a
// burst of writerKickFrames or more it kicks itself (so that a bulk
// sender's kicks do not hold the worker away from the RX ring).
func TestWritePacketsKickPolicy(t *testing.T) {
	for _, tc := range []struct {
		n     int
		kicks int
	}{{1, 0}, {writerKickFrames - 1, 0}, {writerKickFrames, 1}, {BatchSize, 1}} {
		var cp *countingKickPort
		ep, _ := writeEndpoint(t, Spin, func(m *memEnd) frameio.IO { cp = &countingKickPort{memEnd: m}; return cp })
		ep.queues[0].startWorker(true) // a worker spinning, as Spin runs it
		pkts := udpBatch(tc.n)
		got, terr := ep.WritePackets(pkts)
		pkts.DecRef()
		if got != tc.n || terr != nil {
			t.Fatalf("write of %d: WritePackets = (%d, %v)", tc.n, got, terr)
		}
		if cp.kicks != tc.kicks {
			t.Errorf("write of %d frames with the worker spinning: %d kicks by the writer, want %d", tc.n, cp.kicks, tc.kicks)
		}
	}
}
