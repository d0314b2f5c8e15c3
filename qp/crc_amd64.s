//go:build amd64 && !purego

#include "textflag.h"

// func crc32c3(a, b, c *byte, n int, ra, rb, rc uint32) (uint32, uint32, uint32)
//
// One CRC32 instruction takes three cycles to give its result and a core
// starts one a cycle: a single buffer's chain runs at a third of the
// rate three independent ones do.
TEXT ·crc32c3(SB), NOSPLIT, $0-60
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ c+16(FP), R8
	MOVQ n+24(FP), CX
	MOVL ra+32(FP), AX
	MOVL rb+36(FP), BX
	MOVL rc+40(FP), DX
	XORQ R9, R9

	// 24 bytes of each buffer a round while there are.
	MOVQ CX, R10
	SUBQ $24, R10
	JB   tail

loop24:
	CRC32Q (SI)(R9*1), AX
	CRC32Q (DI)(R9*1), BX
	CRC32Q (R8)(R9*1), DX
	CRC32Q 8(SI)(R9*1), AX
	CRC32Q 8(DI)(R9*1), BX
	CRC32Q 8(R8)(R9*1), DX
	CRC32Q 16(SI)(R9*1), AX
	CRC32Q 16(DI)(R9*1), BX
	CRC32Q 16(R8)(R9*1), DX
	ADDQ   $24, R9
	CMPQ   R9, R10
	JBE    loop24

tail:
	CMPQ R9, CX
	JAE  done

loop8:
	CRC32Q (SI)(R9*1), AX
	CRC32Q (DI)(R9*1), BX
	CRC32Q (R8)(R9*1), DX
	ADDQ   $8, R9
	CMPQ   R9, CX
	JB     loop8

done:

	MOVL AX, ret+48(FP)
	MOVL BX, ret1+52(FP)
	MOVL DX, ret2+56(FP)
	RET

// func crc32cShort(r uint32, p *byte, n int) uint32
//
// One chain over n bytes (any n): for the few bytes around what crc32c3
// covers (headers, tails, pads), without hash/crc32's dispatch.
TEXT ·crc32cShort(SB), NOSPLIT, $0-28
	MOVL r+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX

loop8:
	CMPQ   CX, $8
	JB     tail4
	CRC32Q (SI), AX
	ADDQ   $8, SI
	SUBQ   $8, CX
	JMP    loop8

tail4:
	CMPQ   CX, $4
	JB     tail2
	CRC32L (SI), AX
	ADDQ   $4, SI
	SUBQ   $4, CX

tail2:
	CMPQ   CX, $2
	JB     tail1
	CRC32W (SI), AX
	ADDQ   $2, SI
	SUBQ   $2, CX

tail1:
	CMPQ   CX, $1
	JB     done
	CRC32B (SI), AX

done:
	MOVL AX, ret+24(FP)
	RET

// func crc32cFold(r uint32, p *byte, n int) uint32
//
// The CRC32c register r (not inverted) advanced over n bytes at p, n at
// least 64 and a multiple of 16, by folding with carry-less multiplies:
// hash/crc32's ieeeCLMUL (AVX-512 loop, 128-bit folds, Barrett
// reduction) with the Castagnoli polynomial's constants (crcfold_test.go
// derives them). Needs AVX-512 VPCLMULQDQ.
TEXT ·crc32cFold(SB), NOSPLIT, $0-28
	MOVL r+0(FP), X0
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX

	CMPQ CX, $128
	JB   sse

	// 64 bytes a round in one ZMM register: four 128-bit lanes, each
	// folded 512 bits ahead.
	VPXORQ    Z10, Z10, Z10
	VMOVAPS   X0, X10
	VMOVDQU64 (SI), Z1
	VPXORQ    Z10, Z1, Z1
	ADDQ      $64, SI
	SUBQ      $64, CX
	VMOVDQU64 ck512<>+0(SB), Z0

loop64z:
	VMOVDQU64  (SI), Z11
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z11, Z5, Z1
	ADDQ       $64, SI
	SUBQ       $64, CX
	CMPQ       CX, $64
	JAE        loop64z

	VEXTRACTF32X4 $1, Z1, X2
	VEXTRACTF32X4 $2, Z1, X3
	VEXTRACTF32X4 $3, Z1, X4
	VZEROUPPER
	JMP           fold4

sse:
	// 64 to 127 bytes: four lanes from the first 64.
	MOVOU (SI), X1
	MOVOU 16(SI), X2
	MOVOU 32(SI), X3
	MOVOU 48(SI), X4
	PXOR  X0, X1
	ADDQ  $64, SI
	SUBQ  $64, CX

fold4:
	// The four lanes into X1, each folded 128 bits ahead.
	MOVOU     ck128<>+0(SB), X0
	MOVOA     X1, X5
	PCLMULQDQ $0, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X2, X1

	MOVOA     X1, X5
	PCLMULQDQ $0, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X3, X1

	MOVOA     X1, X5
	PCLMULQDQ $0, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X4, X1

	CMPQ CX, $16
	JB   finish

loop16:
	MOVOU     (SI), X10
	MOVOA     X1, X5
	PCLMULQDQ $0, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X10, X1
	SUBQ      $16, CX
	ADDQ      $16, SI
	CMPQ      CX, $16
	JAE       loop16

finish:
	// 128 bits to 64, then Barrett reduction to 32.
	PCMPEQB   X3, X3
	PCLMULQDQ $1, X1, X0
	PSRLDQ    $8, X1
	PXOR      X0, X1

	MOVOA X1, X2
	MOVQ  ck64<>+0(SB), X0
	PSRLQ $32, X3

	PSRLDQ    $4, X2
	PAND      X3, X1
	PCLMULQDQ $0, X0, X1
	PXOR      X2, X1

	MOVOU ckpoly<>+0(SB), X0

	MOVOA     X1, X2
	PAND      X3, X1
	PCLMULQDQ $0x10, X0, X1
	PAND      X3, X1
	PCLMULQDQ $0, X0, X1
	PXOR      X2, X1

	PEXTRD $1, X1, AX
	MOVL   AX, ret+24(FP)
	RET

// Castagnoli's folding constants, reflected: x^(512±32), x^(128±32) and
// x^64 mod P; P and floor(x^64/P).
DATA ck512<>+0(SB)/8, $0x740eef02
DATA ck512<>+8(SB)/8, $0x09e4addf8
DATA ck512<>+16(SB)/8, $0x740eef02
DATA ck512<>+24(SB)/8, $0x09e4addf8
DATA ck512<>+32(SB)/8, $0x740eef02
DATA ck512<>+40(SB)/8, $0x09e4addf8
DATA ck512<>+48(SB)/8, $0x740eef02
DATA ck512<>+56(SB)/8, $0x09e4addf8
GLOBL ck512<>(SB), RODATA, $64

DATA ck128<>+0(SB)/8, $0xf20c0dfe
DATA ck128<>+8(SB)/8, $0x14cd00bd6
GLOBL ck128<>(SB), RODATA, $16

DATA ck64<>+0(SB)/8, $0xdd45aab8
GLOBL ck64<>(SB), RODATA, $8

DATA ckpoly<>+0(SB)/8, $0x105ec76f1
DATA ckpoly<>+8(SB)/8, $0x0dea713f1
GLOBL ckpoly<>(SB), RODATA, $16
