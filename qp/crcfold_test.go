//go:build amd64 && !purego

package qp

import (
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// xnMod is x^n mod p, p of degree 32 given with its x^32 term.
func xnMod(n int, p uint64) uint64 {
	r := uint64(1)
	for range n {
		r <<= 1
		if r&(1<<32) != 0 {
			r ^= p
		}
	}
	return r
}

// x64Div is floor(x^64 / p).
func x64Div(p uint64) uint64 {
	var rem [65]uint8
	rem[64] = 1
	var q uint64
	for d := 64; d >= 32; d-- {
		if rem[d] == 1 {
			q |= 1 << (d - 32)
			for i := 0; i <= 32; i++ {
				if p&(1<<i) != 0 {
					rem[d-32+i] ^= 1
				}
			}
		}
	}
	return q
}

// reflect33 is v's 33 low bits reversed: the reflected form the folds
// multiply by.
func reflect33(v uint64) uint64 { return bits.Reverse64(v) >> 31 }

// TestFoldConstants derives crc32cFold's constants (crc_amd64.s) from
// the polynomial, and checks the derivation against hash/crc32's IEEE
// constants.
func TestFoldConstants(t *testing.T) {
	for _, c := range []struct {
		poly uint64
		want [7]uint64 // x^544, x^480, x^160, x^96, x^64 mod P; P; x^64/P
	}{
		{0x104C11DB7, [7]uint64{0x154442bd4, 0x1c6e41596, 0x1751997d0, 0x0ccaa009e, 0x163cd6124, 0x1db710641, 0x1f7011641}},
		{0x11EDC6F41, [7]uint64{0x740eef02, 0x9e4addf8, 0xf20c0dfe, 0x14cd00bd6, 0xdd45aab8, 0x105ec76f1, 0x0dea713f1}},
	} {
		var got [7]uint64
		for i, n := range []int{544, 480, 160, 96, 64} {
			got[i] = reflect33(xnMod(n, c.poly))
		}
		got[5], got[6] = reflect33(c.poly), reflect33(x64Div(c.poly))
		if got != c.want {
			t.Errorf("P %#x: constants %#x, want %#x", c.poly, got, c.want)
		}
	}
}

// defaultCRC3 and defaultFold are the package's own findings, before any
// test changes them.
var defaultCRC3, defaultFold = haveCRC3, haveFold

// crcPaths lists the CRC32c paths this machine can run, each with a
// function that selects it and returns one that restores the default.
func crcPaths() []crcPath {
	set := func(crc3, fold bool) func() func() {
		return func() func() {
			c, f := haveCRC3, haveFold
			haveCRC3, haveFold = crc3, fold
			return func() { haveCRC3, haveFold = c, f }
		}
	}
	paths := []crcPath{{"hash-crc32", set(false, false)}}
	if defaultCRC3 {
		paths = append(paths, crcPath{"crc32c3", set(true, false)})
	}
	if defaultFold {
		paths = append(paths, crcPath{"fold", set(defaultCRC3, true)})
	}
	return paths
}

// TestCPUPaths says which CRC32c loops this CPU runs and which the
// package's tests therefore skip (.ci/run shows it in CI's log), and
// checks the choice: the CRC32 instruction loops where the CPU has SSE
// 4.2, the fold where it has AVX-512F, VPCLMULQDQ and PCLMULQDQ, and
// every path it can run agreeing with hash/crc32.
func TestCPUPaths(t *testing.T) {
	t.Logf("qp CRC32c (amd64 assembly built): three-way CRC32 instruction loop (SSE 4.2) %s; AVX-512 VPCLMULQDQ fold %s",
		tested(defaultCRC3, "no SSE 4.2"), tested(defaultFold, "no AVX-512F/VPCLMULQDQ: TestFoldMatchesHashCRC32 skips"))
	if want := cpu.X86.HasSSE42; defaultCRC3 != want {
		t.Errorf("CRC32 instruction loops in use %v; this CPU's SSE 4.2 %v", defaultCRC3, want)
	}
	if want := cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ; defaultFold != want {
		t.Errorf("fold in use %v; this CPU's AVX-512F, VPCLMULQDQ and PCLMULQDQ %v", defaultFold, want)
	}
	testCRCPathsAgree(t)
}

func tested(have bool, why string) string {
	if have {
		return "tested"
	}
	return "NOT tested (" + why + ")"
}

func TestFoldMatchesHashCRC32(t *testing.T) {
	if !haveFold {
		t.Skip("no AVX-512 VPCLMULQDQ on this CPU: the fold loop is not tested")
	}
	buf := make([]byte, 4096+64)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 64; n <= 4096; n += 16 {
		for _, off := range []int{0, 1, 7, 33} {
			r := rng.Uint32()
			p := buf[off : off+n]
			want := ^crc32.Update(^r, castagnoli, p)
			if got := crc32cFold(r, &p[0], n); got != want {
				t.Fatalf("n %d offset %d: %#x, want %#x", n, off, got, want)
			}
		}
	}
}

func BenchmarkCRCFold(b *testing.B) {
	if !haveFold {
		b.Skip("no AVX-512 VPCLMULQDQ")
	}
	p := make([]byte, 1440)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		crc32cFold(0, &p[0], len(p))
	}
}
