/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_conv2d.out for the DSP extension (Cortex-M4, M7, M33),
 * for convolutions without dilation: pointwise layers, first layers such as
 * KWS's 10x4 window on one channel or an image's 3x3 window on 3, ResNet's
 * 3x3 layers. A patch (kernel height x width x input channels) that is not a
 * multiple of 4 values is padded with zeros to one.
 *
 * CMSIS-NN (arm_nn_mat_mult_nt_t_s8, arm_nn_mat_mult_kernel_s8_s16) computes
 * 2 pixels x 2 channels at a time and sign-extends every input word again for
 * each pair of channels; its requantization takes about 20 instructions an
 * output. Here the patches of 4 pixels are sign-extended once, with the input
 * offset added, into a buffer: on the stack for patches of up to 64 values
 * (512 bytes), in the temp arena for deeper ones (8 bytes a value, more where
 * a window is gathered or padded: patch_buffer_bytes; et-export sizes the
 * arena for it, and with less the upstream kernel runs). Every channel's
 * weights then run over them in the assembly loop of conv_sums_dsp.S (13
 * instructions for 16 multiply-accumulates), and the sums are requantized in
 * 5 instructions (requantize_fast.h). The sums are the exact integer sums and
 * the requantization is CMSIS-NN's: outputs are bit-identical to the upstream
 * kernel's. Other convolutions, and channels whose requantization the short
 * form does not cover exactly, go to the upstream kernel.
 */

#include <stdint.h>
#include <string.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "input_pairs_dsp.h"
#include "requantize_fast.h"
#include "upstream_kernels.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::channel_is_exact;
using et_zephyr::native::channel_requantization;
using et_zephyr::native::ChannelRequantization;
using et_zephyr::native::extend_input_pairs;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::has_int8_zero_point;
using et_zephyr::native::has_nhwc_bytes;
using et_zephyr::native::kLargestProduct;
using et_zephyr::native::offset_pair;
using et_zephyr::native::requantize_output;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

/* lib/src/kernels/conv_sums_dsp.S */
extern "C" void et_zephyr_conv_sums_dsp(const int32_t *patch, const int8_t *weights, int32_t steps,
                                        int32_t channels, int32_t *sums, int32_t rewind);

namespace {

/* Pixels whose patches the assembly loop takes at once. */
constexpr int32_t kPixels = 4;
/* Depth values a step of the assembly loop takes. */
constexpr int32_t kStep = 4;
/* The deepest patch on the stack: 4 pixels' sign-extended patches are 512
 * bytes. Deeper ones are borrowed from the temp arena (patch_buffer_bytes). */
constexpr int32_t kStackDepth = 64;
/* Channels summed per call of the assembly loop (their sums: 256 bytes of stack). */
constexpr int32_t kChannelChunk = 16;

struct Conv {
    const int8_t *input;
    const int8_t *weights;
    const int32_t *bias;
    const int32_t *multipliers;
    const int32_t *shifts;
    int8_t *out;
    int32_t in_height;
    int32_t in_width;
    int32_t in_channels;
    int32_t kernel_height;
    int32_t kernel_width;
    int32_t stride_y;
    int32_t stride_x;
    int32_t pad_y;
    int32_t pad_x;
    int32_t out_width;
    int32_t pixels;
    int32_t channels;
    int32_t depth;
    int32_t steps; /* depth / 4, rounded up: the patches' padded depth */
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;

    bool is_pointwise() const {
        return kernel_height == 1 && kernel_width == 1 && pad_y == 0 && pad_x == 0;
    }
    int32_t padded_depth() const { return steps * kStep; }
    /* Patches read from the input (pointwise), extended tap by tap (input
     * channels a multiple of 4), or gathered first. */
    bool gathers() const {
        return depth % kStep != 0 || (!is_pointwise() && in_channels % kStep != 0);
    }
};

/* The convolution this kernel handles, or false (then the upstream kernel runs). */
bool handled(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
             ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
             const Tensor &multipliers, const Tensor &shifts, const Tensor &out, Conv *k) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || input.size(0) != 1 ||
        out.size(0) != 1 || !all_equal(dilation, 1) || stride.size() != 2 || padding.size() != 2 ||
        stride[0] < 1 || stride[1] < 1 || padding[0] < 0 || padding[1] < 0) {
        return false;
    }
    /* KWS's first layer: one input channel, contiguous in the program. */
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out) || !has_nhwc_bytes(input) ||
        !has_nhwc_bytes(out)) {
        return false;
    }
    const int64_t channels = out.size(1);
    /* Weights are [C_out, H, W, C_in] (OHWI), contiguous. */
    const int64_t depth = weight.size(1) * weight.size(2) * weight.size(3);
    if (weight.size(0) != channels || weight.size(3) != input.size(1) ||
        multipliers.numel() != channels || shifts.numel() != channels ||
        (bias.has_value() && bias->numel() != channels)) {
        return false;
    }
    k->in_channels = static_cast<int32_t>(input.size(1));
    k->in_height = static_cast<int32_t>(input.size(2));
    k->in_width = static_cast<int32_t>(input.size(3));
    k->kernel_height = static_cast<int32_t>(weight.size(1));
    k->kernel_width = static_cast<int32_t>(weight.size(2));
    k->stride_y = static_cast<int32_t>(stride[0]);
    k->stride_x = static_cast<int32_t>(stride[1]);
    k->pad_y = static_cast<int32_t>(padding[0]);
    k->pad_x = static_cast<int32_t>(padding[1]);
    const int32_t out_height = static_cast<int32_t>(out.size(2));
    k->out_width = static_cast<int32_t>(out.size(3));
    if (out_height < 1 || k->out_width < 1 ||
        out_height != (k->in_height + 2 * k->pad_y - k->kernel_height) / k->stride_y + 1 ||
        k->out_width != (k->in_width + 2 * k->pad_x - k->kernel_width) / k->stride_x + 1) {
        return false;
    }
    k->pixels = out_height * k->out_width;
    k->channels = static_cast<int32_t>(channels);
    k->depth = static_cast<int32_t>(depth);
    k->steps = (k->depth + kStep - 1) / kStep;
    k->input = input.const_data_ptr<int8_t>();
    k->weights = weight.const_data_ptr<int8_t>();
    k->bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    k->multipliers = multipliers.const_data_ptr<int32_t>();
    k->shifts = shifts.const_data_ptr<int32_t>();
    k->out = out.mutable_data_ptr<int8_t>();
    for (int32_t c = 0; c < k->channels; c++) {
        if (!channel_is_exact(k->multipliers[c], k->shifts[c], k->bias != nullptr ? k->bias[c] : 0,
                              k->depth * kLargestProduct)) {
            return false;
        }
    }
    return true;
}

/* count input values (a multiple of 4) sign-extended with the input offset
 * added, into one pixel's words of the assembly loop's steps from dst on
 * (2 words a step, 2 * kPixels words apart); where the next step's start. */
int32_t *extend_values(const int8_t *src, int32_t count, uint32_t offset, int32_t *dst) {
    return extend_input_pairs(src, count / kStep, offset, dst, 2 * kPixels);
}

/* One pixel's window, kernel row by kernel row, from the input at (y0, x0),
 * its padding filled with the zero point, into gathered. The layer's sizes
 * are copies: the int8 stores could alias k. */
void gather_window(const Conv &k, int32_t y0, int32_t x0, int8_t *gathered) {
    const int8_t zero_point = static_cast<int8_t>(-k.input_offset);
    const int32_t in_height = k.in_height;
    const int32_t in_width = k.in_width;
    const int32_t in_channels = k.in_channels;
    const int32_t kernel_height = k.kernel_height;
    const int32_t kernel_width = k.kernel_width;
    const int32_t row_bytes = kernel_width * in_channels;
    const int8_t *input = k.input;
    int8_t *gather = gathered;
    for (int32_t ky = 0; ky < kernel_height; ky++, gather += row_bytes) {
        const int32_t iy = y0 + ky;
        if (iy < 0 || iy >= in_height) {
            memset(gather, zero_point, row_bytes);
            continue;
        }
        const int8_t *row = input + iy * in_width * in_channels;
        if (x0 >= 0 && x0 + kernel_width <= in_width) {
            memcpy(gather, row + x0 * in_channels, row_bytes);
            continue;
        }
        for (int32_t kx = 0; kx < kernel_width; kx++) {
            const int32_t ix = x0 + kx;
            const bool inside = ix >= 0 && ix < in_width;
            for (int32_t c = 0; c < in_channels; c++) {
                gather[kx * in_channels + c] = inside ? row[ix * in_channels + c] : zero_point;
            }
        }
    }
}

/* Pixel p's patch, sign-extended into its words of the patches from dst on.
 * Pointwise layers read it from the input; windows whose taps are whole steps
 * (input channels a multiple of 4) tap by tap, padding taps as zeros (the
 * zero point plus the input offset); others are gathered first, the padding
 * and the values past the depth up to a whole step filled with the zero point
 * (so they extend to 0). */
void fill_patch(const Conv &k, int32_t p, uint32_t offset, int32_t *dst, int8_t *gathered) {
    const int32_t oy = p / k.out_width;
    const int32_t ox = p - oy * k.out_width;
    const int32_t y0 = oy * k.stride_y - k.pad_y;
    const int32_t x0 = ox * k.stride_x - k.pad_x;
    if (k.gathers()) {
        gather_window(k, y0, x0, gathered);
        memset(gathered + k.depth, static_cast<int8_t>(-k.input_offset),
               k.padded_depth() - k.depth);
        extend_values(gathered, k.padded_depth(), offset, dst);
        return;
    }
    if (k.is_pointwise()) {
        extend_values(k.input + (y0 * k.in_width + x0) * k.in_channels, k.depth, offset, dst);
        return;
    }
    for (int32_t ky = 0; ky < k.kernel_height; ky++) {
        const int32_t iy = y0 + ky;
        for (int32_t kx = 0; kx < k.kernel_width; kx++) {
            const int32_t ix = x0 + kx;
            if (iy >= 0 && iy < k.in_height && ix >= 0 && ix < k.in_width) {
                dst = extend_values(k.input + (iy * k.in_width + ix) * k.in_channels, k.in_channels,
                                    offset, dst);
                continue;
            }
            for (int32_t c = 0; c < k.in_channels; c += kStep, dst += 2 * kPixels) {
                dst[0] = 0;
                dst[1] = 0;
            }
        }
    }
}

/* The patches of pixels first .. first + 3 (the last pixel repeated past the
 * end), sign-extended with the input offset added, in the assembly loop's
 * order: per step, per pixel, {x0, x2} and {x1, x3}. */
void fill_patches(const Conv &k, int32_t first, int32_t *patches, int8_t *gathered) {
    const uint32_t offset = offset_pair(k.input_offset);
    for (int32_t i = 0; i < kPixels; i++) {
        const int32_t p = first + i < k.pixels ? first + i : k.pixels - 1;
        fill_patch(k, p, offset, patches + 2 * i, gathered);
    }
}

/* Outputs of pixels first .. first + count - 1 for channels c0 .. c0 + n - 1
 * from their sums. */
template <bool kClamp>
void store_outputs(const Conv &k, int32_t first, int32_t count, int32_t c0, int32_t n,
                   const int32_t (*sums)[kPixels]) {
    /* Copies: the int8 stores could alias k. */
    const int32_t stride = k.channels;
    const int32_t output_offset = k.output_offset;
    const int32_t activation_min = k.activation_min;
    const int32_t activation_max = k.activation_max;
    const int32_t *const multipliers = k.multipliers + c0;
    const int32_t *const shifts = k.shifts + c0;
    const int32_t *const biases = k.bias != nullptr ? k.bias + c0 : nullptr;
    int8_t *o = k.out + first * stride + c0;
    for (int32_t i = 0; i < n; i++, o++) {
        const ChannelRequantization q =
            channel_requantization(multipliers[i], shifts[i], output_offset);
        const int32_t bias = biases != nullptr ? biases[i] : 0;
        const int32_t *sum = sums[i];
        if (count == kPixels) {
            o[0] = requantize_output<kClamp>(sum[0] + bias, q, activation_min, activation_max);
            o[stride] = requantize_output<kClamp>(sum[1] + bias, q, activation_min, activation_max);
            o[2 * stride] =
                requantize_output<kClamp>(sum[2] + bias, q, activation_min, activation_max);
            o[3 * stride] =
                requantize_output<kClamp>(sum[3] + bias, q, activation_min, activation_max);
            continue;
        }
        for (int32_t p = 0; p < count; p++) {
            o[p * stride] =
                requantize_output<kClamp>(sum[p] + bias, q, activation_min, activation_max);
        }
    }
}

/* Buffers a call takes: the patches, a window to gather one in, and the last
 * channel's weights padded with zeros to whole steps (where the depth is not
 * a multiple of 4, so the assembly loop reads no byte past the weights). */
struct Buffers {
    int32_t *patches;
    int8_t *gathered;
    int8_t *last_weights;
};

template <bool kClamp> void convolve(const Conv &k, const Buffers &b) {
    int32_t sums[kChannelChunk][kPixels];
    const int32_t rewind = k.padded_depth() - k.depth;
    for (int32_t first = 0; first < k.pixels; first += kPixels) {
        const int32_t count = k.pixels - first < kPixels ? k.pixels - first : kPixels;
        fill_patches(k, first, b.patches, b.gathered);
        for (int32_t c0 = 0; c0 < k.channels; c0 += kChannelChunk) {
            const int32_t n = k.channels - c0 < kChannelChunk ? k.channels - c0 : kChannelChunk;
            const bool last_padded = rewind != 0 && c0 + n == k.channels;
            const int32_t direct = last_padded ? n - 1 : n;
            if (direct > 0) {
                et_zephyr_conv_sums_dsp(b.patches, k.weights + c0 * k.depth, k.steps, direct,
                                        &sums[0][0], rewind);
            }
            if (last_padded) {
                et_zephyr_conv_sums_dsp(b.patches, b.last_weights, k.steps, 1, &sums[n - 1][0], 0);
            }
            store_outputs<kClamp>(k, first, count, c0, n, sums);
        }
    }
}

/* The temp bytes a patch deeper than kStackDepth takes: 4 pixels' patches
 * sign-extended (8 bytes a value), one pixel's gathered (a byte a value)
 * where fill_patch gathers, and the last channel's padded weights where the
 * depth is not a multiple of 4. et-export's firmware/kernel_temp.py sizes the
 * temp arena for this. */
size_t patch_buffer_bytes(const Conv &k) {
    const size_t padded = static_cast<size_t>(k.padded_depth());
    return kPixels * 2 * padded + (k.gathers() ? padded : 0) + (k.depth % kStep != 0 ? padded : 0);
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
    auto upstream = [&]() -> Tensor & {
        return cortex_m::native::quantized_conv2d_out(context, input, weight, bias, stride, padding,
                                                      dilation, input_offset, output_offset,
                                                      requantize_multipliers, requantize_shifts,
                                                      activation_min, activation_max, scratch, out);
    };
    Conv k{};
    if (!has_int8_zero_point(input_offset) ||
        !handled(input, weight, bias, stride, padding, dilation, requantize_multipliers,
                 requantize_shifts, out, &k)) {
        return upstream();
    }
    alignas(8) int32_t stack_patches[kStackDepth / kStep * kPixels * 2];
    int8_t stack_gathered[kStackDepth];
    int8_t stack_last_weights[kStackDepth];
    Buffers b{stack_patches, stack_gathered, stack_last_weights};
    if (k.padded_depth() > kStackDepth) {
        auto buffer = context.allocate_temp(patch_buffer_bytes(k), alignof(int64_t));
        if (!buffer.ok()) {
            return upstream();
        }
        b.patches = static_cast<int32_t *>(buffer.get());
        b.gathered = reinterpret_cast<int8_t *>(b.patches + kPixels * 2 * k.steps);
        b.last_weights = b.gathered + (k.gathers() ? k.padded_depth() : 0);
    }
    if (k.depth % kStep != 0) {
        memcpy(b.last_weights, k.weights + (k.channels - 1) * k.depth, k.depth);
        memset(b.last_weights + k.depth, 0, k.padded_depth() - k.depth);
    }
    k.input_offset = static_cast<int32_t>(input_offset);
    k.output_offset = static_cast<int32_t>(output_offset);
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    if (k.activation_min <= INT8_MIN && k.activation_max >= INT8_MAX) {
        convolve<false>(k, b);
    } else {
        convolve<true>(k, b);
    }
    return out;
}

} // namespace et_zephyr::native
