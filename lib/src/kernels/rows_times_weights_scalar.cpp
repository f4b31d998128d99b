/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * rows_times_weights_scalar.h's product. CMSIS-NN's portable C
 * (arm_nn_vec_mat_mult_t_s8, arm_nn_mat_mult_nt_t_s8) takes 2 weight rows a
 * pass and about 3.6 and 3.1 instructions a multiply-accumulate on a Cortex-M3;
 * here each input row is extended once per chunk of 128 values into int16,
 * its offset added, on the stack, and the assembly loop of
 * linear_sums_scalar.S takes 4 weight rows a pass over it (2.4), 32 channels
 * a call. Channels past the last multiple of 4 and the depth past the last
 * multiple of 4 take the same arithmetic in C. The requantization is
 * requantize_fast.h's (7 instructions, CMSIS-NN's about 20).
 */

#include "rows_times_weights_scalar.h"

#include "linear_sums_scalar.h"
#include "requantize_fast.h"

namespace et_zephyr::native {
namespace {

/* Weight rows the assembly loop takes a pass. */
constexpr int32_t kRows = 4;
/* Input values extended on the stack at a time (256 bytes); a multiple of 4. */
constexpr int32_t kChunk = 128;
/* Channels summed at a time (their sums: 128 bytes of stack). */
constexpr int32_t kChannelChunk = 32;

void extend(const int8_t *x, int32_t count, int32_t offset, int16_t *values) {
#pragma GCC unroll 4
    for (int32_t i = 0; i < count; i++) {
        values[i] = static_cast<int16_t>(x[i] + offset);
    }
}

/* sums[i] = bias[i] (0 without a bias) for i < n. Loops that GCC must not
 * turn into memcpy or memset calls: picolibc's copy byte by byte, 4 times the
 * instructions for these at most 128 bytes. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void
start_sums(const int32_t *bias, int32_t n, int32_t *sums) {
    if (bias == nullptr) {
        for (int32_t i = 0; i < n; i++) {
            sums[i] = 0;
        }
        return;
    }
#pragma GCC unroll 4
    for (int32_t i = 0; i < n; i++) {
        sums[i] = bias[i];
    }
}

/* Adds to sums[i] the dot products of values[from .. count - 1] with weight
 * rows i (stride bytes apart) for i < channels, in C. */
void add_products(const int16_t *values, int32_t from, int32_t count, const int8_t *weights,
                  int32_t stride, int32_t channels, int32_t *sums) {
    for (int32_t i = 0; i < channels; i++) {
        const int8_t *w = weights + i * stride;
        int32_t sum = sums[i];
        for (int32_t j = from; j < count; j++) {
            sum += values[j] * w[j];
        }
        sums[i] = sum;
    }
}

template <bool kClamp>
void store_outputs(const RowsTimesWeights &k, int32_t c0, int32_t n, const int32_t *sums,
                   int8_t *o) {
    /* Copies: the int8 stores could alias k. */
    const int32_t output_offset = k.output_offset;
    const int32_t activation_min = k.activation_min;
    const int32_t activation_max = k.activation_max;
    if (!k.per_channel) {
        const ChannelRequantization q =
            channel_requantization(k.multipliers[0], k.shifts[0], output_offset);
        for (int32_t i = 0; i < n; i++) {
            o[i] = requantize_output<kClamp>(sums[i], q, activation_min, activation_max);
        }
        return;
    }
    const int32_t *const multipliers = k.multipliers + c0;
    const int32_t *const shifts = k.shifts + c0;
    for (int32_t i = 0; i < n; i++) {
        const ChannelRequantization q =
            channel_requantization(multipliers[i], shifts[i], output_offset);
        o[i] = requantize_output<kClamp>(sums[i], q, activation_min, activation_max);
    }
}

template <bool kClamp> void compute(const RowsTimesWeights &k) {
    int16_t values[kChunk];
    int32_t sums[kChannelChunk];
    const int32_t depth = k.depth;
    for (int32_t r = 0; r < k.rows; r++) {
        const int8_t *x = k.input + r * depth;
        int8_t *o = k.out + r * k.channels;
        for (int32_t c0 = 0; c0 < k.channels; c0 += kChannelChunk) {
            const int32_t n = k.channels - c0 < kChannelChunk ? k.channels - c0 : kChannelChunk;
            const int32_t full = n - n % kRows;
            const int8_t *weights = k.weights + c0 * depth;
            start_sums(k.bias != nullptr ? k.bias + c0 : nullptr, n, sums);
            for (int32_t d0 = 0; d0 < depth; d0 += kChunk) {
                const int32_t count = depth - d0 < kChunk ? depth - d0 : kChunk;
                /* A row within one chunk is extended once for all its channels. */
                if (c0 == 0 || depth > kChunk) {
                    extend(x + d0, count, k.input_offset, values);
                }
                const int32_t whole = count - count % 4;
                if (whole > 0 && full > 0) {
                    et_zephyr_linear_sums_scalar(values, weights + d0, whole, depth, full / kRows,
                                                 sums, sums);
                }
                if (whole < count) {
                    add_products(values, whole, count, weights + d0, depth, full, sums);
                }
                if (full < n) {
                    add_products(values, 0, count, weights + full * depth + d0, depth, n - full,
                                 sums + full);
                }
            }
            store_outputs<kClamp>(k, c0, n, sums, o + c0);
        }
    }
}

} // namespace

bool rows_times_weights_exact(const RowsTimesWeights &k) {
    if (!has_int8_zero_points(k.input_offset, k.output_offset) ||
        k.depth > kExactSumBound / kLargestProduct) {
        return false;
    }
    const int32_t bias = largest_bias_bound(k.bias, k.channels);
    const int32_t sums = k.depth * kLargestProduct;
    for (int32_t i = 0; i < (k.per_channel ? k.channels : 1); i++) {
        if (!channel_is_exact(k.multipliers[i], k.shifts[i], bias, sums)) {
            return false;
        }
    }
    return true;
}

void rows_times_weights_scalar(const RowsTimesWeights &k) {
    if (k.activation_min <= INT8_MIN && k.activation_max >= INT8_MAX) {
        compute<false>(k);
    } else {
        compute<true>(k);
    }
}

} // namespace et_zephyr::native
