/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::concatenate.out: int8 tensors joined along one dimension in the dim
 * order they share. The portable aten::cat indexes by the default order, so a
 * channels-last concatenation (U-Net skips, SqueezeNet's fire modules) would cost a
 * copy of every input and of the output. In memory the join is along the dimension's
 * place in the dim order: for each index of the dimensions laid out before it, every
 * input contributes one block of size(dim) x (the dimensions after it), which is
 * CMSIS-NN's arm_concatenation_s8_y with x = the inner size, y = size(dim) and
 * z = the outer size. The bytes move unchanged: the quantizer gives the inputs and
 * the output the same parameters.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"
#include "dim_order_blocks.h"

using executorch::runtime::Error;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

bool valid(ArrayRef<Tensor> tensors, int64_t dim, const Tensor &out) {
    if (tensors.size() == 0 || dim < 0 || dim >= out.dim()) {
        return false;
    }
    const et_zephyr::native::Blocks shape = et_zephyr::native::blocks(out, dim);
    /* arm_concatenation_s8_y takes uint16_t sizes. */
    if (shape.outer > UINT16_MAX || shape.inner > UINT16_MAX || out.size(dim) > UINT16_MAX) {
        return false;
    }
    int64_t joined = 0;
    for (const Tensor &input : tensors) {
        if (!et_zephyr::native::fits_along(input, out, dim)) {
            return false;
        }
        joined += input.size(dim);
    }
    return joined == out.size(dim);
}

} // namespace

namespace et_zephyr::native {

Tensor &concatenate_out(KernelRuntimeContext &context, ArrayRef<Tensor> tensors, int64_t dim,
                        Tensor &out) {
    if (dim < 0) {
        dim += out.dim();
    }
    if (!valid(tensors, dim, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const Blocks shape = blocks(out, dim);
    uint32_t offset = 0;
    for (const Tensor &input : tensors) {
        const auto size = static_cast<uint16_t>(input.size(dim));
        arm_concatenation_s8_y(input.const_data_ptr<int8_t>(), static_cast<uint16_t>(shape.inner),
                               size, static_cast<uint16_t>(shape.outer), 1,
                               out.mutable_data_ptr<int8_t>(), static_cast<uint16_t>(out.size(dim)),
                               offset);
        offset += size;
    }
    return out;
}

} // namespace et_zephyr::native
