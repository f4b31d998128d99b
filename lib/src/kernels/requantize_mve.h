/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * CMSIS-NN's per-channel requantization (arm_requantize_mve_32x4, double
 * rounding) for et-zephyr's Helium kernels, with the channel's shifts split
 * into left and right once instead of on every call. Per lane, in this order
 * (the kernels' assembly runs these operations, so their results are
 * CMSIS-NN's): r = vqrdmulh(vshl(sum + base, left_shift), multiplier); r +=
 * vshr(vand(r, right_shift), 31) (saturating: rounds half away from zero, as
 * arm_divide_by_power_of_two_mve_32x4); r = vrshl(r, right_shift) +
 * output_offset; clamped to [activation_min, activation_max].
 */

#ifndef ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_
#define ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_

#include <arm_mve.h>
#include <stdint.h>

namespace et_zephyr::native {

/* One vector of outputs' requantization: per lane, as the kernel lays out
 * its lanes (4 channels of a pixel, or 4 pixels of a channel). */
struct Requantization {
    int32x4_t base;        /* bias + input_offset * kernel sum */
    int32x4_t multiplier;  /* Q31 */
    int32x4_t left_shift;  /* max(shift, 0) */
    int32x4_t right_shift; /* min(shift, 0), as vrshl takes it */
    int32x4_t activation_min;
    int32x4_t activation_max;
    int32_t output_offset;
};

inline Requantization make_requantization(int32x4_t base, int32x4_t multiplier, int32x4_t shift,
                                          int32_t output_offset, int32_t activation_min,
                                          int32_t activation_max) {
    Requantization q;
    q.base = base;
    q.multiplier = multiplier;
    q.left_shift = vmaxq_s32(shift, vdupq_n_s32(0));
    q.right_shift = vminq_s32(shift, vdupq_n_s32(0));
    q.activation_min = vdupq_n_s32(activation_min);
    q.activation_max = vdupq_n_s32(activation_max);
    q.output_offset = output_offset;
    return q;
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_ */
