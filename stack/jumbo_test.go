package stack

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv4"
	"github.com/ustack-dev/ustack/stack/internal/memwire"
	"github.com/ustack-dev/ustack/xsk"
)

// TestMemJumboFrames: on a link whose MTU (5000) needs three 2048-byte
// frames per frame, a 5000-byte ICMP echo request sent as a chain of
// three is answered with a 5000-byte reply that leaves as a chain of
// three; the same request with its middle part lost joins short, and the
// stack drops it (malformed) without answering; a chain longer than the
// MTU allows is dropped whole and counted.
func TestMemJumboFrames(t *testing.T) {
	const frameSize, mtu = 2048, 5000
	stackEnd, peer, err := memwire.New(256, frameSize)
	if err != nil {
		t.Fatal(err)
	}
	stackMAC := net.HardwareAddr{2, 0, 0, 0, 5, 1}
	peerMAC := tcpip.LinkAddress([]byte{2, 0, 0, 0, 5, 2})
	cfg := Config{Interface: "mem", Addrs: []netip.Prefix{memA4}, FrameSize: frameSize}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	s, err := newStack(cfg, []frameIO{stackEnd}, linkInfo{mtu: mtu, mac: stackMAC, multiBuffer: true}, &fakeOwner{ports: map[portKey]bool{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	peerIP := tcpip.AddrFromSlice(memB4.Addr().AsSlice())
	stackIP := tcpip.AddrFromSlice(memA4.Addr().AsSlice())
	if err := s.ns.AddStaticNeighbor(nicID, ipv4.ProtocolNumber, peerIP, peerMAC); err != nil {
		t.Fatal(err)
	}

	// The request: Ethernet, IPv4, ICMP echo, 4972 bytes of data.
	frame := make([]byte, header.EthernetMinimumSize+mtu)
	header.Ethernet(frame).Encode(&header.EthernetFields{SrcAddr: peerMAC, DstAddr: tcpip.LinkAddress(stackMAC), Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(frame[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: mtu, TTL: 64, Protocol: uint8(header.ICMPv4ProtocolNumber), SrcAddr: peerIP, DstAddr: stackIP})
	ip.SetChecksum(^ip.CalculateChecksum())
	icmp := header.ICMPv4(ip.Payload())
	icmp.SetType(header.ICMPv4Echo)
	icmp.SetIdent(7)
	icmp.SetSequence(1)
	for i := range icmp.Payload() {
		icmp.Payload()[i] = byte(i * 3)
	}
	icmp.SetChecksum(^checksum.Checksum(icmp, 0))

	send := func(keep ...int) {
		t.Helper()
		if !peer.EnqueueChain(frame, keep) {
			t.Fatal("the wire has no room for the chain")
		}
		peer.Kick()
	}
	// reply waits up to d for a chain from the stack and joins it.
	reply := func(d time.Duration) (joined []byte, parts int) {
		descs := make([]xsk.Desc, 16)
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			n := peer.Receive(descs)
			for _, dd := range descs[:n] {
				joined = append(joined, peer.Data(dd)...)
				parts++
				if dd.Options&xsk.OptContd == 0 {
					peer.Recycle(descs[:n])
					return joined, parts
				}
			}
			peer.Recycle(descs[:n])
			if n == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		return joined, parts
	}

	send()
	got, parts := reply(3 * time.Second)
	if parts != 3 || len(got) != len(frame) {
		t.Fatalf("reply: %d bytes in %d parts, want %d in 3", len(got), parts, len(frame))
	}
	rip := header.IPv4(got[header.EthernetMinimumSize:])
	ricmp := header.ICMPv4(rip.Payload())
	if ricmp.Type() != header.ICMPv4EchoReply || !bytes.Equal(ricmp.Payload(), icmp.Payload()) || checksum.Checksum(ricmp, 0) != 0xffff {
		t.Fatalf("reply: type %d, data equal %v", ricmp.Type(), bytes.Equal(ricmp.Payload(), icmp.Payload()))
	}

	malformed := s.Stats().IP.Malformed
	send(0, 2) // the middle part lost
	if got, parts := reply(200 * time.Millisecond); parts != 0 {
		t.Fatalf("a request that lost its middle part was answered (%d bytes)", len(got))
	}
	if m := s.Stats().IP.Malformed; m != malformed+1 {
		t.Errorf("IP malformed %d, want %d: the short frame should count", m, malformed+1)
	}

	// Longer than the MTU allows: dropped whole.
	frame = append(frame, make([]byte, 100)...)
	send()
	if _, parts := reply(200 * time.Millisecond); parts != 0 {
		t.Fatal("an over-long chain was answered")
	}
	m := s.Stats().Queues[0].MultiBuffer
	if m.RxChains != 2 || m.RxChainsDropped != 1 || m.TxChains != 1 {
		t.Errorf("multi-buffer counters %+v, want 2 chains joined, 1 dropped, 1 sent", m)
	}
}
