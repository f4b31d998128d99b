/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * CMSIS-NN's per-channel requantization (arm_requantize_mve_32x4, double
 * rounding) for et-zephyr's Helium kernels, over a vector of 4 sums of one
 * output channel, the channel's shift split into left and right once instead
 * of on every call. Per lane, in this order (pointwise_pair_mve.S and
 * depthwise_column_mve.S run the same operations, so their results are
 * CMSIS-NN's too): r =
 * vqrdmulh(vshl(sum + base, left_shift), multiplier); r += vshr(vand(r,
 * right_shift), 31) (saturating: rounds half away from zero, as
 * arm_divide_by_power_of_two_mve_32x4); r = vrshl(r, right_shift) +
 * output_offset; clamped to [activation_min, activation_max].
 */

#ifndef ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_
#define ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_

#include <arm_mve.h>
#include <stdint.h>

namespace et_zephyr::native {

/* One output channel's requantization as scalars, for the vector-by-scalar
 * instruction forms (the assembly of pointwise_pair_mve.S and
 * depthwise_column_mve.S loads them in this order). */
struct ChannelTerms {
    int32_t base;        /* bias + input_offset * weight sum */
    int32_t left_shift;  /* max(shift, 0) */
    int32_t multiplier;  /* Q31 */
    int32_t right_shift; /* min(shift, 0), as vrshl takes it */
};

inline ChannelTerms channel_terms(int32_t base, int32_t multiplier, int32_t shift) {
    return {base, shift > 0 ? shift : 0, multiplier, shift < 0 ? shift : 0};
}

/* The activation range every output of a layer is clamped to. */
struct ActivationRange {
    int32x4_t low;
    int32x4_t high;
};

/* 4 sums of one channel requantized: output_offset added, clamped. */
__attribute__((always_inline)) inline int32x4_t requantize(int32x4_t sums, const ChannelTerms &t,
                                                           int32_t output_offset,
                                                           const ActivationRange &range) {
    int32x4_t r = vshlq_r_s32(vaddq_n_s32(sums, t.base), t.left_shift);
    r = vqrdmulhq_n_s32(r, t.multiplier);
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(r, vdupq_n_s32(t.right_shift)), 31);
    r = vrshlq_n_s32(vqaddq_s32(r, fixup), t.right_shift);
    return vminq_s32(vmaxq_s32(vaddq_n_s32(r, output_offset), range.low), range.high);
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_ */
