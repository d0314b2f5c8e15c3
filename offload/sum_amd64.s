//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 loops sum a buffer as four 64-bit lanes of 64-bit
// little-endian words without carries: per lane they keep X, the wrapping
// sum of the words, and H, the sum of their high halves. The sum of the
// low halves is then exactly X - H<<32 (it cannot exceed 2^64), and
// L + H is congruent to the true sum modulo 2^16-1, which is all a
// one's-complement checksum needs (RFC 1071 §2: word size and byte order
// do not matter). Three vector operations per 32 bytes, no shuffles.
// Every call gets a multiple of 64 bytes, less than 2^32.

// REDUCE turns Y0–Y3 (X and H of the two sets of lanes) into their
// total in AX.
#define REDUCE \
	VPSLLQ $32, Y1, Y4 \
	VPSUBQ Y4, Y0, Y0 \
	VPSLLQ $32, Y3, Y5 \
	VPSUBQ Y5, Y2, Y2 \
	VPADDQ Y1, Y0, Y0 \
	VPADDQ Y3, Y2, Y2 \
	VPADDQ Y2, Y0, Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPADDQ X1, X0, X0 \
	VMOVQ X0, AX \
	VPEXTRQ $1, X0, BX \
	ADDQ BX, AX \
	VZEROUPPER

// func sumAVX2(p *byte, n int) uint64
TEXT ·sumAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0 // X, even 32-byte blocks
	VPXOR Y1, Y1, Y1 // H, even blocks
	VPXOR Y2, Y2, Y2 // X, odd blocks
	VPXOR Y3, Y3, Y3 // H, odd blocks

sumloop:
	CMPQ CX, $64
	JB   sumdone
	VMOVDQU (SI), Y4
	VMOVDQU 32(SI), Y5
	VPSRLQ $32, Y4, Y6
	VPSRLQ $32, Y5, Y7
	VPADDQ Y4, Y0, Y0
	VPADDQ Y5, Y2, Y2
	VPADDQ Y6, Y1, Y1
	VPADDQ Y7, Y3, Y3
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  sumloop

sumdone:
	REDUCE
	MOVQ AX, ret+16(FP)
	RET

// func copySumAVX2(dst, src *byte, n int) uint64
TEXT ·copySumAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

copy128:
	CMPQ CX, $128
	JB   copyloop
	VMOVDQU (SI), Y4
	VMOVDQU 32(SI), Y5
	VMOVDQU 64(SI), Y8
	VMOVDQU 96(SI), Y9
	VMOVDQU Y4, (DI)
	VMOVDQU Y5, 32(DI)
	VMOVDQU Y8, 64(DI)
	VMOVDQU Y9, 96(DI)
	VPSRLQ $32, Y4, Y6
	VPSRLQ $32, Y5, Y7
	VPADDQ Y4, Y0, Y0
	VPADDQ Y5, Y2, Y2
	VPSRLQ $32, Y8, Y10
	VPSRLQ $32, Y9, Y11
	VPADDQ Y6, Y1, Y1
	VPADDQ Y7, Y3, Y3
	VPADDQ Y8, Y0, Y0
	VPADDQ Y9, Y2, Y2
	VPADDQ Y10, Y1, Y1
	VPADDQ Y11, Y3, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $128, CX
	JMP  copy128

copyloop:
	CMPQ CX, $64
	JB   copydone
	VMOVDQU (SI), Y4
	VMOVDQU 32(SI), Y5
	VMOVDQU Y4, (DI)
	VMOVDQU Y5, 32(DI)
	VPSRLQ $32, Y4, Y6
	VPSRLQ $32, Y5, Y7
	VPADDQ Y4, Y0, Y0
	VPADDQ Y5, Y2, Y2
	VPADDQ Y6, Y1, Y1
	VPADDQ Y7, Y3, Y3
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $64, CX

copydone:
	REDUCE
	MOVQ AX, ret+24(FP)
	RET

// The AVX-512 loops use the same lanes in 512-bit registers (eight
// lanes a set) and take any length: the last 1–63 bytes go through a
// byte-masked load, which zero-fills (and cannot fault) past the end,
// and a byte-masked store. Zero bytes add nothing, and a byte's weight
// modulo 2^16-1 depends only on whether its offset is even or odd, so
// the padded block sums as the scalar tail would.

// REDUCE512 turns Z0–Z3 into their total in AX.
// (The lanes' X and H can be added up before X - H<<32 is taken: the
// X sums wrap modulo 2^64 as before, and the H sums stay exact.)
#define REDUCE512 \
	VPADDQ Z2, Z0, Z0 \
	VPADDQ Z3, Z1, Z1 \
	VPSLLQ $32, Z1, Z4 \
	VPSUBQ Z4, Z0, Z0 \
	VPADDQ Z1, Z0, Z0 \
	VEXTRACTI64X4 $1, Z0, Y1 \
	VPADDQ Y1, Y0, Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPADDQ X1, X0, X0 \
	VMOVQ X0, AX \
	VPEXTRQ $1, X0, BX \
	ADDQ BX, AX \
	VZEROUPPER

// func sumAVX512(p *byte, n int) uint64
TEXT ·sumAVX512(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

sum512x4:
	CMPQ CX, $256
	JB   sum512x1
	VMOVDQU64 (SI), Z4
	VMOVDQU64 64(SI), Z5
	VMOVDQU64 128(SI), Z6
	VMOVDQU64 192(SI), Z7
	VPSRLQ $32, Z4, Z8
	VPSRLQ $32, Z5, Z9
	VPSRLQ $32, Z6, Z10
	VPSRLQ $32, Z7, Z11
	VPADDQ Z4, Z0, Z0
	VPADDQ Z5, Z2, Z2
	VPADDQ Z8, Z1, Z1
	VPADDQ Z9, Z3, Z3
	VPADDQ Z6, Z0, Z0
	VPADDQ Z7, Z2, Z2
	VPADDQ Z10, Z1, Z1
	VPADDQ Z11, Z3, Z3
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  sum512x4

sum512x1:
	CMPQ CX, $64
	JB   sum512tail
	VMOVDQU64 (SI), Z4
	VPSRLQ $32, Z4, Z8
	VPADDQ Z4, Z0, Z0
	VPADDQ Z8, Z1, Z1
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  sum512x1

sum512tail:
	TESTQ CX, CX
	JZ    sum512done
	MOVQ  $-1, AX
	BZHIQ CX, AX, AX
	KMOVQ AX, K1
	VMOVDQU8.Z (SI), K1, Z4
	VPSRLQ $32, Z4, Z8
	VPADDQ Z4, Z2, Z2
	VPADDQ Z8, Z3, Z3

sum512done:
	REDUCE512
	MOVQ AX, ret+16(FP)
	RET

// func copySumAVX512(dst, src *byte, n int) uint64
TEXT ·copySumAVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

copy512x4:
	CMPQ CX, $256
	JB   copy512x1
	VMOVDQU64 (SI), Z4
	VMOVDQU64 64(SI), Z5
	VMOVDQU64 128(SI), Z6
	VMOVDQU64 192(SI), Z7
	VMOVDQU64 Z4, (DI)
	VMOVDQU64 Z5, 64(DI)
	VMOVDQU64 Z6, 128(DI)
	VMOVDQU64 Z7, 192(DI)
	VPSRLQ $32, Z4, Z8
	VPSRLQ $32, Z5, Z9
	VPSRLQ $32, Z6, Z10
	VPSRLQ $32, Z7, Z11
	VPADDQ Z4, Z0, Z0
	VPADDQ Z5, Z2, Z2
	VPADDQ Z8, Z1, Z1
	VPADDQ Z9, Z3, Z3
	VPADDQ Z6, Z0, Z0
	VPADDQ Z7, Z2, Z2
	VPADDQ Z10, Z1, Z1
	VPADDQ Z11, Z3, Z3
	ADDQ $256, SI
	ADDQ $256, DI
	SUBQ $256, CX
	JMP  copy512x4

copy512x1:
	CMPQ CX, $64
	JB   copy512tail
	VMOVDQU64 (SI), Z4
	VMOVDQU64 Z4, (DI)
	VPSRLQ $32, Z4, Z8
	VPADDQ Z4, Z0, Z0
	VPADDQ Z8, Z1, Z1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $64, CX
	JMP  copy512x1

copy512tail:
	TESTQ CX, CX
	JZ    copy512done
	MOVQ  $-1, AX
	BZHIQ CX, AX, AX
	KMOVQ AX, K1
	VMOVDQU8.Z (SI), K1, Z4
	VMOVDQU8 Z4, K1, (DI)
	VPSRLQ $32, Z4, Z8
	VPADDQ Z4, Z2, Z2
	VPADDQ Z8, Z3, Z3

copy512done:
	REDUCE512
	MOVQ AX, ret+24(FP)
	RET
