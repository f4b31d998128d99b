/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_depthwise_sums_dsp(const int16_t *row, int32_t row_bytes,
 *                                   const int32_t *taps, int32_t pairs,
 *                                   int32_t *sums);
 *
 * One output row of a 3x3 depthwise convolution of one channel, two outputs
 * at a time: row points at the first of the 3 int16 plane rows the outputs
 * read (row_bytes apart, word aligned), taps holds {k0, k1} and {k1, k2} of
 * each kernel row as int16 pairs (6 words), and the 2 x pairs sums go to sums.
 *
 * For outputs x and x + 1, a plane row's words {a0, a1} and {a2, a3} (one
 * LDRD) give a0 k0 + a1 k1 (SMLAD), a2 k2 (SMLABT), a1 k0 (SMLATB) and
 * a2 k1 + a3 k2 (SMLAD): 3 loads and 12 multiplies for 18 multiply-
 * accumulates. In assembly because the 6 taps, 2 sums, 2 loaded words and
 * 4 pointers take every register.
 */

#if !defined(__ARM_FEATURE_DSP)
#error "depthwise_sums_dsp.S needs the DSP extension"
#endif

	.syntax unified
	.thumb
	/* A section of its own, as -ffunction-sections gives C functions. */
	.section .text.et_zephyr_depthwise_sums_dsp, "ax", %progbits

/* r4-r11 and lr saved: the fifth argument is above them. */
#define SUMS_ARG (9 * 4)

/* The taps of one kernel row (K01, K12) over the row at r0. */
.macro kernel_row k01, k12
	smlad r10, r12, \k01, r10
	smlabt r10, lr, \k12, r10
	smlatb r11, r12, \k01, r11
	smlad r11, lr, \k12, r11
.endm

	.global et_zephyr_depthwise_sums_dsp
	.type et_zephyr_depthwise_sums_dsp, %function
	.thumb_func
et_zephyr_depthwise_sums_dsp:
	push {r4-r11, lr}
	ldm r2, {r4-r9}
	/* r2: the sums; r3: where row 0 ends. */
	ldr r2, [sp, #SUMS_ARG]
	add r3, r0, r3, lsl #2
.Lpair:
	movs r10, #0
	movs r11, #0
	ldrd r12, lr, [r0]
	add r0, r0, r1
	kernel_row r4, r5
	ldrd r12, lr, [r0]
	add r0, r0, r1
	kernel_row r6, r7
	ldrd r12, lr, [r0], #4
	sub r0, r0, r1, lsl #1
	kernel_row r8, r9
	strd r10, r11, [r2], #8
	cmp r0, r3
	bne .Lpair
	pop {r4-r11, pc}
	.size et_zephyr_depthwise_sums_dsp, . - et_zephyr_depthwise_sums_dsp
