package offload

import (
	"encoding/binary"
	"math/bits"
)

// Sum adds b's 16-bit big-endian words to the one's-complement
// accumulator acc and returns the new accumulator. b must start at an even
// offset of the checksummed data (an odd-length b may only come last).
//
// On amd64 with AVX2, lengths from 128 bytes go through a vector loop
// (sum_amd64.s); the rest, and every length elsewhere or with -tags
// purego, adds 64-bit little-endian words with carry. One's-complement
// addition is independent of word size and byte order (RFC 1071 §2(B)),
// so both kinds of partial sum combine by end-around-carry addition and
// Fold swaps the bytes back at the end.
func Sum(b []byte, acc uint64) uint64 {
	if haveWide && len(b) >= wideMin {
		s, n := sumWide(b)
		acc = add(acc, s)
		if n == len(b) {
			return acc
		}
		b = b[n:]
	}
	return sumScalar(b, acc)
}

// add is one's-complement (end-around carry) 64-bit addition.
func add(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	return s + c
}

func sumScalar(b []byte, acc uint64) uint64 {
	var carry uint64
	for len(b) >= 64 {
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[0:8]), 0)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[8:16]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[16:24]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[24:32]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[32:40]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[40:48]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[48:56]), carry)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[56:64]), carry)
		acc += carry
		b = b[64:]
	}
	for len(b) >= 16 {
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[0:8]), 0)
		acc, carry = bits.Add64(acc, binary.LittleEndian.Uint64(b[8:16]), carry)
		acc += carry
		b = b[16:]
	}
	return sumTail(b, acc)
}

// sumTail sums the last 0–15 bytes.
func sumTail(b []byte, acc uint64) uint64 {
	var carry uint64
	if len(b) >= 8 {
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

// CopySum copies src into dst, as copy does, and adds the copied bytes to
// the accumulator acc as Sum would, in one pass over the bytes. It returns
// the number of bytes copied, min(len(dst), len(src)), and the new
// accumulator. The copied bytes must start at an even offset of the
// checksummed data unless the caller swaps the result (see SumOdd).
func CopySum(dst, src []byte, acc uint64) (int, uint64) {
	if len(dst) < len(src) {
		src = src[:len(dst)]
	}
	n := len(src)
	dst = dst[:n]
	if haveWide && n >= wideMin {
		s, w := copySumWide(dst, src)
		acc = add(acc, s)
		if w == n {
			return n, acc
		}
		dst, src = dst[w:], src[w:]
	}
	var carry uint64
	for len(src) >= 32 && len(dst) >= 32 {
		w0 := binary.LittleEndian.Uint64(src[0:8])
		w1 := binary.LittleEndian.Uint64(src[8:16])
		w2 := binary.LittleEndian.Uint64(src[16:24])
		w3 := binary.LittleEndian.Uint64(src[24:32])
		binary.LittleEndian.PutUint64(dst[0:8], w0)
		binary.LittleEndian.PutUint64(dst[8:16], w1)
		binary.LittleEndian.PutUint64(dst[16:24], w2)
		binary.LittleEndian.PutUint64(dst[24:32], w3)
		acc, carry = bits.Add64(acc, w0, 0)
		acc, carry = bits.Add64(acc, w1, carry)
		acc, carry = bits.Add64(acc, w2, carry)
		acc, carry = bits.Add64(acc, w3, carry)
		acc += carry
		dst, src = dst[32:], src[32:]
	}
	copy(dst, src)
	return n, sumScalar(dst[:len(src)], acc)
}

// SumOdd converts the accumulator of bytes that start at an odd offset
// of the checksummed data (summed by Sum or CopySum as if they started at
// an even one) into an accumulator to add to the even-offset ones.
func SumOdd(acc uint64) uint64 {
	// Shifting data by one byte swaps the bytes of its folded sum
	// (RFC 1071 §2(B)).
	return uint64(bits.ReverseBytes16(fold16(acc)))
}

// fold16 folds an accumulator to 16 bits in Sum's (little-endian) byte
// order.
func fold16(acc uint64) uint16 {
	acc = acc>>32 + acc&0xffffffff
	acc = acc>>32 + acc&0xffffffff
	acc = acc>>16 + acc&0xffff
	acc = acc>>16 + acc&0xffff
	acc = acc>>16 + acc&0xffff
	return uint16(acc)
}

// Fold folds an accumulator from Sum into the 16-bit one's-complement sum
// of big-endian words (not yet complemented).
func Fold(acc uint64) uint16 { return bits.ReverseBytes16(fold16(acc)) }

// Checksum returns the Internet checksum of b: the complement of its
// one's-complement sum.
func Checksum(b []byte) uint16 { return ^Fold(Sum(b, 0)) }

// Word returns the accumulator of one 16-bit big-endian word, to add to
// another with Add.
func Word(w uint16) uint64 { return uint64(bits.ReverseBytes16(w)) }

// Add adds two accumulators (one's-complement, end-around carry).
func Add(a, b uint64) uint64 { return add(a, b) }

// pseudo returns the accumulator of a pseudo-header's protocol and length
// words, in Sum's byte order.
func pseudo(proto uint8, length uint32) uint64 {
	var w [8]byte
	binary.BigEndian.PutUint16(w[2:], uint16(proto))
	binary.BigEndian.PutUint32(w[4:], length)
	return sumTail(w[:], 0)
}

// PseudoHeader4 returns the accumulator of an IPv4 pseudo-header (RFC
// 793 §3.1, RFC 768): source and destination address, protocol, and the
// TCP or UDP length.
func PseudoHeader4(src, dst []byte, proto uint8, length int) uint64 {
	return sumTail(dst[:4], sumTail(src[:4], pseudo(proto, uint32(length))))
}

// PseudoHeader6 returns the accumulator of an IPv6 pseudo-header (RFC
// 8200 §8.1).
func PseudoHeader6(src, dst []byte, proto uint8, length int) uint64 {
	return sumTail(dst[8:16], sumTail(dst[:8], sumTail(src[8:16], sumTail(src[:8], pseudo(proto, uint32(length))))))
}

// Update16 returns a checksum field's new value after a 16-bit word of
// the data it covers changed from old to new, without summing the data
// again: RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m').
func Update16(sum, old, new uint16) uint16 {
	s := uint32(^sum) + uint32(^old) + uint32(new)
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return ^uint16(s)
}

// Update32 is Update16 for an aligned 32-bit field (a TCP sequence
// number, an IPv4 address).
func Update32(sum uint16, old, new uint32) uint16 {
	return Update16(Update16(sum, uint16(old>>16), uint16(new>>16)), uint16(old), uint16(new))
}
