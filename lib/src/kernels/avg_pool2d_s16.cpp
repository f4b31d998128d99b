/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::avg_pool2d_s16.out: a 16x8 average pool (et-export --activations int16) on
 * CMSIS-NN's arm_avgpool_s16; each window averages its positions inside the input. The
 * host reference is scripts/et_zephyr/reference/pooling.py.
 */

#include <stddef.h>
#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"
#include "pooling_s16.h"

using executorch::runtime::Error;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace et_zephyr::native {

Tensor &avg_pool2d_s16_out(KernelRuntimeContext &context, const Tensor &input,
                           ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                           ArrayRef<int64_t> padding, int64_t activation_min,
                           int64_t activation_max, const Tensor &scratch, Tensor &out) {
    if (!s16::valid_pool(input, kernel_size, stride, padding, activation_min, activation_max,
                         out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const cmsis_nn_dims input_dims = s16::nhwc(input);
    const cmsis_nn_dims output_dims = s16::nhwc(out);
    // A program exported for another ISA tier may have planned less.
    if (scratch.nbytes() <
        static_cast<size_t>(arm_avgpool_s16_get_buffer_size(output_dims.w, input_dims.c))) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const cmsis_nn_context buffer{scratch.nbytes() ? scratch.mutable_data_ptr() : nullptr,
                                  static_cast<int32_t>(scratch.nbytes())};
    const cmsis_nn_pool_params params =
        s16::pool_params(stride, padding, activation_min, activation_max);
    const cmsis_nn_dims filter_dims = s16::window(kernel_size);
    const auto status =
        arm_avgpool_s16(&buffer, &params, &input_dims, input.const_data_ptr<int16_t>(),
                        &filter_dims, &output_dims, out.mutable_data_ptr<int16_t>());
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::InvalidArgument);
    }
    return out;
}

} // namespace et_zephyr::native
