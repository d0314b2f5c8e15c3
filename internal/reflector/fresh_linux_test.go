package reflector

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/offload"
)

// TestTCPTemplate: a segment a template writes carries valid checksums
// (offload.Verify, which ustack's receive path trusts) and parses back to
// what went in, with and without timestamps, at every payload length up
// to an MTU's segment: the checksum computed in the copy is right at
// every length and alignment of the payload's end.
func TestTCPTemplate(t *testing.T) {
	src, dst := netip.MustParseAddrPort("198.18.0.20:40000"), netip.MustParseAddrPort("198.18.0.10:7000")
	smac, dmac := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	payload := make([]byte, MaxSegment(1500)+tcpTSLen)
	for i := range payload {
		payload[i] = byte(i*7 + i>>8)
	}
	out := make([]byte, 2048)
	for _, ts := range []bool{true, false} {
		var tm tcpTemplate
		tm.init(dmac, smac, src, dst, ts)
		max := MaxSegment(1500)
		if !ts {
			max += tcpTSLen
		}
		for size := 0; size <= max; size++ {
			seq, ack := uint32(0xfffffff0+size), uint32(size*3)
			n := tm.write(out, seq, ack, tcpAck|tcpPsh, 77, 99, payload[:size])
			if v := offload.Verify(out[:n]); v != offload.Valid {
				t.Fatalf("ts %v, %d bytes: %v", ts, size, v)
			}
			s, ok := parseTCP4(out[:n])
			if !ok || s.src != src || s.dst != dst || s.seq != seq || s.ack != ack || s.flags != tcpAck|tcpPsh ||
				s.ts != ts || ts && (s.tsval != 77 || s.tsecr != 99) || !bytes.Equal(s.payload, payload[:size]) ||
				!bytes.Equal(out[0:6], dmac) || !bytes.Equal(out[6:12], smac) || n-ethLen > 1500 {
				t.Fatalf("ts %v, %d bytes: parsed %+v, %v", ts, size, s, ok)
			}
		}
		if n := tm.write(out[:tm.n+9], 1, 1, tcpAck, 0, 0, payload[:10]); n != 0 {
			t.Errorf("ts %v: wrote %d bytes into a frame too small", ts, n)
		}
	}
	for _, bad := range [][]byte{nil, out[:ethLen+ipv4Len+tcpLen-1], make([]byte, 80)} {
		if _, ok := parseTCP4(bad); ok {
			t.Errorf("parsed %d bytes of garbage", len(bad))
		}
	}
}

// TestFreshReply: in Fresh mode the floor answers a data segment with a
// fresh frame: the client's bytes behind headers from its flow's
// template, acknowledging them, echoing the client's TSval with the
// floor's own (and no timestamps to a client that sends none), with
// valid checksums; leaves handshakes, closes and pure ACKs to replyTCP
// (-1); drops bad checksums; tells flows in one slot apart; and
// allocates nothing.
func TestFreshReply(t *testing.T) {
	r := &Responder{MAC: testpkt.MACB, IP: tcpFloor.As4()}
	var flows freshFlows
	out := make([]byte, 2048)
	ts := []byte{tcpOptNOP, tcpOptNOP, tcpOptTS, 10, 0, 0, 0x12, 0x34, 0, 0, 0, 5}
	const seq = 0xfffffff0
	for _, opts := range [][]byte{ts, nil} {
		for _, size := range []int{1, 64, 1448} {
			msg := bytes.Repeat([]byte{byte(size)}, size)
			req := segment(seq, 1, tcpAck|tcpPsh, opts, msg)
			n := flows.replyFresh(r, req, out, 4242)
			if n <= 0 {
				t.Fatalf("%d bytes (options % x): reply %d", size, opts, n)
			}
			if v := offload.Verify(out[:n]); v != offload.Valid {
				t.Fatalf("reply's checksums: %v", v)
			}
			s, ok := parseTCP4(out[:n])
			if !ok || s.src != netip.AddrPortFrom(tcpFloor, 7000) || s.dst != netip.AddrPortFrom(tcpClient, 40000) ||
				!bytes.Equal(out[0:6], req[6:12]) || !bytes.Equal(out[6:12], testpkt.MACB) {
				t.Fatalf("reply %+v to the wrong place", s)
			}
			if s.seq != seq || s.ack != seq+uint32(size) || s.flags != tcpAck|tcpPsh || !bytes.Equal(s.payload, msg) {
				t.Errorf("%d bytes: echo seq %#x ack %#x flags %#x, %d bytes", size, s.seq, s.ack, s.flags, len(s.payload))
			}
			if s.ts != (opts != nil) || s.ts && (s.tsval != 4242 || s.tsecr != 0x1234) {
				t.Errorf("%d bytes (options % x): timestamps %v %d %#x", size, opts, s.ts, s.tsval, s.tsecr)
			}
		}
	}
	// Two flows in one slot (ports 40000 and 40000^0x100 hash alike):
	// each reply goes to its own.
	other := segment(seq, 1, tcpAck|tcpPsh, ts, []byte("x"))
	binary.BigEndian.PutUint16(other[ethLen+ipv4Len:], 40000^0x100^0x1)
	fixTCPChecksum(other)
	for i, f := range [][]byte{segment(seq, 1, tcpAck|tcpPsh, ts, []byte("x")), other, segment(seq, 1, tcpAck|tcpPsh, ts, []byte("x"))} {
		n := flows.replyFresh(r, f, out, 1)
		s, _ := parseTCP4(out[:n])
		if want := binary.BigEndian.Uint16(f[ethLen+ipv4Len:]); n <= 0 || s.dst.Port() != want {
			t.Errorf("flow %d: reply to port %d, want %d", i, s.dst.Port(), want)
		}
	}

	bad := segment(seq, 1, tcpAck|tcpPsh, ts, []byte("x"))
	bad[len(bad)-1] ^= 1
	if n := flows.replyFresh(r, bad, out, 1); n != 0 || r.BadChecksums.Load() != 1 {
		t.Errorf("a bad checksum: reply %d, %d counted", n, r.BadChecksums.Load())
	}
	for name, f := range map[string][]byte{
		"a SYN":            segment(seq, 0, tcpSyn, nil, nil),
		"a FIN":            segment(seq, 1, tcpFin|tcpAck, ts, nil),
		"a pure ACK":       segment(seq, 1, tcpAck, ts, nil),
		"a RST":            segment(seq, 1, tcpRst|tcpAck, nil, nil),
		"data without ACK": segment(seq, 1, tcpPsh, nil, []byte("x")),
	} {
		if n := flows.replyFresh(r, f, out, 1); n != -1 {
			t.Errorf("%s: %d, want -1 (replyTCP's)", name, n)
		}
	}
	f := segment(seq, 1, tcpAck|tcpPsh, ts, make([]byte, 64))
	if a := testing.AllocsPerRun(100, func() { flows.replyFresh(r, f, out, 1) }); a != 0 {
		t.Errorf("%v allocations per echo", a)
	}
}

// fixTCPChecksum recomputes the TCP checksum of a frame from segment.
func fixTCPChecksum(f []byte) {
	tcp := f[ethLen+ipv4Len:]
	binary.BigEndian.PutUint16(tcp[16:], 0)
	binary.BigEndian.PutUint16(tcp[16:], ^offload.Fold(offload.Sum(tcp, offload.PseudoHeader4(f[ethLen+12:ethLen+16], f[ethLen+16:ethLen+20], protoTCP, len(tcp)))))
}
