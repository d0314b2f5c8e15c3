//go:build amd64 && !purego

package qp

import "golang.org/x/sys/cpu"

// haveCRC3 reports whether crc32c3's CRC32 instruction loop can run.
var haveCRC3 = cpu.X86.HasSSE42

// crc32c3 advances three CRC32c registers (not inverted) over the first n
// bytes of a, b and c, n a positive multiple of 8: three independent
// chains of the CRC32 instruction, which a core overlaps.
//
//go:noescape
func crc32c3(a, b, c *byte, n int, ra, rb, rc uint32) (uint32, uint32, uint32)

// crc32cShort advances the register r (not inverted) over the n bytes at
// p with one chain.
//
//go:noescape
func crc32cShort(r uint32, p *byte, n int) uint32

// haveFold reports whether crc32cFold can run.
var haveFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ

// crc32cFold advances the CRC32c register r (not inverted) over the n
// bytes at p, n at least 64 and a multiple of 16, by folding with
// carry-less multiplies.
//
//go:noescape
func crc32cFold(r uint32, p *byte, n int) uint32
