/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::max_pool2d_s16.out: a 16x8 max pool (et-export --activations int16) on
 * CMSIS-NN's arm_max_pool_s16; padding takes no part. The host reference is
 * scripts/et_zephyr/reference/pooling.py.
 */

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

Tensor &max_pool2d_s16_out(KernelRuntimeContext &context, const Tensor &input,
                           ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                           ArrayRef<int64_t> padding, int64_t activation_min,
                           int64_t activation_max, Tensor &out) {
    if (!s16::valid_pool(input, kernel_size, stride, padding, activation_min, activation_max,
                         out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const cmsis_nn_context no_scratch{nullptr, 0};
    const cmsis_nn_pool_params params =
        s16::pool_params(stride, padding, activation_min, activation_max);
    const cmsis_nn_dims input_dims = s16::nhwc(input);
    const cmsis_nn_dims filter_dims = s16::window(kernel_size);
    const cmsis_nn_dims output_dims = s16::nhwc(out);
    const auto status =
        arm_max_pool_s16(&no_scratch, &params, &input_dims, input.const_data_ptr<int16_t>(),
                         &filter_dims, &output_dims, out.mutable_data_ptr<int16_t>());
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::InvalidArgument);
    }
    return out;
}

} // namespace et_zephyr::native
