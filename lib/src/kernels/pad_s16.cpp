/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::pad_s16.out: a constant pad of an int16 tensor of up to four dimensions in
 * its own dim order (a 16x8 convolution's asymmetric padding; cortex_m::pad takes int8
 * only). Only moves elements: the host reference is torch's pad
 * (scripts/et_zephyr/reference/own_ops.py).
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

using executorch::runtime::Error;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

constexpr size_t kMaxDims = 4;

// Sizes and pads in memory order, outermost first, with leading dimensions of one.
struct Layout {
    int64_t in[kMaxDims];
    int64_t out[kMaxDims];
    int64_t before[kMaxDims];
};

// The input's dimensions of size > 1, in its dim order, against the output's order.
bool same_order(const Tensor &input, const Tensor &out) {
    const auto in_order = input.dim_order();
    const auto out_order = out.dim_order();
    size_t next = 0;
    for (size_t i = 0; i < out_order.size(); ++i) {
        if (input.size(out_order[i]) == 1) {
            continue;
        }
        while (next < in_order.size() && input.size(in_order[next]) == 1) {
            ++next;
        }
        if (next == in_order.size() || in_order[next++] != out_order[i]) {
            return false;
        }
    }
    return true;
}

// In the output's dim order: the input's dimensions of size 1 may sit anywhere in its own
// (their strides tie), the output's decide where the padding goes.
bool layout(const Tensor &input, ArrayRef<int64_t> pre_pad, ArrayRef<int64_t> post_pad,
            const Tensor &out, Layout &memory) {
    const size_t rank = static_cast<size_t>(input.dim());
    if (rank < 1 || rank > kMaxDims || static_cast<size_t>(out.dim()) != rank ||
        pre_pad.size() != rank || post_pad.size() != rank || !same_order(input, out)) {
        return false;
    }
    const auto order = out.dim_order();
    const size_t lead = kMaxDims - rank;
    for (size_t i = 0; i < kMaxDims; ++i) {
        memory.in[i] = memory.out[i] = 1;
        memory.before[i] = 0;
    }
    for (size_t i = 0; i < rank; ++i) {
        const size_t d = order[i];
        if (pre_pad[d] < 0 || post_pad[d] < 0 ||
            out.size(d) != input.size(d) + pre_pad[d] + post_pad[d]) {
            return false;
        }
        memory.in[lead + i] = input.size(d);
        memory.out[lead + i] = out.size(d);
        memory.before[lead + i] = pre_pad[d];
    }
    return true;
}

void fill(int16_t *destination, int64_t count, int16_t value) {
    for (int64_t i = 0; i < count; ++i) {
        destination[i] = value;
    }
}

bool inside(int64_t position, int64_t before, int64_t size) {
    return position >= before && position < before + size;
}

} // namespace

namespace et_zephyr::native {

Tensor &pad_s16_out(KernelRuntimeContext &context, const Tensor &input, ArrayRef<int64_t> pre_pad,
                    ArrayRef<int64_t> post_pad, int64_t value, Tensor &out) {
    Layout memory;
    if (input.scalar_type() != ScalarType::Short || out.scalar_type() != ScalarType::Short ||
        value < INT16_MIN || value > INT16_MAX || !layout(input, pre_pad, post_pad, out, memory)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto fill_value = static_cast<int16_t>(value);
    const int64_t *in = memory.in;
    const int64_t *before = memory.before;
    const int64_t row = memory.out[3];
    const int16_t *source = input.const_data_ptr<int16_t>();
    int16_t *destination = out.mutable_data_ptr<int16_t>();
    // One output row (the innermost dimension) at a time: the input's row between the
    // pads, or the value throughout where an outer position lies in the padding.
    for (int64_t a = 0; a < memory.out[0]; ++a) {
        for (int64_t b = 0; b < memory.out[1]; ++b) {
            for (int64_t c = 0; c < memory.out[2]; ++c, destination += row) {
                if (!inside(a, before[0], in[0]) || !inside(b, before[1], in[1]) ||
                    !inside(c, before[2], in[2])) {
                    fill(destination, row, fill_value);
                    continue;
                }
                fill(destination, before[3], fill_value);
                memcpy(destination + before[3], source,
                       static_cast<size_t>(in[3]) * sizeof(int16_t));
                fill(destination + before[3] + in[3], row - before[3] - in[3], fill_value);
                source += in[3];
            }
        }
    }
    return out;
}

} // namespace et_zephyr::native
