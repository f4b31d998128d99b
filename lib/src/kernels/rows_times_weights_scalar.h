/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The int8 matrix product of the scalar tier's own kernels (Cortex-M3, M33
 * without DSP): rows of an input times a weight matrix, as CMSIS-NN's fully
 * connected layer (linear_scalar.cpp) and 1x1 convolution (conv_scalar.cpp:
 * a pointwise layer's pixels are the rows) compute it: bias plus the exact
 * integer sums of (x + input offset) * w, then CMSIS-NN's requantization
 * (requantize_fast.h), output offset and clamp. Bit-identical outputs.
 */

#ifndef ET_ZEPHYR_KERNELS_ROWS_TIMES_WEIGHTS_SCALAR_H_
#define ET_ZEPHYR_KERNELS_ROWS_TIMES_WEIGHTS_SCALAR_H_

#include <stdint.h>

namespace et_zephyr::native {

struct RowsTimesWeights {
    const int8_t *input;        /* rows x depth */
    const int8_t *weights;      /* channels x depth */
    const int32_t *bias;        /* channels, or null */
    const int32_t *multipliers; /* channels, or one for every channel */
    const int32_t *shifts;      /* as multipliers */
    bool per_channel;           /* multipliers and shifts per channel */
    int8_t *out;                /* rows x channels */
    int32_t rows;
    int32_t depth;
    int32_t channels;
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;
};

/* Whether rows_times_weights_scalar() computes k exactly: int8 zero points
 * and every channel's requantization within requantize_fast.h's bound. */
bool rows_times_weights_exact(const RowsTimesWeights &k);

/* k's outputs; rows_times_weights_exact(k) must hold. About 400 bytes of stack. */
void rows_times_weights_scalar(const RowsTimesWeights &k);

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_ROWS_TIMES_WEIGHTS_SCALAR_H_ */
