/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The int8 matrix product behind et-zephyr's Helium kernels for convolutions
 * and for linears over several rows: rows of `depth` int8 values (pixels,
 * tokens, a convolution's patches) times `channels` rows of weights, every
 * output requantized as CMSIS-NN does (pointwise_mve.cpp).
 */

#ifndef ET_ZEPHYR_KERNELS_POINTWISE_MVE_H_
#define ET_ZEPHYR_KERNELS_POINTWISE_MVE_H_

#include <stdint.h>

namespace et_zephyr::native {

/* Input rows are a multiple of this apart: one vector of int8. */
constexpr int32_t kPointwiseDepthStep = 16;
/* The deepest rows whose pair of channels' weights fit on the stack. */
constexpr int32_t kPointwiseStackDepth = 128;

struct PointwiseProduct {
    const int8_t *input;        /* rows, row_stride bytes apart */
    const int8_t *weights;      /* channels x depth */
    const int32_t *bias;        /* channels, or null */
    const int32_t *multipliers; /* channels, or one with per_tensor */
    const int32_t *shifts;      /* channels, or one with per_tensor */
    int8_t *out;                /* rows x channels */
    int32_t depth;              /* values of a row that count */
    int32_t row_stride;         /* depth rounded up to kPointwiseDepthStep; the bytes
                                 * past depth are read and multiplied by zero */
    int32_t channels;
    int32_t rows;
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;
    bool per_tensor; /* one multiplier and shift for every channel */
    /* 2 * row_stride bytes where two channels' weights are interleaved, or
     * null: the stack's kPointwiseStackDepth (deeper rows then go one channel
     * at a time). */
    int8_t *pair_weights;
    /* Each channel's bias + input_offset * weight sum, from
     * pointwise_channel_bases(), or null: summed on every call. */
    const int32_t *channel_bases;
};

/* out = requantize(input x weights^T + bias), exact int32 sums. */
void pointwise_product(const PointwiseProduct &p);

/* The channel_bases of p's weights, bias and input offset, for products that
 * run over the same weights several times (a convolution's chunks). */
void pointwise_channel_bases(const PointwiseProduct &p, int32_t *bases);

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_POINTWISE_MVE_H_ */
