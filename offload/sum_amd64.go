//go:build amd64 && !purego

package offload

import "golang.org/x/sys/cpu"

// wideMin is the length from which the vector loops are used: below it
// the scalar loops are as fast, and short sums (a TCP header, an ACK) stay
// off the 512-bit units, which a workload touches only now and then.
const wideMin = 128

// The vector loops in use: AVX-512 (with BW for byte masks and BMI2 for
// building them) where the CPU and OS have it, else AVX2, else none.
var (
	have512  = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasBMI2
	haveWide = have512 || cpu.X86.HasAVX2
)

//go:noescape
func sumAVX2(p *byte, n int) uint64

//go:noescape
func copySumAVX2(dst, src *byte, n int) uint64

//go:noescape
func sumAVX512(p *byte, n int) uint64

//go:noescape
func copySumAVX512(dst, src *byte, n int) uint64

// sumWide sums a prefix of b (len(b) >= wideMin) with the vector loop
// and returns the sum and how many bytes it covered: all of them with
// AVX-512, the longest multiple of 64 with AVX2.
func sumWide(b []byte) (uint64, int) {
	if have512 {
		return sumAVX512(&b[0], len(b)), len(b)
	}
	n := len(b) &^ 63
	return sumAVX2(&b[0], n), n
}

// copySumWide copies and sums a prefix of src as sumWide sums it
// (len(dst) >= len(src) >= wideMin).
func copySumWide(dst, src []byte) (uint64, int) {
	if have512 {
		_ = dst[len(src)-1]
		return copySumAVX512(&dst[0], &src[0], len(src)), len(src)
	}
	n := len(src) &^ 63
	_ = dst[n-1]
	return copySumAVX2(&dst[0], &src[0], n), n
}
