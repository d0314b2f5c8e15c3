package offload

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// TestWriteTCPFrame: for IPv4 and IPv6 packets of every small size and
// some large ones, with the payload cut anywhere (odd pieces included)
// and junk in the checksum field, WriteTCPFrame writes the frame the
// reference builder makes, and it verifies.
func TestWriteTCPFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	frame := make([]byte, 9100)
	for n := 0; n < 1500; n += 1 + n/16 {
		payload := randBytes(uint64(n), n)
		for _, mk := range []func([]byte) []byte{tcpFrame4, tcpFrame6} {
			want := mk(payload)
			pkt := append([]byte(nil), want...)
			l4 := 34
			if pkt[12] == 0x86 {
				l4 = 54
			}
			hl := l4 + int(pkt[l4+12]>>4)*4
			pkt[l4+16], pkt[l4+17] = 0xde, 0xad
			l, err := WriteTCPFrame(frame, pkt[:hl], split(rng, pkt[hl:], 6))
			if err != nil || !bytes.Equal(frame[:l], want) {
				t.Fatalf("payload %d, l4 at %d: frame differs from the reference's (%v)", n, l4, err)
			}
			if Verify(frame[:l]) != Valid {
				t.Fatalf("payload %d: Verify %v", n, Verify(frame[:l]))
			}
		}
	}
	// With a timestamp option, as netstack sends.
	pkt := gsoPacket(addr4a, addr4b, 9, header.TCPFlagAck|header.TCPFlagPsh, 3, randBytes(7, 333))
	l, err := WriteTCPFrame(frame, pkt[:66], split(rng, pkt[66:], 4))
	// All but the checksum field (junk in gsoPacket's) as given.
	if err != nil || Verify(frame[:l]) != Valid || !bytes.Equal(frame[:50], pkt[:50]) || !bytes.Equal(frame[52:l], pkt[52:]) {
		t.Fatalf("timestamped segment: %v, Verify %v", err, Verify(frame[:l]))
	}
}

// TestWriteTCPFrameErrors: headers that are not Ethernet, plain IP and
// TCP whole, and frames too small, fail cleanly.
func TestWriteTCPFrameErrors(t *testing.T) {
	good := tcpFrame4(randBytes(3, 100))
	frame := make([]byte, 2048)
	for _, tc := range []struct {
		name string
		hdr  []byte
		err  error
	}{
		{"short", good[:40], ErrMalformed},
		{"arp ethertype", append(append([]byte(nil), good[:12]...), append([]byte{0x08, 0x06}, good[14:54]...)...), ErrMalformed},
		{"ip options", func() []byte { h := append([]byte(nil), good[:54]...); h[14] = 0x46; return h }(), ErrMalformed},
		{"udp", func() []byte { h := append([]byte(nil), good[:54]...); h[14+9] = 17; return h }(), ErrMalformed},
		{"tcp header cut", good[:50], ErrMalformed},
	} {
		if _, err := WriteTCPFrame(frame, tc.hdr, nil); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	if _, err := WriteTCPFrame(frame[:100], good[:54], [][]byte{good[54:]}); !errors.Is(err, ErrFrameTooSmall) {
		t.Errorf("small frame: %v, want ErrFrameTooSmall", err)
	}
	if n := testing.AllocsPerRun(100, func() { WriteTCPFrame(frame, good[:54], [][]byte{good[54:]}) }); n != 0 {
		t.Errorf("%.1f allocations per frame, want 0", n)
	}
}

func BenchmarkWriteTCPFrame(b *testing.B) {
	pkt := gsoPacket(addr4a, addr4b, 9, header.TCPFlagAck|header.TCPFlagPsh, 3, randBytes(7, 64))
	frame := make([]byte, 2048)
	views := [][]byte{pkt[66:]}
	b.Run("WriteTCPFrame", func(b *testing.B) {
		for b.Loop() {
			WriteTCPFrame(frame, pkt[:66], views)
		}
	})
	b.Run("Tx", func(b *testing.B) {
		var tx Tx
		bufs := [][]byte{pkt[:66], pkt[66:]}
		for b.Loop() {
			tx.Reset(bufs, 34, 6, 0)
			tx.WriteSegment(frame, 0)
		}
	})
}
