//go:build amd64 && !purego

package offload

import "golang.org/x/sys/cpu"

// wideMin is the length from which the AVX2 loops beat the scalar ones
// (their setup and final reduction cost about as much as 64 bytes).
const wideMin = 128

var haveWide = cpu.X86.HasAVX2

//go:noescape
func sumAVX2(p *byte, n int) uint64

//go:noescape
func copySumAVX2(dst, src *byte, n int) uint64

// sumWide sums the longest multiple-of-64 prefix of b with AVX2 and
// returns the sum and how many bytes it covered.
func sumWide(b []byte) (uint64, int) {
	n := len(b) &^ 63
	return sumAVX2(&b[0], n), n
}

// copySumWide copies and sums the longest multiple-of-64 prefix of src
// (len(dst) >= len(src)).
func copySumWide(dst, src []byte) (uint64, int) {
	n := len(src) &^ 63
	_ = dst[n-1]
	return copySumAVX2(&dst[0], &src[0], n), n
}
