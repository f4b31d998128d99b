/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The Helium 3x3 depthwise convolution behind et-zephyr's depthwise kernel
 * (depthwise_conv_mve.cpp): int8 NHWC input and output, every output
 * requantized as CMSIS-NN does (depthwise_mve.cpp).
 */

#ifndef ET_ZEPHYR_KERNELS_DEPTHWISE_MVE_H_
#define ET_ZEPHYR_KERNELS_DEPTHWISE_MVE_H_

#include <stddef.h>
#include <stdint.h>

namespace et_zephyr::native {

/* A 3x3 depthwise convolution's sizes, depth multiplier 1, no dilation. */
struct DepthwiseShape {
    int32_t channels;
    int32_t in_height;
    int32_t in_width;
    int32_t out_height;
    int32_t out_width;
    int32_t stride_y;
    int32_t stride_x;
    int32_t pad_y; /* top and bottom */
    int32_t pad_x; /* left and right */
};

/* The scratch depthwise_convolution needs for shape, or 0 where it does not
 * run it. It runs stride 1, or 2 down and 1 or 2 across; padding 0 or 1; at
 * least 8 channels, a multiple of 4; output sizes those of the padded input at
 * the stride. */
size_t depthwise_scratch_bytes(const DepthwiseShape &shape);

struct DepthwiseConvolution {
    DepthwiseShape shape;
    const int8_t *input;        /* in_height x in_width x channels */
    const int8_t *weights;      /* 3 x 3 x channels */
    const int32_t *bias;        /* channels, or null */
    const int32_t *multipliers; /* channels */
    const int32_t *shifts;      /* channels */
    int8_t *out;                /* out_height x out_width x channels, apart from the input */
    uint8_t *scratch;           /* depthwise_scratch_bytes(shape) bytes, word aligned */
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;
};

/* out = requantize(depthwise 3x3 of input + bias), exact int32 sums; the shape
 * one depthwise_scratch_bytes runs. */
void depthwise_convolution(const DepthwiseConvolution &d);

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_DEPTHWISE_MVE_H_ */
