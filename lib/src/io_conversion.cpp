/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Float <-> INT8 for an application's data, when the program takes or gives the
 * INT8 tensors themselves (et-export --io int8). The arithmetic is the host
 * reference's (et_zephyr.reference.edges.quantize_int8 / dequantize_per_tensor),
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
 * so that the magic add is exact: past +-256 every zero point saturates anyway. */
inline int32_t round_clamped(float product) {
    if (!(product == product)) {
        return 0; /* NaN */
    }
    if (product > 256.0f) {
        product = 256.0f;
    } else if (product < -256.0f) {
        product = -256.0f;
    }
    return static_cast<int32_t>((product + kRoundingMagic) - kRoundingMagic);
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
        dst[i] = saturate_int8(zero_point + round_clamped(product));
    }
}

void et_zephyr_dequantize_int8(const int8_t *src, float *dst, size_t count, float scale,
                               int32_t zero_point) {
    for (size_t i = 0; i < count; ++i) {
        dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - zero_point) * scale;
    }
}

} // extern "C"
