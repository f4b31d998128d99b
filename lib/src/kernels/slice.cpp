/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::slice.out: every step-th index of one dimension of an int8 tensor, from
 * start to end, in the tensor's own dim order. The portable aten::slice_copy indexes
 * by the default order, so a channels-last cut (a GLU's halves, ShuffleNet's split,
 * a crop of a map) would cost a copy of the input and of the output. In memory the
 * cut is along the dimension's place in the dim order: for each index of the
 * dimensions laid out before it, the kept indices' runs of the dimensions after it.
 */

#include <stdint.h>
#include <string.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "dim_order_blocks.h"

using executorch::runtime::Error;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

bool valid(const Tensor &input, int64_t dim, int64_t start, int64_t end, int64_t step,
           const Tensor &out) {
    if (!et_zephyr::native::fits_along(input, out, dim) || step < 1 || start < 0 ||
        end > input.size(dim) || start > end) {
        return false;
    }
    return out.size(dim) == (end - start + step - 1) / step;
}

} // namespace

namespace et_zephyr::native {

Tensor &slice_out(KernelRuntimeContext &context, const Tensor &input, int64_t dim, int64_t start,
                  int64_t end, int64_t step, Tensor &out) {
    if (dim < 0) {
        dim += input.dim();
    }
    if (!valid(input, dim, start, end, step, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const Blocks shape = blocks(input, dim);
    const auto run = static_cast<size_t>(shape.inner);
    const int64_t kept = out.size(dim);
    const int8_t *source = input.const_data_ptr<int8_t>() + start * shape.inner;
    int8_t *destination = out.mutable_data_ptr<int8_t>();
    for (int64_t o = 0; o < shape.outer; ++o) {
        for (int64_t k = 0; k < kept; ++k) {
            memcpy(destination, source + k * step * shape.inner, run);
            destination += run;
        }
        source += input.size(dim) * shape.inner;
    }
    return out;
}

} // namespace et_zephyr::native
