package offload

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
)

func randBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// eachImpl runs f once with each checksum loop this machine has, and
// reports the ones it lacks as skipped subtests saying why.
func eachImpl(t *testing.T, f func(t *testing.T)) {
	for _, im := range implementations() {
		t.Run(im.name, func(t *testing.T) {
			defer im.use()()
			f(t)
		})
	}
	for _, m := range missingImplementations() {
		t.Run(m.name, func(t *testing.T) { t.Skip(m.why) })
	}
}

// missingImpl is a checksum loop the build or the CPU cannot run.
type missingImpl struct{ name, why string }

// logPaths logs the checksum loops tested here and the ones skipped.
func logPaths(t *testing.T, build string) {
	var run []string
	for _, im := range implementations() {
		run = append(run, im.name)
	}
	t.Logf("offload checksum loops (%s): tested %v", build, run)
	for _, m := range missingImplementations() {
		t.Logf("offload checksum loop %s NOT tested: %s", m.name, m.why)
	}
}

// testPathsAgree checks that the loop named path (the one the build and
// CPU call for) is among the ones the tests run, and that each of them
// sums, and copies and sums, lengths around the vector loops' threshold
// (128) and blocks as the reference does.
func testPathsAgree(t *testing.T, path string) {
	t.Helper()
	var names []string
	for _, im := range implementations() {
		names = append(names, im.name)
	}
	if !slices.Contains(names, path) {
		t.Errorf("the %s loop is not among the loops tested, %v", path, names)
	}
	src, dst := randBytes(13, 9010), make([]byte, 9010)
	eachImpl(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 2, 63, 64, 65, 127, 128, 129, 191, 192, 255, 256, 257, 1500, 9001} {
			for _, off := range []int{0, 1, 7} {
				s := src[off : off+n]
				want := reference(s)
				if got := Checksum(s); got != want {
					t.Errorf("length %d at offset %d: Checksum %#04x, reference %#04x", n, off, got, want)
				}
				if c, acc := CopySum(dst[off:], s, 0); c != n || !bytes.Equal(dst[off:off+n], s) || ^Fold(acc) != want {
					t.Errorf("length %d at offset %d: CopySum copied %d, sum %#04x, reference %#04x", n, off, c, ^Fold(acc), want)
				}
			}
		}
	})
}

func TestCopySumEveryLength(t *testing.T) { eachImpl(t, testCopySumEveryLength) }

func testCopySumEveryLength(t *testing.T) {
	src := randBytes(5, 9010)
	ones := bytes.Repeat([]byte{0xff}, 9010)
	dst := make([]byte, 9010)
	for n := 0; n <= 9001; n++ {
		for _, off := range []int{0, 1, 3, -1} {
			clear(dst)
			s := src[max(off, 0) : max(off, 0)+n]
			if off < 0 { // carries in every lane
				off, s = 0, ones[:n]
			}
			got, acc := CopySum(dst[off:], s, 0)
			if got != n || !bytes.Equal(dst[off:off+n], s) {
				t.Fatalf("length %d offset %d: copied %d, bytes differ %v", n, off, got, !bytes.Equal(dst[off:off+n], s))
			}
			if c, want := ^Fold(acc), reference(s); c != want {
				t.Fatalf("length %d offset %d: sum %#04x, reference %#04x", n, off, c, want)
			}
			if dst[off+n] != 0 || off > 0 && dst[off-1] != 0 {
				t.Fatalf("length %d offset %d: wrote outside the copy", n, off)
			}
		}
	}
	// A short destination bounds the copy and the sum.
	n, acc := CopySum(dst[:100], src[:3000], 0)
	if n != 100 || ^Fold(acc) != reference(src[:100]) {
		t.Fatalf("short dst: %d bytes, sum %#04x", n, ^Fold(acc))
	}
}

func TestSumOdd(t *testing.T) { eachImpl(t, testSumOdd) }

func testSumOdd(t *testing.T) {
	b := randBytes(7, 4001)
	for cut := 1; cut < len(b); cut += 2 {
		acc := Add(Sum(b[:cut], 0), SumOdd(Sum(b[cut:], 0)))
		if got, want := ^Fold(acc), reference(b); got != want {
			t.Fatalf("odd split at %d: %#04x, want %#04x", cut, got, want)
		}
	}
}

func TestUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	b := randBytes(11, 60)
	for i := 0; i < 100000; i++ {
		sum := reference(b)
		off := 2 * rng.IntN(len(b)/2-1)
		if i%2 == 0 {
			old := binary.BigEndian.Uint16(b[off:])
			nw := uint16(rng.Uint32())
			if i%10 == 0 {
				nw = 0
			}
			binary.BigEndian.PutUint16(b[off:], nw)
			if got, want := Update16(sum, old, nw), reference(b); got != want {
				t.Fatalf("Update16 %#04x→%#04x: %#04x, want %#04x", old, nw, got, want)
			}
		} else {
			old := binary.BigEndian.Uint32(b[off:])
			nw := rng.Uint32()
			binary.BigEndian.PutUint32(b[off:], nw)
			if got, want := Update32(sum, old, nw), reference(b); got != want {
				t.Fatalf("Update32 %#x→%#x: %#04x, want %#04x", old, nw, got, want)
			}
		}
	}
}

func TestPseudoHeaders(t *testing.T) {
	a4, b4 := addr4a.AsSlice(), addr4b.AsSlice()
	want4 := reference(append(append(append([]byte{}, a4...), b4...), 0, 6, 0x05, 0xdc))
	if got := ^Fold(PseudoHeader4(a4, b4, 6, 1500)); got != want4 {
		t.Errorf("PseudoHeader4: %#04x, want %#04x", got, want4)
	}
	a6, b6 := addr6a.AsSlice(), addr6b.AsSlice()
	want6 := reference(append(append(append([]byte{}, a6...), b6...), 0, 1, 0, 4, 0, 0, 0, 17))
	if got := ^Fold(PseudoHeader6(a6, b6, 17, 65540)); got != want6 {
		t.Errorf("PseudoHeader6: %#04x, want %#04x", got, want6)
	}
}

func FuzzChecksum(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{0xff}, uint8(1))
	f.Add(randBytes(1, 1500), uint8(0))
	f.Add(randBytes(2, 9001), uint8(3))
	f.Add(bytes.Repeat([]byte{0xff}, 4096), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		want := reference(b)
		if got := Checksum(b); got != want {
			t.Fatalf("Checksum %#04x, reference %#04x", got, want)
		}
		dst := make([]byte, len(b))
		n, acc := CopySum(dst, b, 0)
		if n != len(b) || !bytes.Equal(dst, b) || ^Fold(acc) != want {
			t.Fatalf("CopySum: %d bytes, sum %#04x, reference %#04x", n, ^Fold(acc), want)
		}
		// Split anywhere, odd offsets included.
		c := min(int(cut), len(b))
		head := Sum(b[:c], 0)
		tail := Sum(b[c:], 0)
		if c%2 == 1 {
			tail = SumOdd(tail)
		}
		if got := ^Fold(Add(head, tail)); got != want {
			t.Fatalf("split at %d: %#04x, reference %#04x", c, got, want)
		}
	})
}

var benchSizes = []int{64, 128, 256, 576, 1500, 9000}

// BenchmarkChecksum compares Checksum with the checksum package of the
// netstack ustack carries, in the same run.
func BenchmarkChecksum(b *testing.B) {
	for _, n := range benchSizes {
		buf := randBytes(uint64(n), n)
		for _, im := range implementations() {
			b.Run("ustack-"+im.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				defer im.use()()
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					Checksum(buf)
				}
			})
		}
		b.Run("gvisor/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				checksum.Checksum(buf, 0)
			}
		})
	}
}

// BenchmarkCopySum compares CopySum with a plain copy of the same bytes,
// and with a copy followed by a separate Sum (two passes).
func BenchmarkCopySum(b *testing.B) {
	for _, n := range benchSizes {
		src, dst := randBytes(uint64(n), n), make([]byte, 4096+n)
		for _, im := range implementations() {
			b.Run("copysum-"+im.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				defer im.use()()
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					CopySum(dst, src, 0)
				}
			})
		}
		b.Run("copy/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				copy(dst, src)
			}
		})
		b.Run("copy+sum/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				copy(dst, src)
				Sum(dst[:n], 0)
			}
		})
	}
}

// BenchmarkCopySumUMEM is BenchmarkCopySum as the TX path meets it: each
// copy goes to the next 4 KiB frame of an 8 MiB UMEM (larger than this
// machine's caches per core), from a source netstack has just written.
func BenchmarkCopySumUMEM(b *testing.B) {
	const frame, frames = 4096, 2048
	umem := make([]byte, frame*frames)
	for _, n := range benchSizes {
		src := randBytes(uint64(n), n)
		for _, im := range implementations() {
			b.Run("copysum-"+im.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				defer im.use()()
				b.SetBytes(int64(n))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					CopySum(umem[i*frame:], src, 0)
					i = (i + 1) % frames
				}
			})
		}
		b.Run("copy/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				copy(umem[i*frame:], src)
				i = (i + 1) % frames
			}
		})
	}
}

// sumImpl names one of the checksum loops; use selects it and returns a
// function that restores the default.
type sumImpl struct {
	name string
	use  func() (restore func())
}
