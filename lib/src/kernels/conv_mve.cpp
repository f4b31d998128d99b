/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_conv2d.out for Helium (MVE): the int8 matrix product of
 * pointwise_mve.cpp, whose rows are
 * - for pointwise convolutions (1x1, stride 1, no padding, input channels a
 *   multiple of 16), the input's pixels themselves, where CMSIS-NN runs
 *   arm_convolve_1x1_s8_fast -> arm_nn_mat_mult_nt_t_s8;
 * - for other convolutions (no dilation, batch 1), the pixels' patches
 *   gathered into the scratch buffer (conv_patches_mve.cpp), as many as it
 *   holds at a time, where CMSIS-NN's arm_convolve_s8 gathers 4 and runs
 *   arm_nn_mat_mult_nt_t_s8 on them. et-export sizes that scratch for this
 *   kernel (firmware/kernel_scratch.py, conv_mve_scratch_bytes: the same conditions).
 * Rows deeper than the stack's pair of channels (kPointwiseStackDepth) have
 * the two channels' interleaved weights at the scratch's start, where
 * et-export planned room for them; otherwise they go one channel at a time.
 * The sums are exact and the requantization CMSIS-NN's: bit-identical
 * outputs. Anything else, and a scratch too small for kMinChunkRows patches,
 * goes to the upstream kernel.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "conv_patches_mve.h"
#include "pointwise_mve.h"
#include "upstream_kernels.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::gather_patches;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::has_nhwc_bytes;
using et_zephyr::native::kPointwiseDepthStep;
using et_zephyr::native::Patches;
using et_zephyr::native::pointwise_channel_bases;
using et_zephyr::native::pointwise_product;
using et_zephyr::native::PointwiseProduct;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

/* Fewest patches per chunk worth the per-chunk setup of every output channel
 * (with fewer, the whole output if it is smaller). */
constexpr int32_t kMinChunkRows = 16;
/* Chunks other than the last are whole blocks of the product's 4 rows. */
constexpr int32_t kChunkMultiple = 4;

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
           weight.size(3) == depth && depth % kPointwiseDepthStep == 0 &&
           input.size(0) == out.size(0) && input.size(2) == out.size(2) &&
           input.size(3) == out.size(3) && multipliers.numel() == channels &&
           shifts.numel() == channels && (!bias.has_value() || bias->numel() == channels) &&
           has_nhwc_bytes(input) && has_nhwc_bytes(out);
}

/* A row of values rounded up to whole vectors. */
int64_t vector_bytes(int64_t values) {
    return (values + kPointwiseDepthStep - 1) / kPointwiseDepthStep * kPointwiseDepthStep;
}

/* Scratch for two channels' interleaved weights, where the stack has no room. */
int64_t pair_weight_bytes(int64_t row_stride) {
    return row_stride > et_zephyr::native::kPointwiseStackDepth ? 2 * row_stride : 0;
}

/* Patches per chunk that `bytes` of scratch hold, or 0. The divisions here
 * are 32-bit (gathers_patches bounds the sizes): a 64-bit one would link a
 * libgcc routine. */
int32_t chunk_rows(int64_t bytes, int32_t rows, int32_t row_stride) {
    const uint32_t usable = bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(bytes);
    const uint32_t fits = usable / static_cast<uint32_t>(row_stride);
    if (fits >= static_cast<uint32_t>(rows)) {
        return rows;
    }
    const int32_t chunk = static_cast<int32_t>(fits - fits % kChunkMultiple);
    return chunk >= kMinChunkRows ? chunk : 0;
}

/* Whether a convolution with a window is one this kernel gathers patches for
 * (the scratch decides how many at a time). */
bool gathers_patches(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                     ArrayRef<int64_t> dilation, const Tensor &multipliers, const Tensor &shifts,
                     const Tensor &out) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || !all_equal(dilation, 1) ||
        stride.size() != 2 || padding.size() != 2 || stride[0] < 1 || stride[1] < 1 ||
        padding[0] < 0 || padding[1] < 0) {
        return false;
    }
    /* KWS's first layer: one input channel, contiguous in the program. */
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out) || !has_nhwc_bytes(input) ||
        !has_nhwc_bytes(out)) {
        return false;
    }
    const int64_t channels = out.size(1);
    /* Weights are [C_out, kernel height, kernel width, C_in] (OHWI), contiguous. */
    if (input.size(0) != 1 || out.size(0) != 1 || weight.size(0) != channels ||
        weight.size(3) != input.size(1) || multipliers.numel() != channels ||
        shifts.numel() != channels || (bias.has_value() && bias->numel() != channels)) {
        return false;
    }
    /* The padded input's span past one window, and the stride, in 32 bits
     * for the division. */
    const int64_t span_y = input.size(2) + 2 * padding[0] - weight.size(1);
    const int64_t span_x = input.size(3) + 2 * padding[1] - weight.size(2);
    if (span_y < 0 || span_x < 0 || span_y > INT32_MAX || span_x > INT32_MAX ||
        stride[0] > INT32_MAX || stride[1] > INT32_MAX ||
        out.size(2) != static_cast<int32_t>(span_y) / static_cast<int32_t>(stride[0]) + 1 ||
        out.size(3) != static_cast<int32_t>(span_x) / static_cast<int32_t>(stride[1]) + 1) {
        return false;
    }
    /* All patches' bytes fit 32 bits. */
    const int64_t row_stride = vector_bytes(weight.size(1) * weight.size(2) * weight.size(3));
    const int64_t rows = out.size(2) * out.size(3);
    return rows >= 1 && row_stride <= INT32_MAX && rows <= INT32_MAX &&
           rows * row_stride <= INT32_MAX;
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
    /* The operands both paths share, read once a path's checks have passed. */
    const auto product = [&]() {
        PointwiseProduct k;
        k.weights = weight.const_data_ptr<int8_t>();
        k.bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
        k.multipliers = requantize_multipliers.const_data_ptr<int32_t>();
        k.shifts = requantize_shifts.const_data_ptr<int32_t>();
        k.per_tensor = false;
        k.channels = static_cast<int32_t>(out.size(1));
        k.input_offset = static_cast<int32_t>(input_offset);
        k.output_offset = static_cast<int32_t>(output_offset);
        k.activation_min = static_cast<int32_t>(activation_min);
        k.activation_max = static_cast<int32_t>(activation_max);
        k.channel_bases = nullptr;
        return k;
    };
    if (is_pointwise(input, weight, bias, stride, padding, dilation, requantize_multipliers,
                     requantize_shifts, out)) {
        PointwiseProduct k = product();
        k.input = input.const_data_ptr<int8_t>();
        k.out = out.mutable_data_ptr<int8_t>();
        k.depth = static_cast<int32_t>(input.size(1));
        k.row_stride = k.depth;
        k.rows = static_cast<int32_t>(input.size(0) * input.size(2) * input.size(3));
        const int64_t pair_bytes = pair_weight_bytes(k.row_stride);
        k.pair_weights = pair_bytes > 0 && static_cast<int64_t>(scratch.nbytes()) >= pair_bytes
                             ? scratch.mutable_data_ptr<int8_t>()
                             : nullptr;
        pointwise_product(k);
        return out;
    }
    const auto upstream = [&]() -> Tensor & {
        if constexpr (!kUpstreamFallback) {
            fail_without_fallback(context, "conv_mve");
            return out;
        }
        return cortex_m::native::quantized_conv2d_out(context, input, weight, bias, stride, padding,
                                                      dilation, input_offset, output_offset,
                                                      requantize_multipliers, requantize_shifts,
                                                      activation_min, activation_max, scratch, out);
    };
    if (!gathers_patches(input, weight, bias, stride, padding, dilation, requantize_multipliers,
                         requantize_shifts, out)) {
        return upstream();
    }
    const auto row_stride =
        static_cast<int32_t>(vector_bytes(weight.size(1) * weight.size(2) * weight.size(3)));
    const int32_t pixels = static_cast<int32_t>(out.size(2) * out.size(3));
    /* The scratch: where the patches come in chunks, each channel's base;
     * two channels' interleaved weights (deep patches); a chunk's patches.
     * The layouts et-export may have planned (firmware/kernel_scratch.py), in its
     * order: all patches at once, then chunks, then either without the
     * weights (one channel at a time). */
    const int64_t scratch_bytes = static_cast<int64_t>(scratch.nbytes());
    PointwiseProduct k = product();
    const int64_t bases_bytes = static_cast<int64_t>(sizeof(int32_t)) * k.channels;
    int64_t pair_bytes = pair_weight_bytes(row_stride);
    int64_t lead_bytes = pair_bytes;
    int32_t chunk = scratch_bytes >= lead_bytes
                        ? chunk_rows(scratch_bytes - lead_bytes, pixels, row_stride)
                        : 0;
    if (chunk != pixels) {
        lead_bytes = bases_bytes + pair_bytes;
        chunk = scratch_bytes >= lead_bytes
                    ? chunk_rows(scratch_bytes - lead_bytes, pixels, row_stride)
                    : 0;
    }
    if (chunk == 0) {
        pair_bytes = 0;
        lead_bytes = 0;
        chunk = chunk_rows(scratch_bytes, pixels, row_stride);
    }
    if (chunk == 0) {
        return upstream();
    }
    Patches patches;
    patches.input = input.const_data_ptr<int8_t>();
    patches.in_height = static_cast<int32_t>(input.size(2));
    patches.in_width = static_cast<int32_t>(input.size(3));
    patches.in_channels = static_cast<int32_t>(input.size(1));
    patches.kernel_height = static_cast<int32_t>(weight.size(1));
    patches.kernel_width = static_cast<int32_t>(weight.size(2));
    patches.stride_y = static_cast<int32_t>(stride[0]);
    patches.stride_x = static_cast<int32_t>(stride[1]);
    patches.pad_y = static_cast<int32_t>(padding[0]);
    patches.pad_x = static_cast<int32_t>(padding[1]);
    patches.out_width = static_cast<int32_t>(out.size(3));
    patches.pad_value = static_cast<int8_t>(-input_offset);
    k.depth = patches.kernel_height * patches.kernel_width * patches.in_channels;
    k.row_stride = row_stride;
    patches.row_stride = k.row_stride;
    int8_t *const buffer = scratch.mutable_data_ptr<int8_t>();
    if (lead_bytes > pair_bytes) {
        /* Word-aligned: the planner aligns every tensor. */
        int32_t *const bases = reinterpret_cast<int32_t *>(buffer);
        pointwise_channel_bases(k, bases);
        k.channel_bases = bases;
    }
    k.pair_weights = pair_bytes > 0 ? buffer + (lead_bytes - pair_bytes) : nullptr;
    int8_t *const rows = buffer + lead_bytes;
    k.input = rows;
    for (int32_t first = 0; first < pixels; first += chunk) {
        k.rows = pixels - first < chunk ? pixels - first : chunk;
        gather_patches(patches, first, k.rows, rows);
        k.out = out.mutable_data_ptr<int8_t>() + first * k.channels;
        pointwise_product(k);
    }
    return out;
}

} // namespace et_zephyr::native
