/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_conv2d.out for Helium (MVE), for pointwise (1x1, stride
 * 1, no padding, no dilation) convolutions: the int8 matrix product of the
 * input's pixels (rows of C_in) with the weights' output channels
 * (pointwise_mve.cpp), where CMSIS-NN runs arm_convolve_1x1_s8_fast ->
 * arm_nn_mat_mult_nt_t_s8. Bit-identical outputs. Other convolutions go to the
 * upstream kernel.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "pointwise_mve.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::is_channels_last;
using et_zephyr::native::kPointwiseDepthStep;
using et_zephyr::native::pointwise_product;
using et_zephyr::native::PointwiseProduct;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace cortex_m::native {
/* The upstream kernel (backends/cortex_m/ops/op_quantized_conv2d.cpp). */
Tensor &quantized_conv2d_out(KernelRuntimeContext &, const Tensor &, const Tensor &,
                             const std::optional<Tensor> &, ArrayRef<int64_t>, ArrayRef<int64_t>,
                             ArrayRef<int64_t>, int64_t, int64_t, const Tensor &, const Tensor &,
                             int64_t, int64_t, const Tensor &, Tensor &);
} // namespace cortex_m::native

namespace {

/* A pointwise convolution this kernel handles, or false (the upstream kernel runs). */
bool is_pointwise(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
                  ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                  const Tensor &multipliers, const Tensor &shifts, const Tensor &out) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || !all_equal(stride, 1) ||
        !all_equal(padding, 0) || !all_equal(dilation, 1)) {
        return false;
    }
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out)) {
        return false;
    }
    const int64_t depth = input.size(1);
    const int64_t channels = out.size(1);
    /* Weights are [C_out, 1, 1, C_in] (OHWI), contiguous. */
    return weight.size(0) == channels && weight.size(1) == 1 && weight.size(2) == 1 &&
           weight.size(3) == depth && depth % kPointwiseDepthStep == 0 &&
           input.size(0) == out.size(0) && input.size(2) == out.size(2) &&
           input.size(3) == out.size(3) && multipliers.numel() == channels &&
           shifts.numel() == channels && (!bias.has_value() || bias->numel() == channels) &&
           is_channels_last(input) && is_channels_last(out);
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_conv2d_out(KernelRuntimeContext &context, const Tensor &input,
                             const Tensor &weight, const std::optional<Tensor> &bias,
                             ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                             ArrayRef<int64_t> dilation, int64_t input_offset,
                             int64_t output_offset, const Tensor &requantize_multipliers,
                             const Tensor &requantize_shifts, int64_t activation_min,
                             int64_t activation_max, const Tensor &scratch, Tensor &out) {
    if (!is_pointwise(input, weight, bias, stride, padding, dilation, requantize_multipliers,
                      requantize_shifts, out)) {
        return cortex_m::native::quantized_conv2d_out(context, input, weight, bias, stride, padding,
                                                      dilation, input_offset, output_offset,
                                                      requantize_multipliers, requantize_shifts,
                                                      activation_min, activation_max, scratch, out);
    }
    PointwiseProduct k;
    k.input = input.const_data_ptr<int8_t>();
    k.weights = weight.const_data_ptr<int8_t>();
    k.bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    k.multipliers = requantize_multipliers.const_data_ptr<int32_t>();
    k.shifts = requantize_shifts.const_data_ptr<int32_t>();
    k.per_tensor = false;
    k.out = out.mutable_data_ptr<int8_t>();
    k.depth = static_cast<int32_t>(input.size(1));
    k.channels = static_cast<int32_t>(out.size(1));
    k.rows = static_cast<int32_t>(input.size(0) * input.size(2) * input.size(3));
    k.input_offset = static_cast<int32_t>(input_offset);
    k.output_offset = static_cast<int32_t>(output_offset);
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    pointwise_product(k);
    return out;
}

} // namespace et_zephyr::native
