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
