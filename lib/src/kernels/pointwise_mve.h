/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The int8 matrix product behind et-zephyr's Helium kernels for pointwise
 * convolutions and for linears over several rows: rows of `depth` int8 values
 * (pixels, tokens) times `channels` rows of weights, every output requantized
 * as CMSIS-NN does (pointwise_mve.cpp).
 */

#ifndef ET_ZEPHYR_KERNELS_POINTWISE_MVE_H_
#define ET_ZEPHYR_KERNELS_POINTWISE_MVE_H_

#include <stdint.h>

namespace et_zephyr::native {

/* The depth must be a multiple of this: one vector of int8. */
constexpr int32_t kPointwiseDepthStep = 16;

struct PointwiseProduct {
    const int8_t *input;        /* rows x depth */
    const int8_t *weights;      /* channels x depth */
    const int32_t *bias;        /* channels, or null */
    const int32_t *multipliers; /* channels, or one with per_tensor */
    const int32_t *shifts;      /* channels, or one with per_tensor */
    int8_t *out;                /* rows x channels */
    int32_t depth;
    int32_t channels;
    int32_t rows;
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;
    bool per_tensor; /* one multiplier and shift for every channel */
};

/* out = requantize(input x weights^T + bias), exact int32 sums. */
void pointwise_product(const PointwiseProduct &p);

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_POINTWISE_MVE_H_ */
