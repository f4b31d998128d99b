/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_depthwise_conv2d.out for Helium (MVE): 3x3 depthwise
 * convolutions of the shapes depthwise_mve.h runs (stride 1, or 2 down and 1
 * or 2 across; padding 0 or 1; at least 8 channels, a multiple of 4), with a
 * scratch of its size (et-export plans it:
 * kernel_scratch.py). Other calls go to the upstream kernel, CMSIS-NN's
 * arm_depthwise_conv_s8_opt, whose outputs are the same bytes.
 */

#include <stddef.h>
#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "depthwise_mve.h"
#include "upstream_kernels.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::DepthwiseShape;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::has_nhwc_bytes;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

/* A stride or padding depthwise_mve.h may take (it checks which). */
bool is_small(int64_t value) {
    return value >= 0 && value <= 2;
}

/* The shape this kernel handles, or false (then the upstream kernel runs). */
bool handled_shape(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
                   ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                   int64_t depth_multiplier, const Tensor &multipliers, const Tensor &shifts,
                   const Tensor &scratch, const Tensor &out, DepthwiseShape *shape) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || depth_multiplier != 1 ||
        !all_equal(dilation, 1) || stride.size() != 2 || padding.size() != 2 ||
        !is_small(stride[0]) || !is_small(stride[1]) || !is_small(padding[0]) ||
        !is_small(padding[1])) {
        return false;
    }
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out)) {
        return false;
    }
    /* All three are 4-D: sizes()[d] needs no bounds check. */
    const auto in_sizes = input.sizes();
    const auto w_sizes = weight.sizes();
    const auto out_sizes = out.sizes();
    const int64_t channels = in_sizes[1];
    /* Weights are [1, 3, 3, C] (IHWO), contiguous. */
    if (in_sizes[0] != 1 || w_sizes[0] != 1 || w_sizes[1] != 3 || w_sizes[2] != 3 ||
        w_sizes[3] != channels || out_sizes[1] != channels || multipliers.numel() != channels ||
        shifts.numel() != channels || (bias.has_value() && bias->numel() != channels)) {
        return false;
    }
    /* The records are read as words. */
    if (!has_nhwc_bytes(input) || !has_nhwc_bytes(out) ||
        (reinterpret_cast<uintptr_t>(scratch.const_data_ptr()) & 3U) != 0) {
        return false;
    }
    /* The kernel reads the input channel group by channel group while it
     * writes: an output that overlaps the input (et-export plans that only for
     * CMSIS-NN's order, as it did for stride 2 before this kernel took it) is
     * the upstream kernel's. */
    const auto *in_bytes = static_cast<const uint8_t *>(input.const_data_ptr());
    const auto *out_bytes = static_cast<const uint8_t *>(out.const_data_ptr());
    if (in_bytes < out_bytes + out.nbytes() && out_bytes < in_bytes + input.nbytes()) {
        return false;
    }
    shape->channels = static_cast<int32_t>(channels);
    shape->in_height = static_cast<int32_t>(in_sizes[2]);
    shape->in_width = static_cast<int32_t>(in_sizes[3]);
    shape->stride_y = static_cast<int32_t>(stride[0]);
    shape->stride_x = static_cast<int32_t>(stride[1]);
    shape->pad_y = static_cast<int32_t>(padding[0]);
    shape->pad_x = static_cast<int32_t>(padding[1]);
    shape->out_height = static_cast<int32_t>(out_sizes[2]);
    shape->out_width = static_cast<int32_t>(out_sizes[3]);
    const size_t needed = et_zephyr::native::depthwise_scratch_bytes(*shape);
    return needed != 0 && scratch.nbytes() >= needed;
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_depthwise_conv2d_out(KernelRuntimeContext &context, const Tensor &input,
                                       const Tensor &weight, const std::optional<Tensor> &bias,
                                       ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                       ArrayRef<int64_t> dilation, int64_t depth_multiplier,
                                       int64_t input_offset, int64_t output_offset,
                                       const Tensor &requantize_multipliers,
                                       const Tensor &requantize_shifts, int64_t activation_min,
                                       int64_t activation_max, const Tensor &scratch, Tensor &out) {
    DepthwiseShape s{};
    if (!handled_shape(input, weight, bias, stride, padding, dilation, depth_multiplier,
                       requantize_multipliers, requantize_shifts, scratch, out, &s)) {
        if constexpr (!kUpstreamFallback) {
            fail_without_fallback(context, "depthwise_conv_mve");
            return out;
        }
        return cortex_m::native::quantized_depthwise_conv2d_out(
            context, input, weight, bias, stride, padding, dilation, depth_multiplier, input_offset,
            output_offset, requantize_multipliers, requantize_shifts, activation_min,
            activation_max, scratch, out);
    }
    et_zephyr::native::DepthwiseConvolution d;
    d.shape = s;
    d.input = input.const_data_ptr<int8_t>();
    d.weights = weight.const_data_ptr<int8_t>();
    d.bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    d.multipliers = requantize_multipliers.const_data_ptr<int32_t>();
    d.shifts = requantize_shifts.const_data_ptr<int32_t>();
    d.out = out.mutable_data_ptr<int8_t>();
    d.scratch = reinterpret_cast<uint8_t *>(scratch.mutable_data_ptr<int8_t>());
    d.input_offset = static_cast<int32_t>(input_offset);
    d.output_offset = static_cast<int32_t>(output_offset);
    d.activation_min = static_cast<int32_t>(activation_min);
    d.activation_max = static_cast<int32_t>(activation_max);
    et_zephyr::native::depthwise_convolution(d);
    return out;
}

} // namespace et_zephyr::native
