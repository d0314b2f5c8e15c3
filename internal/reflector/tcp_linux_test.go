package reflector

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/offload"
)

var (
	tcpClient = netip.MustParseAddr("198.18.0.20")
	tcpFloor  = netip.MustParseAddr("198.18.0.10")
)

// segment returns a frame from the client to the floor: a TCP segment
// with the given sequence numbers, flags, options and payload, in a
// buffer with room to spare after it.
func segment(seq, ack uint32, flags byte, opts, payload []byte) []byte {
	seg := make([]byte, 20+len(opts), 20+len(opts)+len(payload))
	binary.BigEndian.PutUint16(seg[0:], 40000)
	binary.BigEndian.PutUint16(seg[2:], 7000)
	binary.BigEndian.PutUint32(seg[4:], seq)
	binary.BigEndian.PutUint32(seg[8:], ack)
	seg[12] = byte((20+len(opts))/4) << 4
	seg[13] = flags
	binary.BigEndian.PutUint16(seg[14:], 502)
	copy(seg[20:], opts)
	seg = append(seg, payload...)
	binary.BigEndian.PutUint16(seg[16:], testpkt.Checksum(append(testpkt.PseudoHeader(tcpClient, tcpFloor, testpkt.ProtoTCP, len(seg)), seg...)))
	f := testpkt.IPv4(tcpClient, tcpFloor, testpkt.ProtoTCP, seg)
	return append(make([]byte, 0, len(f)+256), f...)
}

// reply checks that r answers f with a valid frame from the floor back
// to the client and returns its TCP header fields and payload.
func reply(t *testing.T, r *Responder, f []byte) (seq, ack uint32, flags byte, opts, payload []byte) {
	t.Helper()
	req := append([]byte(nil), f...)
	n := r.Reply(f)
	if n == 0 {
		t.Fatal("no reply")
	}
	f = f[:n]
	if v := offload.Verify(f); v != offload.Valid {
		t.Fatalf("reply's checksums: %v", v)
	}
	ip := f[ethLen:]
	if !bytes.Equal(f[0:6], req[6:12]) || !bytes.Equal(f[6:12], req[0:6]) {
		t.Error("MACs not swapped")
	}
	if [4]byte(ip[12:16]) != tcpFloor.As4() || [4]byte(ip[16:20]) != tcpClient.As4() || ip[0] != 0x45 || int(binary.BigEndian.Uint16(ip[2:])) != n-ethLen {
		t.Errorf("IP header % x", ip[:20])
	}
	tcp := ip[ipv4Len:]
	if binary.BigEndian.Uint16(tcp[0:]) != 7000 || binary.BigEndian.Uint16(tcp[2:]) != 40000 || binary.BigEndian.Uint16(tcp[14:]) != 0xffff {
		t.Errorf("TCP header % x", tcp[:20])
	}
	doff := int(tcp[12]>>4) * 4
	return binary.BigEndian.Uint32(tcp[4:]), binary.BigEndian.Uint32(tcp[8:]), tcp[13], tcp[20:doff], tcp[doff:]
}

// TestTCPEcho: the floor's TCP echo answers a handshake, data cut
// anywhere and a close the way a client's TCP expects from an echo
// server, with the client's own sequence space, and nothing else.
func TestTCPEcho(t *testing.T) {
	r := &Responder{MAC: testpkt.MACB, IP: tcpFloor.As4()}
	const isn = 0xfffffff0 // wraps within the test
	linuxSyn := []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7}
	for _, opts := range [][]byte{linuxSyn, nil} {
		seq, ack, flags, o, payload := reply(t, r, segment(isn, 0, tcpSyn, opts, nil))
		if seq != isn || ack != isn+1 || flags != tcpSyn|tcpAck || !bytes.Equal(o, []byte{2, 4, 0x05, 0xb4}) || len(payload) != 0 {
			t.Errorf("SYN (%d bytes of options): SYN-ACK seq %#x ack %#x flags %#x options % x", len(opts), seq, ack, flags, o)
		}
	}
	next := uint32(isn + 1)
	for _, size := range []int{1, 64, 1460} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		seq, ack, flags, _, payload := reply(t, r, segment(next, isn+1, tcpAck|tcpPsh, nil, msg))
		if seq != next || ack != next+uint32(size) || flags != tcpAck|tcpPsh || !bytes.Equal(payload, msg) {
			t.Errorf("%d bytes at %#x: echo seq %#x ack %#x flags %#x, %d bytes", size, next, seq, ack, flags, len(payload))
		}
		next += uint32(size)
	}
	seq, ack, flags, _, _ := reply(t, r, segment(next, next, tcpFin|tcpAck, nil, nil))
	if seq != next || ack != next+1 || flags != tcpFin|tcpAck {
		t.Errorf("FIN at %#x: seq %#x ack %#x flags %#x", next, seq, ack, flags)
	}

	bad := segment(next, next, tcpAck|tcpPsh, nil, []byte("x"))
	bad[len(bad)-1] ^= 1
	wrongIP := segment(next, next, tcpAck|tcpPsh, nil, []byte("x"))
	copy(wrongIP[ethLen+16:], []byte{198, 18, 0, 99})
	for name, f := range map[string][]byte{
		"a pure ACK":        segment(next, next, tcpAck, nil, nil),
		"a RST":             segment(next, next, tcpRst|tcpAck, nil, nil),
		"a SYN-ACK":         segment(next, next, tcpSyn|tcpAck, nil, nil),
		"data without ACK":  segment(next, next, tcpPsh, nil, []byte("x")),
		"a bad checksum":    bad,
		"another's address": wrongIP,
		"a truncated frame": segment(next, next, tcpAck|tcpPsh, nil, []byte("xyz"))[:ethLen+30],
	} {
		if n := r.Reply(f); n != 0 {
			t.Errorf("%s answered (%d bytes)", name, n)
		}
	}
	if r.TCP.Load() != 6 || r.BadChecksums.Load() != 1 {
		t.Errorf("counted %d TCP replies, %d bad checksums; want 6, 1", r.TCP.Load(), r.BadChecksums.Load())
	}
	f := segment(next, next, tcpAck|tcpPsh, nil, make([]byte, 64))
	keep := append([]byte(nil), f...)
	if a := testing.AllocsPerRun(100, func() { copy(f, keep); r.Reply(f) }); a != 0 {
		t.Errorf("%v allocations per echo", a)
	}
}
