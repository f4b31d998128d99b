/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_linear.out for cores without the DSP extension
 * (Cortex-M3, M33 without DSP): fully connected layers, classifiers, an
 * autoencoder's layers, through rows_times_weights_scalar.h (4 weight rows a
 * pass over an input row extended once; CMSIS-NN's arm_nn_vec_mat_mult_t_s8
 * takes 2). Symmetric weights (filter offset 0) and CMSIS-NN's one multiplier
 * and shift; bit-identical outputs. Other linears go to the upstream kernel.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "linear_checks.h"
#include "requantize_fast.h"
#include "rows_times_weights_scalar.h"
#include "upstream_kernels.h"

using et_zephyr::native::has_channel_terms;
using et_zephyr::native::has_int8_zero_points;
using et_zephyr::native::has_tensor_requantization;
using et_zephyr::native::linear_shape;
using et_zephyr::native::LinearShape;
using et_zephyr::native::rows_times_weights_exact;
using et_zephyr::native::rows_times_weights_scalar;
using et_zephyr::native::RowsTimesWeights;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace et_zephyr::native {

Tensor &quantized_linear_out(KernelRuntimeContext &context, const Tensor &input,
                             const Tensor &weights, const std::optional<Tensor> &bias,
                             const std::optional<Tensor> &kernel_sum, int64_t input_offset,
                             int64_t filter_offset, int64_t output_offset,
                             ArrayRef<int64_t> requantize_multipliers,
                             ArrayRef<int64_t> requantize_shifts, int64_t activation_max,
                             int64_t activation_min, Tensor &out) {
    auto upstream = [&]() -> Tensor & {
        return cortex_m::native::quantized_linear_out(
            context, input, weights, bias, kernel_sum, input_offset, filter_offset, output_offset,
            requantize_multipliers, requantize_shifts, activation_max, activation_min, out);
    };
    LinearShape shape;
    /* Offsets checked before they are cast to 32 bits; a negative multiplier is
     * rows_times_weights_exact()'s to refuse. */
    if (!linear_shape(input, weights, out, &shape) || !has_channel_terms(bias, weights.size(0)) ||
        kernel_sum.has_value() || filter_offset != 0 ||
        !has_int8_zero_points(input_offset, output_offset) ||
        !has_tensor_requantization(requantize_multipliers, requantize_shifts)) {
        return upstream();
    }
    const int32_t multiplier = static_cast<int32_t>(requantize_multipliers[0]);
    const int32_t shift = static_cast<int32_t>(requantize_shifts[0]);
    RowsTimesWeights k{};
    k.input = input.const_data_ptr<int8_t>();
    k.weights = weights.const_data_ptr<int8_t>();
    k.bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    k.multipliers = &multiplier;
    k.shifts = &shift;
    k.per_channel = false;
    k.out = out.mutable_data_ptr<int8_t>();
    k.rows = shape.rows;
    k.depth = shape.depth;
    k.channels = shape.channels;
    k.input_offset = static_cast<int32_t>(input_offset);
    k.output_offset = static_cast<int32_t>(output_offset);
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    if (!rows_times_weights_exact(k)) {
        return upstream();
    }
    rows_times_weights_scalar(k);
    return out;
}

} // namespace et_zephyr::native
