/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The assembly loop of the DSP linear kernel (linear_sums_dsp.S, which says
 * how it works): the bias (none: bias is null) plus the dot products of one
 * input row, as input_pairs_dsp.h extends it, with 4 * groups weight rows of
 * steps x 4 int8 values each, stride bytes apart, into sums (bias may be
 * sums).
 */

#ifndef ET_ZEPHYR_KERNELS_LINEAR_SUMS_DSP_H_
#define ET_ZEPHYR_KERNELS_LINEAR_SUMS_DSP_H_

#include <stdint.h>

extern "C" void et_zephyr_linear_sums_dsp(const int32_t *pairs, const int8_t *weights,
                                          int32_t steps, int32_t groups, const int32_t *bias,
                                          int32_t *sums, int32_t stride);

#endif /* ET_ZEPHYR_KERNELS_LINEAR_SUMS_DSP_H_ */
