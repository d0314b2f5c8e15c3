package bpf

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/vethtest"
)

func TestMain(m *testing.M) { os.Exit(vethtest.Main(m)) }

var (
	peer4  = netip.MustParseAddr("198.18.0.1")
	own4   = netip.MustParseAddr("198.18.0.10") // OwnHost
	all4   = netip.MustParseAddr("198.18.0.11") // OwnAll
	host4  = netip.MustParseAddr("198.18.0.2")  // the kernel's
	peer6  = netip.MustParseAddr("2001:2::1")
	own6   = netip.MustParseAddr("2001:2::10")
	all6   = netip.MustParseAddr("2001:2::11")
	host6  = netip.MustParseAddr("2001:2::2")
	snm6   = netip.MustParseAddr("ff02::1:ff00:10") // solicited-node of own6
	tcpOwn = uint16(7000)
	udpOwn = uint16(7001)
)

func loadOwned(t testing.TB) *Program {
	t.Helper()
	vethtest.Privileged(t)
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	for _, o := range []struct {
		a netip.Addr
		f OwnFlags
	}{{own4, OwnHost}, {own6, OwnHost}, {all4, OwnAll}, {all6, OwnAll}} {
		if err := p.Own(o.a, o.f); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []netip.Addr{own4, own6} {
		if err := p.OwnPort(a, TCP, tcpOwn); err != nil {
			t.Fatal(err)
		}
		if err := p.OwnPort(a, UDP, udpOwn); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// runReason runs frame and returns the single reason counter that moved
// (besides PassNoSocket) and the verdict.
func runReason(t testing.TB, p *Program, frame []byte) (Reason, Verdict) {
	t.Helper()
	before, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Run(frame)
	if err != nil {
		t.Fatalf("run %x: %v", frame, err)
	}
	after, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	got := Reason(numReasons)
	for r := Reason(0); r < numReasons; r++ {
		d := after[r] - before[r]
		if r == PassNoSocket || d == 0 {
			continue
		}
		if d != 1 || got != numReasons {
			t.Fatalf("counters moved oddly for %x: before %v after %v", frame, before, after)
		}
		got = r
	}
	if got >= RedirectAddr && after[PassNoSocket]-before[PassNoSocket] != 1 {
		t.Fatalf("owned frame without a socket not counted as pass_no_socket")
	}
	return got, v
}

func TestPrivilegedRunClassifies(t *testing.T) {
	p := loadOwned(t)
	frag := testpkt.IPv4(peer4, own4, 17, testpkt.L4(1, udpOwn, 8))
	binary.BigEndian.PutUint16(frag[14+6:], 0x2000) // MF
	optIHL := testpkt.IPv4(peer4, own4, 17, append(make([]byte, 4), testpkt.L4(1, udpOwn, 8)...))
	optIHL[14] = 0x46
	cases := []struct {
		name  string
		frame []byte
		want  Reason
	}{
		{"udp to owned port", testpkt.IPv4(peer4, own4, 17, testpkt.L4(1, udpOwn, 8)), RedirectPort},
		{"tcp to owned port", testpkt.IPv4(peer4, own4, 6, testpkt.L4(1, tcpOwn, 20)), RedirectPort},
		{"ipv4 options then owned port", optIHL, RedirectPort},
		{"udp to unowned port", testpkt.IPv4(peer4, own4, 17, testpkt.L4(1, 9, 8)), PassNotOwned},
		{"tcp port owned only for udp", testpkt.IPv4(peer4, own4, 6, testpkt.L4(1, udpOwn, 20)), PassNotOwned},
		{"owned port on host address", testpkt.IPv4(peer4, host4, 17, testpkt.L4(1, udpOwn, 8)), PassNotOwned},
		{"icmp to owned", testpkt.IPv4(peer4, own4, 1, make([]byte, 8)), RedirectICMP},
		{"icmp to host", testpkt.IPv4(peer4, host4, 1, make([]byte, 8)), PassNotOwned},
		{"any proto to OwnAll", testpkt.IPv4(peer4, all4, 47, make([]byte, 8)), RedirectAddr},
		{"fragment to owned", frag, RedirectFrag},
		{"arp request for owned", testpkt.ARP(1, peer4, own4), RedirectNeigh},
		{"arp reply to owned", testpkt.ARP(2, peer4, own4), RedirectNeigh},
		{"arp for host", testpkt.ARP(1, peer4, host4), PassNotOwned},
		{"udp6 to owned port", testpkt.IPv6(peer6, own6, 17, testpkt.L4(1, udpOwn, 8)), RedirectPort},
		{"tcp6 to owned port", testpkt.IPv6(peer6, own6, 6, testpkt.L4(1, tcpOwn, 20)), RedirectPort},
		{"tcp6 to unowned port", testpkt.IPv6(peer6, own6, 6, testpkt.L4(1, 22, 20)), PassNotOwned},
		{"ndp ns for owned", testpkt.IPv6(peer6, snm6, 58, testpkt.NDP(135, own6)), RedirectNeigh},
		{"ndp ns for host", testpkt.IPv6(peer6, snm6, 58, testpkt.NDP(135, host6)), PassNotOwned},
		{"ndp na to owned", testpkt.IPv6(peer6, own6, 58, testpkt.NDP(136, peer6)), RedirectNeigh},
		{"router advert to owned", testpkt.IPv6(peer6, own6, 58, testpkt.NDP(134, peer6)), PassNotOwned},
		{"echo6 to owned", testpkt.IPv6(peer6, own6, 58, testpkt.NDP(128, own6)), RedirectICMP},
		{"any proto to OwnAll v6", testpkt.IPv6(peer6, all6, 59, nil), RedirectAddr},
		{"fragment6 to owned", testpkt.IPv6(peer6, own6, 44, make([]byte, 16)), RedirectFrag},
		{"non-ip ethertype", testpkt.Eth(testpkt.EtherTypeLLDP, make([]byte, 46)), PassNotIP},
		{"vlan tagged", testpkt.Eth(testpkt.EtherTypeVLAN, make([]byte, 46)), PassNotIP},
		{"ipv4 header cut", testpkt.IPv4(peer4, own4, 17, nil)[:14+19], PassMalformed},
		{"udp ports cut", testpkt.IPv4(peer4, own4, 17, testpkt.L4(1, udpOwn, 8))[:14+20+3], PassMalformed},
		{"arp cut", testpkt.ARP(1, peer4, own4)[:14+27], PassMalformed},
		{"ipv6 header cut", testpkt.IPv6(peer6, own6, 17, nil)[:14+39], PassMalformed},
		{"ndp target cut", testpkt.IPv6(peer6, snm6, 58, testpkt.NDP(135, own6))[:14+40+23], PassMalformed},
		{"bare ethernet header", testpkt.Eth(testpkt.EtherTypeIPv4, nil), PassMalformed},
	}
	for _, c := range cases {
		got, v := runReason(t, p, c.frame)
		if got != c.want {
			t.Errorf("%s: reason %v, want %v", c.name, got, c.want)
		}
		if v != VerdictPass { // no socket in any XSKMAP slot
			t.Errorf("%s: verdict %v without a socket, want pass", c.name, v)
		}
	}

	// Disowning takes effect at once.
	if err := p.DisownPort(own4, UDP, udpOwn); err != nil {
		t.Fatal(err)
	}
	if got, _ := runReason(t, p, testpkt.IPv4(peer4, own4, 17, testpkt.L4(1, udpOwn, 8))); got != PassNotOwned {
		t.Errorf("after DisownPort: %v", got)
	}
	if err := p.Disown(own4); err != nil {
		t.Fatal(err)
	}
	if got, _ := runReason(t, p, testpkt.ARP(1, peer4, own4)); got != PassNotOwned {
		t.Errorf("after Disown: %v", got)
	}
	if err := p.Disown(own4); err != nil {
		t.Errorf("disowning twice: %v", err)
	}
}

func TestOwnRejectsBadInput(t *testing.T) {
	var p Program // no kernel objects needed to reject input
	if _, err := portKey(own4, Protocol(1), 80); err == nil {
		t.Error("icmp port accepted")
	}
	if _, err := addrKey(netip.Addr{}); err == nil {
		t.Error("zero address accepted")
	}
	if err := p.SetSocket(MaxQueues, 3); err == nil {
		t.Error("queue out of range accepted")
	}
}

// reference classifies a frame as xdp.c should, for the owned set that
// loadOwned installs.
func reference(f []byte) Reason {
	if len(f) < 14 {
		return PassMalformed
	}
	p := f[14:]
	owned := func(a netip.Addr) OwnFlags {
		switch a {
		case own4, own6:
			return OwnHost
		case all4, all6:
			return OwnAll
		}
		return 0
	}
	portOwned := func(a netip.Addr, proto uint8, port uint16) bool {
		return (a == own4 || a == own6) && ((proto == 6 && port == tcpOwn) || (proto == 17 && port == udpOwn))
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case testpkt.EtherTypeARP:
		if len(p) < 28 {
			return PassMalformed
		}
		if binary.BigEndian.Uint16(p) != 1 || binary.BigEndian.Uint16(p[2:]) != testpkt.EtherTypeIPv4 || p[4] != 6 || p[5] != 4 {
			return PassNotOwned
		}
		if owned(netip.AddrFrom4([4]byte(p[24:28])))&OwnNeigh != 0 {
			return RedirectNeigh
		}
		return PassNotOwned
	case testpkt.EtherTypeIPv4:
		if len(p) < 20 {
			return PassMalformed
		}
		ihl := int(p[0]&0xf) * 4
		if p[0]>>4 != 4 || ihl < 20 || int(binary.BigEndian.Uint16(p[2:])) < ihl || len(p) < ihl {
			return PassMalformed
		}
		dst := netip.AddrFrom4([4]byte(p[16:20]))
		fl := owned(dst)
		if fl&OwnAll != 0 {
			return RedirectAddr
		}
		if binary.BigEndian.Uint16(p[6:])&0x3fff != 0 {
			if fl&OwnFrags != 0 {
				return RedirectFrag
			}
			return PassNotOwned
		}
		switch p[9] {
		case 1:
			if fl&OwnICMP != 0 {
				return RedirectICMP
			}
			return PassNotOwned
		case 6, 17:
			if len(p) < ihl+4 {
				return PassMalformed
			}
			if portOwned(dst, p[9], binary.BigEndian.Uint16(p[ihl+2:])) {
				return RedirectPort
			}
		}
		return PassNotOwned
	case testpkt.EtherTypeIPv6:
		if len(p) < 40 || p[0]>>4 != 6 {
			return PassMalformed
		}
		dst := netip.AddrFrom16([16]byte(p[24:40]))
		fl := owned(dst)
		if fl&OwnAll != 0 {
			return RedirectAddr
		}
		l := p[40:]
		switch p[6] {
		case 58:
			if len(l) < 4 {
				return PassMalformed
			}
			switch typ := l[0]; {
			case typ == 135:
				if len(l) < 24 {
					return PassMalformed
				}
				if owned(netip.AddrFrom16([16]byte(l[8:24])))&OwnNeigh != 0 {
					return RedirectNeigh
				}
				return PassNotOwned
			case typ == 136:
				if fl&OwnNeigh != 0 {
					return RedirectNeigh
				}
				return PassNotOwned
			case typ >= 133 && typ <= 137:
				return PassNotOwned
			}
			if fl&OwnICMP != 0 {
				return RedirectICMP
			}
			return PassNotOwned
		case 44:
			if fl&OwnFrags != 0 {
				return RedirectFrag
			}
			return PassNotOwned
		case 6, 17:
			if len(l) < 4 {
				return PassMalformed
			}
			if portOwned(dst, p[6], binary.BigEndian.Uint16(l[2:])) {
				return RedirectPort
			}
		}
		return PassNotOwned
	}
	return PassNotIP
}

// seedFrames are real frames of every kind the program tells apart.
func seedFrames() [][]byte {
	return [][]byte{
		testpkt.IPv4(peer4, own4, testpkt.ProtoUDP, testpkt.L4(1, udpOwn, 8)),
		testpkt.IPv4(peer4, own4, testpkt.ProtoTCP, testpkt.L4(1, tcpOwn, 20)),
		testpkt.IPv4(peer4, all4, testpkt.ProtoICMP, make([]byte, 8)),
		testpkt.ARP(1, peer4, own4),
		testpkt.IPv6(peer6, own6, testpkt.ProtoTCP, testpkt.L4(1, tcpOwn, 20)),
		testpkt.IPv6(peer6, snm6, testpkt.ProtoICMPv6, testpkt.NDP(testpkt.NeighborSolicitation, own6)),
		testpkt.IPv6(peer6, own6, testpkt.ProtoICMPv6, testpkt.NDP(testpkt.NeighborAdvertisement, peer6)),
		testpkt.IPv6(peer6, own6, testpkt.ProtoFragment, make([]byte, 16)),
	}
}

// TestPrivilegedRunMatchesReference runs mutated copies of real frames
// (truncated, bytes flipped, lengths and versions broken) through the
// kernel and checks each verdict against the Go reference above.
func TestPrivilegedRunMatchesReference(t *testing.T) {
	p := loadOwned(t)
	seeds := seedFrames()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	mismatches := 0
	for i := 0; i < n; i++ {
		f := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
		for k := rng.IntN(4); k > 0; k-- {
			// Bias flips toward the header bytes the program reads.
			f[rng.IntN(min(len(f), 80))] = byte(rng.Uint32())
		}
		if rng.IntN(3) == 0 {
			f = f[:14+rng.IntN(len(f)-13)]
		}
		got, v := runReason(t, p, f)
		if want := reference(f); got != want {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("frame %x: program %v, reference %v", f, got, want)
			}
		}
		if v != VerdictPass {
			t.Fatalf("frame %x: verdict %v without a socket", f, v)
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d frames disagree", mismatches, n)
	}
}

// FuzzProgram runs arbitrary frames through the kernel and checks the
// program's verdict reason against the Go reference. Seeded with real
// frames of every kind the program handles. Needs root.
func FuzzProgram(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	p := loadOwned(f)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 {
			return // the kernel refuses shorter test runs
		}
		if got, _ := runReason(t, p, frame); got != reference(frame) {
			t.Fatalf("frame %x: program %v, reference %v", frame, got, reference(frame))
		}
	})
}
