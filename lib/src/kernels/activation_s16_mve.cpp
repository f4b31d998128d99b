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
 * u is clamped to 254 for them, its saturated lanes replaced after. Without
 * predicates (the core has one predicate register: GCC spills them in the
 * loop): the saturated lanes by a mask from 254 - u's sign, the sign's
 * choice as (r ^ s) + c + (s & k) with s = d >> 31 (-r - 1 = r ^ -1).
 */

#include "activation_s16_mve.h"

#include <arm_mve.h>

namespace et_zephyr::native::recurrent {
namespace {

/* Lanes of 32 bits in a vector. */
constexpr int32_t kLanes = 4;

template <bool kSigmoid> struct Activation {
    static constexpr int kShift = kSigmoid ? 9 : 8;
    static constexpr uint32_t kMask = (1U << kShift) - 1;
    static constexpr uint32_t kSaturated = kSigmoid ? 0x7FFFU << 10 : 0xFFFFU << 8;
    /* value = (r ^ s) + kRound + (s & kNegative): sigmoid r + 2^9 or
     * 2^25 + 2^9 - 1 - r, tanh r - 2^23 + 2^7 or 2^23 + 2^7 - 1 - r. */
    static constexpr uint32_t kRound = kSigmoid ? 1U << 9 : (1U << 7) - (1U << 23);
    static constexpr uint32_t kNegative = kSigmoid ? 1U << 25 : 1U << 24;

    int32_t multiplier;
    int32_t rounding;
    int32x4_t shift_right;

    explicit Activation(int32_t left_shift)
        : multiplier(left_shift < 0 ? 3 : 3 << left_shift),
          rounding(left_shift < 0 ? 1 << (-left_shift - 1) : 0),
          shift_right(vdupq_n_s32(left_shift < 0 ? left_shift : 0)) {}

    __attribute__((always_inline)) int32x4_t operator()(int32x4_t x) const {
        const int32x4_t d =
            vshlq_s32(vaddq_n_s32(vmulq_n_s32(x, multiplier), rounding), shift_right);
        const uint32x4_t a = vreinterpretq_u32_s32(vabsq_s32(d));
        const uint32x4_t u = vshrq_n_u32(a, kShift);
        const uint32x4_t index = vminq_u32(u, vdupq_n_u32(254));
        const uint32x4_t low = vldrhq_gather_shifted_offset_u32(sigmoid_table_uint16, index);
        const uint32x4_t high = vldrhq_gather_shifted_offset_u32(sigmoid_table_uint16 + 1, index);
        const uint32x4_t r =
            vaddq_u32(vshlq_n_u32(low, kShift),
                      vmulq_u32(vandq_u32(a, vdupq_n_u32(kMask)), vsubq_u32(high, low)));
        /* All ones where u >= 255. */
        const uint32x4_t saturated = vreinterpretq_u32_s32(
            vshrq_n_s32(vsubq_s32(vdupq_n_s32(254), vreinterpretq_s32_u32(u)), 31));
        const uint32x4_t result =
            vorrq_u32(vbicq_u32(r, saturated), vandq_u32(vdupq_n_u32(kSaturated), saturated));
        const uint32x4_t s = vreinterpretq_u32_s32(vshrq_n_s32(d, 31));
        const uint32x4_t value = vaddq_u32(vaddq_n_u32(veorq_u32(result, s), kRound),
                                           vandq_u32(s, vdupq_n_u32(kNegative)));
        return vreinterpretq_s32_u32(vshrq_n_u32(value, kSigmoid ? 10 : 8));
    }
};

template <bool kSigmoid>
void activation(const int16_t *in, int16_t *out, int32_t size, int32_t left_shift) {
    const Activation<kSigmoid> f(left_shift);
    int32_t i = 0;
    for (; i + kLanes <= size; i += kLanes) {
        vstrhq_s32(out + i, f(vldrhq_s32(in + i)));
    }
    if (i < size) {
        const mve_pred16_t p = vctp32q(static_cast<uint32_t>(size - i));
        vstrhq_p_s32(out + i, f(vldrhq_z_s32(in + i, p)), p);
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
