package offload

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
)

// reference is RFC 1071's algorithm, word by word (package testpkt's,
// which shares no code with this package).
var reference = testpkt.Checksum

func TestChecksumMatchesReferenceEveryLength(t *testing.T) {
	eachImpl(t, testChecksumMatchesReferenceEveryLength)
}

func testChecksumMatchesReferenceEveryLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 9002)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	ones := make([]byte, 9002)
	for i := range ones {
		ones[i] = 0xff
	}
	for n := 0; n <= 9001; n++ {
		for _, b := range [][]byte{buf[:n], buf[1 : n+1], ones[:n]} {
			if got, want := Checksum(b), reference(b); got != want {
				t.Fatalf("length %d: Checksum %#04x, reference %#04x", n, got, want)
			}
		}
	}
}

func TestSumCombines(t *testing.T) { eachImpl(t, testSumCombines) }

func testSumCombines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 3001)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for cut := 0; cut < len(b); cut += 2 {
		if got, want := ^Fold(Sum(b[cut:], Sum(b[:cut], 0))), reference(b); got != want {
			t.Fatalf("split at %d: %#04x, want %#04x", cut, got, want)
		}
	}
}

var (
	addr4a, addr4b = netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.10")
	addr6a, addr6b = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::10")
)

// The frames the tests verify: TCP and UDP over IPv4 and IPv6 with valid
// checksums, from package testpkt.
func tcpFrame4(p []byte) []byte { return testpkt.TCP(addr4a, addr4b, 40000, 7000, p) }
func tcpFrame6(p []byte) []byte { return testpkt.TCP(addr6a, addr6b, 40000, 7000, p) }
func udpFrame4(p []byte) []byte { return testpkt.UDP(addr4a, addr4b, 40000, 7000, p) }
func udpFrame6(p []byte) []byte { return testpkt.UDP(addr6a, addr6b, 40000, 7000, p) }

func TestVerify(t *testing.T) {
	for _, mk := range []func([]byte) []byte{tcpFrame4, tcpFrame6, udpFrame4, udpFrame6} {
		for _, n := range []int{0, 1, 63, 1400} {
			f := mk(make([]byte, n))
			if v := Verify(f); v != Valid {
				t.Fatalf("valid frame (payload %d): %v", n, v)
			}
			f[len(f)-1] ^= 0x40
			if n > 0 && Verify(f) != Invalid {
				t.Fatalf("corrupted frame (payload %d) not caught", n)
			}
		}
	}
	badIP := tcpFrame4([]byte("x"))
	badIP[14+8]-- // TTL: breaks only the IPv4 header checksum
	if Verify(badIP) != Invalid {
		t.Error("bad IPv4 header checksum not caught")
	}
	// UDP without a checksum: allowed over IPv4, not over IPv6.
	noSum4, noSum6 := udpFrame4([]byte("x")), udpFrame6([]byte("x"))
	noSum4[14+20+6], noSum4[14+20+7] = 0, 0
	noSum6[14+40+6], noSum6[14+40+7] = 0, 0
	if v := Verify(noSum4); v != Valid {
		t.Errorf("IPv4 UDP without checksum: %v", v)
	}
	if v := Verify(noSum6); v != Invalid {
		t.Errorf("IPv6 UDP without checksum: %v", v)
	}
	// Partial checksums (the field holds the folded pseudo-header sum,
	// computed here with the reference sum) are told from bad ones.
	for _, mk := range []func([]byte) []byte{tcpFrame4, tcpFrame6, udpFrame4, udpFrame6} {
		f := mk([]byte("partial checksum"))
		if v := Verify(partial(f)); v != Partial {
			t.Errorf("partial checksum: %v", v)
		}
		f = partial(f)
		f[len(f)-1] ^= 1 // the payload does not enter a partial sum
		if v := Verify(f); v != Partial {
			t.Errorf("partial checksum, other payload: %v", v)
		}
	}
	icmp := tcpFrame4(nil)
	icmp[14+9] = 1
	shortUDP := udpFrame4([]byte("xyz"))
	shortUDP[14+20+5]-- // UDP length shorter than the IP payload
	for _, f := range [][]byte{nil, make([]byte, 13), icmp, tcpFrame4(nil)[:14+30], shortUDP} {
		if Verify(f) != Unchecked {
			t.Errorf("%x: not Unchecked", f)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(tcpFrame4([]byte("hello")))
	f.Add(tcpFrame6([]byte("hello")))
	f.Add(udpFrame4([]byte("hello")))
	f.Add(udpFrame6([]byte("hello")))
	f.Add(partial(tcpFrame4(make([]byte, 1400))))
	f.Add(partial(udpFrame6(nil)))
	f.Fuzz(func(t *testing.T, frame []byte) {
		// Any input: no panic, and the verdict of the RFC 1071 reference.
		if got, want := Verify(frame), referenceVerify(frame); got != want {
			t.Fatalf("Verify = %v, reference %v", got, want)
		}
	})
}

// referenceVerify is Verify written plainly over reference: the same
// rules, none of its arithmetic.
func referenceVerify(f []byte) Verdict {
	if len(f) < 14 {
		return Unchecked
	}
	ip := f[14:]
	var pseudo, seg []byte
	var proto byte
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return Unchecked
		}
		proto = ip[9]
		ihl, total := int(ip[0]&0xf)*4, int(binary.BigEndian.Uint16(ip[2:]))
		if proto != 6 && proto != 17 || ihl < 20 || total < ihl || total > len(ip) || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return Unchecked
		}
		if reference(ip[:ihl]) != 0 {
			return Invalid
		}
		seg = ip[ihl:total]
		if proto == 17 && len(seg) >= 8 && seg[6] == 0 && seg[7] == 0 {
			if int(binary.BigEndian.Uint16(seg[4:])) != len(seg) {
				return Unchecked
			}
			return Valid // IPv4 UDP without a checksum
		}
		pseudo = append(append([]byte{}, ip[12:20]...), 0, proto, byte(len(seg)>>8), byte(len(seg)))
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return Unchecked
		}
		proto = ip[6]
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if proto != 6 && proto != 17 || 40+plen > len(ip) {
			return Unchecked
		}
		seg = ip[40 : 40+plen]
		pseudo = append(append([]byte{}, ip[8:40]...), 0, 0, byte(len(seg)>>8), byte(len(seg)), 0, 0, 0, proto)
	default:
		return Unchecked
	}
	off := 16
	if proto == 6 && len(seg) < 20 {
		return Unchecked
	}
	if proto == 17 {
		if len(seg) < 8 || int(binary.BigEndian.Uint16(seg[4:])) != len(seg) {
			return Unchecked
		}
		off = 6
	}
	if reference(append(pseudo, seg...)) == 0 {
		return Valid
	}
	if binary.BigEndian.Uint16(seg[off:]) == ^reference(pseudo) {
		return Partial
	}
	return Invalid
}

// partial rewrites a TCP or UDP frame's checksum field the way a Linux
// sender with checksum offload leaves it: the folded pseudo-header sum.
func partial(f []byte) []byte {
	f = append([]byte(nil), f...)
	ip := f[14:]
	var pseudo, seg []byte
	var proto byte
	if binary.BigEndian.Uint16(f[12:]) == testpkt.EtherTypeIPv4 {
		seg, proto = ip[20:], ip[9]
		pseudo = append(append([]byte{}, ip[12:20]...), 0, proto, byte(len(seg)>>8), byte(len(seg)))
	} else {
		seg, proto = ip[40:], ip[6]
		pseudo = append(append([]byte{}, ip[8:40]...), 0, 0, byte(len(seg)>>8), byte(len(seg)), 0, 0, 0, proto)
	}
	off := 16
	if proto == testpkt.ProtoUDP {
		off = 6
	}
	binary.BigEndian.PutUint16(seg[off:], ^reference(pseudo))
	return f
}
