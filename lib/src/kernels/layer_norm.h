/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * LayerNorm over the last dimension of an int8 tensor, in integers only (the
 * arithmetic of et_zephyr::quantized_layer_norm; scripts/et_zephyr/reference/
 * layer_norm.py is the same arithmetic in Python, the host reference). For a
 * row of C values with d = x - z:
 *
 *   c_i = C * d_i - sum(d)                 C times the deviation, exact
 *   D   = sum(c_i^2) + epsilon             C^3 (variance + eps) / s_x^2
 *   y_i = c_i * M_i * 2^s / isqrt(D * 4^s) gamma_i * normalized / s_y, 2^F units
 *   q_i = (y_i + B_i + 2^(F-1)) >> F + z_y
 *
 * s is the largest shift that keeps D * 4^s and c_i * M_i * 2^s below 2^62,
 * so the integer square root keeps about 30 significant bits. Division rounds
 * half away from zero; the final shift rounds half up.
 */

#ifndef ET_ZEPHYR_KERNELS_LAYER_NORM_H_
#define ET_ZEPHYR_KERNELS_LAYER_NORM_H_

#include <stdint.h>
#include <string.h>

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#endif

namespace et_zephyr::native {

/* Rows longer than this could overflow the int64 sums. */
constexpr int32_t kLayerNormMaxChannels = 8192;

struct LayerNorm {
    const int32_t *multipliers; /* C: gamma_i * sqrt(C) / s_y in 2^F units */
    const int32_t *biases;      /* C: beta_i / s_y in 2^F units */
    int32_t channels;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int64_t epsilon;
    int32_t shift; /* F, 1 to 46 */
};

inline int32_t bit_length(uint64_t value) {
    return value == 0 ? 0 : 64 - __builtin_clzll(value);
}

/* floor(sqrt(value)), bit by bit: exact for every uint64. */
inline uint64_t integer_sqrt(uint64_t value) {
    uint64_t root = 0;
    uint64_t bit = uint64_t{1} << 62;
    while (bit > value) {
        bit >>= 2;
    }
    while (bit != 0) {
        if (value >= root + bit) {
            value -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return root;
}

/* The high 64 bits of the 128-bit product a * b, from 32-bit halves (no 128-bit
 * type on 32-bit Arm). */
inline uint64_t multiply_high(uint64_t a, uint64_t b) {
    const uint64_t a_low = a & 0xFFFFFFFFu;
    const uint64_t a_high = a >> 32;
    const uint64_t b_low = b & 0xFFFFFFFFu;
    const uint64_t b_high = b >> 32;
    const uint64_t high_low = a_high * b_low;
    /* At most 3 * (2^32 - 1) + ... < 2^64: no carry is lost. */
    const uint64_t middle = ((a_low * b_low) >> 32) + (high_low & 0xFFFFFFFFu) + a_low * b_high;
    return a_high * b_high + (high_low >> 32) + (middle >> 32);
}

/* floor(n / d), given inverse = floor((2^64 - 1) / d): the estimate from the inverse
 * is at most 2 below the quotient and never above it, the remainder corrects it.
 * The same quotient as the division, in multiplies instead of a call to the 64-bit
 * division routine for every element (the Cortex-M divides 32 bits at most). */
inline uint64_t divide(uint64_t n, uint64_t d, uint64_t inverse) {
    uint64_t quotient = multiply_high(n, inverse);
    uint64_t remainder = n - quotient * d;
    while (remainder >= d) {
        ++quotient;
        remainder -= d;
    }
    return quotient;
}

/* The largest root shift s for which |c_i * M_i| * 2^s < 2^62. */
inline int32_t root_shift_limit(int32_t channels) {
    return 62 - 31 - bit_length(static_cast<uint64_t>(2 * 255 * channels));
}

/* A row's sum(d) and D = epsilon + sum(c_i^2). */
struct RowMoments {
    int32_t sum;
    int64_t denominator;
};

inline RowMoments row_moments(const LayerNorm &p, const int8_t *in) {
    const int32_t channels = p.channels;
    RowMoments m{0, p.epsilon};
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    /* Helium: 16 values a step for the sum, 4 for the squares, summed exactly
     * in 64 bits by vmlaldava. */
    int32_t raw = 0;
    for (int32_t i = 0; i < channels; i += 16) {
        const mve_pred16_t valid = vctp8q(static_cast<uint32_t>(channels - i));
        raw = vaddvaq_p_s8(raw, vldrbq_z_s8(in + i, valid), valid);
    }
    m.sum = raw - channels * p.input_zero_point;
    const int32_t offset = channels * p.input_zero_point + m.sum;
    for (int32_t i = 0; i < channels; i += 4) {
        const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(channels - i));
        const int32x4_t centred =
            vsubq_n_s32(vmulq_n_s32(vldrbq_z_s32(in + i, valid), channels), offset);
        m.denominator = vmlaldavaq_p_s32(m.denominator, centred, centred, valid);
    }
#else
    for (int32_t i = 0; i < channels; ++i) {
        m.sum += in[i] - p.input_zero_point;
    }
    for (int32_t i = 0; i < channels; ++i) {
        const int64_t centred = int64_t{channels} * (in[i] - p.input_zero_point) - m.sum;
        m.denominator += centred * centred;
    }
#endif
    if (m.denominator < 1) {
        m.denominator = 1;
    }
    return m;
}

/* What one row's outputs divide by: the root and what dividing by it needs. */
struct RowDivisor {
    int32_t shift; /* s */
    uint64_t root;
    uint64_t inverse;
    uint64_t half;
    int64_t rounding; /* 2^(F-1) */
};

inline RowDivisor row_divisor(const LayerNorm &p, int64_t denominator) {
    const int32_t channels = p.channels;
    int32_t shift = (62 - bit_length(static_cast<uint64_t>(denominator))) / 2;
    const int32_t limit = root_shift_limit(channels);
    if (shift > limit) {
        shift = limit;
    }
    const uint64_t root = integer_sqrt(static_cast<uint64_t>(denominator) << (2 * shift));
    return {shift, root, UINT64_MAX / root, root / 2, int64_t{1} << (p.shift - 1)};
}

/* Output i of a row, exactly as the reference computes it. */
inline int8_t exact_output(const LayerNorm &p, int32_t i, int32_t centred, const RowDivisor &r) {
    const int64_t scaled = int64_t{centred} * p.multipliers[i] * (int64_t{1} << r.shift);
    const uint64_t magnitude = static_cast<uint64_t>(scaled < 0 ? -scaled : scaled);
    const int64_t quotient = static_cast<int64_t>(divide(magnitude + r.half, r.root, r.inverse));
    const int64_t normalized = scaled < 0 ? -quotient : quotient;
    int64_t value = ((normalized + p.biases[i] + r.rounding) >> p.shift) + p.output_zero_point;
    value = value < INT8_MIN ? INT8_MIN : (value > INT8_MAX ? INT8_MAX : value);
    return static_cast<int8_t>(value);
}

#if !defined(ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE)
#if defined(__ARM_FP) && (__ARM_FP & 4)
#define ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE 1
#else
#define ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE 0
#endif
#endif

#if ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE
/*
 * With a floating-point unit, each output is first estimated in float32:
 * T = c_i * M_i * 2^s / root + B_i + 2^(F-1) and u = T / 2^F, whose floor is the
 * output before the zero point. Five roundings of at most 2^-24 each put the
 * estimate's y = c_i * M_i * 2^s / root within |y| * 2^-21.6 of the real
 * quotient, which is itself within 1 of the integer quotient; with B_i's and
 * the two additions' roundings, T is within
 * E = 2 + (|y| + |B_i| + |T|) * 2^-19 of the exact sum. Where |u| < 300 (else
 * the output saturates either way), |y| <= |T| + |B_i| + 2^(F-1), so
 * E <= 2 + (601 * 2^F + 2 * max|B|) * 2^-19, and when u lies farther than
 * m = E / 2^F from an integer its floor is the exact one. Closer (a fraction
 * of a percent of the outputs), the integer division decides.
 */
struct FloatEstimate {
    float step_inverse; /* 2^-F */
    float half_step;    /* 2^(F-1) */
    float margin;       /* m, in units of u; the estimate is off when >= 0.25 */
};

/* 2^exponent for -126 <= exponent <= 127 (here -46 to 45), exactly: its bits. */
inline float power_of_two(int32_t exponent) {
    const uint32_t bits = static_cast<uint32_t>(exponent + 127) << 23;
    float value;
    memcpy(&value, &bits, sizeof(value));
    return value;
}

inline FloatEstimate float_estimate(const LayerNorm &p) {
    int64_t largest_bias = 0;
    for (int32_t i = 0; i < p.channels; ++i) {
        const int64_t bias = p.biases[i] < 0 ? -int64_t{p.biases[i]} : int64_t{p.biases[i]};
        largest_bias = bias > largest_bias ? bias : largest_bias;
    }
    FloatEstimate e;
    e.step_inverse = power_of_two(-p.shift);
    e.half_step = power_of_two(p.shift - 1);
    /* 1.01: room for this computation's own roundings. */
    e.margin = 1.01f * (2.0f * e.step_inverse +
                        (601.0f + 2.0f * static_cast<float>(largest_bias) * e.step_inverse) *
                            power_of_two(-19));
    return e;
}

/* Output i from the estimate, or false where it is too close to a rounding
 * boundary to decide (then the integer division does). */
inline bool estimated_output(const LayerNorm &p, const FloatEstimate &e, float scale, int32_t i,
                             int32_t centred, int8_t &out) {
    const float y = static_cast<float>(centred) * static_cast<float>(p.multipliers[i]) * scale;
    const float u = (y + static_cast<float>(p.biases[i]) + e.half_step) * e.step_inverse;
    if (u >= 300.0f) {
        out = INT8_MAX;
        return true;
    }
    if (u <= -300.0f) {
        out = INT8_MIN;
        return true;
    }
    int32_t whole = static_cast<int32_t>(u);
    whole -= static_cast<float>(whole) > u ? 1 : 0;
    const float fraction = u - static_cast<float>(whole);
    if (fraction <= e.margin || fraction >= 1.0f - e.margin) {
        return false;
    }
    const int32_t value = whole + p.output_zero_point;
    out = static_cast<int8_t>(value < INT8_MIN ? INT8_MIN : (value > INT8_MAX ? INT8_MAX : value));
    return true;
}
#endif

inline void layer_norm(const LayerNorm &p, const int8_t *in, int8_t *out, int32_t rows) {
#if ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE
    const FloatEstimate e = float_estimate(p);
    const bool estimate = e.margin < 0.25f;
#endif
    for (int32_t row = 0; row < rows; ++row, in += p.channels, out += p.channels) {
        const RowMoments m = row_moments(p, in);
        const RowDivisor r = row_divisor(p, m.denominator);
#if ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE
        const float scale = power_of_two(r.shift) / static_cast<float>(r.root);
#endif
        for (int32_t i = 0; i < p.channels; ++i) {
            const int32_t centred = p.channels * (in[i] - p.input_zero_point) - m.sum;
#if ET_ZEPHYR_LAYER_NORM_FLOAT_ESTIMATE
            if (estimate && estimated_output(p, e, scale, i, centred, out[i])) {
                continue;
            }
#endif
            out[i] = exact_output(p, i, centred, r);
        }
    }
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_LAYER_NORM_H_ */
