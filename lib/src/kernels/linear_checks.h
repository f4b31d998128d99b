/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Checks shared by et-zephyr's linear kernels (linear_mve.cpp, linear_dsp.cpp),
 * which take a call only when its shape and types are theirs and otherwise hand
 * it to the upstream kernel.
 */

#ifndef ET_ZEPHYR_KERNELS_LINEAR_CHECKS_H_
#define ET_ZEPHYR_KERNELS_LINEAR_CHECKS_H_

#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/exec_aten/util/dim_order_util.h>

namespace et_zephyr::native {

/* A linear's rows (the input's values over its last dim), depth and channels. */
struct LinearShape {
    int32_t rows;
    int32_t depth;
    int32_t channels;
};

inline bool is_contiguous(const torch::executor::Tensor &t) {
    return executorch::runtime::is_contiguous_dim_order(t.dim_order().data(), t.dim());
}

/* int8 input [..., depth], weights [channels, depth] and output [..., channels]
 * holding rows x channels values, all contiguous: the shape, or false. */
inline bool linear_shape(const torch::executor::Tensor &input,
                         const torch::executor::Tensor &weights, const torch::executor::Tensor &out,
                         LinearShape *shape) {
    using torch::executor::ScalarType;
    if (input.scalar_type() != ScalarType::Char || weights.scalar_type() != ScalarType::Char ||
        out.scalar_type() != ScalarType::Char || input.dim() < 1 || out.dim() < 1 ||
        weights.dim() != 2) {
        return false;
    }
    /* Tensor sizes are 32-bit (a 64-bit division would link a libgcc routine). */
    const int32_t depth = static_cast<int32_t>(input.size(input.dim() - 1));
    const int64_t channels = weights.size(0);
    if (weights.size(1) != depth || out.size(out.dim() - 1) != channels || depth < 1) {
        return false;
    }
    const int32_t rows = static_cast<int32_t>(input.numel()) / depth;
    if (out.numel() != rows * channels || !is_contiguous(input) || !is_contiguous(weights) ||
        !is_contiguous(out)) {
        return false;
    }
    *shape = {rows, depth, static_cast<int32_t>(channels)};
    return true;
}

/* Absent, or int32 with one value per channel (a bias, kernel sums). */
inline bool has_channel_terms(const std::optional<torch::executor::Tensor> &terms,
                              int64_t channels) {
    return !terms.has_value() ||
           (terms->scalar_type() == torch::executor::ScalarType::Int && terms->numel() == channels);
}

/* CMSIS-NN's fully connected layer takes one multiplier and shift: the first of
 * each, present, an int32 multiplier and a shift in -31..31. */
inline bool has_tensor_requantization(torch::executor::ArrayRef<int64_t> multipliers,
                                      torch::executor::ArrayRef<int64_t> shifts) {
    return multipliers.size() >= 1 && shifts.size() >= 1 && multipliers[0] >= INT32_MIN &&
           multipliers[0] <= INT32_MAX && shifts[0] >= -31 && shifts[0] <= 31;
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_LINEAR_CHECKS_H_ */
