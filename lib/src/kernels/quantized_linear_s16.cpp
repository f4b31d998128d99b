/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::quantized_linear_s16.out: a 16x8 linear (et-export --activations int16) on
 * CMSIS-NN's arm_fully_connected_s16: int16 input and output without offsets, int8
 * weights [rows, columns] with one scale, int64 biases, one requantization. ExecuTorch's
 * Cortex-M backend has INT8 linears only. The host reference is
 * scripts/et_zephyr/reference/linear_s16.py.
 */

#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"

using executorch::runtime::Error;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

// arm_nn_requantize_s64 shifts right by 14 - shift, in 64 bits.
constexpr int64_t kMaxShift = 14;
constexpr int64_t kMinShift = kMaxShift - 63;

bool valid(const Tensor &input, const Tensor &weights, const std::optional<Tensor> &biases,
           int64_t multiplier, int64_t shift, int64_t activation_min, int64_t activation_max,
           const Tensor &out) {
    if (input.scalar_type() != ScalarType::Short || out.scalar_type() != ScalarType::Short ||
        weights.scalar_type() != ScalarType::Char || weights.dim() != 2 || input.dim() < 1) {
        return false;
    }
    const auto rows = weights.size(0);
    const auto columns = weights.size(1);
    if (rows < 1 || columns < 1 || input.size(input.dim() - 1) != columns ||
        out.size(out.dim() - 1) != rows || input.numel() / columns != out.numel() / rows) {
        return false;
    }
    if (biases.has_value() &&
        (biases->scalar_type() != ScalarType::Long || biases->numel() != rows)) {
        return false;
    }
    return multiplier >= 0 && multiplier <= INT32_MAX && shift >= kMinShift && shift <= kMaxShift &&
           activation_min >= INT16_MIN && activation_min <= activation_max &&
           activation_max <= INT16_MAX;
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_linear_s16_out(KernelRuntimeContext &context, const Tensor &input,
                                 const Tensor &weights, const std::optional<Tensor> &biases,
                                 int64_t multiplier, int64_t shift, int64_t activation_min,
                                 int64_t activation_max, Tensor &out) {
    if (!valid(input, weights, biases, multiplier, shift, activation_min, activation_max, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto rows = static_cast<int32_t>(weights.size(0));
    const auto columns = static_cast<int32_t>(weights.size(1));
    // The s16 kernel needs no scratch (arm_fully_connected_s16_get_buffer_size is 0).
    const cmsis_nn_context no_scratch{nullptr, 0};
    cmsis_nn_fc_params fc_params{};
    fc_params.activation.min = static_cast<int32_t>(activation_min);
    fc_params.activation.max = static_cast<int32_t>(activation_max);
    const cmsis_nn_per_tensor_quant_params quant_params{static_cast<int32_t>(multiplier),
                                                        static_cast<int32_t>(shift)};
    const cmsis_nn_dims input_dims{static_cast<int32_t>(input.numel() / columns), 1, 1, columns};
    const cmsis_nn_dims filter_dims{columns, 1, 1, rows};
    const cmsis_nn_dims bias_dims{1, 1, 1, rows};
    const cmsis_nn_dims output_dims{input_dims.n, 1, 1, rows};
    const auto status = arm_fully_connected_s16(
        &no_scratch, &fc_params, &quant_params, &input_dims, input.const_data_ptr<int16_t>(),
        &filter_dims, weights.const_data_ptr<int8_t>(), &bias_dims,
        biases.has_value() ? biases->const_data_ptr<int64_t>() : nullptr, &output_dims,
        out.mutable_data_ptr<int16_t>());
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::Internal);
    }
    return out;
}

} // namespace et_zephyr::native
