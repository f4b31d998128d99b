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

inline void layer_norm_row(const LayerNorm &p, const int8_t *in, int8_t *out) {
    const int32_t channels = p.channels;
    int32_t sum = 0;
    for (int32_t i = 0; i < channels; ++i) {
        sum += in[i] - p.input_zero_point;
    }
    int64_t denominator = p.epsilon;
    for (int32_t i = 0; i < channels; ++i) {
        const int64_t centred = int64_t{channels} * (in[i] - p.input_zero_point) - sum;
        denominator += centred * centred;
    }
    if (denominator < 1) {
        denominator = 1;
    }
    int32_t shift = (62 - bit_length(static_cast<uint64_t>(denominator))) / 2;
    const int32_t limit = root_shift_limit(channels);
    if (shift > limit) {
        shift = limit;
    }
    const uint64_t root = integer_sqrt(static_cast<uint64_t>(denominator) << (2 * shift));
    const uint64_t inverse = UINT64_MAX / root;
    const uint64_t half = root / 2;
    const int64_t rounding = int64_t{1} << (p.shift - 1);
    for (int32_t i = 0; i < channels; ++i) {
        const int64_t centred = int64_t{channels} * (in[i] - p.input_zero_point) - sum;
        const int64_t scaled = centred * p.multipliers[i] * (int64_t{1} << shift);
        const uint64_t magnitude = static_cast<uint64_t>(scaled < 0 ? -scaled : scaled);
        const int64_t quotient = static_cast<int64_t>(divide(magnitude + half, root, inverse));
        const int64_t normalized = scaled < 0 ? -quotient : quotient;
        int64_t value = ((normalized + p.biases[i] + rounding) >> p.shift) + p.output_zero_point;
        value = value < INT8_MIN ? INT8_MIN : (value > INT8_MAX ? INT8_MAX : value);
        out[i] = static_cast<int8_t>(value);
    }
}

inline void layer_norm(const LayerNorm &p, const int8_t *in, int8_t *out, int32_t rows) {
    for (int32_t row = 0; row < rows; ++row) {
        layer_norm_row(p, in + row * p.channels, out + row * p.channels);
    }
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_LAYER_NORM_H_ */
