/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::avg_pool2d_clipped.out: CMSIS-NN's arm_avgpool_s8 on a channels-last int8
 * map, with the output's size given rather than derived from the window. Window
 * (i, j) starts at (i * stride - padding) and is clipped to the input, wherever it
 * ends: the last row and column PyTorch's ceil mode adds run past the input, and are
 * averaged over the positions they cover. Input and output share their quantization
 * (the quantizer sees to it), so the integer mean is the result.
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

constexpr size_t kRank = 4;

/* Channels-last bytes: the dimensions of size above 1 laid out in N, H, W, C order. */
bool channels_last(const Tensor &t) {
    static constexpr int64_t kNhwc[kRank] = {0, 2, 3, 1};
    size_t next = 0;
    for (size_t k = 0; k < kRank; ++k) {
        const int64_t dim = t.dim_order()[k];
        if (t.size(dim) == 1) {
            continue;
        }
        while (next < kRank && (kNhwc[next] != dim)) {
            if (t.size(kNhwc[next]) != 1) {
                return false;
            }
            ++next;
        }
        if (next == kRank) {
            return false;
        }
        ++next;
    }
    return true;
}

bool is_pair(ArrayRef<int64_t> values, int64_t low) {
    return values.size() == 2 && values[0] >= low && values[1] >= low && values[0] <= INT16_MAX &&
           values[1] <= INT16_MAX;
}

bool valid(const Tensor &input, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
           ArrayRef<int64_t> padding, ArrayRef<int64_t> output_size, const Tensor &out) {
    if (input.dim() != kRank || out.dim() != kRank || input.scalar_type() != ScalarType::Char ||
        out.scalar_type() != ScalarType::Char || !channels_last(input) || !channels_last(out)) {
        return false;
    }
    if (!is_pair(kernel_size, 1) || !is_pair(stride, 1) || !is_pair(padding, 0) ||
        !is_pair(output_size, 1)) {
        return false;
    }
    if (out.size(0) != input.size(0) || out.size(1) != input.size(1) ||
        out.size(2) != output_size[0] || out.size(3) != output_size[1]) {
        return false;
    }
    /* Every window starts inside the input: one past it would average nothing. */
    for (size_t axis = 0; axis < 2; ++axis) {
        const int64_t last_start = (output_size[axis] - 1) * stride[axis] - padding[axis];
        if (last_start >= input.size(axis + 2) || padding[axis] >= kernel_size[axis]) {
            return false;
        }
    }
    return input.size(1) <= INT16_MAX && input.size(2) <= INT16_MAX && input.size(3) <= INT16_MAX;
}

} // namespace

namespace et_zephyr::native {

Tensor &avg_pool2d_clipped_out(KernelRuntimeContext &context, const Tensor &input,
                               ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                               ArrayRef<int64_t> padding, ArrayRef<int64_t> output_size,
                               const Tensor &scratch, Tensor &out) {
    if (!valid(input, kernel_size, stride, padding, output_size, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto batch = static_cast<int32_t>(input.size(0));
    const auto channels = static_cast<int32_t>(input.size(1));
    const auto out_w = static_cast<int32_t>(out.size(3));
    if (scratch.nbytes() < static_cast<size_t>(arm_avgpool_s8_get_buffer_size(out_w, channels))) {
        context.fail(Error::MemoryAllocationFailed);
        return out;
    }
    cmsis_nn_context buffer = {scratch.nbytes() > 0 ? scratch.mutable_data_ptr<int8_t>() : nullptr,
                               static_cast<int32_t>(scratch.nbytes())};
    cmsis_nn_pool_params params = {};
    params.stride = {static_cast<int32_t>(stride[1]), static_cast<int32_t>(stride[0])};
    params.padding = {static_cast<int32_t>(padding[1]), static_cast<int32_t>(padding[0])};
    params.activation = {INT8_MIN, INT8_MAX};
    const cmsis_nn_dims input_dims = {batch, static_cast<int32_t>(input.size(2)),
                                      static_cast<int32_t>(input.size(3)), channels};
    const cmsis_nn_dims filter_dims = {1, static_cast<int32_t>(kernel_size[0]),
                                       static_cast<int32_t>(kernel_size[1]), 1};
    const cmsis_nn_dims output_dims = {batch, static_cast<int32_t>(out.size(2)), out_w, channels};
    const arm_cmsis_nn_status status =
        arm_avgpool_s8(&buffer, &params, &input_dims, input.const_data_ptr<int8_t>(), &filter_dims,
                       &output_dims, out.mutable_data_ptr<int8_t>());
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::InvalidArgument);
    }
    return out;
}

} // namespace et_zephyr::native
