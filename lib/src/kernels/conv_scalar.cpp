/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_conv2d.out for cores without the DSP extension
 * (Cortex-M3, M33 without DSP), for pointwise layers (1x1 kernel, stride 1,
 * no padding or dilation: KWS's and MobileNet's separable blocks): the
 * pixels are rows of in_channels values, so the layer is
 * rows_times_weights_scalar.h's product with per-channel requantization
 * (CMSIS-NN's arm_convolve_1x1_s8_fast runs arm_nn_mat_mult_nt_t_s8's portable
 * C). Bit-identical outputs. Other convolutions go to the upstream kernel.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "requantize_fast.h"
#include "rows_times_weights_scalar.h"
#include "upstream_kernels.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::has_int8_zero_points;
using et_zephyr::native::has_nhwc_bytes;
using et_zephyr::native::rows_times_weights_exact;
using et_zephyr::native::rows_times_weights_scalar;
using et_zephyr::native::RowsTimesWeights;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

/* A pointwise layer as rows_times_weights_scalar() takes it, or false (then
 * the upstream kernel runs). */
bool pointwise(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
               ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
               const Tensor &multipliers, const Tensor &shifts, const Tensor &out,
               RowsTimesWeights *k) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || input.size(0) != 1 ||
        out.size(0) != 1 || !all_equal(stride, 1) || !all_equal(padding, 0) ||
        !all_equal(dilation, 1) || !has_int8_types(input, weight, bias, multipliers, shifts, out) ||
        !has_nhwc_bytes(input) || !has_nhwc_bytes(out)) {
        return false;
    }
    /* Weights are [C_out, 1, 1, C_in] (OHWI), contiguous. */
    const int64_t channels = out.size(1);
    if (weight.size(1) != 1 || weight.size(2) != 1 || weight.size(0) != channels ||
        weight.size(3) != input.size(1) || out.size(2) != input.size(2) ||
        out.size(3) != input.size(3) || multipliers.numel() != channels ||
        shifts.numel() != channels || (bias.has_value() && bias->numel() != channels)) {
        return false;
    }
    k->input = input.const_data_ptr<int8_t>();
    k->weights = weight.const_data_ptr<int8_t>();
    k->bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    k->multipliers = multipliers.const_data_ptr<int32_t>();
    k->shifts = shifts.const_data_ptr<int32_t>();
    k->per_channel = true;
    k->out = out.mutable_data_ptr<int8_t>();
    k->rows = static_cast<int32_t>(input.size(2) * input.size(3));
    k->depth = static_cast<int32_t>(input.size(1));
    k->channels = static_cast<int32_t>(channels);
    return true;
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
    RowsTimesWeights k{};
    /* Offsets checked before they are cast to 32 bits. */
    if (has_int8_zero_points(input_offset, output_offset) &&
        pointwise(input, weight, bias, stride, padding, dilation, requantize_multipliers,
                  requantize_shifts, out, &k)) {
        k.input_offset = static_cast<int32_t>(input_offset);
        k.output_offset = static_cast<int32_t>(output_offset);
        k.activation_min = static_cast<int32_t>(activation_min);
        k.activation_max = static_cast<int32_t>(activation_max);
        if (rows_times_weights_exact(k)) {
            rows_times_weights_scalar(k);
            return out;
        }
    }
    return cortex_m::native::quantized_conv2d_out(
        context, input, weight, bias, stride, padding, dilation, input_offset, output_offset,
        requantize_multipliers, requantize_shifts, activation_min, activation_max, scratch, out);
}

} // namespace et_zephyr::native
