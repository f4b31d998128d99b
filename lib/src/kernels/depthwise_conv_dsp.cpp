/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_depthwise_conv2d.out for the DSP extension (Cortex-M4,
 * M7, M33), for 3x3 depthwise convolutions: stride 1, no dilation, depth
 * multiplier 1, padding 0 or 1, output rows up to 48 pixels wide.
 *
 * CMSIS-NN's arm_depthwise_conv_3x3_s8 takes 4 channels of one output at a
 * time: every tap is a load, two sign extensions and one 16-bit multiply per
 * channel, and every output is requantized in about 20 instructions. Here,
 * one channel at a time:
 * - the channel's input, with the input offset added, is laid out as int16
 *   rows (a plane, in strips of output rows when it is larger than 512
 *   bytes), padded with zeros, so that a word holds two horizontal
 *   neighbours;
 * - two horizontally adjacent outputs are computed together, in the assembly
 *   loop of depthwise_sums_dsp.S: per kernel row, one doubleword load and
 *   four multiplies (two of them SMLADs of two taps);
 * - the sums are requantized in 5 instructions (requantize_fast.h).
 * The sums are exact and the requantization is CMSIS-NN's: outputs are
 * bit-identical to the upstream kernel's. Other shapes, and channels whose
 * requantization the short form does not cover exactly, go to the upstream
 * kernel.
 */

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "requantize_fast.h"
#include "upstream_kernels.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::channel_is_exact;
using et_zephyr::native::channel_requantization;
using et_zephyr::native::ChannelRequantization;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::has_int8_zero_point;
using et_zephyr::native::has_nhwc_bytes;
using et_zephyr::native::requantize;
using et_zephyr::native::requantize_clamped;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

/* lib/src/kernels/depthwise_sums_dsp.S */
extern "C" void et_zephyr_depthwise_sums_dsp(const int16_t *row, int32_t row_bytes,
                                             const int32_t *taps, int32_t pairs, int32_t *sums);

namespace {

/* The plane buffer on the stack, in int16 values (512 bytes). */
constexpr int32_t kPlaneValues = 256;
/* The widest output row (its sums: 196 bytes of stack). */
constexpr int32_t kMaxWidth = 48;
/* The largest |x + input_offset| * |weight|, times 9 taps. */
constexpr int32_t kLargestSum = 9 * 255 * 128;

struct Depthwise {
    const int8_t *input;
    const int8_t *weights;
    const int32_t *bias;
    const int32_t *multipliers;
    const int32_t *shifts;
    int8_t *out;
    int32_t channels;
    int32_t in_height;
    int32_t in_width;
    int32_t out_height;
    int32_t out_width;
    int32_t pad_y;
    int32_t pad_x;
    int32_t input_offset;
    int32_t output_offset;
    int32_t activation_min;
    int32_t activation_max;

    /* int16 values a plane row holds: the padded input row and, for the
     * doubleword loads of the last pair of outputs, zeros up to an even
     * count of at least out_width + 3. */
    int32_t row_values() const { return (out_width + 4) & ~1; }
    /* Output rows a strip of the plane buffer holds (each needs 2 more input
     * rows). */
    int32_t strip_rows() const { return kPlaneValues / row_values() - 2; }
};

bool handled(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
             ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
             int64_t depth_multiplier, const Tensor &multipliers, const Tensor &shifts,
             const Tensor &out, Depthwise *k) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || input.size(0) != 1 ||
        depth_multiplier != 1 || !all_equal(stride, 1) || !all_equal(dilation, 1) ||
        padding.size() != 2 || padding[0] < 0 || padding[0] > 1 || padding[1] < 0 ||
        padding[1] > 1) {
        return false;
    }
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out) || !has_nhwc_bytes(input) ||
        !has_nhwc_bytes(out)) {
        return false;
    }
    const int64_t channels = input.size(1);
    /* Weights are [1, 3, 3, C] (IHWO), contiguous. */
    if (weight.size(0) != 1 || weight.size(1) != 3 || weight.size(2) != 3 ||
        weight.size(3) != channels || out.size(1) != channels || multipliers.numel() != channels ||
        shifts.numel() != channels || (bias.has_value() && bias->numel() != channels)) {
        return false;
    }
    k->channels = static_cast<int32_t>(channels);
    k->in_height = static_cast<int32_t>(input.size(2));
    k->in_width = static_cast<int32_t>(input.size(3));
    k->pad_y = static_cast<int32_t>(padding[0]);
    k->pad_x = static_cast<int32_t>(padding[1]);
    k->out_height = static_cast<int32_t>(out.size(2));
    k->out_width = static_cast<int32_t>(out.size(3));
    if (k->out_height != k->in_height + 2 * k->pad_y - 2 ||
        k->out_width != k->in_width + 2 * k->pad_x - 2 || k->out_height < 1 || k->out_width < 1 ||
        k->out_width > kMaxWidth || k->strip_rows() < 1) {
        return false;
    }
    k->input = input.const_data_ptr<int8_t>();
    k->weights = weight.const_data_ptr<int8_t>();
    k->bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    k->multipliers = multipliers.const_data_ptr<int32_t>();
    k->shifts = shifts.const_data_ptr<int32_t>();
    k->out = out.mutable_data_ptr<int8_t>();
    for (int32_t c = 0; c < k->channels; c++) {
        if (!channel_is_exact(k->multipliers[c], k->shifts[c], k->bias != nullptr ? k->bias[c] : 0,
                              kLargestSum)) {
            return false;
        }
    }
    return true;
}

/* Channel c's plane rows for padded input rows first .. first + rows - 1:
 * x + input_offset as int16. The padding is the same for every channel:
 * zeroed once by convolve() and never written here, except that with several
 * strips a plane row holds input in one and padding in another: such rows
 * are zeroed again. */
void fill_plane(const Depthwise &k, int32_t c, int32_t first, int32_t rows, int16_t *plane) {
    /* Copies: the stores could alias k. */
    const int32_t row_values = k.row_values();
    const int32_t stride = k.channels;
    const uint32_t offset_pair = (static_cast<uint32_t>(k.input_offset) & 0xFFFFU) * 0x10001U;
    const int32_t in_width = k.in_width;
    for (int32_t r = 0; r < rows; r++) {
        int16_t *dst = plane + r * row_values;
        const int32_t iy = first + r - k.pad_y;
        if (iy < 0 || iy >= k.in_height) {
            if (k.strip_rows() < k.out_height) {
                memset(dst, 0, sizeof(int16_t) * static_cast<size_t>(row_values));
            }
            continue;
        }
        dst += k.pad_x;
        const int8_t *src = k.input + iy * in_width * stride + c;
        /* Two values a word (the row may start at an odd value: M-profile
         * word stores need no alignment). */
        int32_t x = 0;
        for (; x + 1 < in_width; x += 2) {
            const uint32_t pair = static_cast<uint8_t>(src[0]) |
                                  static_cast<uint32_t>(static_cast<uint8_t>(src[stride])) << 16;
            const uint32_t values = __sxtab16(offset_pair, pair);
            memcpy(dst + x, &values, sizeof(values));
            src += 2 * stride;
        }
        if (x < in_width) {
            dst[x] = static_cast<int16_t>(*src + k.input_offset);
        }
    }
}

/* Two int16 taps as one word, first in the low half. */
inline int32_t tap_pair(int8_t first, int8_t second) {
    return static_cast<int32_t>((static_cast<uint32_t>(static_cast<uint16_t>(first))) |
                                (static_cast<uint32_t>(static_cast<uint16_t>(second)) << 16));
}

/* An output row of one channel from its sums; kClamp when the activation
 * range is narrower than int8. */
template <bool kClamp>
__attribute__((always_inline)) inline void store_row(const int32_t *sums, int32_t bias,
                                                     const ChannelRequantization &q,
                                                     const Depthwise &k, int8_t *o) {
    /* Copies: the int8 stores could alias k. */
    const int32_t stride = k.channels;
    const int32_t activation_min = k.activation_min;
    const int32_t activation_max = k.activation_max;
    const int32_t *const end = sums + k.out_width;
    while (sums != end) {
        const int32_t sum = *sums++ + bias;
        *o = kClamp ? requantize_clamped(sum, q, activation_min, activation_max)
                    : static_cast<int8_t>(requantize(sum, q));
        o += stride;
    }
}

template <bool kClamp> void convolve(const Depthwise &k) {
    alignas(8) int16_t plane[kPlaneValues];
    /* One output row's sums, a pair at a time. */
    alignas(8) int32_t sums[kMaxWidth + 1];
    const int32_t row_values = k.row_values();
    const int32_t strip_rows = k.strip_rows();
    const int32_t out_row_bytes = k.out_width * k.channels;
    const int32_t pairs = (k.out_width + 1) / 2;
    memset(plane, 0, sizeof(plane));
    for (int32_t c = 0; c < k.channels; c++) {
        /* {k0, k1} and {k1, k2} of each kernel row. */
        int32_t taps[6];
        for (int32_t ky = 0; ky < 3; ky++) {
            const int8_t *w = k.weights + 3 * ky * k.channels + c;
            taps[2 * ky] = tap_pair(w[0], w[k.channels]);
            taps[2 * ky + 1] = tap_pair(w[k.channels], w[2 * k.channels]);
        }
        const ChannelRequantization q =
            channel_requantization(k.multipliers[c], k.shifts[c], k.output_offset);
        const int32_t bias = k.bias != nullptr ? k.bias[c] : 0;
        for (int32_t y0 = 0; y0 < k.out_height; y0 += strip_rows) {
            const int32_t rows = k.out_height - y0 < strip_rows ? k.out_height - y0 : strip_rows;
            fill_plane(k, c, y0, rows + 2, plane);
            for (int32_t r = 0; r < rows; r++) {
                et_zephyr_depthwise_sums_dsp(plane + r * row_values,
                                             row_values * static_cast<int32_t>(sizeof(int16_t)),
                                             taps, pairs, sums);
                store_row<kClamp>(sums, bias, q, k, k.out + (y0 + r) * out_row_bytes + c);
            }
        }
    }
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_depthwise_conv2d_out(KernelRuntimeContext &context, const Tensor &input,
                                       const Tensor &weight, const std::optional<Tensor> &bias,
                                       ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                       ArrayRef<int64_t> dilation, int64_t depth_multiplier,
                                       int64_t input_offset, int64_t output_offset,
                                       const Tensor &requantize_multipliers,
                                       const Tensor &requantize_shifts, int64_t activation_min,
                                       int64_t activation_max, const Tensor &scratch, Tensor &out) {
    Depthwise k{};
    if (!has_int8_zero_point(input_offset) ||
        !handled(input, weight, bias, stride, padding, dilation, depth_multiplier,
                 requantize_multipliers, requantize_shifts, out, &k)) {
        return cortex_m::native::quantized_depthwise_conv2d_out(
            context, input, weight, bias, stride, padding, dilation, depth_multiplier, input_offset,
            output_offset, requantize_multipliers, requantize_shifts, activation_min,
            activation_max, scratch, out);
    }
    k.input_offset = static_cast<int32_t>(input_offset);
    k.output_offset = static_cast<int32_t>(output_offset);
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    if (k.activation_min <= INT8_MIN && k.activation_max >= INT8_MAX) {
        convolve<false>(k);
    } else {
        convolve<true>(k);
    }
    return out;
}

} // namespace et_zephyr::native
