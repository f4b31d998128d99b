/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Float <-> INT8 or INT16 for an application's data, when the program takes or
 * gives the integer tensors themselves (et-export --io int8, --io int16). The
 * arithmetic is the host reference's (et_zephyr.reference.edges.quantize_int8,
 * quantize_int16 / dequantize_per_tensor),
 * so what an application quantizes here is what the test vectors assume. No
 * dependencies: tests run this file alone on each kind of core.
 */

#include <et_zephyr/et_zephyr.h>

namespace {

/* 1.5 * 2^23: adding it to a float of magnitude below 2^22 leaves the integer
 * nearest to it (ties to even) in the low bits; subtracting it gives that
 * integer as a float. The same on every core, FPU or soft float, and one add
 * and one subtract where FPv4 has no rounding instruction (nearbyintf costs
 * picolibc about 86 instructions there). */
constexpr float kRoundingMagic = 12582912.0f;

/* The product, already rounded to float32 (ISO C++ modes do not contract it with
 * the add into a fused multiply-add, and the clamp stands between them), clamped
 * so that the magic add is exact: past +-@p bound every zero point saturates anyway
 * (256 for INT8, 65536 for INT16; both far below 2^22). */
inline int32_t round_clamped(float product, float bound) {
    if (!(product == product)) {
        return 0; /* NaN */
    }
    if (product > bound) {
        product = bound;
    } else if (product < -bound) {
        product = -bound;
    }
    return static_cast<int32_t>((product + kRoundingMagic) - kRoundingMagic);
}

/* 16x8 activations are symmetric in [-32767, 32767], as et-export quantizes them. */
inline int16_t saturate_int16(int32_t value) {
    return static_cast<int16_t>(value > 32767 ? 32767 : (value < -32767 ? -32767 : value));
}

inline int8_t saturate_int8(int32_t value) {
    return static_cast<int8_t>(value > 127 ? 127 : (value < -128 ? -128 : value));
}

} // namespace

extern "C" {

void et_zephyr_quantize_int8(const float *src, int8_t *dst, size_t count, float scale,
                             int32_t zero_point) {
    const float inv_scale = 1.0f / scale;
    for (size_t i = 0; i < count; ++i) {
        const float product = src[i] * inv_scale;
        dst[i] = saturate_int8(zero_point + round_clamped(product, 256.0f));
    }
}

void et_zephyr_dequantize_int8(const int8_t *src, float *dst, size_t count, float scale,
                               int32_t zero_point) {
    for (size_t i = 0; i < count; ++i) {
        dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - zero_point) * scale;
    }
}

void et_zephyr_quantize_int16(const float *src, int16_t *dst, size_t count, float scale,
                              int32_t zero_point) {
    const float inv_scale = 1.0f / scale;
    for (size_t i = 0; i < count; ++i) {
        const float product = src[i] * inv_scale;
        dst[i] = saturate_int16(zero_point + round_clamped(product, 65536.0f));
    }
}

void et_zephyr_dequantize_int16(const int16_t *src, float *dst, size_t count, float scale,
                                int32_t zero_point) {
    for (size_t i = 0; i < count; ++i) {
        dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - zero_point) * scale;
    }
}

} // extern "C"
