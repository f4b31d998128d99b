/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * void et_zephyr_depthwise_stride1_column_mve(const struct ColumnRun *run);
 * void et_zephyr_depthwise_stride2_column_mve(const struct ColumnRun *run);
 *
 * One output column of 8 channels of the 3x3 depthwise convolution
 * (depthwise_mve.cpp), at stride 1 or 2 down. Each channel: its record
 * (run->records onwards, 48 bytes a channel: the weight vectors of the
 * column's first and second output of a load, then the channel's
 * ChannelTerms), its strip (run->strip, then each strip_next further on) and
 * its outputs (run->out, then each out_next further on, block_bytes down the
 * column a block). A block is 4 outputs: two 16-byte loads of the strip,
 * each holding the windows of two outputs, 4 vmladav into r0, r2, r4, r6
 * (the even registers vmladav needs), the 4 sums into a vector (output k in
 * lane k: the first register of a vmov goes to the lower lane), requantized
 * as requantize_mve.h describes and stored 4 output rows apart. A column
 * whose height is not a multiple of 4 ends with a block over its last 4
 * outputs (run->strip_back and out_back back from where the whole blocks
 * end; 0: none); one of 1 to 3 outputs is a block whose store is predicated
 * to them (VPR.P0, set from run->short_rows).
 *
 * In assembly because GCC 12 passes the sums through the stack and reloads
 * a channel's terms and pointers around every call.
 */

#if !defined(__ARM_FEATURE_MVE)
#error "depthwise_column_mve.S needs Helium (MVE)"
#endif

	.syntax unified
	.thumb

/* The frame: run's first 6 words (depthwise_mve.cpp's ColumnRun). */
#define STRIP_NEXT 0
#define BLOCKS 8
#define STRIP_BACK 12
#define RECORDS_END 20
#define FRAME 24
/* run's words after the frame's. */
#define RUN_RECORDS 24
#define RUN_BLOCK_BYTES 36
#define RUN_SHORT_ROWS 44
#define RUN_ROWS 48

/* 4 outputs \stride rows apart into q2: q0 and q1 the channel's weight
 * vectors, r1 the strip (moved on to the next block); r8 base, r9 left shift,
 * r10 multiplier, r11 right shift (also in every lane of q4), r7 output
 * offset, q5/q6 the activation range. */
.macro outputs stride
	vldrb.8 q2, [r1], #12 * \stride
	vmladav.s8 r0, q2, q0
	vmladav.s8 r2, q2, q1
	vldrb.8 q2, [r1, #-6 * \stride]
	vmladav.s8 r4, q2, q0
	vmladav.s8 r6, q2, q1
	vmov q3[2], q3[0], r0, r4
	vmov q3[3], q3[1], r2, r6
	vadd.i32 q3, q3, r8
	vshl.s32 q3, r9
	vqrdmulh.s32 q3, q3, r10
	/* Round half away from zero, as arm_divide_by_power_of_two_mve_32x4. */
	vand q2, q3, q4
	vshr.s32 q2, q2, #31
	vqadd.s32 q2, q3, q2
	vrshl.s32 q2, r11
	vadd.i32 q2, q2, r7
	vmax.s32 q2, q2, q5
	vmin.s32 q2, q2, q6
.endm

/* The same, stored at r3 and the 3 output rows below it (q7 their offsets). */
.macro block stride
	outputs \stride
	vstrb.32 q2, [r3, q7]
.endm

.macro column stride
	.section .text.et_zephyr_depthwise_stride\stride\()_column_mve, "ax", %progbits
	.global et_zephyr_depthwise_stride\stride\()_column_mve
	.type et_zephyr_depthwise_stride\stride\()_column_mve, %function
	.p2align 2
et_zephyr_depthwise_stride\stride\()_column_mve:
	push {r4-r11, lr}
	vpush {d8-d15}
	sub sp, #FRAME + 4 /* sp stays 8-byte aligned */
	ldm r0, {r1-r6}
	stm sp, {r1-r6}
	ldr r12, [r0, #RUN_RECORDS]
	ldrd r1, r3, [r0, #RUN_RECORDS + 4]
	ldrd r5, r7, [r0, #RUN_BLOCK_BYTES]
	ldr r2, [r0, #RUN_SHORT_ROWS]
	vctp.32 r2
	add r0, #RUN_ROWS
	vldrw.32 q7, [r0]
	vldrw.32 q5, [r0, #16]
	vldrw.32 q6, [r0, #32]
.Lchannel_\stride:
	vldrw.32 q0, [r12]
	vldrw.32 q1, [r12, #16]
	add r12, #32
	ldm r12!, {r8-r11}
	vdup.32 q4, r11
	ldr lr, [sp, #BLOCKS]
	wls lr, lr, .Lshort_\stride
.Lblock_\stride:
	block \stride
	add r3, r5
	le lr, .Lblock_\stride
	ldrd r0, r2, [sp, #STRIP_BACK]
	cbz r0, .Lnext_\stride
	subs r1, r0
	subs r3, r2
	block \stride
.Lnext_\stride:
	ldm sp, {r0, r2}
	add r1, r0
	add r3, r2
	ldr r0, [sp, #RECORDS_END]
	cmp r12, r0
	bne .Lchannel_\stride
	add sp, #FRAME + 4
	vpop {d8-d15}
	pop {r4-r11, pc}
.Lshort_\stride:
	outputs \stride
	vpst
	vstrbt.32 q2, [r3, q7]
	b .Lnext_\stride
	.size et_zephyr_depthwise_stride\stride\()_column_mve, . - et_zephyr_depthwise_stride\stride\()_column_mve
.endm

	column 1
	column 2
