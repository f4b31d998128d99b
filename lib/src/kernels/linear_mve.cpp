/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_linear.out for Helium (MVE): the int8 matrix product of
 * the pointwise-convolution kernel (pointwise_mve.cpp), where CMSIS-NN's
 * arm_fully_connected_s8 runs arm_nn_vec_mat_mult_t_s8 once per row and loads
 * every weight again for each (a transformer's tokens, a batch). A single row
 * (a classifier, an autoencoder) goes to the upstream kernel: CMSIS-NN's
 * vector-by-matrix loop, four output channels a pass over the input with the
 * kernel sums et-export computed, is faster there (MLPerf Tiny's autoencoder
 * on the M55: 428,734 instructions with this kernel, about 2.3 times fewer
 * without it). Symmetric weights (filter offset 0) and a depth that is a
 * multiple of 16; the same sums and CMSIS-NN's requantization: bit-identical
 * outputs. Other linears go to the upstream kernel.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "linear_checks.h"
#include "pointwise_mve.h"
#include "upstream_kernels.h"

using et_zephyr::native::has_channel_terms;
using et_zephyr::native::has_tensor_requantization;
using et_zephyr::native::kPointwiseDepthStep;
using et_zephyr::native::linear_shape;
using et_zephyr::native::LinearShape;
using et_zephyr::native::pointwise_product;
using et_zephyr::native::PointwiseProduct;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

/* A linear this kernel computes, or false (the upstream kernel runs). */
bool handled(const Tensor &input, const Tensor &weights, const std::optional<Tensor> &bias,
             const std::optional<Tensor> &kernel_sum, int64_t filter_offset,
             ArrayRef<int64_t> multipliers, ArrayRef<int64_t> shifts, const Tensor &out) {
    LinearShape shape;
    if (!linear_shape(input, weights, out, &shape) || !has_channel_terms(bias, weights.size(0)) ||
        !has_channel_terms(kernel_sum, weights.size(0)) || shape.depth % kPointwiseDepthStep != 0 ||
        filter_offset != 0 || shape.rows < 2) {
        return false;
    }
    return has_tensor_requantization(multipliers, shifts);
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_linear_out(KernelRuntimeContext &context, const Tensor &input,
                             const Tensor &weights, const std::optional<Tensor> &bias,
                             const std::optional<Tensor> &kernel_sum, int64_t input_offset,
                             int64_t filter_offset, int64_t output_offset,
                             ArrayRef<int64_t> requantize_multipliers,
                             ArrayRef<int64_t> requantize_shifts, int64_t activation_max,
                             int64_t activation_min, Tensor &out) {
    if (!handled(input, weights, bias, kernel_sum, filter_offset, requantize_multipliers,
                 requantize_shifts, out)) {
        if constexpr (!kUpstreamFallback) {
            fail_without_fallback(context, "linear_mve");
            return out;
        }
        return cortex_m::native::quantized_linear_out(
            context, input, weights, bias, kernel_sum, input_offset, filter_offset, output_offset,
            requantize_multipliers, requantize_shifts, activation_max, activation_min, out);
    }
    /* CMSIS-NN's fully connected layer takes one multiplier and shift. */
    const int32_t multiplier = static_cast<int32_t>(requantize_multipliers[0]);
    const int32_t shift = static_cast<int32_t>(requantize_shifts[0]);
    PointwiseProduct k;
    k.input = input.const_data_ptr<int8_t>();
    k.weights = weights.const_data_ptr<int8_t>();
    if (kernel_sum.has_value()) {
        /* The Helium program's form (et-export's, as upstream lowers it): the
         * bias and the input-offset term summed ahead of time, the bias
         * argument unused, as arm_fully_connected_s8 reads them on Helium. */
        k.bias = kernel_sum->const_data_ptr<int32_t>();
        k.input_offset = 0;
    } else {
        k.bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
        k.input_offset = static_cast<int32_t>(input_offset);
    }
    k.multipliers = &multiplier;
    k.shifts = &shift;
    k.per_tensor = true;
    k.pair_weights = nullptr;
    k.channel_bases = nullptr;
    k.out = out.mutable_data_ptr<int8_t>();
    k.depth = static_cast<int32_t>(weights.size(1));
    k.row_stride = k.depth;
    k.channels = static_cast<int32_t>(weights.size(0));
    k.rows = static_cast<int32_t>(input.numel()) / k.depth;
    k.output_offset = static_cast<int32_t>(output_offset);
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    pointwise_product(k);
    return out;
}

} // namespace et_zephyr::native
