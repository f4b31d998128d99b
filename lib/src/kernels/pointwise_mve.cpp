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

#include "requantize_mve.h"

using et_zephyr::native::make_requantization;
using et_zephyr::native::Requantization;
using et_zephyr::native::requantize;

/* lib/src/kernels/pointwise_sums_mve.S */
extern "C" void et_zephyr_pointwise_sums_mve(const int8_t *rows, int32_t depth,
                                             const int8_t *pair_weights, int32_t blocks,
                                             int32_t *sums);

namespace {

/* Rows of a block: one vector of outputs per channel. */
constexpr int32_t kRows = 4;
/* Input channels per multiply-accumulate: one vector of int8. */
constexpr int32_t kDepth = et_zephyr::native::kPointwiseDepthStep;
/* Output channels per vector in last_rows. */
constexpr int32_t kLanes = 4;
/* Deepest input for two channels at a time: their weights are interleaved
 * on the stack. */
constexpr int32_t kMaxPairedDepth = 128;
/* Blocks of 4 rows x 2 channels summed per call of the assembly loop. */
constexpr int32_t kSumBlocks = 8;

/* The product's operands, for the helpers below. */
struct Pointwise : et_zephyr::native::PointwiseProduct {
    /* Byte offsets of 4 rows' outputs of one channel. */
    uint32x4_t out_stride;
};

/* The 16 weights from d of a channel's row: zero past depth, so that the
 * input rows' bytes between depth and row_stride add nothing. */
inline int8x16_t weight_vector(const int8_t *weights, int32_t d, int32_t depth) {
    return vldrbq_z_s8(weights + d, vctp8q(static_cast<uint32_t>(depth - d)));
}

/* Channel c's requantization: bias and input-offset term, once per channel. */
Requantization channel_requantization(const Pointwise &k, int32_t c) {
    const int8_t *weights = k.weights + c * k.depth;
    int32_t weight_sum = 0;
    for (int32_t d = 0; d < k.depth; d += kDepth) {
        weight_sum = vaddvaq_s8(weight_sum, weight_vector(weights, d, k.depth));
    }
    const int32_t base = k.input_offset * weight_sum + (k.bias != nullptr ? k.bias[c] : 0);
    const int32_t q = k.per_tensor ? 0 : c;
    return make_requantization(vdupq_n_s32(base), vdupq_n_s32(k.multipliers[q]),
                               vdupq_n_s32(k.shifts[q]), k.output_offset, k.activation_min,
                               k.activation_max);
}

/* Channel c's outputs, 4 rows at a time. */
__attribute__((noinline)) void single_channel(const Pointwise &k, int32_t c,
                                              const Requantization &q) {
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
        vstrbq_scatter_offset_p_s32(k.out + p * k.channels + c, k.out_stride, requantize(sums, q),
                                    vctp32q(static_cast<uint32_t>(k.rows - p)));
    }
}

/* Outputs of rows from first on (fewer than a block), 4 channels per
 * vector, for the channels below end. */
__attribute__((noinline)) void last_rows(const Pointwise &k, int32_t first, int32_t end) {
    for (int32_t p = first; p < k.rows; p++) {
        const int8_t *row = k.input + p * k.row_stride;
        for (int32_t c = 0; c < end; c += kLanes) {
            const int32_t lanes = end - c < kLanes ? end - c : kLanes;
            int32_t sums[kLanes] = {0, 0, 0, 0};
            int32_t weight_sums[kLanes] = {0, 0, 0, 0};
            for (int32_t j = 0; j < lanes; j++) {
                const int8_t *weights = k.weights + (c + j) * k.depth;
                for (int32_t d = 0; d < k.depth; d += kDepth) {
                    const int8x16_t w = weight_vector(weights, d, k.depth);
                    sums[j] = vmladavaq_s8(sums[j], vldrbq_s8(row + d), w);
                    weight_sums[j] = vaddvaq_s8(weight_sums[j], w);
                }
            }
            const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(lanes));
            int32x4_t base = vmulq_n_s32(vldrwq_s32(weight_sums), k.input_offset);
            if (k.bias != nullptr) {
                base = vaddq_s32(base, vldrwq_z_s32(k.bias + c, valid));
            }
            const int32x4_t multipliers = k.per_tensor ? vdupq_n_s32(k.multipliers[0])
                                                       : vldrwq_z_s32(k.multipliers + c, valid);
            const int32x4_t shifts =
                k.per_tensor ? vdupq_n_s32(k.shifts[0]) : vldrwq_z_s32(k.shifts + c, valid);
            const Requantization q = make_requantization(base, multipliers, shifts, k.output_offset,
                                                         k.activation_min, k.activation_max);
            vstrbq_p_s32(k.out + p * k.channels + c, requantize(vldrwq_s32(sums), q), valid);
        }
    }
}

/* Outputs of channels c and c + 1 for whole blocks of 4 rows, through the
 * assembly loop kSumBlocks blocks at a time. */
__attribute__((noinline)) void channel_pair(const Pointwise &k, int32_t c) {
    /* 16-byte slices of channel c's weights, each followed by channel c + 1's. */
    int8_t pair_weights[2 * kMaxPairedDepth];
    const int8_t *weights = k.weights + c * k.depth;
    for (int32_t d = 0; d < k.depth; d += kDepth) {
        vstrbq_s8(pair_weights + 2 * d, weight_vector(weights, d, k.depth));
        vstrbq_s8(pair_weights + 2 * d + kDepth, weight_vector(weights + k.depth, d, k.depth));
    }
    const Requantization q[2] = {channel_requantization(k, c), channel_requantization(k, c + 1)};
    const int32_t blocks = k.rows / kRows;
    int32_t sums[kSumBlocks][2][kRows];
    for (int32_t first = 0; first < blocks; first += kSumBlocks) {
        const int32_t count = blocks - first < kSumBlocks ? blocks - first : kSumBlocks;
        et_zephyr_pointwise_sums_mve(k.input + first * kRows * k.row_stride, k.row_stride,
                                     pair_weights, count, &sums[0][0][0]);
        /* One channel at a time, its requantization in registers (copies: the
         * int8 stores could alias anything else). */
        for (int32_t i = 0; i < 2; i++) {
            const Requantization channel_q = q[i];
            const uint32x4_t out_stride = k.out_stride;
            const int32_t block_bytes = kRows * k.channels;
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

void pointwise_product(const PointwiseProduct &product) {
    Pointwise k;
    static_cast<PointwiseProduct &>(k) = product;
    k.out_stride = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(k.channels));
    int32_t c = 0;
    if (k.row_stride <= kMaxPairedDepth) {
        for (; c + 1 < k.channels; c += 2) {
            channel_pair(k, c);
        }
        last_rows(k, k.rows / kRows * kRows, c);
    }
    for (; c < k.channels; c++) {
        single_channel(k, c, channel_requantization(k, c));
    }
}

} // namespace et_zephyr::native
