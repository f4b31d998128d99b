/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_conv_sums_dsp(const int32_t *patch, const int8_t *weights,
 *                              int32_t steps, int32_t channels, int32_t *sums,
 *                              int32_t rewind);
 *
 * The dot products of 4 pixels' patches with each of channels output
 * channels' weights (steps x 4 int8 values each, one channel after the
 * other, each rewind bytes before the previous one's end: a depth that is
 * not a multiple of 4 reads as many of the next channel's, against patch
 * values of 0), written as {pixel 0, 1, 2, 3} per channel to sums.
 *
 * The patch holds, per step of 4 depth values x0 .. x3 and per pixel, the
 * two words SXTB16 makes of them: {x0, x2} and {x1, x3} as int16 (the input
 * offset already added), pixel after pixel: 8 words a step. The weights'
 * word is split the same way, so each SMLAD adds two products of matching
 * depth. One step is 13 instructions for 16 multiply-accumulates: a weight
 * load and its two SXTB16, two LDMs of 2 pixels' words each, 8 SMLADs.
 * (CMSIS-NN's arm_nn_mat_mult_nt_t_s8 takes 20, extending every input word
 * again for each pair of channels.)
 *
 * In assembly because the 4 sums, 2 weight words, 4 loaded words and 3
 * pointers take 13 registers and LDM needs them in ascending order.
 */

#if !defined(__ARM_FEATURE_DSP)
#error "conv_sums_dsp.S needs the DSP extension"
#endif

	.syntax unified
	.thumb
	/* A section of its own, as -ffunction-sections gives C functions. */
	.section .text.et_zephyr_conv_sums_dsp, "ax", %progbits

/* Locals below the saved registers: the sums pointer and channels left. */
#define SUMS 0
#define CHANNELS 4
#define LOCALS 12 /* padded: sp stays 8-byte aligned */
/* r4-r11 and lr saved: the fifth and sixth arguments are above them. */
#define SUMS_ARG (LOCALS + 9 * 4)
#define REWIND_ARG (LOCALS + 10 * 4)

/* One step: 4 depth values for pixels 0 .. 3 (sums in r4 .. r7). */
.macro step
	ldr r9, [r1], #4
	sxtb16 r10, r9
	sxtb16 r9, r9, ror #8
	ldm r8!, {r3, r11, r12, lr}
	smlad r4, r3, r10, r4
	smlad r4, r11, r9, r4
	smlad r5, r12, r10, r5
	smlad r5, lr, r9, r5
	ldm r8!, {r3, r11, r12, lr}
	smlad r6, r3, r10, r6
	smlad r6, r11, r9, r6
	smlad r7, r12, r10, r7
	smlad r7, lr, r9, r7
.endm

	.global et_zephyr_conv_sums_dsp
	.type et_zephyr_conv_sums_dsp, %function
	.thumb_func
et_zephyr_conv_sums_dsp:
	push {r4-r11, lr}
	sub sp, sp, #LOCALS
	ldr r4, [sp, #SUMS_ARG]
	str r4, [sp, #SUMS]
	str r3, [sp, #CHANNELS]
	/* r2: the patch's end (32 bytes a step). */
	add r2, r0, r2, lsl #5
.Lchannel:
	mov r8, r0
	movs r4, #0
	movs r5, #0
	movs r6, #0
	movs r7, #0
	/* Two steps an iteration; an odd count enters at the second. */
	sub r3, r2, r0
	tst r3, #32
	bne .Lsecond
.Lfirst:
	step
.Lsecond:
	step
	cmp r8, r2
	bne .Lfirst
	ldr r3, [sp, #SUMS]
	stm r3!, {r4-r7}
	str r3, [sp, #SUMS]
	ldr r3, [sp, #REWIND_ARG]
	sub r1, r1, r3
	ldr r3, [sp, #CHANNELS]
	subs r3, r3, #1
	str r3, [sp, #CHANNELS]
	bne .Lchannel
	add sp, sp, #LOCALS
	pop {r4-r11, pc}
	.size et_zephyr_conv_sums_dsp, . - et_zephyr_conv_sums_dsp
