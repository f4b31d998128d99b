/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_pointwise_pair_mve(const struct PairRun *run);
 *
 * Two output channels of the int8 matrix product (pointwise_mve.cpp), every
 * row: sums, requantization and stores. The rows go as 4 streams, each
 * starting at its own row (run->streams) and moving one row a block, so that
 * a block's 4 row pointers are where the previous block left them; the
 * requantized outputs of a block are scattered to run->offsets (the streams'
 * rows times the output row bytes), which move by one output row a block.
 * Per 16 of depth, each loaded input vector serves both channels' weights,
 * interleaved in 16-byte slices at run->weights (channel 0's slice, then
 * channel 1's): 8 multiply-accumulate instructions of 16 lanes for 6 loads,
 * two such steps an iteration (a block loop for rows of an even number of
 * steps, one for odd: KWS's 64-value rows take 60 instructions, not 64).
 *
 * In assembly because the 8 sums live in the 8 even registers vmladava
 * accumulates in (r0 .. r12, lr), the 4 row pointers, the weights and the
 * step counter in the odd ones, and the requantization's constants in the
 * vector registers the products leave free (q1-q3, q6, q7): no compiler
 * keeps all of them in registers.
 *
 * The requantization is CMSIS-NN's arm_requantize_mve_32x4 with the
 * channel's terms as scalars: the same operations, so the same results.
 */

#if !defined(__ARM_FEATURE_MVE)
#error "pointwise_pair_mve.S needs Helium (MVE)"
#endif

	.syntax unified
	.thumb
	/* A section of its own, as -ffunction-sections gives C functions. */
	.section .text.et_zephyr_pointwise_pair_mve, "ax", %progbits

/* The frame: run's first 16 words (pointwise_mve.cpp's PairRun), in the
 * order two ldm instructions load them: at sp the first channel's base, left
 * shift, multiplier, right shift, output offset and out; at SECOND the second
 * channel's five terms, then the weights, its out, the steps, the output row
 * bytes and where stream 3 ends. */
#define FIRST_RIGHT 12
#define SECOND 24
#define SECOND_RIGHT 36
#define WEIGHTS 44
#define STEPS 52
#define FRAME 64
/* run's words after the frame's: the 4 streams (64), the offsets, the
 * activation range. */
#define RUN_OFFSETS 80
#define RUN_MIN 96

/* 16 of depth of one row (its pointer \row) with both channels' weights
 * (q4, q5) into the row's two sums \sum0 and \sum1. */
.macro row_16 op, row, sum0, sum1
	vldrb.8 q0, [\row], #16
	\op\().s8 \sum0, q0, q4
	\op\().s8 \sum1, q0, q5
.endm

/* 16 of depth for the block's 4 rows x 2 channels: op is vmladav to start
 * the sums, vmladava to add to them. Channel 0 sums in r0, r4, r8, r12,
 * channel 1 in r2, r6, r10, lr (streams 0 .. 3). */
.macro depth_16 op
	vldrb.8 q5, [r9, #16]
	vldrb.8 q4, [r9], #32
	row_16 \op, r1, r0, r2
	row_16 \op, r3, r4, r6
	row_16 \op, r5, r8, r10
	row_16 \op, r7, r12, lr
.endm

/* One channel's 4 sums in \sums requantized and stored: r0 base, r2 left
 * shift, r4 multiplier, r6 right shift (<= 0), r8 output offset, r10 out;
 * \right the right shift in every lane; q5 is clobbered. */
.macro requantize sums, right
	vadd.i32 \sums, \sums, r0
	vshl.s32 \sums, r2
	vqrdmulh.s32 \sums, \sums, r4
	/* Round half away from zero, as arm_divide_by_power_of_two_mve_32x4. */
	vand q5, \sums, \right
	vshr.s32 q5, q5, #31
	vqadd.s32 \sums, \sums, q5
	vrshl.s32 \sums, r6
	vadd.i32 \sums, \sums, r8
	vmax.s32 \sums, \sums, q6
	vmin.s32 \sums, \sums, q7
	vstrb.32 \sums, [r10, q1]
.endm

/* Every block: the sums of 4 rows x 2 channels over the row's steps (two
 * a loop iteration: \parity says whether a block starts with one step or
 * two), requantized and stored. */
.macro block_loop parity
.L\parity\()_block:
	depth_16 vmladav
.ifc \parity, even
	depth_16 vmladava
	subs r11, #2
.else
	subs r11, #1
.endif
	beq .L\parity\()_requantize
.L\parity\()_steps:
	depth_16 vmladava
	depth_16 vmladava
	subs r11, #2
	bne .L\parity\()_steps

.L\parity\()_requantize:
	/* Each channel's sums into a vector, stream k in lane k (the first
	 * register goes to the lower lane). */
	vmov q0[2], q0[0], r0, r8
	vmov q0[3], q0[1], r4, r12
	vmov q4[2], q4[0], r2, r10
	vmov q4[3], q4[1], r6, lr
	ldm sp, {r0, r2, r4, r6, r8, r10}
	requantize q0, q2
	/* The second channel's terms, and the next block's weights, steps,
	 * output row bytes and where stream 3 ends. */
	add r9, sp, #SECOND
	ldm r9, {r0, r2, r4, r6, r8, r9, r10, r11, r12, lr}
	requantize q4, q3
	vadd.i32 q1, q1, r12
	cmp r7, lr
	bne .L\parity\()_block
.endm

	.global et_zephyr_pointwise_pair_mve
	.type et_zephyr_pointwise_pair_mve, %function
	.p2align 2
et_zephyr_pointwise_pair_mve:
	push {r4-r11, lr}
	vpush {d8-d15}
	sub sp, #FRAME + 4 /* sp stays 8-byte aligned */
	mov r12, r0
	ldm r12!, {r0-r7}
	stm sp, {r0-r7}
	ldm r12!, {r0-r7}
	add lr, sp, #32
	stm lr, {r0-r7}
	ldm r12!, {r1, r3, r5, r7}
	vldrw.32 q1, [r12]
	ldrd r0, r2, [r12, #RUN_MIN - RUN_OFFSETS]
	vdup.32 q6, r0
	vdup.32 q7, r2
	ldr r0, [sp, #FIRST_RIGHT]
	vdup.32 q2, r0
	ldr r0, [sp, #SECOND_RIGHT]
	vdup.32 q3, r0
	ldr r9, [sp, #WEIGHTS]
	ldr r11, [sp, #STEPS]

	tst r11, #1
	bne .Lodd_block
	block_loop even
	b .Ldone
	block_loop odd
.Ldone:
	add sp, #FRAME + 4
	vpop {d8-d15}
	pop {r4-r11, pc}
	.size et_zephyr_pointwise_pair_mve, . - et_zephyr_pointwise_pair_mve
