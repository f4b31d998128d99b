/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::quantized_conv2d_s16.out: a 16x8 convolution (et-export --activations
 * int16) on CMSIS-NN's arm_convolve_wrapper_s16, with int64 biases. ExecuTorch's
 * Cortex-M backend has INT8 convolutions only. The host reference is
 * scripts/et_zephyr/reference/conv_s16.py.
 */

#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"
#include "convolution_s16.h"

using executorch::runtime::Error;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace et_zephyr::native {

Tensor &quantized_conv2d_s16_out(KernelRuntimeContext &context, const Tensor &input,
                                 const Tensor &weights, const std::optional<Tensor> &biases,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilation, const Tensor &multipliers,
                                 const Tensor &shifts, int64_t activation_min,
                                 int64_t activation_max, const Tensor &scratch, Tensor &out) {
    // Weights OHWI over the input's channels.
    if (!s16::valid(input, biases, stride, padding, dilation, multipliers, shifts, activation_min,
                    activation_max, out) ||
        weights.scalar_type() != ScalarType::Char || weights.dim() != 4 ||
        weights.size(0) != out.size(1) || weights.size(3) != input.size(1)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto shape = s16::geometry(stride, padding, dilation, activation_min, activation_max);
    const cmsis_nn_conv_params params{
        0, 0, shape.stride, shape.padding, shape.dilation, shape.activation};
    const cmsis_nn_context buffer{scratch.mutable_data_ptr(),
                                  static_cast<int32_t>(scratch.nbytes())};
    const cmsis_nn_per_channel_quant_params quant{
        const_cast<int32_t *>(multipliers.const_data_ptr<int32_t>()),
        const_cast<int32_t *>(shifts.const_data_ptr<int32_t>())};
    const cmsis_nn_dims input_dims = s16::nhwc(input);
    const cmsis_nn_dims filter_dims{
        static_cast<int32_t>(weights.size(0)), static_cast<int32_t>(weights.size(1)),
        static_cast<int32_t>(weights.size(2)), static_cast<int32_t>(weights.size(3))};
    const cmsis_nn_dims output_dims = s16::nhwc(out);
    const cmsis_nn_dims bias_dims{1, 1, 1, output_dims.c};
    // A program exported for another ISA tier may have planned less.
    if (scratch.nbytes() == 0 ||
        scratch.nbytes() < static_cast<size_t>(arm_convolve_wrapper_s16_get_buffer_size(
                               &params, &input_dims, &filter_dims, &output_dims))) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const cmsis_nn_bias_data bias{biases.has_value() ? biases->const_data_ptr<int64_t>() : nullptr,
                                  false};
    const auto status = arm_convolve_wrapper_s16(
        &buffer, &params, &quant, &input_dims, input.const_data_ptr<int16_t>(), &filter_dims,
        weights.const_data_ptr<int8_t>(), &bias_dims, &bias, &output_dims,
        out.mutable_data_ptr<int16_t>());
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::Internal);
    }
    return out;
}

} // namespace et_zephyr::native
