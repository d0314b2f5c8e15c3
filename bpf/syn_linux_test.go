package bpf

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
)

// synFrame is a SYN from peer4:40000 to own4:tcpOwn with sequence number
// seq and options opts (padded by the caller to a multiple of 4).
func synFrame(seq uint32, opts []byte) []byte {
	seg := make([]byte, 20+len(opts))
	binary.BigEndian.PutUint16(seg[0:], 40000)
	binary.BigEndian.PutUint16(seg[2:], tcpOwn)
	binary.BigEndian.PutUint32(seg[4:], seq)
	seg[12] = byte(len(seg)/4) << 4
	seg[13] = 0x02
	binary.BigEndian.PutUint16(seg[14:], 64240)
	copy(seg[20:], opts)
	sum := testpkt.Checksum(append(testpkt.PseudoHeader(peer4, own4, 6, len(seg)), seg...))
	binary.BigEndian.PutUint16(seg[16:], sum)
	return testpkt.IPv4(peer4, own4, 6, seg)
}

// TestPrivilegedXDPSynAck: with a listener's SYNs answered in the
// program, a SYN gets the SYN-ACK netstack's listener would send with a
// cookie (tcp.SynKeys computes it), its checksums correct, sent back
// (XDP_TX); after the deadline, with a wrong checksum or with an ACK it
// goes to the socket.
func TestPrivilegedXDPSynAck(t *testing.T) {
	p := loadOwned(t)
	keys := tcp.SynKeys{TSOffset: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}
	for i := range keys.Cookie {
		for j := range keys.Cookie[i] {
			keys.Cookie[i][j] = byte(100*i + 7*j + 3)
		}
	}
	base := Monotonic() / 2
	if err := p.SetSynKeys(SynKeys{Cookie: keys.Cookie, TSOffset: keys.TSOffset, MonoBase: base}); err != nil {
		t.Fatal(err)
	}
	ans := SynAnswer{Until: Monotonic() + time.Minute, MSS: 1460, Window: 65535, WndScale: 7, SACK: true, TTL: 64, TOS: 0}
	if err := p.AnswerSyns(own4, tcpOwn, ans); err != nil {
		t.Fatal(err)
	}
	id := stack.TransportEndpointID{LocalPort: tcpOwn, LocalAddress: tcpip.AddrFrom4(own4.As4()), RemotePort: 40000, RemoteAddress: tcpip.AddrFrom4(peer4.As4())}
	linuxOpts := []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0x30, 0x39, 0, 0, 0, 0, 1, 3, 3, 9}

	for _, c := range []struct {
		name      string
		opts      []byte
		mssIdx    uint32
		wantTS    bool
		wantWS    bool
		wantSACK  bool
		tsOptBits uint32
	}{
		{"linux", linuxOpts, 3, true, true, true, 9 | 1<<4},
		{"no-options", nil, 0, false, false, false, 0},
		{"ts-only", []byte{1, 1, 8, 10, 0, 0, 0x30, 0x39, 0, 0, 0, 0, 2, 4, 0x05, 0x14}, 1, true, false, false, 0xf},
	} {
		t.Run(c.name, func(t *testing.T) {
			const seq = 0x11223344
			before := Monotonic()
			v, out, err := p.RunOut(synFrame(seq, c.opts))
			after := Monotonic()
			if err != nil {
				t.Fatal(err)
			}
			if v != VerdictTX {
				t.Fatalf("verdict %v, want tx", v)
			}
			if len(out) != 74 {
				t.Fatalf("SYN-ACK of %d bytes, want 74", len(out))
			}
			if string(out[0:6]) != string(testpkt.MACA) || string(out[6:12]) != string(testpkt.MACB) {
				t.Errorf("MACs %x > %x, not swapped", out[6:12], out[0:6])
			}
			ip := out[14:34]
			if testpkt.Checksum(ip) != 0 {
				t.Error("IPv4 header checksum wrong")
			}
			if ip[0] != 0x45 || binary.BigEndian.Uint16(ip[2:]) != 60 || ip[6]&0x40 == 0 || ip[8] != 64 || ip[9] != 6 {
				t.Errorf("IPv4 header %x", ip)
			}
			if netip.AddrFrom4([4]byte(ip[12:16])) != own4 || netip.AddrFrom4([4]byte(ip[16:20])) != peer4 {
				t.Errorf("addresses %x", ip[12:20])
			}
			th := out[34:]
			if testpkt.Checksum(append(testpkt.PseudoHeader(own4, peer4, 6, len(th)), th...)) != 0 {
				t.Error("TCP checksum wrong")
			}
			if binary.BigEndian.Uint16(th[0:]) != tcpOwn || binary.BigEndian.Uint16(th[2:]) != 40000 || th[13] != 0x12 || binary.BigEndian.Uint16(th[14:]) != 65535 {
				t.Errorf("TCP header %x", th[:20])
			}
			if ack := binary.BigEndian.Uint32(th[8:]); ack != seq+1 {
				t.Errorf("ack %#x, want %#x", ack, seq+1)
			}
			cookie := binary.BigEndian.Uint32(th[4:])
			ok := false
			for _, mono := range []time.Duration{before - base, after - base} {
				if cookie == keys.MakeCookie(id, seq, c.mssIdx, tcp.CookieSlot(mono)) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("cookie %#x is not the listener's", cookie)
			}
			// Options.
			var mss uint16
			ws, sack, ts := -1, false, false
			var tsval, tsecr uint32
			for o := th[20:40]; len(o) > 0; {
				switch o[0] {
				case 0:
					o = nil
					continue
				case 1:
					o = o[1:]
					continue
				}
				switch o[0] {
				case 2:
					mss = binary.BigEndian.Uint16(o[2:])
				case 3:
					ws = int(o[2])
				case 4:
					sack = true
				case 8:
					ts, tsval, tsecr = true, binary.BigEndian.Uint32(o[2:]), binary.BigEndian.Uint32(o[6:])
				}
				o = o[o[1]:]
			}
			if mss != 1460 || (ws == 7) != c.wantWS || sack != c.wantSACK || ts != c.wantTS {
				t.Errorf("options: mss %d ws %d sack %v ts %v; want ws %v sack %v ts %v", mss, ws, sack, ts, c.wantWS, c.wantSACK, c.wantTS)
			}
			if ts {
				if tsecr != 12345 {
					t.Errorf("TSecr %d, want the SYN's TSval 12345", tsecr)
				}
				if tsval&0x3f != c.tsOptBits {
					t.Errorf("TSval low bits %#x, want %#x", tsval&0x3f, c.tsOptBits)
				}
				off := keys.TSOffsetOf(id.LocalAddress, id.RemoteAddress)
				hi := uint32((after - base).Milliseconds()) + off
				lo := uint32((before - base).Milliseconds()) + off - 64
				if tsval-lo > hi-lo {
					t.Errorf("TSval %d outside [%d, %d]: not the listener's clock", tsval, lo, hi)
				}
			}
		})
	}

	// To the socket: a wrong checksum, a SYN-ACK, a SYN from a multicast
	// MAC, past the deadline.
	bad := synFrame(1, linuxOpts)
	bad[len(bad)-1] ^= 0xff
	ack := synFrame(1, linuxOpts)
	ack[14+20+13] = 0x12
	if got, _ := runReason(t, p, bad); got != RedirectPort {
		t.Errorf("SYN with a wrong checksum: %v, want redirect_port", got)
	}
	if got, _ := runReason(t, p, ack); got != RedirectPort {
		t.Errorf("SYN-ACK: %v, want redirect_port", got)
	}
	mcast := synFrame(1, linuxOpts)
	mcast[6] |= 1
	if got, _ := runReason(t, p, mcast); got != RedirectPort {
		t.Errorf("SYN from a multicast MAC: %v, want redirect_port", got)
	}
	ans.Until = Monotonic() - time.Millisecond
	if err := p.AnswerSyns(own4, tcpOwn, ans); err != nil {
		t.Fatal(err)
	}
	if got, _ := runReason(t, p, synFrame(1, linuxOpts)); got != RedirectPort {
		t.Errorf("SYN past the deadline: %v, want redirect_port", got)
	}
	if err := p.StopSyns(own4, tcpOwn); err != nil {
		t.Fatal(err)
	}
	if err := p.AnswerSyns(own6, tcpOwn, ans); err == nil {
		t.Error("AnswerSyns took an IPv6 listener")
	}
}
