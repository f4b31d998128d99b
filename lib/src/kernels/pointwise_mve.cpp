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
 * registers vmladava accumulates in), the per-channel terms are set up once
 * per channel, and a pair of channels goes over every row in one call of
 * pointwise_pair_mve.S, sums, requantization and stores. The sums are exact
 * int32 and the requantization is CMSIS-NN's: outputs are bit-identical to
 * the upstream kernels'.
 */

#include "pointwise_mve.h"

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>

#include "requantize_mve.h"

namespace {

/* Rows of a block: one vector of outputs per channel. */
constexpr int32_t kRows = 4;
/* Input channels per multiply-accumulate: one vector of int8. */
constexpr int32_t kDepth = et_zephyr::native::kPointwiseDepthStep;

using et_zephyr::native::ActivationRange;
using et_zephyr::native::ChannelTerms;
using et_zephyr::native::PointwiseProduct;

/* The 16 weights from d of a channel's row: zero past depth, so that the
 * input rows' bytes between depth and row_stride add nothing. */
inline int8x16_t weight_vector(const int8_t *weights, int32_t d, int32_t depth) {
    return vldrbq_z_s8(weights + d, vctp8q(static_cast<uint32_t>(depth - d)));
}

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
 * (k.channel_bases). Inlined: as a call it took a third more instructions
 * (KWS: 4,300 an inference, for 40 B of flash). */
__attribute__((always_inline)) inline ChannelTerms channel_terms(const PointwiseProduct &k,
                                                                 int32_t c, int32_t base) {
    const int32_t q = k.per_tensor ? 0 : c;
    return et_zephyr::native::channel_terms(k.channel_bases != nullptr ? k.channel_bases[c] : base,
                                            k.multipliers[q], k.shifts[q]);
}

/* The operands of pointwise_pair_mve.S: first the 16 words of its frame, in
 * the order its ldm instructions load them. */
struct PairRun {
    ChannelTerms first;
    int32_t first_output_offset;
    int8_t *first_out;
    ChannelTerms second;
    int32_t second_output_offset;
    int8_t *weights; /* 16-byte slices of both channels' weights, interleaved */
    int8_t *second_out;
    int32_t steps;     /* 16-byte steps of a row */
    int32_t channels;  /* output row bytes */
    const int8_t *end; /* stream 3's row pointer after the last block */
    /* The rest: read once a call. */
    const int8_t *streams[kRows];
    int32_t offsets[kRows]; /* output byte offsets of the streams' first rows */
    int32_t activation_min;
    int32_t activation_max;
};
static_assert(sizeof(void *) != 4 ||
                  (offsetof(PairRun, streams) == 64 && offsetof(PairRun, activation_min) == 96),
              "pointwise_pair_mve.S reads PairRun at these offsets");

} // namespace

/* lib/src/kernels/pointwise_pair_mve.S */
extern "C" void et_zephyr_pointwise_pair_mve(const PairRun *run);

namespace {

/* Where and how a channel's requantized blocks are stored. */
struct BlockOutput {
    uint32x4_t stride; /* byte offsets of a block's 4 rows */
    ActivationRange range;
    int32_t output_offset;
};

/* Channel c's outputs, 4 rows at a time (deep rows without room for two
 * channels' weights, or an odd last channel). */
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
        vstrbq_scatter_offset_p_s32(
            k.out + p * k.channels + c, o.stride,
            et_zephyr::native::requantize(sums, t, o.output_offset, o.range),
            vctp32q(static_cast<uint32_t>(k.rows - p)));
    }
}

/* Channels c and c + 1: their weights into 16-byte slices of c's, each
 * followed by c + 1's (run.weights), summed on the way (whole vectors
 * unpredicated, as in channel_base) into their terms; then every row through
 * the assembly. */
__attribute__((noinline)) void channel_pair(const PointwiseProduct &k, PairRun &run, int32_t c) {
    const int32_t depth = k.depth;
    const int8_t *first = k.weights + c * depth;
    const int8_t *const whole_end = first + depth / kDepth * kDepth;
    int8_t *pair_weights = run.weights;
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
    run.first = channel_terms(k, c, base_of(k, c, sum0));
    run.second = channel_terms(k, c + 1, base_of(k, c + 1, sum1));
    run.first_out = k.out + c;
    run.second_out = k.out + c + 1;
    et_zephyr_pointwise_pair_mve(&run);
}

/* Pairs of channels through the assembly, its rows as 4 streams of
 * ceil(rows / 4) rows from rows 0, B, 2B and rows - B (never past the last
 * row): the streams may overlap, and their outputs there are the same bytes
 * stored twice. */
__attribute__((noinline)) int32_t channel_pairs(const PointwiseProduct &k) {
    /* 16-byte slices of a channel's weights, each followed by the next one's. */
    int8_t stack_pair_weights[2 * et_zephyr::native::kPointwiseStackDepth];
    PairRun run;
    run.weights = k.pair_weights != nullptr ? k.pair_weights : stack_pair_weights;
    run.first_output_offset = k.output_offset;
    run.second_output_offset = k.output_offset;
    run.steps = k.row_stride / kDepth;
    run.channels = k.channels;
    run.activation_min = k.activation_min;
    run.activation_max = k.activation_max;
    const int32_t blocks = (k.rows + kRows - 1) / kRows;
    for (int32_t s = 0; s < kRows; s++) {
        const int32_t row = s * blocks < k.rows - blocks ? s * blocks : k.rows - blocks;
        run.streams[s] = k.input + row * k.row_stride;
        run.offsets[s] = row * k.channels;
    }
    run.end = run.streams[kRows - 1] + blocks * k.row_stride;
    int32_t c = 0;
    for (; c + 1 < k.channels; c += 2) {
        channel_pair(k, run, c);
    }
    return c;
}

} // namespace

namespace et_zephyr::native {

void pointwise_product(const PointwiseProduct &k) {
    int32_t c = 0;
    if (k.pair_weights != nullptr || k.row_stride <= kPointwiseStackDepth) {
        c = channel_pairs(k);
    }
    if (c < k.channels) {
        const BlockOutput output = {
            vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(k.channels)),
            {vdupq_n_s32(k.activation_min), vdupq_n_s32(k.activation_max)},
            k.output_offset};
        for (; c < k.channels; c++) {
            single_channel(k, output, c);
        }
    }
}

void pointwise_channel_bases(const PointwiseProduct &p, int32_t *bases) {
    for (int32_t c = 0; c < p.channels; c++) {
        bases[c] = channel_base(p, c);
    }
}

} // namespace et_zephyr::native
