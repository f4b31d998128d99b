/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Checks shared by et-zephyr's convolution kernels, which take a call only
 * when its shape and types are theirs and otherwise hand it to the upstream
 * kernel.
 */

#ifndef ET_ZEPHYR_KERNELS_CONV_CHECKS_H_
#define ET_ZEPHYR_KERNELS_CONV_CHECKS_H_

#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

namespace et_zephyr::native {

/* A 4-D tensor whose bytes are in NHWC order: its dims over size 1 come in
 * that order. A size-1 dim may sit anywhere in the dim order (the program
 * derives a tensor's dim order from its strides, which do not place it). */
inline bool has_nhwc_bytes(const torch::executor::Tensor &t) {
    static constexpr uint8_t kNhwc[4] = {0, 2, 3, 1};
    if (t.dim() != 4) {
        return false;
    }
    /* sizes()[d], not size(d): d < 4 here, no bounds check needed. */
    const auto sizes = t.sizes();
    int32_t next = 0;
    for (const uint8_t dim : t.dim_order()) {
        if (sizes[dim] == 1) {
            continue;
        }
        while (next < 4 && sizes[kNhwc[next]] == 1) {
            next++;
        }
        if (next == 4 || kNhwc[next] != dim) {
            return false;
        }
        next++;
    }
    return true;
}

/* A 2-D convolution parameter (stride, padding, dilation) with both values
 * equal to expected. */
inline bool all_equal(torch::executor::ArrayRef<int64_t> values, int64_t expected) {
    for (const int64_t value : values) {
        if (value != expected) {
            return false;
        }
    }
    return values.size() == 2;
}

/* int8 input, weights and output, int32 bias and per-channel requantization. */
inline bool has_int8_types(const torch::executor::Tensor &input,
                           const torch::executor::Tensor &weight,
                           const std::optional<torch::executor::Tensor> &bias,
                           const torch::executor::Tensor &multipliers,
                           const torch::executor::Tensor &shifts,
                           const torch::executor::Tensor &out) {
    using torch::executor::ScalarType;
    return input.scalar_type() == ScalarType::Char && weight.scalar_type() == ScalarType::Char &&
           out.scalar_type() == ScalarType::Char && multipliers.scalar_type() == ScalarType::Int &&
           shifts.scalar_type() == ScalarType::Int &&
           (!bias.has_value() || bias->scalar_type() == ScalarType::Int);
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_CONV_CHECKS_H_ */
