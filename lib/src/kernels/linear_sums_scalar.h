/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The assembly loop of the scalar linear kernel (linear_sums_scalar.S, which
 * says how it works): writes to sums[4g + r] start[4g + r] plus the dot
 * product of count int16 input values with the int8 weight row 4g + r, rows
 * stride bytes apart, for g < groups; count a positive multiple of 4; start
 * may be sums.
 */

#ifndef ET_ZEPHYR_KERNELS_LINEAR_SUMS_SCALAR_H_
#define ET_ZEPHYR_KERNELS_LINEAR_SUMS_SCALAR_H_

#include <stdint.h>

extern "C" void et_zephyr_linear_sums_scalar(const int16_t *x, const int8_t *weights, int32_t count,
                                             int32_t stride, int32_t groups, int32_t *sums,
                                             const int32_t *start);

#endif /* ET_ZEPHYR_KERNELS_LINEAR_SUMS_SCALAR_H_ */
