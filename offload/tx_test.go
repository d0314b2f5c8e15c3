package offload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// gsoPacket builds a TCP packet as netstack hands a GSO packet down: its
// checksum field holds junk (netstack leaves the pseudo-header sum),
// with payload bytes, flags, a timestamp option and, for IPv4, an IP ID.
func gsoPacket(src, dst netip.Addr, seq uint32, flags header.TCPFlags, id uint16, payload []byte) []byte {
	opts := []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2} // NOP NOP TS
	tcp := make(header.TCP, header.TCPMinimumSize+len(opts)+len(payload))
	tcp.Encode(&header.TCPFields{SrcPort: 40000, DstPort: 7000, SeqNum: seq, AckNum: 77, DataOffset: uint8(header.TCPMinimumSize + len(opts)),
		Flags: flags, WindowSize: 512, Checksum: 0xbeef})
	copy(tcp[header.TCPMinimumSize:], opts)
	copy(tcp[header.TCPMinimumSize+len(opts):], payload)
	var ip []byte
	var etype uint16
	if src.Is4() {
		etype = testpkt.EtherTypeIPv4
		h := make(header.IPv4, header.IPv4MinimumSize)
		h.Encode(&header.IPv4Fields{TotalLength: uint16(min(len(h)+len(tcp), 0xffff)), ID: id, Flags: header.IPv4FlagDontFragment, TTL: 64,
			Protocol: uint8(header.TCPProtocolNumber), SrcAddr: tcpip.AddrFrom4(src.As4()), DstAddr: tcpip.AddrFrom4(dst.As4())})
		h.SetChecksum(^h.CalculateChecksum())
		ip = append([]byte(h), tcp...)
	} else {
		etype = testpkt.EtherTypeIPv6
		h := make(header.IPv6, header.IPv6MinimumSize)
		h.Encode(&header.IPv6Fields{PayloadLength: uint16(min(len(tcp), 0xffff)), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64,
			SrcAddr: tcpip.AddrFrom16(src.As16()), DstAddr: tcpip.AddrFrom16(dst.As16())})
		ip = append([]byte(h), tcp...)
	}
	return testpkt.Eth(etype, ip)
}

// split cuts b at random points (odd ones included) into views, as
// netstack's buffer chunks arrive.
func split(rng *rand.Rand, b []byte, max int) [][]byte {
	var v [][]byte
	for len(b) > 0 && len(v) < max-1 {
		n := 1 + rng.IntN(min(len(b), 3000))
		v = append(v, b[:n])
		b = b[n:]
	}
	if len(b) > 0 {
		v = append(v, b)
	}
	return v
}

// checkSegment parses one produced frame with gVisor's header package and
// checks it against the original packet's segment i.
func checkSegment(t *testing.T, f []byte, v6 bool, seq0 uint32, id0 uint16, flags header.TCPFlags, mss, i, n int, payload []byte) {
	t.Helper()
	if header.Ethernet(f).Type() != map[bool]tcpip.NetworkProtocolNumber{false: header.IPv4ProtocolNumber, true: header.IPv6ProtocolNumber}[v6] {
		t.Fatalf("segment %d: ethertype %v", i, header.Ethernet(f).Type())
	}
	ipb := f[header.EthernetMinimumSize:]
	var tcp header.TCP
	var src, dst tcpip.Address
	if v6 {
		ip := header.IPv6(ipb)
		if !ip.IsValid(len(ipb)) || int(ip.PayloadLength())+header.IPv6MinimumSize != len(ipb) {
			t.Fatalf("segment %d: IPv6 payload length %d, frame IP bytes %d", i, ip.PayloadLength(), len(ipb))
		}
		tcp, src, dst = header.TCP(ip.Payload()), ip.SourceAddress(), ip.DestinationAddress()
	} else {
		ip := header.IPv4(ipb)
		if !ip.IsValid(len(ipb)) || int(ip.TotalLength()) != len(ipb) || !ip.IsChecksumValid() {
			t.Fatalf("segment %d: IPv4 total length %d, frame IP bytes %d, header checksum valid %v", i, ip.TotalLength(), len(ipb), ip.IsChecksumValid())
		}
		if ip.ID() != id0+uint16(i) {
			t.Fatalf("segment %d: IP ID %d, want %d", i, ip.ID(), id0+uint16(i))
		}
		tcp, src, dst = header.TCP(ip.Payload()), ip.SourceAddress(), ip.DestinationAddress()
	}
	data := tcp.Payload()
	want := payload[min(i*mss, len(payload)):min((i+1)*mss, len(payload))]
	if mss == 0 {
		want = payload
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("segment %d: %d payload bytes differ from the original's %d", i, len(data), len(want))
	}
	if !tcp.IsChecksumValid(src, dst, checksum.Checksum(data, 0), uint16(len(data))) {
		t.Fatalf("segment %d: bad TCP checksum %#04x", i, tcp.Checksum())
	}
	if got := tcp.SequenceNumber(); got != seq0+uint32(i*mss) {
		t.Fatalf("segment %d: seq %d, want %d", i, got, seq0+uint32(i*mss))
	}
	wantFlags := flags
	if i != n-1 {
		wantFlags &^= header.TCPFlagFin | header.TCPFlagPsh
	}
	if i != 0 {
		wantFlags &^= header.TCPFlagCwr
	}
	if tcp.Flags() != wantFlags {
		t.Fatalf("segment %d of %d: flags %v, want %v", i, n, tcp.Flags(), wantFlags)
	}
	if tcp.AckNumber() != 77 || tcp.WindowSize() != 512 || tcp.DataOffset() != 32 {
		t.Fatalf("segment %d: ack %d window %d data offset %d", i, tcp.AckNumber(), tcp.WindowSize(), tcp.DataOffset())
	}
}

func TestTxSegmentsTCP(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	frame := make([]byte, 4096)
	flags := header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin | header.TCPFlagCwr
	var tx Tx
	for _, v6 := range []bool{false, true} {
		src, dst := addr4a, addr4b
		if v6 {
			src, dst = addr6a, addr6b
		}
		for _, c := range []struct{ payload, mss int }{{0, 1448}, {1, 1448}, {1448, 1448}, {1449, 1448}, {65000, 1448}, {64000, 1428},
			{9000, 3000}, {10001, 536}, {333, 7}, {65483, 1448}} {
			payload := randBytes(uint64(c.payload), c.payload)
			seq := rng.Uint32() // wraps around 2^32 sometimes
			id := uint16(rng.Uint32())
			pkt := gsoPacket(src, dst, seq, flags, id, payload)
			l4 := 14 + 20
			if v6 {
				l4 = 14 + 40
			}
			if err := tx.Reset(split(rng, pkt, 20), l4, 6, c.mss); err != nil {
				t.Fatal(err)
			}
			n := tx.Segments()
			if want := max(1, (c.payload+c.mss-1)/c.mss); n != want {
				t.Fatalf("%+v: %d segments, want %d", c, n, want)
			}
			var stream []byte
			for i := 0; i < n; i++ {
				l, err := tx.WriteSegment(frame, i)
				if err != nil {
					t.Fatal(err)
				}
				if l != tx.SegmentLen(i) {
					t.Fatalf("segment %d: wrote %d, SegmentLen %d", i, l, tx.SegmentLen(i))
				}
				mss := c.mss
				if n == 1 {
					mss = 0
				}
				checkSegment(t, frame[:l], v6, seq, id, flags, mss, i, n, payload)
				stream = append(stream, header.TCP(frame[l4:l]).Payload()...)
			}
			if !bytes.Equal(stream, payload) {
				t.Fatalf("%+v: reassembled stream differs", c)
			}
		}
	}
}

// Segments written out of order, or again (a retry after the TX ring
// filled), come out the same.
func TestTxSegmentsAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	payload := randBytes(3, 20000)
	pkt := gsoPacket(addr4a, addr4b, 1000, header.TCPFlagAck|header.TCPFlagPsh, 9, payload)
	var tx Tx
	if err := tx.Reset(split(rng, pkt, 9), 34, 6, 1000); err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, tx.Segments())
	for i := range want {
		want[i] = make([]byte, 2048)
		n, _ := tx.WriteSegment(want[i], i)
		want[i] = want[i][:n]
	}
	frame := make([]byte, 2048)
	for _, i := range rng.Perm(len(want)) {
		n, err := tx.WriteSegment(frame, i)
		if err != nil || !bytes.Equal(frame[:n], want[i]) {
			t.Fatalf("segment %d out of order differs (%v)", i, err)
		}
	}
}

// A packet without segmentation (TCP, UDP, over IPv4 and IPv6) gets a
// valid checksum whatever its field held; other protocols are copied.
func TestTxChecksumOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	var tx Tx
	frame := make([]byte, 9100)
	for _, n := range []int{0, 1, 2, 3, 63, 64, 127, 128, 129, 1400, 1460, 8900} {
		payload := randBytes(uint64(n), n)
		for _, mk := range []func([]byte) []byte{tcpFrame4, tcpFrame6, udpFrame4, udpFrame6} {
			want := mk(payload)
			pkt := append([]byte(nil), want...)
			var l4 int
			var proto uint8
			if binary.BigEndian.Uint16(pkt[12:]) == testpkt.EtherTypeIPv4 {
				l4, proto = 34, pkt[14+9]
			} else {
				l4, proto = 54, pkt[14+6]
			}
			off := 16
			if proto == testpkt.ProtoUDP {
				off = 6
			}
			pkt[l4+off], pkt[l4+off+1] = 0x12, 0x34 // junk, as netstack may leave
			if err := tx.Reset(split(rng, pkt, 5), l4, proto, 0); err != nil {
				t.Fatal(err)
			}
			if tx.Segments() != 1 {
				t.Fatalf("%d segments", tx.Segments())
			}
			l, err := tx.WriteSegment(frame, 0)
			if err != nil || !bytes.Equal(frame[:l], want) {
				t.Fatalf("payload %d proto %d: frame differs from the reference's (%v)", n, proto, err)
			}
			if Verify(frame[:l]) != Valid {
				t.Fatalf("payload %d proto %d: Verify %v", n, proto, Verify(frame[:l]))
			}
		}
	}
	arp := testpkt.ARP(1, addr4a, addr4b)
	if err := tx.Reset(split(rng, arp, 3), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if l, err := tx.WriteSegment(frame, 0); err != nil || !bytes.Equal(frame[:l], arp) {
		t.Fatalf("ARP copy differs (%v)", err)
	}
}

func TestTxErrors(t *testing.T) {
	var tx Tx
	pkt := gsoPacket(addr4a, addr4b, 1, header.TCPFlagAck, 1, make([]byte, 3000))
	for _, c := range []struct {
		name  string
		bufs  [][]byte
		l4    int
		proto uint8
		mss   int
	}{
		{"short", [][]byte{pkt[:10]}, 34, 6, 0},
		{"l4 inside IPv4 header", [][]byte{pkt}, 20, 6, 1000},
		{"truncated TCP", [][]byte{pkt[:40]}, 34, 6, 1000},
		{"UDP segmentation", [][]byte{udpFrame4(make([]byte, 3000))}, 34, 17, 1000},
		{"ICMP segmentation", [][]byte{pkt}, 34, 1, 1000},
		{"not IP", [][]byte{testpkt.ARP(1, addr4a, addr4b)}, 34, 6, 0},
	} {
		if err := tx.Reset(c.bufs, c.l4, c.proto, c.mss); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := tx.Reset([][]byte{pkt}, 34, 6, 2000); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.WriteSegment(make([]byte, 1500), 0); !errors.Is(err, ErrFrameTooSmall) {
		t.Errorf("small frame: %v", err)
	}
	if _, err := tx.WriteSegment(make([]byte, 4096), 2); !errors.Is(err, ErrMalformed) {
		t.Errorf("segment out of range: %v", err)
	}
}

func TestTxAllocatesNothing(t *testing.T) {
	pkt := gsoPacket(addr6a, addr6b, 1, header.TCPFlagAck, 1, make([]byte, 60000))
	bufs := split(rand.New(rand.NewPCG(1, 1)), pkt, 8)
	frame := make([]byte, 4096)
	var tx Tx
	if a := testing.AllocsPerRun(100, func() {
		tx.Reset(bufs, 54, 6, 1440)
		for i := 0; i < tx.Segments(); i++ {
			tx.WriteSegment(frame, i)
		}
	}); a != 0 {
		t.Errorf("%v allocations per packet", a)
	}
}

// BenchmarkTxSegment cuts a 64 KiB GSO packet into 1448-byte segments,
// checksums included, against netstack's way of sending the same bytes:
// a checksum pass per segment, then the copy into the frame.
func BenchmarkTxSegment(b *testing.B) {
	payload := randBytes(1, 65000)
	pkt := gsoPacket(addr4a, addr4b, 1, header.TCPFlagAck, 1, payload)
	bufs := [][]byte{pkt[:66], pkt[66:]}
	umem := make([]byte, 4096*64)
	var tx Tx
	b.Run("ustack-gso", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			tx.Reset(bufs, 34, 6, 1448)
			for i := 0; i < tx.Segments(); i++ {
				tx.WriteSegment(umem[4096*i:], i)
			}
		}
	})
	b.Run("checksum-then-copy", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			for i := 0; i*1448 < len(payload); i++ {
				seg := payload[i*1448 : min((i+1)*1448, len(payload))]
				checksum.Checksum(seg, 0)
				copy(umem[4096*i+66:], seg)
				copy(umem[4096*i:], pkt[:66])
			}
		}
	})
}

// FuzzTx feeds arbitrary packets, cut anywhere, to Reset and
// WriteSegment: no panic, and every segment a TCP packet yields checks out
// against the header package.
func FuzzTx(f *testing.F) {
	f.Add(gsoPacket(addr4a, addr4b, 5, header.TCPFlagAck|header.TCPFlagFin, 3, make([]byte, 5000)), uint16(34), uint8(6), uint16(1448), uint64(1))
	f.Add(gsoPacket(addr6a, addr6b, 5, header.TCPFlagAck, 3, make([]byte, 3000)), uint16(54), uint8(6), uint16(1000), uint64(2))
	f.Add(udpFrame6([]byte("x")), uint16(54), uint8(17), uint16(0), uint64(3))
	f.Fuzz(func(t *testing.T, pkt []byte, l4 uint16, proto uint8, mss uint16, seed uint64) {
		var tx Tx
		if tx.Reset(split(rand.New(rand.NewPCG(seed, 0)), pkt, 6), int(l4), proto, int(mss)) != nil {
			return
		}
		frame := make([]byte, 4096)
		var got int
		for i := 0; i < tx.Segments(); i++ {
			n, err := tx.WriteSegment(frame, i)
			if err != nil {
				if !errors.Is(err, ErrFrameTooSmall) {
					t.Fatal(err)
				}
				return
			}
			got += max(0, n-tx.hdrLen)
		}
		if proto == 6 && got != len(pkt)-tx.hdrLen {
			t.Fatalf("%d payload bytes out of %d", got, len(pkt)-tx.hdrLen)
		}
	})
}
