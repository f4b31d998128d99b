/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::add_s16.out: a 16x8 addition (or subtraction) of two int16 tensors of one
 * shape and dim order (et-export --activations int16) on CMSIS-NN's
 * arm_elementwise_add_s16, with TensorFlow Lite's left shift of 15. The host reference is
 * scripts/et_zephyr/reference/add_s16.py.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"

using executorch::runtime::Error;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

constexpr int32_t kLeftShift = 15;

// One shape, and the dims of size > 1 in one order: a dim of size 1 may stand anywhere in
// a dim order (a one-channel NCHW input and an NHWC map are the same bytes).
bool same_layout(const Tensor &a, const Tensor &b) {
    if (a.dim() != b.dim()) {
        return false;
    }
    for (ssize_t d = 0; d < a.dim(); ++d) {
        if (a.size(d) != b.size(d)) {
            return false;
        }
    }
    ssize_t i = 0;
    ssize_t j = 0;
    while (true) {
        while (i < a.dim() && a.size(a.dim_order()[i]) == 1) {
            ++i;
        }
        while (j < b.dim() && b.size(b.dim_order()[j]) == 1) {
            ++j;
        }
        if (i == a.dim() || j == b.dim()) {
            return i == a.dim() && j == b.dim();
        }
        if (a.dim_order()[i] != b.dim_order()[j]) {
            return false;
        }
        ++i;
        ++j;
    }
}

// arm_nn_requantize shifts within 32 bits.
bool is_requantization(int64_t multiplier, int64_t shift) {
    return multiplier >= 0 && multiplier <= INT32_MAX && shift >= -31 && shift <= 30;
}

// A subtraction negates its second input's multiplier (its rounding is still the
// kernel's: half up on the negated product).
bool is_input_requantization(int64_t multiplier, int64_t shift) {
    return is_requantization(multiplier < 0 ? -multiplier : multiplier, shift);
}

} // namespace

namespace et_zephyr::native {

Tensor &add_s16_out(KernelRuntimeContext &context, const Tensor &a, const Tensor &b,
                    ArrayRef<int64_t> input_multipliers, ArrayRef<int64_t> input_shifts,
                    int64_t output_multiplier, int64_t output_shift, int64_t activation_min,
                    int64_t activation_max, Tensor &out) {
    const bool valid =
        a.scalar_type() == ScalarType::Short && b.scalar_type() == ScalarType::Short &&
        out.scalar_type() == ScalarType::Short && same_layout(a, b) && same_layout(a, out) &&
        input_multipliers.size() == 2 && input_shifts.size() == 2 &&
        is_input_requantization(input_multipliers[0], input_shifts[0]) &&
        is_input_requantization(input_multipliers[1], input_shifts[1]) &&
        is_requantization(output_multiplier, output_shift) && activation_min >= INT16_MIN &&
        activation_min <= activation_max && activation_max <= INT16_MAX && a.numel() <= INT32_MAX;
    if (!valid) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto status = arm_elementwise_add_s16(
        a.const_data_ptr<int16_t>(), b.const_data_ptr<int16_t>(), 0,
        static_cast<int32_t>(input_multipliers[0]), static_cast<int32_t>(input_shifts[0]), 0,
        static_cast<int32_t>(input_multipliers[1]), static_cast<int32_t>(input_shifts[1]),
        kLeftShift, out.mutable_data_ptr<int16_t>(), 0, static_cast<int32_t>(output_multiplier),
        static_cast<int32_t>(output_shift), static_cast<int32_t>(activation_min),
        static_cast<int32_t>(activation_max), static_cast<int32_t>(a.numel()));
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::InvalidArgument);
    }
    return out;
}

} // namespace et_zephyr::native
