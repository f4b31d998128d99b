/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::channel_shuffle.out: ShuffleNet's interleaving of the channels of
 * `groups` groups (output channel j * groups + i is input channel
 * i * channels / groups + j), on an int8 image in its own dim order. Written as a
 * 5-D view and a transpose it would run on portable kernels with layout copies
 * around them; here each run of the dimensions laid out after the channels (one
 * byte in a channels-last image) moves once.
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

constexpr int64_t kChannels = 1;

bool valid(const Tensor &input, int64_t groups, const Tensor &out) {
    return input.dim() >= 2 && et_zephyr::native::fits_along(input, out, kChannels) &&
           input.size(kChannels) == out.size(kChannels) && groups >= 1 &&
           input.size(kChannels) % groups == 0;
}

} // namespace

namespace et_zephyr::native {

Tensor &channel_shuffle_out(KernelRuntimeContext &context, const Tensor &input, int64_t groups,
                            Tensor &out) {
    if (!valid(input, groups, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const Blocks shape = blocks(input, kChannels);
    const int64_t channels = input.size(kChannels);
    const int64_t per_group = channels / groups;
    const auto run = static_cast<size_t>(shape.inner);
    const int8_t *source = input.const_data_ptr<int8_t>();
    int8_t *destination = out.mutable_data_ptr<int8_t>();
    for (int64_t o = 0; o < shape.outer; ++o) {
        for (int64_t j = 0; j < per_group; ++j) {
            for (int64_t i = 0; i < groups; ++i) {
                memcpy(destination, source + (i * per_group + j) * shape.inner, run);
                destination += run;
            }
        }
        source += channels * shape.inner;
    }
    return out;
}

} // namespace et_zephyr::native
