/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_conv2d.out for Helium (MVE), for pointwise (1x1, stride
 * 1, no padding, no dilation) convolutions: an int8 matrix product of the
 * input's pixels (rows of C_in) with the weights' output channels.
 *
 * CMSIS-NN (arm_convolve_1x1_s8_fast -> arm_nn_mat_mult_nt_t_s8) runs the same
 * 16-lane multiply-accumulate loop over 4 pixels of one output channel, but
 * after every 4 outputs it reloads and recomputes the channel's bias,
 * input-offset term and requantization shifts. Here those are set up once per
 * output channel, before the channel's pixels.
 * The sums are exact int32 and the requantization is CMSIS-NN's own
 * arm_requantize_mve_32x4: outputs are bit-identical to the upstream kernel's.
 * Other convolutions go to the upstream kernel.
 */

#include <arm_mve.h>
#include <stdint.h>

#include <arm_nnsupportfunctions.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/exec_aten/util/dim_order_util.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace cortex_m::native {
/* The upstream kernel (backends/cortex_m/ops/op_quantized_conv2d.cpp). */
Tensor &quantized_conv2d_out(KernelRuntimeContext &, const Tensor &, const Tensor &,
                             const std::optional<Tensor> &, ArrayRef<int64_t>, ArrayRef<int64_t>,
                             ArrayRef<int64_t>, int64_t, int64_t, const Tensor &, const Tensor &,
                             int64_t, int64_t, const Tensor &, Tensor &);
} // namespace cortex_m::native

namespace {

/* A block: 4 pixels of one output channel, one vector of outputs. (4 pixels x
 * 2 channels shares the input loads but spills its 8 accumulators.) */
constexpr int32_t kPixels = 4;
/* Input channels per multiply-accumulate: one vector of int8. */
constexpr int32_t kDepth = 16;

bool is_channels_last(const Tensor &t) {
    return executorch::runtime::is_channels_last_dim_order(t.dim_order().data(), t.dim());
}

bool all_equal(ArrayRef<int64_t> values, int64_t expected) {
    for (const int64_t value : values) {
        if (value != expected) {
            return false;
        }
    }
    return values.size() == 2;
}

/* A pointwise convolution this kernel handles, or false (the upstream kernel runs). */
bool is_pointwise(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
                  ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                  const Tensor &multipliers, const Tensor &shifts, const Tensor &out) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || !all_equal(stride, 1) ||
        !all_equal(padding, 0) || !all_equal(dilation, 1)) {
        return false;
    }
    if (input.scalar_type() != ScalarType::Char || weight.scalar_type() != ScalarType::Char ||
        out.scalar_type() != ScalarType::Char || multipliers.scalar_type() != ScalarType::Int ||
        shifts.scalar_type() != ScalarType::Int ||
        (bias.has_value() && bias->scalar_type() != ScalarType::Int)) {
        return false;
    }
    const int64_t depth = input.size(1);
    const int64_t channels = out.size(1);
    /* Weights are [C_out, 1, 1, C_in] (OHWI), contiguous. */
    return weight.size(0) == channels && weight.size(1) == 1 && weight.size(2) == 1 &&
           weight.size(3) == depth && depth % kDepth == 0 && input.size(0) == out.size(0) &&
           input.size(2) == out.size(2) && input.size(3) == out.size(3) &&
           multipliers.numel() == channels && shifts.numel() == channels &&
           (!bias.has_value() || bias->numel() == channels) && is_channels_last(input) &&
           is_channels_last(out);
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_conv2d_out(KernelRuntimeContext &context, const Tensor &input,
                             const Tensor &weight, const std::optional<Tensor> &bias,
                             ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                             ArrayRef<int64_t> dilation, int64_t input_offset,
                             int64_t output_offset, const Tensor &requantize_multipliers,
                             const Tensor &requantize_shifts, int64_t activation_min,
                             int64_t activation_max, const Tensor &scratch, Tensor &out) {
    if (!is_pointwise(input, weight, bias, stride, padding, dilation, requantize_multipliers,
                      requantize_shifts, out)) {
        return cortex_m::native::quantized_conv2d_out(context, input, weight, bias, stride, padding,
                                                      dilation, input_offset, output_offset,
                                                      requantize_multipliers, requantize_shifts,
                                                      activation_min, activation_max, scratch, out);
    }
    const auto depth = static_cast<int32_t>(input.size(1));
    const auto channels = static_cast<int32_t>(out.size(1));
    const auto pixels = static_cast<int32_t>(input.size(0) * input.size(2) * input.size(3));
    const int8_t *lhs = input.const_data_ptr<int8_t>();
    const int8_t *rhs = weight.const_data_ptr<int8_t>();
    const int32_t *bias_data = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    const int32_t *mult_data = requantize_multipliers.const_data_ptr<int32_t>();
    const int32_t *shift_data = requantize_shifts.const_data_ptr<int32_t>();
    int8_t *dst = out.mutable_data_ptr<int8_t>();
    const auto in_offset = static_cast<int32_t>(input_offset);
    const auto out_offset = static_cast<int32_t>(output_offset);
    const int32x4_t act_min = vdupq_n_s32(static_cast<int32_t>(activation_min));
    const int32x4_t act_max = vdupq_n_s32(static_cast<int32_t>(activation_max));
    /* Byte offsets of a block's 4 outputs (4 pixels of one channel). */
    const uint32x4_t out_stride = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(channels));

    for (int32_t c = 0; c < channels; c++) {
        const int8_t *weights = rhs + c * depth;
        /* bias + input_offset * sum(weights): the input offset's share, once per channel. */
        int32_t weight_sum = 0;
        for (int32_t k = 0; k < depth; k += kDepth) {
            weight_sum = vaddvaq_s8(weight_sum, vldrbq_s8(weights + k));
        }
        const int32x4_t base =
            vdupq_n_s32(in_offset * weight_sum + (bias_data != nullptr ? bias_data[c] : 0));
        const int32x4_t mult = vdupq_n_s32(mult_data[c]);
        const int32x4_t shift = vdupq_n_s32(shift_data[c]);
        const auto finish = [&](int32_t acc0, int32_t acc1, int32_t acc2, int32_t acc3) {
            const int32x4_t acc = {acc0, acc1, acc2, acc3};
            const int32x4_t r = arm_requantize_mve_32x4(vaddq_s32(acc, base), mult, shift);
            return vminq_s32(vmaxq_s32(vaddq_n_s32(r, out_offset), act_min), act_max);
        };
        const int8_t *row0 = lhs;
        int8_t *o = dst + c;
        int32_t p = 0;
        for (; p + kPixels <= pixels; p += kPixels) {
            const int8_t *row1 = row0 + depth;
            const int8_t *row2 = row1 + depth;
            const int8_t *row3 = row2 + depth;
            const int8_t *w = weights;
            int32_t acc0 = 0;
            int32_t acc1 = 0;
            int32_t acc2 = 0;
            int32_t acc3 = 0;
            for (int32_t k = 0; k < depth; k += kDepth) {
                const int8x16_t wv = vldrbq_s8(w);
                acc0 = vmladavaq_s8(acc0, vldrbq_s8(row0), wv);
                acc1 = vmladavaq_s8(acc1, vldrbq_s8(row1), wv);
                acc2 = vmladavaq_s8(acc2, vldrbq_s8(row2), wv);
                acc3 = vmladavaq_s8(acc3, vldrbq_s8(row3), wv);
                w += kDepth;
                row0 += kDepth;
                row1 += kDepth;
                row2 += kDepth;
                row3 += kDepth;
            }
            vstrbq_scatter_offset_s32(o, out_stride, finish(acc0, acc1, acc2, acc3));
            row0 = row3; /* the next block's first pixel */
            o += kPixels * channels;
        }
        if (p < pixels) {
            /* 1 to 3 pixels left: the missing rows repeat the last, unstored. */
            const int8_t *last = lhs + (pixels - 1) * depth;
            const int8_t *row1 = p + 1 < pixels ? row0 + depth : last;
            const int8_t *row2 = p + 2 < pixels ? row0 + 2 * depth : last;
            int32_t acc0 = 0;
            int32_t acc1 = 0;
            int32_t acc2 = 0;
            for (int32_t k = 0; k < depth; k += kDepth) {
                const int8x16_t wv = vldrbq_s8(weights + k);
                acc0 = vmladavaq_s8(acc0, vldrbq_s8(row0 + k), wv);
                acc1 = vmladavaq_s8(acc1, vldrbq_s8(row1 + k), wv);
                acc2 = vmladavaq_s8(acc2, vldrbq_s8(row2 + k), wv);
            }
            vstrbq_scatter_offset_p_s32(o, out_stride, finish(acc0, acc1, acc2, acc2),
                                        vctp32q(static_cast<uint32_t>(pixels - p)));
        }
    }
    return out;
}

} // namespace et_zephyr::native
