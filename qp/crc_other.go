//go:build !amd64 || purego

package qp

// Elsewhere hash/crc32 computes each CRC on its own.
const haveCRC3 = false

func crc32c3(a, b, c *byte, n int, ra, rb, rc uint32) (uint32, uint32, uint32) {
	panic("qp: crc32c3 without SSE 4.2")
}

func crc32cShort(r uint32, p *byte, n int) uint32 {
	panic("qp: crc32cShort without SSE 4.2")
}

const haveFold = false

func crc32cFold(r uint32, p *byte, n int) uint32 {
	panic("qp: crc32cFold without AVX-512")
}
