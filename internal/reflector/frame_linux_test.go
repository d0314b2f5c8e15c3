package reflector

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/offload"
)

// TestUDP4RoundTrip: a frame writeUDP4 builds carries valid checksums
// (checked by offload.Verify, the code ustack's receive path trusts) and
// parses back to what went in, at every payload size up to the MTU's.
func TestUDP4RoundTrip(t *testing.T) {
	src, dst := netip.MustParseAddrPort("198.18.0.20:40000"), netip.MustParseAddrPort("198.18.0.10:7000")
	smac, dmac := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	f := make([]byte, 2048)
	for size := 0; size <= MaxUDPPayload(1500); size += 37 {
		payload := bytes.Repeat([]byte{byte(size)}, size)
		n := writeUDP4(f, dmac, smac, src, dst, payload)
		if n != udpFrame+size {
			t.Fatalf("size %d: frame of %d bytes", size, n)
		}
		if v := offload.Verify(f[:n]); v != offload.Valid {
			t.Fatalf("size %d: checksums %v", size, v)
		}
		u, ok := parseUDP4(f[:n])
		if !ok || u.src != src || u.dst != dst || !bytes.Equal(u.payload, payload) || !bytes.Equal(u.srcMAC, smac) || !bytes.Equal(f[0:6], dmac) {
			t.Fatalf("size %d: parsed %+v, %v", size, u, ok)
		}
	}
	if MaxUDPPayload(1500) != 1472 {
		t.Errorf("MaxUDPPayload(1500) = %d", MaxUDPPayload(1500))
	}
	for _, bad := range [][]byte{nil, f[:udpFrame-1], append([]byte{}, make([]byte, 60)...)} {
		if _, ok := parseUDP4(bad); ok {
			t.Errorf("parsed %d bytes of garbage", len(bad))
		}
	}
}

// TestARPRequestAnswered: the request writeARPRequest builds is one the
// Responder answers, and parseARPReply reads the answer's hardware
// address and nothing else.
func TestARPRequestAnswered(t *testing.T) {
	me, floor := netip.MustParseAddr("198.18.0.20"), netip.MustParseAddr("198.18.0.10")
	mymac, floormac := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	f := make([]byte, 64)
	n := writeARPRequest(f, mymac, me, floor)
	if _, ok := parseARPReply(f[:n], floor); ok {
		t.Error("a request parsed as a reply")
	}
	r := &Responder{MAC: floormac, IP: floor.As4()}
	if !r.Handle(f[:n]) {
		t.Fatal("the responder ignored the request")
	}
	mac, ok := parseARPReply(f[:n], floor)
	if !ok || !bytes.Equal(mac, floormac) || !bytes.Equal(f[0:6], mymac) {
		t.Errorf("reply: %v, %v; frame to %v", mac, ok, net.HardwareAddr(f[0:6]))
	}
	if _, ok := parseARPReply(f[:n], me); ok {
		t.Error("a reply from the floor parsed as one from another address")
	}
}
