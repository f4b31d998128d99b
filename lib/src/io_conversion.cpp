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

/* zero_point + round(x * (1.0f / scale)), saturated to [kMin, kMax]. The product,
 * already rounded to float32 (ISO C++ modes do not contract it with the add into a
 * fused multiply-add, and the clamp stands between them), is clamped so that the magic
 * add is exact: past +-2 * (kMax + 1) every zero point saturates anyway (256 for INT8,
 * 65536 for INT16; both far below 2^22). */
template <typename T, int32_t kMin, int32_t kMax>
void quantize(const float *src, T *dst, size_t count, float scale, int32_t zero_point) {
    constexpr float kBound = 2.0f * (kMax + 1);
    const float inv_scale = 1.0f / scale;
    for (size_t i = 0; i < count; ++i) {
        float product = src[i] * inv_scale;
        int32_t rounded = 0; /* NaN */
        if (product == product) {
            if (product > kBound) {
                product = kBound;
            } else if (product < -kBound) {
                product = -kBound;
            }
            rounded = static_cast<int32_t>((product + kRoundingMagic) - kRoundingMagic);
        }
        const int32_t value = zero_point + rounded;
        dst[i] = static_cast<T>(value > kMax ? kMax : (value < kMin ? kMin : value));
    }
}

template <typename T>
void dequantize(const T *src, float *dst, size_t count, float scale, int32_t zero_point) {
    for (size_t i = 0; i < count; ++i) {
        dst[i] = static_cast<float>(static_cast<int32_t>(src[i]) - zero_point) * scale;
    }
}

} // namespace

extern "C" {

void et_zephyr_quantize_int8(const float *src, int8_t *dst, size_t count, float scale,
                             int32_t zero_point) {
    quantize<int8_t, -128, 127>(src, dst, count, scale, zero_point);
}

void et_zephyr_dequantize_int8(const int8_t *src, float *dst, size_t count, float scale,
                               int32_t zero_point) {
    dequantize(src, dst, count, scale, zero_point);
}

/* 16x8 activations are symmetric in [-32767, 32767], as et-export quantizes them. */
void et_zephyr_quantize_int16(const float *src, int16_t *dst, size_t count, float scale,
                              int32_t zero_point) {
    quantize<int16_t, -32767, 32767>(src, dst, count, scale, zero_point);
}

void et_zephyr_dequantize_int16(const int16_t *src, float *dst, size_t count, float scale,
                                int32_t zero_point) {
    dequantize(src, dst, count, scale, zero_point);
}

} // extern "C"
