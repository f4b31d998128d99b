/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * CMSIS-NN's per-channel requantization (arm_requantize_mve_32x4, double
 * rounding) for et-zephyr's Helium kernels, with the channel's shifts split
 * into left and right once instead of on every call.
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

/* The int8 outputs (in int32 lanes) of 4 sums without the base. */
__attribute__((always_inline)) inline int32x4_t requantize(int32x4_t sum, const Requantization &q) {
    int32x4_t r = vqrdmulhq_s32(vshlq_s32(vaddq_s32(sum, q.base), q.left_shift), q.multiplier);
    /* Round half away from zero, as arm_divide_by_power_of_two_mve_32x4. */
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(r, q.right_shift), 31);
    r = vrshlq_s32(vqaddq_s32(r, fixup), q.right_shift);
    r = vaddq_n_s32(r, q.output_offset);
    return vminq_s32(vmaxq_s32(r, q.activation_min), q.activation_max);
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_REQUANTIZE_MVE_H_ */
