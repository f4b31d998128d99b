/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * What et-zephyr's 16x8 pooling kernels (avg_pool2d_s16.cpp, max_pool2d_s16.cpp) check
 * and hand CMSIS-NN alike: channels-last int16 maps of one channel count, the window's
 * geometry, the fused activation's bounds.
 */

#pragma once

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "convolution_s16.h"

namespace et_zephyr::native::s16 {

inline bool valid_pool(const Tensor &input, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                       ArrayRef<int64_t> padding, int64_t activation_min, int64_t activation_max,
                       const Tensor &out) {
    return input.scalar_type() == ScalarType::Short && out.scalar_type() == ScalarType::Short &&
           input.dim() == 4 && out.dim() == 4 && is_nhwc(input) && is_nhwc(out) &&
           input.size(0) == out.size(0) && input.size(1) == out.size(1) &&
           is_pair(kernel_size, 1) && is_pair(stride, 1) && is_pair(padding, 0) &&
           activation_min >= INT16_MIN && activation_min <= activation_max &&
           activation_max <= INT16_MAX;
}

inline cmsis_nn_pool_params pool_params(ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                        int64_t activation_min, int64_t activation_max) {
    const auto shape = geometry(stride, padding, stride, activation_min, activation_max);
    return {shape.stride, shape.padding, shape.activation};
}

inline cmsis_nn_dims window(ArrayRef<int64_t> kernel_size) {
    return {1, static_cast<int32_t>(kernel_size[0]), static_cast<int32_t>(kernel_size[1]), 1};
}

} // namespace et_zephyr::native::s16
