/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::resize_bilinear.out: F.interpolate(mode="bilinear") of an int8 image in
 * its own dim order (channels-last, or any). PyTorch's source positions come from
 * et-export as taps per output row and column (`rows`, `columns`: int32 [size, 3], two
 * input indices and the second's weight in Q10); each output is the four products in
 * Q20, rounded half up. The weights of a pixel sum to 1 << 20, so the zero point
 * carries through and input and output share their quantization. ExecuTorch's portable
 * kernel computes in float and truncates toward zero, and GCC may fuse its products
 * into FMAs on one core and not another: not the same bytes as a host. Host reference:
 * scripts/et_zephyr/reference/resize.py.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "dim_order_blocks.h"

using executorch::runtime::Error;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

constexpr int32_t kFractionBits = 10;
constexpr int32_t kOne = 1 << kFractionBits;
constexpr int kRank = 4;

/* Element strides of a tensor from its dim order. */
void strides_of(const Tensor &tensor, int64_t *strides) {
    int64_t step = 1;
    for (int i = kRank - 1; i >= 0; --i) {
        const int d = tensor.dim_order()[i];
        strides[d] = step;
        step *= tensor.size(d);
    }
}

bool valid_taps(const Tensor &taps, int64_t output_size, int64_t input_size) {
    if (taps.scalar_type() != ScalarType::Int || taps.dim() != 2 || taps.size(0) != output_size ||
        taps.size(1) != 3) {
        return false;
    }
    const int32_t *tap = taps.const_data_ptr<int32_t>();
    for (int64_t i = 0; i < output_size; ++i, tap += 3) {
        if (tap[0] < 0 || tap[0] >= input_size || tap[1] < 0 || tap[1] >= input_size ||
            tap[2] < 0 || tap[2] > kOne) {
            return false;
        }
    }
    return true;
}

bool valid(const Tensor &input, const Tensor &rows, const Tensor &columns, const Tensor &out) {
    if (input.scalar_type() != ScalarType::Char || out.scalar_type() != ScalarType::Char ||
        input.dim() != kRank || out.dim() != kRank || input.size(0) != out.size(0) ||
        input.size(1) != out.size(1) || !et_zephyr::native::same_layout(input, out)) {
        return false;
    }
    return valid_taps(rows, out.size(2), input.size(2)) &&
           valid_taps(columns, out.size(3), input.size(3));
}

} // namespace

namespace et_zephyr::native {

Tensor &resize_bilinear_out(KernelRuntimeContext &context, const Tensor &input, const Tensor &rows,
                            const Tensor &columns, Tensor &out) {
    if (!valid(input, rows, columns, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    int64_t in_stride[kRank];
    int64_t out_stride[kRank];
    strides_of(input, in_stride);
    strides_of(out, out_stride);
    const int8_t *source = input.const_data_ptr<int8_t>();
    int8_t *destination = out.mutable_data_ptr<int8_t>();
    const int32_t *row = rows.const_data_ptr<int32_t>();
    const int32_t *column = columns.const_data_ptr<int32_t>();
    for (int64_t n = 0; n < out.size(0); ++n) {
        for (int64_t h = 0; h < out.size(2); ++h) {
            const int32_t *r = row + 3 * h;
            const int32_t wy = r[2];
            for (int64_t w = 0; w < out.size(3); ++w) {
                const int32_t *c = column + 3 * w;
                const int32_t wx = c[2];
                const int32_t top_left = (kOne - wy) * (kOne - wx);
                const int32_t top_right = (kOne - wy) * wx;
                const int32_t bottom_left = wy * (kOne - wx);
                const int32_t bottom_right = wy * wx;
                const int8_t *base = source + n * in_stride[0];
                const int64_t r0 = r[0] * in_stride[2], r1 = r[1] * in_stride[2];
                const int64_t c0 = c[0] * in_stride[3], c1 = c[1] * in_stride[3];
                int8_t *target =
                    destination + n * out_stride[0] + h * out_stride[2] + w * out_stride[3];
                for (int64_t k = 0; k < out.size(1); ++k) {
                    const int8_t *channel = base + k * in_stride[1];
                    const int32_t sum = channel[r0 + c0] * top_left + channel[r0 + c1] * top_right +
                                        channel[r1 + c0] * bottom_left +
                                        channel[r1 + c1] * bottom_right +
                                        (1 << (2 * kFractionBits - 1));
                    int32_t value = sum >> (2 * kFractionBits);
                    value = value < INT8_MIN ? INT8_MIN : (value > INT8_MAX ? INT8_MAX : value);
                    target[k * out_stride[1]] = static_cast<int8_t>(value);
                }
            }
        }
    }
    return out;
}

} // namespace et_zephyr::native
