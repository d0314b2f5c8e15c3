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
