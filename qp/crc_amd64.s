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
