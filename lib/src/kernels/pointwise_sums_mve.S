/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_pointwise_sums_mve(const int8_t *rows, int32_t depth,
 *                                   const int8_t *pair_weights, int32_t blocks,
 *                                   int32_t *sums);
 *
 * For each block of 4 pixels (4 consecutive rows of depth int8 values from
 * rows; depth a multiple of 16), the dot products with two output channels'
 * weights, interleaved in 16-byte slices in pair_weights (channel 0's slice,
 * then channel 1's). Writes per block {channel 0: pixels 0-3} and
 * {channel 1: pixels 0-3} as int32 to sums (8 words a block).
 *
 * In assembly because the 8 sums live in the 8 even registers vmladava
 * accumulates in (r0 .. r12, lr), the 5 pointers and the step counter in
 * the odd ones: no compiler keeps all 14 in registers around its own
 * variables. Each input vector serves both channels: 8 multiply-accumulate
 * instructions of 16 lanes for 6 loads.
 */

#if !defined(__ARM_FEATURE_MVE)
#error "pointwise_sums_mve.S needs Helium (MVE)"
#endif

	.syntax unified
	.thumb
	/* A section of its own, as -ffunction-sections gives C functions. */
	.section .text.et_zephyr_pointwise_sums_mve, "ax", %progbits

/* Locals below the saved registers. */
#define ROWS 0
#define DEPTH 4
#define WEIGHTS 8
#define BLOCKS 12
#define SUMS 16
#define LOCALS 28 /* 5 words, padded: sp stays 8-byte aligned */
/* r4-r11, lr and d8-d11 saved: the fifth argument is above them. */
#define SUMS_ARG (LOCALS + 9 * 4 + 4 * 8)

/* 16 of depth for the block's 4 pixels x 2 channels: op is vmladav to start
 * the sums, vmladava to add to them. Channel 0 sums in r0, r4, r8, r12,
 * channel 1 in r2, r6, r10, lr (pixels 0 .. 3). */
.macro depth_16 op
	vldrb.8 q5, [r9, #16]
	vldrb.8 q4, [r9], #32
	vldrb.8 q0, [r1], #16
	\op\().s8 r0, q0, q4
	\op\().s8 r2, q0, q5
	vldrb.8 q1, [r3], #16
	\op\().s8 r4, q1, q4
	\op\().s8 r6, q1, q5
	vldrb.8 q2, [r5], #16
	\op\().s8 r8, q2, q4
	\op\().s8 r10, q2, q5
	vldrb.8 q3, [r7], #16
	\op\().s8 r12, q3, q4
	\op\().s8 lr, q3, q5
.endm

	.global et_zephyr_pointwise_sums_mve
	.type et_zephyr_pointwise_sums_mve, %function
	.p2align 2
et_zephyr_pointwise_sums_mve:
	cmp r3, #0
	it le
	bxle lr
	push {r4-r11, lr}
	vpush {d8-d11}
	sub sp, #LOCALS
	str r0, [sp, #ROWS]
	str r1, [sp, #DEPTH]
	str r2, [sp, #WEIGHTS]
	str r3, [sp, #BLOCKS]
	ldr r0, [sp, #SUMS_ARG]
	str r0, [sp, #SUMS]

.Lblock:
	/* Rows of the block's 4 pixels: r1, r3, r5, r7; weights r9; steps r11. */
	ldr r1, [sp, #ROWS]
	ldr r11, [sp, #DEPTH]
	add r3, r1, r11
	add r5, r3, r11
	add r7, r5, r11
	add r0, r7, r11
	str r0, [sp, #ROWS]
	ldr r9, [sp, #WEIGHTS]
	lsr r11, r11, #4

	depth_16 vmladav
	subs r11, #1
	beq .Lstore

.Lstep:
	depth_16 vmladava
	subs r11, #1
	bne .Lstep

.Lstore:
	/* Ascending registers go to ascending addresses: {pixels 0-3} of
	 * channel 0, then of channel 1. */
	ldr r1, [sp, #SUMS]
	stmia r1!, {r0, r4, r8, r12}
	stmia r1!, {r2, r6, r10, lr}
	str r1, [sp, #SUMS]
	ldr r0, [sp, #BLOCKS]
	subs r0, #1
	str r0, [sp, #BLOCKS]
	bne .Lblock

	add sp, #LOCALS
	vpop {d8-d11}
	pop {r4-r11, pc}
	.size et_zephyr_pointwise_sums_mve, . - et_zephyr_pointwise_sums_mve
