package offload

import (
	"encoding/binary"
	"math/bits"
)

// Sum adds b's 16-bit big-endian words to the one's-complement
// accumulator acc and returns the new accumulator. b must start at an even
// offset of the checksummed data (an odd-length b may only come last).
//
// The loop adds 64-bit little-endian words with carry: one's-complement
// addition is byte-order independent (RFC 1071 §2(B)), so Fold swaps the
// bytes back at the end.
func Sum(b []byte, acc uint64) uint64 {
	var carry uint64
	for len(b) >= 32 {
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[0:8]), 0)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[8:16]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[16:24]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[24:32]), carry)
		acc += carry
		b = b[32:]
	}
	for len(b) >= 8 {
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b), 0)
		acc += carry
		b = b[8:]
	}
	if len(b) >= 4 {
		acc, carry = bits.Add64(acc, uint64(binary.LittleEndian.Uint32(b)), 0)
		acc += carry
		b = b[4:]
	}
	if len(b) >= 2 {
		acc, carry = bits.Add64(acc, uint64(binary.LittleEndian.Uint16(b)), 0)
		acc += carry
		b = b[2:]
	}
	if len(b) == 1 {
		// The high byte of a big-endian word is the low byte of the
		// little-endian one.
		acc, carry = bits.Add64(acc, uint64(b[0]), 0)
		acc += carry
	}
	return acc
}

// Fold folds an accumulator from Sum into the 16-bit one's-complement sum
// of big-endian words (not yet complemented).
func Fold(acc uint64) uint16 {
	acc = acc>>32 + acc&0xffffffff
	acc = acc>>32 + acc&0xffffffff
	acc = acc>>16 + acc&0xffff
	acc = acc>>16 + acc&0xffff
	acc = acc>>16 + acc&0xffff
	return bits.ReverseBytes16(uint16(acc))
}

// Checksum returns the Internet checksum of b: the complement of its
// one's-complement sum.
func Checksum(b []byte) uint16 { return ^Fold(Sum(b, 0)) }

// pseudo returns the accumulator of a pseudo-header's protocol and length
// words, in Sum's byte order.
func pseudo(proto uint8, length uint32) uint64 {
	var w [8]byte
	binary.BigEndian.PutUint16(w[2:], uint16(proto))
	binary.BigEndian.PutUint32(w[4:], length)
	return Sum(w[:], 0)
}

// PseudoHeader4 returns the accumulator of an IPv4 pseudo-header.
func PseudoHeader4(src, dst []byte, proto uint8, length int) uint64 {
	return Sum(dst[:4], Sum(src[:4], pseudo(proto, uint32(length))))
}

// PseudoHeader6 returns the accumulator of an IPv6 pseudo-header.
func PseudoHeader6(src, dst []byte, proto uint8, length int) uint64 {
	return Sum(dst[:16], Sum(src[:16], pseudo(proto, uint32(length))))
}
