/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_conv2d.out for Helium (MVE), for pointwise (1x1, stride
 * 1, no padding, no dilation) convolutions: an int8 matrix product of the
 * input's pixels (rows of C_in) with the weights' output channels.
 *
 * CMSIS-NN (arm_convolve_1x1_s8_fast -> arm_nn_mat_mult_nt_t_s8) runs a
 * 16-lane multiply-accumulate loop over 4 pixels of one output channel, and
 * after every 4 outputs reloads and recomputes the channel's bias,
 * input-offset term and requantization shifts. Here each loaded input vector
 * serves two output channels (4 pixels x 2 channels: 8 sums in the 8 even
 * registers vmladava accumulates in), and the per-channel terms are set up
 * once per channel. The sums are exact int32 and the requantization is
 * CMSIS-NN's: outputs are bit-identical to the upstream kernel's. Other
 * convolutions go to the upstream kernel.
 */

#include <arm_mve.h>
#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "requantize_mve.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::is_channels_last;
using et_zephyr::native::make_requantization;
using et_zephyr::native::Requantization;
using et_zephyr::native::requantize;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

/* lib/src/kernels/pointwise_sums_mve.S */
extern "C" void et_zephyr_pointwise_sums_mve(const int8_t *rows, int32_t depth,
                                             const int8_t *pair_weights, int32_t blocks,
                                             int32_t *sums);

namespace cortex_m::native {
/* The upstream kernel (backends/cortex_m/ops/op_quantized_conv2d.cpp). */
Tensor &quantized_conv2d_out(KernelRuntimeContext &, const Tensor &, const Tensor &,
                             const std::optional<Tensor> &, ArrayRef<int64_t>, ArrayRef<int64_t>,
                             ArrayRef<int64_t>, int64_t, int64_t, const Tensor &, const Tensor &,
                             int64_t, int64_t, const Tensor &, Tensor &);
} // namespace cortex_m::native

namespace {

/* Pixels of a block: one vector of outputs per channel. */
constexpr int32_t kPixels = 4;
/* Input channels per multiply-accumulate: one vector of int8. */
constexpr int32_t kDepth = 16;
/* Output channels per vector in last_pixels. */
constexpr int32_t kLanes = 4;
/* Deepest input for two channels at a time: their weights are interleaved
 * on the stack. */
constexpr int32_t kMaxPairedDepth = 128;
/* Blocks of 4 pixels x 2 channels summed per call of the assembly loop. */
constexpr int32_t kSumBlocks = 8;

/* A pointwise convolution this kernel handles, or false (the upstream kernel runs). */
bool is_pointwise(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
                  ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                  const Tensor &multipliers, const Tensor &shifts, const Tensor &out) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || !all_equal(stride, 1) ||
        !all_equal(padding, 0) || !all_equal(dilation, 1)) {
        return false;
    }
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out)) {
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

/* The convolution's operands, for the helpers below. */
struct Pointwise {
    const int8_t *input;
    const int8_t *weights;
    const int32_t *bias;
    const int32_t *multipliers;
    const int32_t *shifts;
    int8_t *out;
    int32_t depth;
    int32_t channels;
    int32_t pixels;
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;
    /* Byte offsets of 4 pixels' outputs of one channel. */
    uint32x4_t out_stride;
};

/* Channel c's requantization: bias and input-offset term, once per channel. */
Requantization channel_requantization(const Pointwise &k, int32_t c) {
    const int8_t *weights = k.weights + c * k.depth;
    int32_t weight_sum = 0;
    for (int32_t d = 0; d < k.depth; d += kDepth) {
        weight_sum = vaddvaq_s8(weight_sum, vldrbq_s8(weights + d));
    }
    const int32_t base = k.input_offset * weight_sum + (k.bias != nullptr ? k.bias[c] : 0);
    return make_requantization(vdupq_n_s32(base), vdupq_n_s32(k.multipliers[c]),
                               vdupq_n_s32(k.shifts[c]), k.output_offset, k.activation_min,
                               k.activation_max);
}

/* Channel c's outputs, 4 pixels at a time. */
__attribute__((noinline)) void single_channel(const Pointwise &k, int32_t c,
                                              const Requantization &q) {
    const int8_t *weights = k.weights + c * k.depth;
    const int8_t *last_row = k.input + (k.pixels - 1) * k.depth;
    for (int32_t p = 0; p < k.pixels; p += kPixels) {
        /* Past the last pixel, rows repeat it, unstored. */
        const int8_t *row0 = k.input + p * k.depth;
        const int8_t *row1 = p + 1 < k.pixels ? row0 + k.depth : last_row;
        const int8_t *row2 = p + 2 < k.pixels ? row0 + 2 * k.depth : last_row;
        const int8_t *row3 = p + 3 < k.pixels ? row0 + 3 * k.depth : last_row;
        int32_t acc0 = 0;
        int32_t acc1 = 0;
        int32_t acc2 = 0;
        int32_t acc3 = 0;
        for (int32_t d = 0; d < k.depth; d += kDepth) {
            const int8x16_t w = vldrbq_s8(weights + d);
            acc0 = vmladavaq_s8(acc0, vldrbq_s8(row0 + d), w);
            acc1 = vmladavaq_s8(acc1, vldrbq_s8(row1 + d), w);
            acc2 = vmladavaq_s8(acc2, vldrbq_s8(row2 + d), w);
            acc3 = vmladavaq_s8(acc3, vldrbq_s8(row3 + d), w);
        }
        const int32x4_t sums = {acc0, acc1, acc2, acc3};
        vstrbq_scatter_offset_p_s32(k.out + p * k.channels + c, k.out_stride, requantize(sums, q),
                                    vctp32q(static_cast<uint32_t>(k.pixels - p)));
    }
}

/* Outputs of pixels from first on (fewer than a block), 4 channels per
 * vector, for the channels below end. */
__attribute__((noinline)) void last_pixels(const Pointwise &k, int32_t first, int32_t end) {
    for (int32_t p = first; p < k.pixels; p++) {
        const int8_t *row = k.input + p * k.depth;
        for (int32_t c = 0; c < end; c += kLanes) {
            const int32_t lanes = end - c < kLanes ? end - c : kLanes;
            int32_t sums[kLanes] = {0, 0, 0, 0};
            int32_t weight_sums[kLanes] = {0, 0, 0, 0};
            for (int32_t j = 0; j < lanes; j++) {
                const int8_t *weights = k.weights + (c + j) * k.depth;
                for (int32_t d = 0; d < k.depth; d += kDepth) {
                    const int8x16_t w = vldrbq_s8(weights + d);
                    sums[j] = vmladavaq_s8(sums[j], vldrbq_s8(row + d), w);
                    weight_sums[j] = vaddvaq_s8(weight_sums[j], w);
                }
            }
            const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(lanes));
            int32x4_t base = vmulq_n_s32(vldrwq_s32(weight_sums), k.input_offset);
            if (k.bias != nullptr) {
                base = vaddq_s32(base, vldrwq_z_s32(k.bias + c, valid));
            }
            const Requantization q = make_requantization(
                base, vldrwq_z_s32(k.multipliers + c, valid), vldrwq_z_s32(k.shifts + c, valid),
                k.output_offset, k.activation_min, k.activation_max);
            vstrbq_p_s32(k.out + p * k.channels + c, requantize(vldrwq_s32(sums), q), valid);
        }
    }
}

/* Outputs of channels c and c + 1 for whole blocks of 4 pixels, through the
 * assembly loop kSumBlocks blocks at a time. */
__attribute__((noinline)) void channel_pair(const Pointwise &k, int32_t c) {
    /* 16-byte slices of channel c's weights, each followed by channel c + 1's. */
    int8_t pair_weights[2 * kMaxPairedDepth];
    const int8_t *weights = k.weights + c * k.depth;
    for (int32_t d = 0; d < k.depth; d += kDepth) {
        vstrbq_s8(pair_weights + 2 * d, vldrbq_s8(weights + d));
        vstrbq_s8(pair_weights + 2 * d + kDepth, vldrbq_s8(weights + k.depth + d));
    }
    const Requantization q[2] = {channel_requantization(k, c), channel_requantization(k, c + 1)};
    const int32_t blocks = k.pixels / kPixels;
    int32_t sums[kSumBlocks][2][kPixels];
    for (int32_t first = 0; first < blocks; first += kSumBlocks) {
        const int32_t count = blocks - first < kSumBlocks ? blocks - first : kSumBlocks;
        et_zephyr_pointwise_sums_mve(k.input + first * kPixels * k.depth, k.depth, pair_weights,
                                     count, &sums[0][0][0]);
        /* One channel at a time, its requantization in registers (copies: the
         * int8 stores could alias anything else). */
        for (int32_t i = 0; i < 2; i++) {
            const Requantization channel_q = q[i];
            const uint32x4_t out_stride = k.out_stride;
            const int32_t block_bytes = kPixels * k.channels;
            int8_t *o = k.out + first * block_bytes + c + i;
#pragma GCC unroll 1
            for (int32_t b = 0; b < count; b++) {
                vstrbq_scatter_offset_s32(o, out_stride,
                                          requantize(vldrwq_s32(sums[b][i]), channel_q));
                o += block_bytes;
            }
        }
    }
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
    Pointwise k{};
    k.input = input.const_data_ptr<int8_t>();
    k.weights = weight.const_data_ptr<int8_t>();
    k.bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    k.multipliers = requantize_multipliers.const_data_ptr<int32_t>();
    k.shifts = requantize_shifts.const_data_ptr<int32_t>();
    k.out = out.mutable_data_ptr<int8_t>();
    k.depth = static_cast<int32_t>(input.size(1));
    k.channels = static_cast<int32_t>(out.size(1));
    k.pixels = static_cast<int32_t>(input.size(0) * input.size(2) * input.size(3));
    k.input_offset = static_cast<int32_t>(input_offset);
    k.output_offset = static_cast<int32_t>(output_offset);
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    k.out_stride = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(k.channels));

    int32_t c = 0;
    if (k.depth <= kMaxPairedDepth) {
        for (; c + 1 < k.channels; c += 2) {
            channel_pair(k, c);
        }
        last_pixels(k, k.pixels / kPixels * kPixels, c);
    }
    for (; c < k.channels; c++) {
        single_channel(k, c, channel_requantization(k, c));
    }
    return out;
}

} // namespace et_zephyr::native
