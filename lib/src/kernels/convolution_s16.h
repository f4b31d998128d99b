/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * What et-zephyr's two 16x8 convolution kernels (quantized_conv2d_s16.cpp,
 * quantized_depthwise_conv2d_s16.cpp) check and hand CMSIS-NN alike: channels-last int16
 * maps, per-channel int32 multipliers and shifts, int64 biases, the geometry.
 */

#pragma once

#include <stddef.h>
#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include "arm_nn_types.h"

namespace et_zephyr::native::s16 {

using torch::executor::ArrayRef;
using torch::executor::ScalarType;
using torch::executor::Tensor;

// arm_nn_requantize_s64 shifts right by 14 - shift, in 64 bits.
constexpr int64_t kMaxShift = 14;
constexpr int64_t kMinShift = kMaxShift - 63;

// [N, C, H, W] sizes (channels-last in memory) as CMSIS-NN's NHWC dims.
inline cmsis_nn_dims nhwc(const Tensor &map) {
    return {static_cast<int32_t>(map.size(0)), static_cast<int32_t>(map.size(2)),
            static_cast<int32_t>(map.size(3)), static_cast<int32_t>(map.size(1))};
}

// Whether a 4-D tensor's bytes are NHWC: its dimensions of size > 1, in its dim order,
// come in the order N, H, W, C (a map of one channel, or of 1x1, is NCHW too).
inline bool is_nhwc(const Tensor &map) {
    constexpr size_t kNhwc[] = {0, 2, 3, 1};
    const auto order = map.dim_order();
    size_t next = 0;
    for (size_t i = 0; i < 4; ++i) {
        if (map.size(order[i]) == 1) {
            continue;
        }
        while (next < 4 && map.size(kNhwc[next]) == 1) {
            ++next;
        }
        if (next == 4 || kNhwc[next++] != order[i]) {
            return false;
        }
    }
    return true;
}

inline bool is_pair(ArrayRef<int64_t> values, int64_t low) {
    return values.size() == 2 && values[0] >= low && values[1] >= low && values[0] <= INT16_MAX &&
           values[1] <= INT16_MAX;
}

// The checks both kernels share; `channels` is the output's.
inline bool valid(const Tensor &input, const std::optional<Tensor> &biases,
                  ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                  const Tensor &multipliers, const Tensor &shifts, int64_t activation_min,
                  int64_t activation_max, const Tensor &out) {
    if (input.scalar_type() != ScalarType::Short || out.scalar_type() != ScalarType::Short ||
        input.dim() != 4 || out.dim() != 4 || input.size(0) != out.size(0) || !is_nhwc(input) ||
        !is_nhwc(out)) {
        return false;
    }
    const auto channels = out.size(1);
    if (multipliers.scalar_type() != ScalarType::Int || shifts.scalar_type() != ScalarType::Int ||
        multipliers.numel() != channels || shifts.numel() != channels) {
        return false;
    }
    if (biases.has_value() &&
        (biases->scalar_type() != ScalarType::Long || biases->numel() != channels)) {
        return false;
    }
    const int32_t *shift = shifts.const_data_ptr<int32_t>();
    const int32_t *multiplier = multipliers.const_data_ptr<int32_t>();
    for (int64_t c = 0; c < channels; ++c) {
        if (shift[c] < kMinShift || shift[c] > kMaxShift || multiplier[c] < 0) {
            return false;
        }
    }
    return is_pair(stride, 1) && is_pair(padding, 0) && is_pair(dilation, 1) &&
           activation_min >= INT16_MIN && activation_min <= activation_max &&
           activation_max <= INT16_MAX;
}

// The geometry and bounds, in the form both CMSIS-NN parameter structs share.
struct Geometry {
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
};

inline Geometry geometry(ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                         ArrayRef<int64_t> dilation, int64_t activation_min,
                         int64_t activation_max) {
    auto tile = [](ArrayRef<int64_t> hw) {
        return cmsis_nn_tile{static_cast<int32_t>(hw[1]), static_cast<int32_t>(hw[0])};
    };
    return {tile(stride),
            tile(padding),
            tile(dilation),
            {static_cast<int32_t>(activation_min), static_cast<int32_t>(activation_max)}};
}

} // namespace et_zephyr::native::s16
