/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_linear.out for the DSP extension (Cortex-M4, M7, M33):
 * fully connected layers whose weights stream from flash (MLPerf Tiny's
 * autoencoder, classifiers, a transformer's projections row by row).
 *
 * CMSIS-NN's arm_nn_vec_mat_mult_t_s8 takes two weight rows a pass over the
 * input and loads and sign-extends every input word again for each pair; its
 * requantization takes about 20 instructions an output. Here each input row
 * is sign-extended once, with the input offset added, into int16 pairs in the
 * temp arena (2 bytes a value; et-export sizes the arena for it), and the
 * assembly loop (linear_sums_dsp.S) takes four weight rows a pass over them,
 * up to 32 channels a call: 22 instructions and 24 cycles (Cortex-M4) for 16
 * multiply-accumulates, CMSIS-NN about 26 and 32. The sums are
 * requantized in 5 instructions (requantize_fast.h). Channels past the last
 * multiple of 4 take the same arithmetic in C. Symmetric weights (filter
 * offset 0), a depth that is a multiple of 4 and a right-shifting
 * requantization; the exact integer sums and CMSIS-NN's requantization:
 * bit-identical outputs. Other linears, and any when the temp arena cannot
 * hold the pairs, go to the upstream kernel.
 */

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "input_pairs_dsp.h"
#include "linear_checks.h"
#include "linear_sums_dsp.h"
#include "requantize_fast.h"
#include "upstream_kernels.h"

using et_zephyr::native::channel_is_exact;
using et_zephyr::native::channel_requantization;
using et_zephyr::native::ChannelRequantization;
using et_zephyr::native::extend_input_pairs;
using et_zephyr::native::has_channel_terms;
using et_zephyr::native::has_int8_zero_point;
using et_zephyr::native::has_tensor_requantization;
using et_zephyr::native::kLargestProduct;
using et_zephyr::native::largest_bias_bound;
using et_zephyr::native::linear_shape;
using et_zephyr::native::LinearShape;
using et_zephyr::native::offset_pair;
using et_zephyr::native::requantize_output;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

/* Weight rows the assembly loop takes a pass. */
constexpr int32_t kRows = 4;
/* Channels whose sums a call of the assembly loop writes, at most (their sums:
 * 128 bytes of stack). */
constexpr int32_t kChannelChunk = 32;
/* Depth values a step of the assembly loop takes. */
constexpr int32_t kStep = 4;

struct Linear {
    const int8_t *input;
    const int8_t *weights;
    const int32_t *bias;
    int8_t *out;
    int32_t *pairs;
    int32_t rows;
    int32_t channels;
    int32_t depth;
    int32_t input_offset;
    int32_t multiplier;
    int32_t shift;
    int32_t activation_min;
    int32_t activation_max;
};

/* The linear this kernel computes, or false (then the upstream kernel runs). */
bool handled(const Tensor &input, const Tensor &weights, const std::optional<Tensor> &bias,
             const std::optional<Tensor> &kernel_sum, int64_t input_offset, int64_t filter_offset,
             ArrayRef<int64_t> multipliers, ArrayRef<int64_t> shifts, const Tensor &out,
             Linear *k) {
    LinearShape shape;
    if (!linear_shape(input, weights, out, &shape) || !has_channel_terms(bias, weights.size(0)) ||
        kernel_sum.has_value() || filter_offset != 0 || !has_int8_zero_point(input_offset) ||
        shape.depth < kStep || shape.depth % kStep != 0 || shape.channels < 1) {
        return false;
    }
    if (!has_tensor_requantization(multipliers, shifts)) {
        return false;
    }
    const int32_t depth = shape.depth;
    const int32_t channels = shape.channels;
    /* A negative multiplier: channel_is_exact() refuses it. */
    const int32_t multiplier = static_cast<int32_t>(multipliers[0]);
    const int32_t shift = static_cast<int32_t>(shifts[0]);
    k->bias = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    if (!channel_is_exact(multiplier, shift, largest_bias_bound(k->bias, channels),
                          depth * kLargestProduct)) {
        return false;
    }
    k->input = input.const_data_ptr<int8_t>();
    k->weights = weights.const_data_ptr<int8_t>();
    k->out = out.mutable_data_ptr<int8_t>();
    k->rows = shape.rows;
    k->channels = channels;
    k->depth = depth;
    k->input_offset = static_cast<int32_t>(input_offset);
    k->multiplier = multiplier;
    k->shift = shift;
    return true;
}

/* One weight row's dot product with the input's pairs, in C: the channels
 * past the last multiple of 4. */
int32_t row_sum(const int32_t *pairs, const int8_t *w, int32_t depth) {
    int32_t sum = 0;
    for (int32_t d = 0; d < depth; d += kStep, pairs += 2) {
        uint32_t word;
        memcpy(&word, w + d, sizeof(word));
        sum = __smlad(__sxtb16(word), pairs[0], sum);
        sum = __smlad(__sxtb16((word >> 8) | (word << 24)), pairs[1], sum);
    }
    return sum;
}

template <bool kClamp> void compute(const Linear &k, int32_t output_offset) {
    const ChannelRequantization q = channel_requantization(k.multiplier, k.shift, output_offset);
    const int32_t activation_min = k.activation_min;
    const int32_t activation_max = k.activation_max;
    const int32_t steps = k.depth / kStep;
    const int32_t full = k.channels - k.channels % kRows;
    int32_t sums[kChannelChunk];
    for (int32_t r = 0; r < k.rows; r++) {
        extend_input_pairs(k.input + r * k.depth, steps, offset_pair(k.input_offset), k.pairs, 2);
        int8_t *o = k.out + r * k.channels;
        for (int32_t c = 0; c < full; c += kChannelChunk) {
            const int32_t n = full - c < kChannelChunk ? full - c : kChannelChunk;
            et_zephyr_linear_sums_dsp(k.pairs, k.weights + c * k.depth, steps, n / kRows,
                                      k.bias != nullptr ? k.bias + c : nullptr, sums, k.depth);
            for (int32_t i = 0; i < n; i += kRows) {
                o[c + i] = requantize_output<kClamp>(sums[i], q, activation_min, activation_max);
                o[c + i + 1] =
                    requantize_output<kClamp>(sums[i + 1], q, activation_min, activation_max);
                o[c + i + 2] =
                    requantize_output<kClamp>(sums[i + 2], q, activation_min, activation_max);
                o[c + i + 3] =
                    requantize_output<kClamp>(sums[i + 3], q, activation_min, activation_max);
            }
        }
        for (int32_t c = full; c < k.channels; c++) {
            const int32_t bias = k.bias != nullptr ? k.bias[c] : 0;
            o[c] =
                requantize_output<kClamp>(bias + row_sum(k.pairs, k.weights + c * k.depth, k.depth),
                                          q, activation_min, activation_max);
        }
    }
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_linear_out(KernelRuntimeContext &context, const Tensor &input,
                             const Tensor &weights, const std::optional<Tensor> &bias,
                             const std::optional<Tensor> &kernel_sum, int64_t input_offset,
                             int64_t filter_offset, int64_t output_offset,
                             ArrayRef<int64_t> requantize_multipliers,
                             ArrayRef<int64_t> requantize_shifts, int64_t activation_max,
                             int64_t activation_min, Tensor &out) {
    auto upstream = [&]() -> Tensor & {
        return cortex_m::native::quantized_linear_out(
            context, input, weights, bias, kernel_sum, input_offset, filter_offset, output_offset,
            requantize_multipliers, requantize_shifts, activation_max, activation_min, out);
    };
    Linear k{};
    if (!handled(input, weights, bias, kernel_sum, input_offset, filter_offset,
                 requantize_multipliers, requantize_shifts, out, &k)) {
        return upstream();
    }
    /* Two int16 values a depth value, word-aligned for LDRD. */
    auto pairs = context.allocate_temp(2 * static_cast<size_t>(k.depth), alignof(int64_t));
    if (!pairs.ok()) {
        return upstream();
    }
    k.pairs = static_cast<int32_t *>(pairs.get());
    k.activation_min = static_cast<int32_t>(activation_min);
    k.activation_max = static_cast<int32_t>(activation_max);
    if (k.activation_min <= INT8_MIN && k.activation_max >= INT8_MAX) {
        compute<false>(k, static_cast<int32_t>(output_offset));
    } else {
        compute<true>(k, static_cast<int32_t>(output_offset));
    }
    return out;
}

} // namespace et_zephyr::native
