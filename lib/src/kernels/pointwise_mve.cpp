/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The int8 matrix product of et-zephyr's Helium pointwise-convolution and
 * linear kernels (pointwise_mve.h).
 *
 * CMSIS-NN (arm_nn_mat_mult_nt_t_s8 for a pointwise convolution,
 * arm_nn_vec_mat_mult_t_s8 once per row for a linear) runs a 16-lane
 * multiply-accumulate loop over at most 4 rows of one output channel, and
 * reloads and recomputes the channel's bias, input-offset term and
 * requantization shifts after every 4 outputs. Here each loaded input vector
 * serves two output channels (4 rows x 2 channels: 8 sums in the 8 even
 * registers vmladava accumulates in), and the per-channel terms are set up
 * once per channel. The sums are exact int32 and the requantization is
 * CMSIS-NN's: outputs are bit-identical to the upstream kernels'.
 */

#include "pointwise_mve.h"

#include <arm_mve.h>
#include <stdint.h>

/* lib/src/kernels/pointwise_sums_mve.S */
extern "C" void et_zephyr_pointwise_sums_mve(const int8_t *rows, int32_t depth,
                                             const int8_t *pair_weights, int32_t blocks,
                                             int32_t *sums);

namespace {

/* Rows of a block: one vector of outputs per channel. */
constexpr int32_t kRows = 4;
/* Input channels per multiply-accumulate: one vector of int8. */
constexpr int32_t kDepth = et_zephyr::native::kPointwiseDepthStep;
/* Blocks of 4 rows x 2 channels summed per call of the assembly loop. */
constexpr int32_t kSumBlocks = 8;

using et_zephyr::native::PointwiseProduct;

/* The 16 weights from d of a channel's row: zero past depth, so that the
 * input rows' bytes between depth and row_stride add nothing. */
inline int8x16_t weight_vector(const int8_t *weights, int32_t d, int32_t depth) {
    return vldrbq_z_s8(weights + d, vctp8q(static_cast<uint32_t>(depth - d)));
}

/* One channel's requantization as scalars, for its vector-by-scalar form. */
struct ChannelTerms {
    int32_t base; /* bias + input_offset * weight sum */
    int32_t multiplier;
    int32_t left_shift;  /* max(shift, 0) */
    int32_t right_shift; /* min(shift, 0) */
};

/* bias + input_offset * weight sum: the part of channel c's sums that does
 * not depend on the input. */
int32_t base_of(const PointwiseProduct &k, int32_t c, int32_t weight_sum) {
    return k.input_offset * weight_sum + (k.bias != nullptr ? k.bias[c] : 0);
}

int32_t channel_base(const PointwiseProduct &k, int32_t c) {
    /* Whole vectors unpredicated: the loop runs once per 16 weights of the
     * layer, in deep layers of few pixels about as often as the product. */
    const int32_t depth = k.depth;
    const int8_t *weights = k.weights + c * depth;
    const int8_t *const whole_end = weights + depth / kDepth * kDepth;
    int32_t weight_sum = 0;
    for (; weights < whole_end; weights += kDepth) {
        weight_sum = vaddvaq_s8(weight_sum, vldrbq_s8(weights));
    }
    if (depth % kDepth != 0) {
        weight_sum = vaddvaq_s8(weight_sum, weight_vector(weights, 0, depth % kDepth));
    }
    return base_of(k, c, weight_sum);
}

/* Channel c's terms, its base `base` unless the caller summed them ahead
 * (k.channel_bases). Out of line: inlined twice it costs flash, not time. */
__attribute__((noinline)) ChannelTerms channel_terms(const PointwiseProduct &k, int32_t c,
                                                     int32_t base) {
    const int32_t q = k.per_tensor ? 0 : c;
    const int32_t shift = k.shifts[q];
    return {k.channel_bases != nullptr ? k.channel_bases[c] : base, k.multipliers[q],
            shift > 0 ? shift : 0, shift < 0 ? shift : 0};
}

/* Where and how a channel's requantized blocks are stored. */
struct BlockOutput {
    uint32x4_t stride; /* byte offsets of a block's 4 rows */
    int32x4_t low;     /* activation_min */
    int32x4_t high;    /* activation_max */
    int32_t output_offset;
    int32_t block_bytes;
};

/* requantize() (requantize_mve.h) of 4 sums of one channel, with its terms in
 * scalar registers and the shift it does not need left out: the same
 * operations, so the same results. */
template <bool kLeftShift, bool kRightShift>
inline int32x4_t requantized(int32x4_t sums, const ChannelTerms &t, const BlockOutput &o) {
    int32x4_t r = vaddq_n_s32(sums, t.base);
    if (kLeftShift) {
        r = vshlq_r_s32(r, t.left_shift);
    }
    r = vqrdmulhq_n_s32(r, t.multiplier);
    if (kRightShift) {
        /* Round half away from zero, as arm_divide_by_power_of_two_mve_32x4. */
        r = vrshlq_n_s32(vqaddq_s32(r, vshrq_n_s32(r, 31)), t.right_shift);
    }
    return vminq_s32(vmaxq_s32(vaddq_n_s32(r, o.output_offset), o.low), o.high);
}

/* The same for a single vector: a shift is left or right, never both. */
inline int32x4_t requantized(int32x4_t sums, const ChannelTerms &t, const BlockOutput &o) {
    if (t.left_shift != 0) {
        return requantized<true, false>(sums, t, o);
    }
    if (t.right_shift != 0) {
        return requantized<false, true>(sums, t, o);
    }
    return requantized<false, false>(sums, t, o);
}

/* One channel's sums requantized, block by block, into out. Arguments by
 * value: the int8 stores could alias anything behind a reference. */
template <bool kLeftShift, bool kRightShift>
void requantize_blocks(const int32_t *sums, int32_t count, const ChannelTerms t,
                       const BlockOutput o, int8_t *out) {
#pragma GCC unroll 1
    for (int32_t b = 0; b < count; b++) {
        const int32x4_t r = requantized<kLeftShift, kRightShift>(vldrwq_s32(sums), t, o);
        vstrbq_scatter_offset_s32(out, o.stride, r);
        sums += 2 * kRows;
        out += o.block_bytes;
    }
}

/* Channel c's outputs, 4 rows at a time (deep rows: no room for two
 * channels' weights). */
__attribute__((noinline)) void single_channel(const PointwiseProduct &k, const BlockOutput o,
                                              int32_t c) {
    const ChannelTerms t = channel_terms(k, c, k.channel_bases != nullptr ? 0 : channel_base(k, c));
    const int8_t *weights = k.weights + c * k.depth;
    const int8_t *last_row = k.input + (k.rows - 1) * k.row_stride;
    for (int32_t p = 0; p < k.rows; p += kRows) {
        /* Past the last row, it repeats, unstored. */
        const int8_t *row0 = k.input + p * k.row_stride;
        const int8_t *row1 = p + 1 < k.rows ? row0 + k.row_stride : last_row;
        const int8_t *row2 = p + 2 < k.rows ? row0 + 2 * k.row_stride : last_row;
        const int8_t *row3 = p + 3 < k.rows ? row0 + 3 * k.row_stride : last_row;
        int32_t acc0 = 0;
        int32_t acc1 = 0;
        int32_t acc2 = 0;
        int32_t acc3 = 0;
        for (int32_t d = 0; d < k.depth; d += kDepth) {
            const int8x16_t w = weight_vector(weights, d, k.depth);
            acc0 = vmladavaq_s8(acc0, vldrbq_s8(row0 + d), w);
            acc1 = vmladavaq_s8(acc1, vldrbq_s8(row1 + d), w);
            acc2 = vmladavaq_s8(acc2, vldrbq_s8(row2 + d), w);
            acc3 = vmladavaq_s8(acc3, vldrbq_s8(row3 + d), w);
        }
        const int32x4_t sums = {acc0, acc1, acc2, acc3};
        vstrbq_scatter_offset_p_s32(k.out + p * k.channels + c, o.stride, requantized(sums, t, o),
                                    vctp32q(static_cast<uint32_t>(k.rows - p)));
    }
}

/* Channels c and c + 1: their weights into 16-byte slices of c's, each
 * followed by c + 1's, and their terms, the weights summed on the way (whole
 * vectors unpredicated, as in channel_base). Out of line: its registers stay
 * off channel_pair's frame, the deepest of the inference. */
__attribute__((noinline)) void interleave_pair(const PointwiseProduct &k, int32_t c,
                                               int8_t *pair_weights, ChannelTerms *terms) {
    const int32_t depth = k.depth;
    const int8_t *first = k.weights + c * depth;
    const int8_t *const whole_end = first + depth / kDepth * kDepth;
    int32_t sum0 = 0;
    int32_t sum1 = 0;
    for (; first < whole_end; first += kDepth, pair_weights += 2 * kDepth) {
        const int8x16_t w0 = vldrbq_s8(first);
        const int8x16_t w1 = vldrbq_s8(first + depth);
        vstrbq_s8(pair_weights, w0);
        vstrbq_s8(pair_weights + kDepth, w1);
        sum0 = vaddvaq_s8(sum0, w0);
        sum1 = vaddvaq_s8(sum1, w1);
    }
    if (depth % kDepth != 0) {
        const int8x16_t w0 = weight_vector(first, 0, depth % kDepth);
        const int8x16_t w1 = weight_vector(first + depth, 0, depth % kDepth);
        vstrbq_s8(pair_weights, w0);
        vstrbq_s8(pair_weights + kDepth, w1);
        sum0 = vaddvaq_s8(sum0, w0);
        sum1 = vaddvaq_s8(sum1, w1);
    }
    terms[0] = channel_terms(k, c, base_of(k, c, sum0));
    terms[1] = channel_terms(k, c + 1, base_of(k, c + 1, sum1));
}

/* Outputs of channels c and c + 1 for whole blocks of 4 rows, through the
 * assembly loop kSumBlocks blocks at a time. */
__attribute__((noinline)) void channel_pair(const PointwiseProduct &k, const BlockOutput output,
                                            int32_t c) {
    /* 16-byte slices of channel c's weights, each followed by channel c + 1's. */
    int8_t stack_pair_weights[2 * et_zephyr::native::kPointwiseStackDepth];
    int8_t *pair_weights = k.pair_weights != nullptr ? k.pair_weights : stack_pair_weights;
    ChannelTerms terms[2];
    interleave_pair(k, c, pair_weights, terms);
    const int32_t blocks = k.rows / kRows;
    int32_t sums[kSumBlocks][2][kRows];
    for (int32_t first = 0; first < blocks; first += kSumBlocks) {
        const int32_t count = blocks - first < kSumBlocks ? blocks - first : kSumBlocks;
        et_zephyr_pointwise_sums_mve(k.input + first * kRows * k.row_stride, k.row_stride,
                                     pair_weights, count, &sums[0][0][0]);
        for (int32_t i = 0; i < 2; i++) {
            const ChannelTerms &t = terms[i];
            int8_t *o = k.out + first * output.block_bytes + c + i;
            const int32_t *channel_sums = &sums[0][i][0];
            if (t.left_shift != 0) {
                requantize_blocks<true, false>(channel_sums, count, t, output, o);
            } else if (t.right_shift != 0) {
                requantize_blocks<false, true>(channel_sums, count, t, output, o);
            } else {
                requantize_blocks<false, false>(channel_sums, count, t, output, o);
            }
        }
    }
    /* The last rows, fewer than a block, from the same interleaved weights;
     * past the last row, it repeats, unstored. */
    const int32_t rows_left = k.rows - blocks * kRows;
    if (rows_left > 0) {
        const int8_t *row0 = k.input + blocks * kRows * k.row_stride;
        const int8_t *row1 = rows_left > 1 ? row0 + k.row_stride : row0;
        const int8_t *row2 = rows_left > 2 ? row1 + k.row_stride : row1;
        int32_t a0 = 0;
        int32_t a1 = 0;
        int32_t a2 = 0;
        int32_t b0 = 0;
        int32_t b1 = 0;
        int32_t b2 = 0;
        for (int32_t d = 0; d < k.row_stride; d += kDepth) {
            const int8x16_t w0 = vldrbq_s8(pair_weights + 2 * d);
            const int8x16_t w1 = vldrbq_s8(pair_weights + 2 * d + kDepth);
            const int8x16_t x0 = vldrbq_s8(row0 + d);
            const int8x16_t x1 = vldrbq_s8(row1 + d);
            const int8x16_t x2 = vldrbq_s8(row2 + d);
            a0 = vmladavaq_s8(a0, x0, w0);
            b0 = vmladavaq_s8(b0, x0, w1);
            a1 = vmladavaq_s8(a1, x1, w0);
            b1 = vmladavaq_s8(b1, x1, w1);
            a2 = vmladavaq_s8(a2, x2, w0);
            b2 = vmladavaq_s8(b2, x2, w1);
        }
        const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(rows_left));
        const int32x4_t sums[2] = {{a0, a1, a2, 0}, {b0, b1, b2, 0}};
        for (int32_t i = 0; i < 2; i++) {
            vstrbq_scatter_offset_p_s32(k.out + blocks * output.block_bytes + c + i, output.stride,
                                        requantized(sums[i], terms[i], output), valid);
        }
    }
}

} // namespace

namespace et_zephyr::native {

void pointwise_product(const PointwiseProduct &k) {
    const BlockOutput output = {vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(k.channels)),
                                vdupq_n_s32(k.activation_min), vdupq_n_s32(k.activation_max),
                                k.output_offset, kRows * k.channels};
    int32_t c = 0;
    if (k.pair_weights != nullptr || k.row_stride <= kPointwiseStackDepth) {
        for (; c + 1 < k.channels; c += 2) {
            channel_pair(k, output, c);
        }
    }
    for (; c < k.channels; c++) {
        single_channel(k, output, c);
    }
}

void pointwise_channel_bases(const PointwiseProduct &p, int32_t *bases) {
    for (int32_t c = 0; c < p.channels; c++) {
        bases[c] = channel_base(p, c);
    }
}

} // namespace et_zephyr::native
