/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_linear_sums_scalar(const int16_t *x, const int8_t *weights,
 *                                   int32_t count, int32_t stride,
 *                                   int32_t groups, int32_t *sums,
 *                                   const int32_t *start);
 *
 * Writes to sums[4g + r] (g < groups, r < 4) start[4g + r] plus the dot
 * product of count int16 values x (an input row, its offset already added)
 * with the int8 values at weights + (4g + r) * stride: 4 * groups weight rows
 * stride bytes apart. start may be sums (the products added to them) or a
 * bias. count is a positive multiple of 4.
 *
 * For cores without the DSP extension (Cortex-M3, M33 without DSP), where
 * CMSIS-NN's portable C takes 2 weight rows a pass over the input and a load
 * for every operand. Here four rows share each input value: a step is one
 * input load, four weight loads and four MLAs (2.4 instructions a
 * multiply-accumulate with the loop), the loads paired so the M3 pipelines
 * the second of each pair. Rows 1 to 3 are loaded at register offsets from
 * row 0, which alone advances.
 *
 * In assembly because the 4 sums, the input value, 2 weight values, the two
 * pointers, the input's end and 3 row offsets take 13 registers, and GCC
 * spills some of them in the loop.
 */

#if defined(__ARM_ARCH_6M__) || defined(__ARM_ARCH_8M_BASE__)
#error "linear_sums_scalar.S needs Thumb-2 (Armv7-M or Armv8-M mainline)"
#endif

	.syntax unified
	.thumb
	/* A section of its own, as -ffunction-sections gives C functions. */
	.section .text.et_zephyr_linear_sums_scalar, "ax", %progbits

/* Locals below the saved registers. */
#define START 0
#define ADVANCE 4
#define GROUPS 8
#define STARTS 12
#define LOCALS 16
/* r4-r11 and lr saved above the locals: the fifth to seventh arguments above them. */
#define GROUPS_ARG (LOCALS + 9 * 4)
#define SUMS_ARG (LOCALS + 10 * 4)
#define STARTS_ARG (LOCALS + 11 * 4)

/* One input value (r10) times rows 0-3 (r1, r1 + r2, r1 + r4, r1 + r5) into
 * r6-r9; the input and row 0 advance. */
.macro step
	ldrsh r10, [r0], #2
	ldrsb r11, [r1, r2]
	ldrsb r3, [r1, r4]
	mla r7, r10, r11, r7
	mla r8, r10, r3, r8
	ldrsb r11, [r1, r5]
	ldrsb r3, [r1], #1
	mla r9, r10, r11, r9
	mla r6, r10, r3, r6
.endm

	.global et_zephyr_linear_sums_scalar
	.type et_zephyr_linear_sums_scalar, %function
	.thumb_func
et_zephyr_linear_sums_scalar:
	push {r4-r11, lr}
	sub sp, sp, #LOCALS
	ldr r4, [sp, #GROUPS_ARG]
	ldr lr, [sp, #SUMS_ARG]
	str r0, [sp, #START]
	str r4, [sp, #GROUPS]
	ldr r4, [sp, #STARTS_ARG]
	str r4, [sp, #STARTS]
	/* After a group row 0 has advanced count bytes; the next group's is
	 * 4 * stride past the group's. */
	rsb r6, r2, r3, lsl #2
	str r6, [sp, #ADVANCE]
	add r12, r0, r2, lsl #1
	/* The stride in r2, its double and triple in r4, r5; r3 is a weight value
	 * in the loop. */
	mov r2, r3
	add r4, r2, r2
	add r5, r4, r2
1:
	ldr r10, [sp, #STARTS]
	ldm r10!, {r6-r9}
	str r10, [sp, #STARTS]
2:
	step
	step
	step
	step
	cmp r0, r12
	bne 2b
	stmia lr!, {r6-r9}
	ldr r0, [sp, #START]
	ldr r10, [sp, #ADVANCE]
	add r1, r1, r10
	ldr r10, [sp, #GROUPS]
	subs r10, r10, #1
	str r10, [sp, #GROUPS]
	bne 1b
	add sp, sp, #LOCALS
	pop {r4-r11, pc}
	.size et_zephyr_linear_sums_scalar, . - et_zephyr_linear_sums_scalar
