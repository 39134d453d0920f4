#include "textflag.h"

// AVX2 kernels of the fixed-point resample (see simd_amd64.go). They compute exactly
// what the scalar kernels in resize.go and hpass3.go compute: int32 sums of weight *
// pixel with fixedHalf added, shifted right by precisionBits and clamped to 0..255.

// Byte shuffle of one 8-byte load holding pixels j and j+1 (RGB, RGB) into dwords:
// pixel j's R, G, B, 0 in the low 128-bit lane, pixel j+1's in the high lane.
DATA hshuf<>+0(SB)/8, $0x8080800180808000
DATA hshuf<>+8(SB)/8, $0x8080808080808002
DATA hshuf<>+16(SB)/8, $0x8080800480808003
DATA hshuf<>+24(SB)/8, $0x8080808080808005
GLOBL hshuf<>(SB), RODATA|NOPTR, $32

// Dword permutation spreading weights w[j], w[j+1] over the two lanes.
DATA hperm<>+0(SB)/8, $0x0000000000000000
DATA hperm<>+8(SB)/8, $0x0000000000000000
DATA hperm<>+16(SB)/8, $0x0000000100000001
DATA hperm<>+24(SB)/8, $0x0000000100000001
GLOBL hperm<>(SB), RODATA|NOPTR, $32

DATA fixhalf<>+0(SB)/4, $0x00200000
GLOBL fixhalf<>(SB), RODATA|NOPTR, $4

DATA c255<>+0(SB)/4, $255
GLOBL c255<>(SB), RODATA|NOPTR, $4


// Two output pixels (A, B) per iteration for tap counts 2..8, unrolled: HPAIR adds taps
// j, j+1 of the pixel at p (weights at wo(DX)) to acc; HONE adds its last tap j.
#define HPAIR(p, bo, wo, acc, t1, t2) VPBROADCASTQ bo(p), t1; VPSHUFB Y14, t1, t1; VMOVQ wo(DX), X2; VPERMD Y2, Y13, t2; VPMULLD t2, t1, t1; VPADDD t1, acc, acc
#define HONE(p, bo, wo, acc) VPMOVZXBD bo(p), X1; VPBROADCASTD wo(DX), X2; VPMULLD X2, X1, X1; VPADDD Y1, acc, acc

// func hrow3AVX2(out unsafe.Pointer, in *byte, taps *tap, w *int32, k, n, limit int, bytesOut bool) int
// The 3-channel horizontal pass from the plan's taps and weights alone, two taps per
// multiplication: tap counts the pair kernel (hpair3AVX2, below) does not take, and the
// outputs it leaves at a row's ends. It stops at the first output whose 8-byte loads
// would end past limit and returns the outputs done; its stores pass the last one's by
// one element.
TEXT ·hrow3AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ taps+16(FP), BX
	MOVQ w+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ n+40(FP), R8
	MOVQ limit+48(FP), R13
	MOVBQZX bytesOut+56(FP), R14
	XORQ R15, R15 // pixels done
	VMOVDQU hshuf<>(SB), Y14
	VMOVDQU hperm<>(SB), Y13
	VPBROADCASTD fixhalf<>(SB), X12
	VPXOR X11, X11, X11
	VPBROADCASTD c255<>(SB), Y10
	VPBROADCASTD fixhalf<>(SB), Y12
	VPXOR Y11, Y11, Y11
	CMPQ CX, $2
	JEQ hk2
	CMPQ CX, $3
	JEQ hk3
	CMPQ CX, $4
	JEQ hk4
	CMPQ CX, $5
	JEQ hk5
	CMPQ CX, $6
	JEQ hk6
	CMPQ CX, $7
	JEQ hk7
	CMPQ CX, $8
	JEQ hk8
	JMP hgen

hk2:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 6(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 6(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 8, Y3, Y4, Y5)
	ADDQ $16, DX
	JMP hstore2

hk3:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 9(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 9(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 12, Y3, Y4, Y5)
	HONE(R9, 6, 8, Y0)
	HONE(R10, 6, 20, Y3)
	ADDQ $24, DX
	JMP hstore2

hk4:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 12(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 12(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 16, Y3, Y4, Y5)
	HPAIR(R9, 6, 8, Y0, Y1, Y2)
	HPAIR(R10, 6, 24, Y3, Y4, Y5)
	ADDQ $32, DX
	JMP hstore2

hk5:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 15(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 15(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 20, Y3, Y4, Y5)
	HPAIR(R9, 6, 8, Y0, Y1, Y2)
	HPAIR(R10, 6, 28, Y3, Y4, Y5)
	HONE(R9, 12, 16, Y0)
	HONE(R10, 12, 36, Y3)
	ADDQ $40, DX
	JMP hstore2

hk6:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 18(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 18(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 24, Y3, Y4, Y5)
	HPAIR(R9, 6, 8, Y0, Y1, Y2)
	HPAIR(R10, 6, 32, Y3, Y4, Y5)
	HPAIR(R9, 12, 16, Y0, Y1, Y2)
	HPAIR(R10, 12, 40, Y3, Y4, Y5)
	ADDQ $48, DX
	JMP hstore2

hk7:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 21(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 21(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 28, Y3, Y4, Y5)
	HPAIR(R9, 6, 8, Y0, Y1, Y2)
	HPAIR(R10, 6, 36, Y3, Y4, Y5)
	HPAIR(R9, 12, 16, Y0, Y1, Y2)
	HPAIR(R10, 12, 44, Y3, Y4, Y5)
	HONE(R9, 18, 24, Y0)
	HONE(R10, 18, 52, Y3)
	ADDQ $56, DX
	JMP hstore2

hk8:
	LEAQ 1(R15), AX
	CMPQ AX, R8
	JGE hgen // fewer than two pixels left
	MOVLQSX (BX), AX
	MOVLQSX 12(BX), R12
	LEAQ 24(AX)(AX*2), R9
	CMPQ R9, R13
	JGT hgen
	LEAQ 24(R12)(R12*2), R10
	CMPQ R10, R13
	JGT hgen
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(R12*2), R12
	LEAQ (SI)(R12*1), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	HPAIR(R9, 0, 0, Y0, Y1, Y2)
	HPAIR(R10, 0, 32, Y3, Y4, Y5)
	HPAIR(R9, 6, 8, Y0, Y1, Y2)
	HPAIR(R10, 6, 40, Y3, Y4, Y5)
	HPAIR(R9, 12, 16, Y0, Y1, Y2)
	HPAIR(R10, 12, 48, Y3, Y4, Y5)
	HPAIR(R9, 18, 24, Y0, Y1, Y2)
	HPAIR(R10, 18, 56, Y3, Y4, Y5)
	ADDQ $64, DX
	JMP hstore2

// Both pixels' lane sums, rounded, shifted and clamped together: A in the low lane,
// B in the high one.
hstore2:
	VPERM2I128 $0x20, Y3, Y0, Y6
	VPERM2I128 $0x31, Y3, Y0, Y7
	VPADDD Y7, Y6, Y6
	VPADDD Y12, Y6, Y6
	VPSRAD $22, Y6, Y6
	VPMAXSD Y11, Y6, Y6
	VPMINSD Y10, Y6, Y6
	ADDQ $24, BX
	ADDQ $2, R15
	TESTQ R14, R14
	JNZ hbytes2
	VMOVDQU X6, (DI)           // 4 elements each: the 4th is overwritten next
	VEXTRACTI128 $1, Y6, 12(DI)
	ADDQ $24, DI
	JMP hdispatch

hbytes2:
	VPACKUSDW Y6, Y6, Y6
	VPACKUSWB Y6, Y6, Y6
	VEXTRACTI128 $1, Y6, X7
	VMOVD X6, (DI)
	VMOVD X7, 3(DI)
	ADDQ $6, DI

hdispatch:
	CMPQ CX, $2
	JEQ hk2
	CMPQ CX, $3
	JEQ hk3
	CMPQ CX, $4
	JEQ hk4
	CMPQ CX, $5
	JEQ hk5
	CMPQ CX, $6
	JEQ hk6
	CMPQ CX, $7
	JEQ hk7
	CMPQ CX, $8
	JEQ hk8

// One pixel at a time, any tap count; also the pixels the unrolled loops leave.
hgen:
	CMPQ R15, R8
	JGE hdone

hpixel:
	MOVLQSX (BX), AX
	LEAQ (AX)(CX*1), R9
	LEAQ (R9)(R9*2), R9
	CMPQ R9, R13 // 3*(start+k) > limit: a load would pass the row's end
	JGT hdone
	LEAQ (AX)(AX*2), AX
	LEAQ (SI)(AX*1), R9 // source pixels
	MOVQ DX, R10        // weights
	MOVQ CX, R11        // taps left
	VPXOR Y0, Y0, Y0
	CMPQ R11, $2
	JLT hsingle

hpair:
	VPBROADCASTQ (R9), Y1
	VPSHUFB Y14, Y1, Y1
	VMOVQ (R10), X2
	VPERMD Y2, Y13, Y2
	VPMULLD Y2, Y1, Y1
	VPADDD Y1, Y0, Y0
	ADDQ $6, R9
	ADDQ $8, R10
	SUBQ $2, R11
	CMPQ R11, $2
	JGE hpair

hsingle:
	TESTQ R11, R11
	JZ hreduce
	VPMOVZXBD (R9), X1
	VPBROADCASTD (R10), X2
	VPMULLD X2, X1, X1
	VPADDD Y1, Y0, Y0

hreduce:
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPADDD X12, X0, X0
	VPSRAD $22, X0, X0
	VPMAXSD X11, X0, X0
	VPMINSD X10, X0, X0
	TESTQ R14, R14
	JNZ hbytes
	VMOVDQU X0, (DI) // 4 elements: the 4th is overwritten by the next pixel
	ADDQ $12, DI
	JMP hnext

hbytes:
	VPACKUSDW X0, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVD X0, (DI) // 4 bytes: the 4th is overwritten by the next pixel
	ADDQ $3, DI

hnext:
	ADDQ $12, BX
	LEAQ (DX)(CX*4), DX
	INCQ R15
	CMPQ R15, R8
	JLT hpixel

hdone:
	VZEROUPPER
	MOVQ R15, ret+64(FP)
	RET

// func vfiltAVX2(out *byte, n int, rows *unsafe.Pointer, w *int32, k int)
// n is a positive multiple of 16; rows holds k pointers to rows of uint32 elements.
// 16 elements per block: acc = fixedHalf + sum of w[i] * rows[i][j] in int32, shifted
// right by precisionBits; the saturating packs clamp to 0..255 as clip8 does. For 2..8
// taps the weights stay broadcast in registers and the row pointers in general
// registers for the whole row (the unrolled loops vk2..vk8); other counts walk the
// taps in an inner loop.
#define VTAP(r, wreg) VPMULLD (r)(AX*1), wreg, Y1; VPADDD Y1, Y0, Y0; VPMULLD 32(r)(AX*1), wreg, Y3; VPADDD Y3, Y4, Y4
#define VSTORE VPSRAD $22, Y0, Y0; VPSRAD $22, Y4, Y4; VPACKSSDW Y4, Y0, Y0; VPERMQ $0xD8, Y0, Y0; VEXTRACTI128 $1, Y0, X1; VPACKUSWB X1, X0, X0; VMOVDQU X0, (DI)
TEXT ·vfiltAVX2(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ n+8(FP), R8
	MOVQ rows+16(FP), BX
	MOVQ w+24(FP), DX
	MOVQ k+32(FP), CX
	VPBROADCASTD fixhalf<>(SB), Y7
	XORQ AX, AX // byte offset of the block in the rows
	CMPQ CX, $2
	JEQ vk2
	CMPQ CX, $3
	JEQ vk3
	CMPQ CX, $4
	JEQ vk4
	CMPQ CX, $5
	JEQ vk5
	CMPQ CX, $6
	JEQ vk6
	CMPQ CX, $7
	JEQ vk7
	CMPQ CX, $8
	JEQ vk8
	VMOVDQA Y7, Y12

vblock:
	VMOVDQA Y12, Y0
	VMOVDQA Y12, Y4
	MOVQ BX, R9
	MOVQ DX, R10
	MOVQ CX, R11

vtap:
	MOVQ (R9), R12
	VPBROADCASTD (R10), Y2
	VPMULLD (R12)(AX*1), Y2, Y1
	VPADDD Y1, Y0, Y0
	VPMULLD 32(R12)(AX*1), Y2, Y3
	VPADDD Y3, Y4, Y4
	ADDQ $8, R9
	ADDQ $4, R10
	DECQ R11
	JNZ vtap

	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vblock
	JMP vdone

vk2:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
vk2loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk2loop
	JMP vdone

vk3:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
	MOVQ 16(BX), R11
vk3loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VTAP(R11, Y10)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk3loop
	JMP vdone

vk4:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
	MOVQ 16(BX), R11
	MOVQ 24(BX), R12
vk4loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VTAP(R11, Y10)
	VTAP(R12, Y11)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk4loop
	JMP vdone

vk5:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	VPBROADCASTD 16(DX), Y12
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
	MOVQ 16(BX), R11
	MOVQ 24(BX), R12
	MOVQ 32(BX), R13
vk5loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VTAP(R11, Y10)
	VTAP(R12, Y11)
	VTAP(R13, Y12)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk5loop
	JMP vdone

vk6:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	VPBROADCASTD 16(DX), Y12
	VPBROADCASTD 20(DX), Y13
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
	MOVQ 16(BX), R11
	MOVQ 24(BX), R12
	MOVQ 32(BX), R13
	MOVQ 40(BX), R14
vk6loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VTAP(R11, Y10)
	VTAP(R12, Y11)
	VTAP(R13, Y12)
	VTAP(R14, Y13)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk6loop
	JMP vdone

vk7:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	VPBROADCASTD 16(DX), Y12
	VPBROADCASTD 20(DX), Y13
	VPBROADCASTD 24(DX), Y14
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
	MOVQ 16(BX), R11
	MOVQ 24(BX), R12
	MOVQ 32(BX), R13
	MOVQ 40(BX), R14
	MOVQ 48(BX), R15
vk7loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VTAP(R11, Y10)
	VTAP(R12, Y11)
	VTAP(R13, Y12)
	VTAP(R14, Y13)
	VTAP(R15, Y14)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk7loop
	JMP vdone

vk8:
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	VPBROADCASTD 16(DX), Y12
	VPBROADCASTD 20(DX), Y13
	VPBROADCASTD 24(DX), Y14
	VPBROADCASTD 28(DX), Y15
	MOVQ 0(BX), R9
	MOVQ 8(BX), R10
	MOVQ 16(BX), R11
	MOVQ 24(BX), R12
	MOVQ 32(BX), R13
	MOVQ 40(BX), R14
	MOVQ 48(BX), R15
	MOVQ 56(BX), BX
vk8loop:
	VMOVDQA Y7, Y0
	VMOVDQA Y7, Y4
	VTAP(R9, Y8)
	VTAP(R10, Y9)
	VTAP(R11, Y10)
	VTAP(R12, Y11)
	VTAP(R13, Y12)
	VTAP(R14, Y13)
	VTAP(R15, Y14)
	VTAP(BX, Y15)
	VSTORE
	ADDQ $16, DI
	ADDQ $64, AX
	SUBQ $16, R8
	JNZ vk8loop
	JMP vdone

vdone:
	VZEROUPPER
	RET

// Byte shuffles picking channel ch of 4 RGB pixels (12 bytes) into dwords: forward
// order, then reversed (mirror).
DATA cmnshuf<>+0(SB)/8, $0x8080800380808000
DATA cmnshuf<>+8(SB)/8, $0x8080800980808006
DATA cmnshuf<>+16(SB)/8, $0x8080800480808001
DATA cmnshuf<>+24(SB)/8, $0x8080800a80808007
DATA cmnshuf<>+32(SB)/8, $0x8080800580808002
DATA cmnshuf<>+40(SB)/8, $0x8080800b80808008
DATA cmnshuf<>+48(SB)/8, $0x8080800680808009
DATA cmnshuf<>+56(SB)/8, $0x8080800080808003
DATA cmnshuf<>+64(SB)/8, $0x808080078080800a
DATA cmnshuf<>+72(SB)/8, $0x8080800180808004
DATA cmnshuf<>+80(SB)/8, $0x808080088080800b
DATA cmnshuf<>+88(SB)/8, $0x8080800280808005
GLOBL cmnshuf<>(SB), RODATA|NOPTR, $96

// func chw3f32AVX2(d0, d1, d2 unsafe.Pointer, px *byte, groups int, coef *[6]float64, mirror, half bool)
// Writes 4*groups pixels: d_ch[k] = float32(fma(px channel ch, coef[ch], coef[3+ch])),
// converted to IEEE half (round to nearest even) when half is set. Forward: pixels
// px[0..], 12 bytes per group onwards. Mirror: px points at the group whose reversed
// pixels come first, and groups step backwards.
TEXT ·chw3f32AVX2(SB), NOSPLIT, $0-50
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), R8
	MOVQ d2+16(FP), R9
	MOVQ px+24(FP), SI
	MOVQ groups+32(FP), CX
	MOVQ coef+40(FP), DX
	MOVBQZX mirror+48(FP), AX
	MOVBQZX half+49(FP), R11
	VBROADCASTSD 0(DX), Y10
	VBROADCASTSD 8(DX), Y11
	VBROADCASTSD 16(DX), Y12
	VBROADCASTSD 24(DX), Y13
	VBROADCASTSD 32(DX), Y14
	VBROADCASTSD 40(DX), Y15
	LEAQ cmnshuf<>(SB), BX
	MOVQ $12, R10
	TESTQ AX, AX
	JZ cfwd
	ADDQ $48, BX
	MOVQ $-12, R10
cfwd:
	VMOVDQU 0(BX), X7
	VMOVDQU 16(BX), X8
	VMOVDQU 32(BX), X9
	TESTQ CX, CX
	JZ cdone
cloop:
	VMOVDQU (SI), X0
	VPSHUFB X7, X0, X1
	VPSHUFB X8, X0, X2
	VPSHUFB X9, X0, X3
	VCVTDQ2PD X1, Y1
	VCVTDQ2PD X2, Y2
	VCVTDQ2PD X3, Y3
	VFMADD213PD Y13, Y10, Y1
	VFMADD213PD Y14, Y11, Y2
	VFMADD213PD Y15, Y12, Y3
	VCVTPD2PSY Y1, X1
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y3, X3
	TESTQ R11, R11
	JNZ chalf
	VMOVUPS X1, (DI)
	VMOVUPS X2, (R8)
	VMOVUPS X3, (R9)
	ADDQ $16, DI
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ R10, SI
	DECQ CX
	JNZ cloop
	JMP cdone
chalf:
	VCVTPS2PH $0, X1, X1
	VCVTPS2PH $0, X2, X2
	VCVTPS2PH $0, X3, X3
	VMOVQ X1, (DI)
	VMOVQ X2, (R8)
	VMOVQ X3, (R9)
	ADDQ $8, DI
	ADDQ $8, R8
	ADDQ $8, R9
	ADDQ R10, SI
	DECQ CX
	JNZ cloop
cdone:
	VZEROUPPER
	RET

// func chw3f32AVX512(d0, d1, d2 unsafe.Pointer, px *byte, groups int, coef *[6]float64, mirror, half bool)
// chw3f32AVX2 with 8 pixels per group: two 16-byte loads (pixels 0..3 and 4..7 of the
// group, swapped when mirrored) fill the two lanes, the same in-lane shuffles pick the
// channels, and the float64 fused multiply-add runs on all 8 values of a channel in one
// zmm register (AVX-512F), with the same roundings: the results are identical. Forward
// groups step 24 bytes and read 28; mirrored, px points at the group's lowest pixel and
// groups step backwards.
TEXT ·chw3f32AVX512(SB), NOSPLIT, $0-50
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), R8
	MOVQ d2+16(FP), R9
	MOVQ px+24(FP), SI
	MOVQ groups+32(FP), CX
	MOVQ coef+40(FP), DX
	MOVBQZX mirror+48(FP), AX
	MOVBQZX half+49(FP), R11
	VBROADCASTSD 0(DX), Z10
	VBROADCASTSD 8(DX), Z11
	VBROADCASTSD 16(DX), Z12
	VBROADCASTSD 24(DX), Z13
	VBROADCASTSD 32(DX), Z14
	VBROADCASTSD 40(DX), Z15
	LEAQ cmnshuf<>(SB), BX
	MOVQ $24, R10
	XORQ R12, R12 // offset of the load for the low lane
	MOVQ $12, R13 // and for the high lane
	TESTQ AX, AX
	JZ zfwd
	ADDQ $48, BX
	MOVQ $-24, R10
	MOVQ $12, R12
	XORQ R13, R13
zfwd:
	VBROADCASTI128 0(BX), Y7
	VBROADCASTI128 16(BX), Y8
	VBROADCASTI128 32(BX), Y9
	TESTQ CX, CX
	JZ zdone
zloop:
	VMOVDQU (SI)(R12*1), X0
	VINSERTI128 $1, (SI)(R13*1), Y0, Y0
	VPSHUFB Y7, Y0, Y1
	VPSHUFB Y8, Y0, Y2
	VPSHUFB Y9, Y0, Y3
	VCVTDQ2PD Y1, Z1
	VCVTDQ2PD Y2, Z2
	VCVTDQ2PD Y3, Z3
	VFMADD213PD Z13, Z10, Z1
	VFMADD213PD Z14, Z11, Z2
	VFMADD213PD Z15, Z12, Z3
	VCVTPD2PS Z1, Y1
	VCVTPD2PS Z2, Y2
	VCVTPD2PS Z3, Y3
	TESTQ R11, R11
	JNZ zhalf
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, (R8)
	VMOVUPS Y3, (R9)
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ R10, SI
	DECQ CX
	JNZ zloop
	JMP zdone
zhalf:
	VCVTPS2PH $0, Y1, X1
	VCVTPS2PH $0, Y2, X2
	VCVTPS2PH $0, Y3, X3
	VMOVDQU X1, (DI)
	VMOVDQU X2, (R8)
	VMOVDQU X3, (R9)
	ADDQ $16, DI
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ R10, SI
	DECQ CX
	JNZ zloop
zdone:
	VZEROUPPER
	RET

// func cvtps2phAVX(dst *uint16, src *float32, n int)
// Converts n (a positive multiple of 4) float32 values to IEEE half, round to
// nearest even: the conversion chw3f32AVX2 applies.
TEXT ·cvtps2phAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
hcvt:
	VMOVUPS (SI), X0
	VCVTPS2PH $0, X0, X0
	VMOVQ X0, (DI)
	ADDQ $16, SI
	ADDQ $8, DI
	SUBQ $4, CX
	JNZ hcvt
	RET

// func hrow4AVX2(out unsafe.Pointer, in *byte, taps *tap, w *int32, k, n, limit int, bytesOut bool) int
// The horizontal pass of 4-channel pixels: taps j, j+1 of an output in the two lanes
// (one 8-byte load, zero-extended), no padding lanes and no loads or stores past the
// taps' pixels or the output; it stops at the first output whose taps end past limit
// bytes and returns the outputs done.
TEXT ·hrow4AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ taps+16(FP), BX
	MOVQ w+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ n+40(FP), R8
	MOVQ limit+48(FP), R13
	MOVBQZX bytesOut+56(FP), R14
	XORQ R15, R15
	VMOVDQU hperm<>(SB), Y13
	VPBROADCASTD fixhalf<>(SB), X12
	VPXOR X11, X11, X11
	VPBROADCASTD c255<>(SB), X10
	CMPQ R15, R8
	JGE qdone

qpixel:
	MOVLQSX (BX), AX
	LEAQ (AX)(CX*1), R9
	SHLQ $2, R9
	CMPQ R9, R13 // 4*(start+k) > limit
	JGT qdone
	LEAQ (SI)(AX*4), R9
	MOVQ CX, R11
	VPXOR Y0, Y0, Y0
	CMPQ R11, $2
	JLT qsingle

qpair:
	VPMOVZXBD (R9), Y1
	VMOVQ (DX), X2
	VPERMD Y2, Y13, Y2
	VPMULLD Y2, Y1, Y1
	VPADDD Y1, Y0, Y0
	ADDQ $8, R9
	ADDQ $8, DX
	SUBQ $2, R11
	CMPQ R11, $2
	JGE qpair

qsingle:
	TESTQ R11, R11
	JZ qreduce
	VPMOVZXBD (R9), X1
	VPBROADCASTD (DX), X2
	VPMULLD X2, X1, X1
	VPADDD Y1, Y0, Y0
	ADDQ $4, DX

qreduce:
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPADDD X12, X0, X0
	VPSRAD $22, X0, X0
	VPMAXSD X11, X0, X0
	VPMINSD X10, X0, X0
	TESTQ R14, R14
	JNZ qbytes
	VMOVDQU X0, (DI)
	ADDQ $16, DI
	JMP qnext

qbytes:
	VPACKUSDW X0, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVD X0, (DI)
	ADDQ $4, DI

qnext:
	ADDQ $12, BX
	INCQ R15
	CMPQ R15, R8
	JLT qpixel

qdone:
	VZEROUPPER
	MOVQ R15, ret+64(FP)
	RET


// hpair3AVX2 is the horizontal pass of 3-channel pixels for tap counts 2..8, two
// outputs (A, B) per 256-bit register: A's taps in the low 128-bit lane, B's in the
// high one, each lane holding one tap's R, G, B (and a zero) as dwords. One 16-byte
// load per output (two for more than 5 taps) holds its taps' pixels; a shuffle per tap
// spreads one pixel, which is multiplied by the weights laid out for it and summed. The
// lanes then hold the two outputs' sums: the scalar kernels' int32 sums of w * pixel
// (int32 addition, wrapping or not, does not depend on the order of the terms), then
// rounded, shifted and clamped as clip8 does. Two pairs go through each iteration.
//
// func hpair3AVX2(out unsafe.Pointer, in *byte, pt *int32, k, pairs int, bytesOut bool)
// pt is the pair table (pairPlan): per pair, the byte offsets in in of A's and B's
// first pixels, then for each tap j A's weight four times and B's four times. The
// caller guarantees that the loads of the pairs stay inside in (pairPlan.run) and
// that the stores may pass B's last element by one (B is not the row's last output).
// Byte shuffles picking pixel j (j = 0..4) of a 16-byte load into dwords R, G, B, 0:
// the same in both lanes, which hold the loads of two outputs.
DATA pshuf<>+0(SB)/8, $0x8080800180808000
DATA pshuf<>+8(SB)/8, $0x8080808080808002
DATA pshuf<>+16(SB)/8, $0x8080800180808000
DATA pshuf<>+24(SB)/8, $0x8080808080808002
DATA pshuf<>+32(SB)/8, $0x8080800480808003
DATA pshuf<>+40(SB)/8, $0x8080808080808005
DATA pshuf<>+48(SB)/8, $0x8080800480808003
DATA pshuf<>+56(SB)/8, $0x8080808080808005
DATA pshuf<>+64(SB)/8, $0x8080800780808006
DATA pshuf<>+72(SB)/8, $0x8080808080808008
DATA pshuf<>+80(SB)/8, $0x8080800780808006
DATA pshuf<>+88(SB)/8, $0x8080808080808008
DATA pshuf<>+96(SB)/8, $0x8080800a80808009
DATA pshuf<>+104(SB)/8, $0x808080808080800b
DATA pshuf<>+112(SB)/8, $0x8080800a80808009
DATA pshuf<>+120(SB)/8, $0x808080808080800b
DATA pshuf<>+128(SB)/8, $0x8080800d8080800c
DATA pshuf<>+136(SB)/8, $0x808080808080800e
DATA pshuf<>+144(SB)/8, $0x8080800d8080800c
DATA pshuf<>+152(SB)/8, $0x808080808080800e
GLOBL pshuf<>(SB), RODATA|NOPTR, $160

// PLOAD loads the pixels of the pair whose table entry is at e(DX) into y (and y2 for
// more than 5 taps: PLOAD2); PTAP adds tap j's products to acc; PROUND rounds, shifts
// and clamps; PSTORE32 and PSTORE8 write the six results at o(DI).
#define PLOAD(e, x, y) MOVLQSX e(DX), AX; MOVLQSX e+4(DX), R12; VMOVDQU (SI)(AX*1), x; VINSERTI128 $1, (SI)(R12*1), y, y
#define PLOAD2(x, y) VMOVDQU 15(SI)(AX*1), x; VINSERTI128 $1, 15(SI)(R12*1), y, y
#define PFIRST(m, src, wo, acc) VPSHUFB m, src, acc; VPMULLD wo(DX), acc, acc
#define PTAP(m, src, wo, acc, t) VPSHUFB m, src, t; VPMULLD wo(DX), t, t; VPADDD t, acc, acc
#define PROUND(acc) VPADDD Y9, acc, acc; VPSRAD $22, acc, acc; VPMAXSD Y8, acc, acc; VPMINSD Y10, acc, acc
#define PSTORE32(acc, x, o) VMOVDQU x, o(DI); VEXTRACTI128 $1, acc, o+12(DI)
#define PSTORE8(acc, x, t, o) VPACKUSDW acc, acc, acc; VPACKUSWB acc, acc, acc; VEXTRACTI128 $1, acc, t; VMOVD x, o(DI); VMOVD t, o+3(DI)

TEXT ·hpair3AVX2(SB), NOSPLIT, $0-41
	MOVQ out+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ pt+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ pairs+32(FP), R8
	MOVBQZX bytesOut+40(FP), R14
	VMOVDQU pshuf<>+0(SB), Y15
	VMOVDQU pshuf<>+32(SB), Y14
	VMOVDQU pshuf<>+64(SB), Y13
	VMOVDQU pshuf<>+96(SB), Y12
	VMOVDQU pshuf<>+128(SB), Y11
	VPBROADCASTD c255<>(SB), Y10
	VPBROADCASTD fixhalf<>(SB), Y9
	VPXOR Y8, Y8, Y8
	CMPQ CX, $2
	JEQ pk2
	CMPQ CX, $3
	JEQ pk3
	CMPQ CX, $4
	JEQ pk4
	CMPQ CX, $5
	JEQ pk5
	CMPQ CX, $6
	JEQ pk6
	CMPQ CX, $7
	JEQ pk7
	CMPQ CX, $8
	JEQ pk8
	JMP pdone

// 2 taps: entries of 72 bytes.
pk2:
	CMPQ R8, $2
	JLT pk2one
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PLOAD(72, X4, Y4)
	PFIRST(Y15, Y4, 80, Y6)
	PTAP(Y14, Y4, 112, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $144, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk2b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk2
pk2b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk2
pk2one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk2ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk2ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

// 3 taps: entries of 104 bytes.
pk3:
	CMPQ R8, $2
	JLT pk3one
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PLOAD(104, X4, Y4)
	PFIRST(Y15, Y4, 112, Y6)
	PTAP(Y14, Y4, 144, Y6, Y7)
	PTAP(Y13, Y4, 176, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $208, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk3b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk3
pk3b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk3
pk3one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk3ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk3ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

// 4 taps: entries of 136 bytes.
pk4:
	CMPQ R8, $2
	JLT pk4one
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PLOAD(136, X4, Y4)
	PFIRST(Y15, Y4, 144, Y6)
	PTAP(Y14, Y4, 176, Y6, Y7)
	PTAP(Y13, Y4, 208, Y6, Y7)
	PTAP(Y12, Y4, 240, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $272, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk4b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk4
pk4b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk4
pk4one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk4ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk4ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

// 5 taps: entries of 168 bytes.
pk5:
	CMPQ R8, $2
	JLT pk5one
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PLOAD(168, X4, Y4)
	PFIRST(Y15, Y4, 176, Y6)
	PTAP(Y14, Y4, 208, Y6, Y7)
	PTAP(Y13, Y4, 240, Y6, Y7)
	PTAP(Y12, Y4, 272, Y6, Y7)
	PTAP(Y11, Y4, 304, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $336, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk5b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk5
pk5b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk5
pk5one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk5ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk5ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

// 6 taps: entries of 200 bytes.
pk6:
	CMPQ R8, $2
	JLT pk6one
	PLOAD(0, X1, Y1)
	PLOAD2(X2, Y2)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PTAP(Y15, Y2, 168, Y0, Y3)
	PLOAD(200, X4, Y4)
	PLOAD2(X5, Y5)
	PFIRST(Y15, Y4, 208, Y6)
	PTAP(Y14, Y4, 240, Y6, Y7)
	PTAP(Y13, Y4, 272, Y6, Y7)
	PTAP(Y12, Y4, 304, Y6, Y7)
	PTAP(Y11, Y4, 336, Y6, Y7)
	PTAP(Y15, Y5, 368, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $400, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk6b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk6
pk6b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk6
pk6one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PLOAD2(X2, Y2)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PTAP(Y15, Y2, 168, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk6ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk6ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

// 7 taps: entries of 232 bytes.
pk7:
	CMPQ R8, $2
	JLT pk7one
	PLOAD(0, X1, Y1)
	PLOAD2(X2, Y2)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PTAP(Y15, Y2, 168, Y0, Y3)
	PTAP(Y14, Y2, 200, Y0, Y3)
	PLOAD(232, X4, Y4)
	PLOAD2(X5, Y5)
	PFIRST(Y15, Y4, 240, Y6)
	PTAP(Y14, Y4, 272, Y6, Y7)
	PTAP(Y13, Y4, 304, Y6, Y7)
	PTAP(Y12, Y4, 336, Y6, Y7)
	PTAP(Y11, Y4, 368, Y6, Y7)
	PTAP(Y15, Y5, 400, Y6, Y7)
	PTAP(Y14, Y5, 432, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $464, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk7b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk7
pk7b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk7
pk7one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PLOAD2(X2, Y2)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PTAP(Y15, Y2, 168, Y0, Y3)
	PTAP(Y14, Y2, 200, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk7ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk7ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

// 8 taps: entries of 264 bytes.
pk8:
	CMPQ R8, $2
	JLT pk8one
	PLOAD(0, X1, Y1)
	PLOAD2(X2, Y2)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PTAP(Y15, Y2, 168, Y0, Y3)
	PTAP(Y14, Y2, 200, Y0, Y3)
	PTAP(Y13, Y2, 232, Y0, Y3)
	PLOAD(264, X4, Y4)
	PLOAD2(X5, Y5)
	PFIRST(Y15, Y4, 272, Y6)
	PTAP(Y14, Y4, 304, Y6, Y7)
	PTAP(Y13, Y4, 336, Y6, Y7)
	PTAP(Y12, Y4, 368, Y6, Y7)
	PTAP(Y11, Y4, 400, Y6, Y7)
	PTAP(Y15, Y5, 432, Y6, Y7)
	PTAP(Y14, Y5, 464, Y6, Y7)
	PTAP(Y13, Y5, 496, Y6, Y7)
	PROUND(Y0)
	PROUND(Y6)
	ADDQ $528, DX
	SUBQ $2, R8
	TESTQ R14, R14
	JNZ pk8b
	PSTORE32(Y0, X0, 0)
	PSTORE32(Y6, X6, 24)
	ADDQ $48, DI
	JMP pk8
pk8b:
	PSTORE8(Y0, X0, X1, 0)
	PSTORE8(Y6, X6, X4, 6)
	ADDQ $12, DI
	JMP pk8
pk8one:
	TESTQ R8, R8
	JZ pdone
	PLOAD(0, X1, Y1)
	PLOAD2(X2, Y2)
	PFIRST(Y15, Y1, 8, Y0)
	PTAP(Y14, Y1, 40, Y0, Y3)
	PTAP(Y13, Y1, 72, Y0, Y3)
	PTAP(Y12, Y1, 104, Y0, Y3)
	PTAP(Y11, Y1, 136, Y0, Y3)
	PTAP(Y15, Y2, 168, Y0, Y3)
	PTAP(Y14, Y2, 200, Y0, Y3)
	PTAP(Y13, Y2, 232, Y0, Y3)
	PROUND(Y0)
	TESTQ R14, R14
	JNZ pk8ob
	PSTORE32(Y0, X0, 0)
	JMP pdone
pk8ob:
	PSTORE8(Y0, X0, X1, 0)
	JMP pdone

pdone:
	VZEROUPPER
	RET
