/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * CMSIS-NN's per-channel requantization (arm_nn_requantize, double rounding),
 * output offset and clamp for et-zephyr's DSP-extension and scalar kernels, in
 * five instructions (DSP extension) or seven (Armv7-M and Armv8-M mainline
 * without it) instead of about twenty.
 *
 * CMSIS-NN computes, for a channel with multiplier m >= 0 and right shift
 * rs = -shift >= 1:
 *   x = (sum * m + 2^30) >> 31                 (arm_nn_doubling_high_mult_no_sat)
 *   y = x / 2^rs, midpoints away from zero     (arm_nn_divide_by_power_of_two)
 *   out = clamp(y + output_offset)
 * Here x + R, with R = 2^(rs - 1) + output_offset * 2^rs, is one SMMLAR of
 * 2 * sum and m ((2 * sum * m + R * 2^32 + 2^31) >> 32); rounding negative
 * values down at the midpoint is the -1 of sum < 0 (x < 0 exactly when
 * sum < 0, except x = 0, where both give 0); then one arithmetic shift by rs
 * and a saturation to int8. Without the DSP extension the SMMLAR is an SMULL
 * and a 64-bit add of R * 2^32 + 2^31 (ADDS, ADC). Equal to CMSIS-NN's for every sum while
 * |sum| < 2^29 (then 2 * sum and every intermediate fit 32 bits), rs in 1..23
 * (R fits) and m >= 0; channel_is_exact() checks that for a channel, from a
 * bound on its sums, before a kernel takes a call.
 */

#ifndef ET_ZEPHYR_KERNELS_REQUANTIZE_FAST_H_
#define ET_ZEPHYR_KERNELS_REQUANTIZE_FAST_H_

#include <arm_acle.h>
#include <stdint.h>

namespace et_zephyr::native {

/* The largest |sum| the requantization below is exact for. */
constexpr int32_t kExactSumBound = (1 << 29) - 1;
/* The largest |x + input_offset| * |weight| of int8 operands, the input offset
 * an int8 tensor's -zero_point (has_int8_zero_point): a depth of d values keeps
 * a channel's sums within d * kLargestProduct of its bias. */
constexpr int32_t kLargestProduct = 255 * 128;

/* An input offset of an int8 tensor, -zero_point in -127..128: then
 * |x + input_offset| <= 255, the bound kLargestProduct takes. */
constexpr bool has_int8_zero_point(int64_t input_offset) {
    return input_offset >= -127 && input_offset <= 128;
}

/* Both offsets of int8 tensors: the input's as has_int8_zero_point(), the
 * output's its zero point in -128..127 (then channel_requantization()'s rounding
 * term fits 32 bits for every right shift channel_is_exact() takes). */
constexpr bool has_int8_zero_points(int64_t input_offset, int64_t output_offset) {
    return has_int8_zero_point(input_offset) && output_offset >= INT8_MIN &&
           output_offset <= INT8_MAX;
}

/* Whether channel_requantization() is exact for every sum of a channel whose
 * sums are at most sum_bound from its bias. */
inline bool channel_is_exact(int32_t multiplier, int32_t shift, int32_t bias, int32_t sum_bound) {
    const int64_t largest = static_cast<int64_t>(bias < 0 ? -static_cast<int64_t>(bias) : bias) +
                            static_cast<int64_t>(sum_bound);
    return multiplier >= 0 && shift <= -1 && shift >= -23 && largest <= kExactSumBound;
}

/* At least the largest |bias| of channels: the OR of every bias's magnitude
 * (less one where negative), which takes a fraction of the instructions of an
 * exact maximum and at most doubles it (0 without a bias). Not inlined: in a
 * kernel's checks its loop reloads spilled registers. */
__attribute__((noinline)) inline int32_t largest_bias_bound(const int32_t *bias, int32_t channels) {
    uint32_t bits = 0;
    if (bias != nullptr) {
#pragma GCC unroll 4
        for (const int32_t *b = bias; b < bias + channels; b++) {
            bits |= static_cast<uint32_t>(*b ^ (*b >> 31));
        }
    }
    /* The magnitude's bits, one more for the negative values' "less one". */
    return bits >= static_cast<uint32_t>(INT32_MAX) ? INT32_MAX : static_cast<int32_t>(bits + 1);
}

/* One channel's requantization as requantize() takes it. */
struct ChannelRequantization {
    int32_t multiplier;
    int32_t rounding; /* 2^(rs - 1) + output_offset * 2^rs */
    int32_t right_shift;
};

inline ChannelRequantization channel_requantization(int32_t multiplier, int32_t shift,
                                                    int32_t output_offset) {
    /* 2^(rs - 1) + output_offset * 2^rs = (1 + 2 output_offset) * 2^(rs - 1),
     * and rs - 1 = ~shift. */
    return {multiplier,
            static_cast<int32_t>(static_cast<uint32_t>(1 + 2 * output_offset) << ~shift), -shift};
}

/* (2 * sum * multiplier + rounding * 2^32 + 2^31) >> 32: one SMMLAR. */
__attribute__((always_inline)) inline int32_t scale_sum(int32_t sum, int32_t multiplier,
                                                        int32_t rounding) {
#if defined(__ARM_FEATURE_DSP)
    int32_t scaled;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(scaled) : "r"(sum * 2), "r"(multiplier), "r"(rounding));
    return scaled;
#else
    const int64_t product = static_cast<int64_t>(sum * 2) * multiplier +
                            (static_cast<int64_t>(rounding) << 32) + (int64_t{1} << 31);
    return static_cast<int32_t>(product >> 32);
#endif
}

/* The sum's output before any saturation: with output offset 0
 * (channel_requantization(m, shift, 0)), arm_nn_requantize(sum, m, shift)
 * itself (an LSTM or GRU gate's int16 side, gate_products.h). */
__attribute__((always_inline)) inline int32_t requantize_wide(int32_t sum,
                                                              const ChannelRequantization &q) {
    return (scale_sum(sum, q.multiplier, q.rounding) + (sum >> 31)) >> q.right_shift;
}

/* The sum's output, saturated to int8 (the clamp to the activation range,
 * when narrower, is the caller's). */
__attribute__((always_inline)) inline int32_t requantize(int32_t sum,
                                                         const ChannelRequantization &q) {
    return __ssat(requantize_wide(sum, q), 8);
}

/* arm_nn_requantize(sum, m, shift) for a left shift (shift >= 0, no rounding
 * division): (sum * 2^shift * m + 2^30) >> 31, one SMMLAR of
 * 2 * sum * 2^shift and m. Exact while |sum| * 2^(shift + 1) < 2^31
 * (left_shift_is_exact()). */
__attribute__((always_inline)) inline int32_t requantize_left(int32_t sum, int32_t multiplier,
                                                              int32_t shift) {
    return scale_sum(sum << shift, multiplier, 0);
}

/* Whether requantize_left() is exact for every sum within sum_bound of 0. */
inline bool left_shift_is_exact(int32_t shift, int64_t sum_bound) {
    return shift >= 0 && shift <= 29 && (sum_bound << (shift + 1)) < (int64_t{1} << 31);
}

/* requantize() clamped to [activation_min, activation_max]. */
__attribute__((always_inline)) inline int8_t requantize_clamped(int32_t sum,
                                                                const ChannelRequantization &q,
                                                                int32_t activation_min,
                                                                int32_t activation_max) {
    int32_t out = requantize(sum, q);
    out = out < activation_min ? activation_min : out;
    out = out > activation_max ? activation_max : out;
    return static_cast<int8_t>(out);
}

/* One output from its sum: requantize(), or requantize_clamped() where kClamp
 * (an activation range narrower than int8; the kernels pick the variant once a
 * call). */
template <bool kClamp>
__attribute__((always_inline)) inline int8_t
requantize_output(int32_t sum, const ChannelRequantization &q, int32_t activation_min,
                  int32_t activation_max) {
    return kClamp ? requantize_clamped(sum, q, activation_min, activation_max)
                  : static_cast<int8_t>(requantize(sum, q));
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_REQUANTIZE_FAST_H_ */
