/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * activation_s16_mve.h's activations: arm_nn_activation_s16's arithmetic in
 * 32-bit lanes. Per value x, with m = 3 * 2^left_shift (3 for a right shift
 * rs = -left_shift, rounding 2^(rs - 1)):
 *   d = (x * m + rounding) >> rs,   a = |d|,   u = a >> s (s: 9 sigmoid, 8 tanh)
 *   r = u >= 255 ? saturated : (T[u] << s) + (a & (2^s - 1)) * (T[u + 1] - T[u])
 *   sigmoid: (d >= 0 ? r + 2^9 : 2^25 - r + 2^9 - 1) >> 10
 *   tanh:    (d >= 0 ? r - 2^23 + 2^7 : 2^23 - r + 2^7 - 1) >> 8
 * and the low 16 bits stored. The table's two entries come from two gathers;
 * u is clamped to 254 for them, its saturated lanes replaced after.
 */

#include "activation_s16_mve.h"

#include <arm_mve.h>

namespace et_zephyr::native::recurrent {
namespace {

/* Lanes of 32 bits in a vector. */
constexpr int32_t kLanes = 4;

template <bool kSigmoid>
void activation(const int16_t *in, int16_t *out, int32_t size, int32_t left_shift) {
    constexpr int kShift = kSigmoid ? 9 : 8;
    constexpr uint32_t kMask = (1U << kShift) - 1;
    constexpr uint32_t kSaturated = kSigmoid ? 0x7FFFU << 10 : 0xFFFFU << 8;
    const int32_t multiplier = left_shift < 0 ? 3 : 3 << left_shift;
    const int32_t right_shift = left_shift < 0 ? -left_shift : 0;
    const int32_t rounding = right_shift > 0 ? 1 << (right_shift - 1) : 0;
    const int32x4_t shift_right = vdupq_n_s32(-right_shift);
    for (int32_t i = 0; i < size; i += kLanes) {
        const mve_pred16_t p = vctp32q(static_cast<uint32_t>(size - i));
        const int32x4_t x = vldrhq_z_s32(in + i, p);
        const int32x4_t d =
            vshlq_s32(vaddq_n_s32(vmulq_n_s32(x, multiplier), rounding), shift_right);
        const uint32x4_t a = vreinterpretq_u32_s32(vabsq_s32(d));
        const uint32x4_t u = vshrq_n_u32(a, kShift);
        const mve_pred16_t saturated = vcmpcsq_n_u32(u, 255);
        const uint32x4_t index = vminq_u32(u, vdupq_n_u32(254));
        const uint32x4_t low = vldrhq_gather_shifted_offset_u32(sigmoid_table_uint16, index);
        const uint32x4_t high = vldrhq_gather_shifted_offset_u32(sigmoid_table_uint16 + 1, index);
        uint32x4_t r = vaddq_u32(vshlq_n_u32(low, kShift),
                                 vmulq_u32(vandq_u32(a, vdupq_n_u32(kMask)), vsubq_u32(high, low)));
        r = vpselq_u32(vdupq_n_u32(kSaturated), r, saturated);
        const mve_pred16_t positive = vcmpgeq_n_s32(d, 0);
        uint32x4_t value;
        if constexpr (kSigmoid) {
            value = vpselq_u32(vaddq_n_u32(r, 1U << 9),
                               vsubq_u32(vdupq_n_u32((1U << 25) + (1U << 9) - 1), r), positive);
            value = vshrq_n_u32(value, 10);
        } else {
            value = vpselq_u32(vaddq_n_u32(r, (1U << 7) - (1U << 23)),
                               vsubq_u32(vdupq_n_u32((1U << 23) + (1U << 7) - 1), r), positive);
            value = vshrq_n_u32(value, 8);
        }
        vstrhq_p_s32(out + i, vreinterpretq_s32_u32(value), p);
    }
}

} // namespace

void sigmoid_s16_mve(const int16_t *in, int16_t *out, int32_t size, int32_t left_shift) {
    activation<true>(in, out, size, left_shift);
}

void tanh_s16_mve(const int16_t *in, int16_t *out, int32_t size, int32_t left_shift) {
    activation<false>(in, out, size, left_shift);
}

} // namespace et_zephyr::native::recurrent
