/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_linear_sums_dsp(const int32_t *pairs, const int8_t *weights,
 *                                int32_t steps, int32_t groups,
 *                                const int32_t *bias, int32_t *sums,
 *                                int32_t stride);
 *
 * Writes to sums[0 .. 4 * groups - 1] the bias (none: bias is null) plus the
 * dot products of one input row with 4 * groups weight rows of steps x 4
 * int8 values each, stride bytes apart (a linear's rows: steps x 4; the
 * first values of longer rows: their length). bias may be sums: each group
 * reads its 4 before it writes them. The input is as input_pairs_dsp.h
 * extends it: per step the words {x0, x2} and {x1, x3}.
 *
 * Four rows a pass over the input: each row's weight word is split by two
 * SXTB16 the way the input's pairs are, so one SMLAD adds two products of
 * matching depth. One step is 22 instructions for 16 multiply-accumulates:
 * the input's two words, and for each row a load, two SXTB16 and two SMLADs.
 * Five of the six loads go one after the other, single loads that the M4
 * pipelines (6 cycles; an LDRD of the input's words, one instruction fewer,
 * takes 3 cycles of its own). (CMSIS-NN's arm_nn_vec_mat_mult_t_s8 takes 2 rows a pass: 13
 * instructions for 8, the input's load and extension repeated for every
 * pair of rows.) Eight steps an iteration; a count of 8n + k enters at step
 * 8 - k, by the address worked out once. Rows 1 and 3 are loaded at a
 * register offset from rows 0 and 2, so the 4 rows take 3 registers.
 *
 * In assembly because the 4 sums, 2 input words, 3 weight words and a half
 * of one, 3 weight pointers, the stride and the input's pointer take all 14
 * registers (the input's end, the entry and the counts are on the stack).
 */

#if !defined(__ARM_FEATURE_DSP)
#error "linear_sums_dsp.S needs the DSP extension"
#endif

	.syntax unified
	.thumb
	/* A section of its own, as -ffunction-sections gives C functions. */
	.section .text.et_zephyr_linear_sums_dsp, "ax", %progbits

/* Locals below the saved registers. */
#define PAIRS 0
#define END 4
#define ENTRY 8
#define GROUPS 12
/* From row 2's end of the steps to the next group's row 0: 2 x stride - 4 x steps. */
#define ADVANCE 16
#define LOCALS 20
/* r4-r11 and lr saved above the locals: the fifth to seventh arguments above them. */
#define BIAS_ARG (LOCALS + 9 * 4)
#define SUMS_ARG (LOCALS + 10 * 4)
#define STRIDE_ARG (LOCALS + 11 * 4)
/* One step's bytes: 22 instructions, every one 32 bits wide. */
#define STEP_BYTES 88

/* The weight word in \w split into {w0, w2} and {w1, w3}, and their products
 * with the input's pairs (r10, r11) added to \sum. */
.macro split_and_add sum, w
	sxtb16 lr, \w
	sxtb16 \w, \w, ror #8
	smlad \sum, lr, r10, \sum
	smlad \sum, \w, r11, \sum
.endm

/* One step: 4 input values (r0) against 4 rows (r1, r1 + r3, r4, r4 + r3). */
.macro step
	ldr.w r12, [r1, r3]
	ldr.w r5, [r1], #4
	ldr.w r2, [r4, r3]
	ldr.w r10, [r0], #8
	ldr.w r11, [r0, #-4]
	split_and_add r7, r12
	split_and_add r6, r5
	split_and_add r9, r2
	ldr.w r12, [r4], #4
	split_and_add r8, r12
.endm

	.global et_zephyr_linear_sums_dsp
	.type et_zephyr_linear_sums_dsp, %function
	.thumb_func
et_zephyr_linear_sums_dsp:
	push {r4-r11, lr}
	sub sp, sp, #LOCALS
	str r0, [sp, #PAIRS]
	str r3, [sp, #GROUPS]
	add r12, r0, r2, lsl #3
	str r12, [sp, #END]
	/* The entry: step (8 - steps % 8) % 8 = -steps % 8 of the loop. */
	rsb r12, r2, #0
	and r12, r12, #7
	mov lr, #STEP_BYTES
	mul r12, r12, lr
	adr lr, .Lsteps
	add r12, r12, lr
	orr r12, r12, #1
	str r12, [sp, #ENTRY]
	/* r3: the row stride. */
	ldr r3, [sp, #STRIDE_ARG]
	lsl r12, r3, #1
	sub r12, r12, r2, lsl #2
	str r12, [sp, #ADVANCE]
.Lgroup:
	ldr r12, [sp, #BIAS_ARG]
	cmp r12, #0
	beq .Lno_bias
	ldm r12!, {r6-r9}
	str r12, [sp, #BIAS_ARG]
	b .Lstart
.Lno_bias:
	movs r6, #0
	movs r7, #0
	mov r8, #0
	mov r9, #0
.Lstart:
	ldr r0, [sp, #PAIRS]
	add r4, r1, r3, lsl #1
	ldr pc, [sp, #ENTRY]
	.p2align 2
.Lsteps:
	.rept 8
	step
	.endr
	ldr lr, [sp, #END]
	cmp r0, lr
	bne .Lsteps
	ldr lr, [sp, #SUMS_ARG]
	stm lr!, {r6-r9}
	str lr, [sp, #SUMS_ARG]
	/* The next group's row 0, from r4 at row 2's end of the steps. */
	ldr lr, [sp, #ADVANCE]
	add r1, r4, lr
	ldr lr, [sp, #GROUPS]
	subs lr, lr, #1
	str lr, [sp, #GROUPS]
	bne .Lgroup
	add sp, sp, #LOCALS
	pop {r4-r11, pc}
	.size et_zephyr_linear_sums_dsp, . - et_zephyr_linear_sums_dsp
