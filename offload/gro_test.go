package offload

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// segmentFrames cuts a GSO packet into frames with Tx.
func segmentFrames(t testing.TB, pkt []byte, l4, mss int) [][]byte {
	t.Helper()
	var tx Tx
	if err := tx.Reset([][]byte{pkt}, l4, 6, mss); err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for i := 0; i < tx.Segments(); i++ {
		f := make([]byte, 10000)
		n, err := tx.WriteSegment(f, i)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f[:n])
	}
	return frames
}

// coalesce runs GRO over a batch as the worker does (FindRun, then
// Merge) and returns the frames netstack would see.
func coalesce(frames [][]byte) (out [][]byte, merged int) {
	segs := make([]Seg, 0, len(frames))
	for i := 0; i < len(frames); {
		segs = FindRun(segs, frames[i:])
		if len(segs) < 2 {
			out = append(out, frames[i])
			i++
			continue
		}
		dst := make([]byte, MergedLen(segs))
		if n := Merge(dst, frames[i:], segs); n != len(dst) {
			panic("Merge length differs from MergedLen")
		}
		out = append(out, dst)
		merged += len(segs) - 1
		i += len(segs)
	}
	return out, merged
}

// Segment, then coalesce: the original packet comes back, byte for byte
// but for the TCP checksum field, over IPv4 and IPv6.
func TestSegmentThenCoalesce(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, v6 := range []bool{false, true} {
		for _, c := range []struct{ payload, mss int }{{2 * 1448, 1448}, {64000, 1448}, {10000, 1000}, {30001, 536}, {65000 - 40, 8960}} {
			src, dst, l4 := addr4a, addr4b, 34
			if v6 {
				src, dst, l4 = addr6a, addr6b, 54
			}
			orig := gsoPacket(src, dst, rng.Uint32(), header.TCPFlagAck|header.TCPFlagPsh, uint16(rng.Uint32()), randBytes(uint64(c.payload), c.payload))
			frames := segmentFrames(t, orig, l4, c.mss)
			out, merged := coalesce(frames)
			if len(out) != 1 || merged != len(frames)-1 {
				t.Fatalf("%+v v6 %v: %d frames out of %d, %d merged", c, v6, len(out), len(frames), merged)
			}
			got := out[0]
			if len(got) != len(orig) {
				t.Fatalf("%+v: merged %d bytes, original %d", c, len(got), len(orig))
			}
			got[l4+16], got[l4+17] = orig[l4+16], orig[l4+17]
			if !bytes.Equal(got, orig) {
				t.Fatalf("%+v v6 %v: merged frame differs from the original", c, v6)
			}
		}
	}
}

// Each kind of difference GRO must not merge across ends the run there,
// and the frames pass as they were.
func TestCoalesceStops(t *testing.T) {
	base := func() [][]byte {
		return segmentFrames(t, gsoPacket(addr4a, addr4b, 1000, header.TCPFlagAck, 7, randBytes(5, 4*1000)), 34, 1000)
	}
	tcp := func(f []byte) header.TCP { return header.TCP(f[34:]) }
	for _, c := range []struct {
		name   string
		change func(fs [][]byte)
		want   int // frames netstack sees
	}{
		{"nothing", func([][]byte) {}, 1},
		{"out of order", func(fs [][]byte) { fs[1], fs[2] = fs[2], fs[1] }, 4},
		{"gap", func(fs [][]byte) { tcp(fs[2]).SetSequenceNumber(tcp(fs[2]).SequenceNumber() + 1) }, 3},
		{"other ack", func(fs [][]byte) { tcp(fs[1]).SetAckNumber(5) }, 3},
		{"other window", func(fs [][]byte) { tcp(fs[3]).SetWindowSize(5) }, 2},
		{"other timestamp", func(fs [][]byte) { fs[2][34+20+11]++ }, 3},
		{"FIN", func(fs [][]byte) { fs[3][34+13] |= 1 }, 2},
		{"SYN", func(fs [][]byte) { fs[0][34+13] |= 2 }, 2},
		{"URG", func(fs [][]byte) { fs[1][34+13] |= 0x20 }, 3},
		{"ECE", func(fs [][]byte) { fs[2][34+13] |= 0x40 }, 3},
		{"CWR", func(fs [][]byte) { fs[0][34+13] |= 0x80 }, 2},
		{"ECN CE", func(fs [][]byte) { fs[1][14+1] |= 3 }, 3},
		{"other TTL", func(fs [][]byte) { fs[2][14+8]-- }, 3},
		{"other port", func(fs [][]byte) { fs[3][34+1]++ }, 2},
		{"PSH in the middle", func(fs [][]byte) { fs[1][34+13] |= 0x08 }, 2},
		{"short in the middle", func(fs [][]byte) {
			ip := header.IPv4(fs[1][14:])
			ip.SetTotalLength(ip.TotalLength() - 1)
			fs[1] = fs[1][:len(fs[1])-1]
		}, 2},
		{"fragment", func(fs [][]byte) { fs[2][14+6] |= 0x20 }, 3},
		{"not TCP", func(fs [][]byte) { fs[1][14+9] = 17 }, 3},
	} {
		fs := base()
		c.change(fs)
		out, _ := coalesce(fs)
		if len(out) != c.want {
			t.Errorf("%s: %d frames, want %d", c.name, len(out), c.want)
		}
	}
}

// The merged frames parse with gVisor's header package: lengths right,
// IPv4 header checksum right, the payloads in order.
func TestCoalescedHeaders(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		src, dst, l4 := addr4a, addr4b, 34
		if v6 {
			src, dst, l4 = addr6a, addr6b, 54
		}
		payload := randBytes(9, 50000)
		frames := segmentFrames(t, gsoPacket(src, dst, 1, header.TCPFlagAck, 3, payload), l4, 1448)
		out, _ := coalesce(frames[:20]) // a batch boundary in the middle
		if len(out) != 1 {
			t.Fatalf("%d frames", len(out))
		}
		f := out[0]
		var data []byte
		if v6 {
			ip := header.IPv6(f[14:])
			if int(ip.PayloadLength())+40 != len(f)-14 {
				t.Fatalf("IPv6 payload length %d, %d bytes", ip.PayloadLength(), len(f)-14)
			}
			data = header.TCP(ip.Payload()).Payload()
		} else {
			ip := header.IPv4(f[14:])
			if !ip.IsValid(len(f)-14) || !ip.IsChecksumValid() || int(ip.TotalLength()) != len(f)-14 {
				t.Fatalf("IPv4 header: total length %d, checksum valid %v", ip.TotalLength(), ip.IsChecksumValid())
			}
			data = header.TCP(ip.Payload()).Payload()
		}
		if !bytes.Equal(data, payload[:20*1448]) {
			t.Fatal("merged payload differs")
		}
	}
}

// FindRun reuses the caller's segs, and a batch too short to merge or a
// first frame that is not a plain TCP segment gives no run.
func TestFindRun(t *testing.T) {
	frames := segmentFrames(t, gsoPacket(addr4a, addr4b, 1, header.TCPFlagAck, 3, randBytes(9, 8*1448)), 34, 1448)
	segs := make([]Seg, 0, len(frames))
	for _, c := range []struct {
		name   string
		frames [][]byte
		want   int
	}{
		{"none", nil, 0},
		{"one", frames[:1], 0},
		{"all", frames, len(frames)},
		{"first not TCP", append([][]byte{frames[0][:20]}, frames[1:]...), 0},
		{"other flow second", [][]byte{frames[0], otherPort(frames[1])}, 0},
		{"other flow third", [][]byte{frames[0], frames[1], otherPort(frames[2])}, 2},
	} {
		if got := FindRun(segs, c.frames); len(got) != c.want {
			t.Errorf("%s: run of %d, want %d", c.name, len(got), c.want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { segs = FindRun(segs, frames) }); a != 0 {
		t.Errorf("FindRun: %.1f allocations, want 0", a)
	}
}

// otherPort returns a copy of frame f with its TCP source port changed:
// another flow's segment (its checksum no longer matters to FindRun).
func otherPort(f []byte) []byte {
	g := append([]byte(nil), f...)
	g[34]++
	return g
}

func BenchmarkCoalesce(b *testing.B) {
	frames := segmentFrames(b, gsoPacket(addr4a, addr4b, 1, header.TCPFlagAck, 3, randBytes(9, 44*1448)), 34, 1448)
	dst := make([]byte, 65536)
	segs := make([]Seg, 0, 64)
	b.SetBytes(int64(44 * 1448))
	b.ReportAllocs()
	for b.Loop() {
		if segs = FindRun(segs, frames); len(segs) != len(frames) {
			b.Fatalf("merged %d of %d segments", len(segs), len(frames))
		}
		Merge(dst, frames, segs)
	}
}

// FuzzGRO feeds a batch of arbitrary frames (cut from the input at the
// lengths it starts with) to the coalescing path: no panic, and every
// merged frame holds exactly the payloads of the frames it replaced, with
// a valid IPv4 header checksum and consistent lengths.
func FuzzGRO(f *testing.F) {
	frames := segmentFrames(f, gsoPacket(addr4a, addr4b, 1, header.TCPFlagAck|header.TCPFlagPsh, 3, randBytes(9, 5000)), 34, 1000)
	frames6 := segmentFrames(f, gsoPacket(addr6a, addr6b, 1, header.TCPFlagAck, 3, randBytes(9, 3000)), 54, 1000)
	f.Add(batchInput(frames))
	f.Add(batchInput(frames6))
	f.Add(batchInput(append(frames6, frames...)))
	f.Fuzz(func(t *testing.T, in []byte) {
		var batch [][]byte
		for len(in) >= 2 && len(batch) < 64 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			n = min(n, len(in))
			batch = append(batch, in[:n:n])
			in = in[n:]
		}
		var want []byte
		for _, fr := range batch {
			if s, ok := ParseTCP(fr); ok {
				want = append(want, fr[s.Payload:s.Payload+s.Len]...)
			}
		}
		out, _ := coalesce(batch)
		var got []byte
		for _, fr := range out {
			s, ok := ParseTCP(fr)
			if !ok {
				continue
			}
			if binary.BigEndian.Uint16(fr[12:]) == etherTypeIPv4 && checksum.Checksum(fr[14:34], 0) != 0xffff {
				// Frames passed as is may carry any checksum; merged
				// ones must have a valid one.
				if !containsFrame(batch, fr) {
					t.Fatal("merged frame with a bad IPv4 header checksum")
				}
			}
			got = append(got, fr[s.Payload:s.Payload+s.Len]...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("payload stream changed: %d bytes in, %d out", len(want), len(got))
		}
	})
}

func containsFrame(batch [][]byte, f []byte) bool {
	for _, b := range batch {
		if bytes.Equal(b, f) {
			return true
		}
	}
	return false
}

func batchInput(frames [][]byte) []byte {
	var in []byte
	for _, f := range frames {
		in = binary.BigEndian.AppendUint16(in, uint16(len(f)))
		in = append(in, f...)
	}
	return in
}
