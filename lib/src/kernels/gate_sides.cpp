/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * gate_sides.h's sides. CMSIS-NN's arm_nn_vec_mat_mul_result_acc_s8_s16 takes 2
 * rows a pass and extends the vector again for every pair (DSP extension:
 * about 1.9 instructions a multiply-accumulate; portable C more); here the
 * vector is extended once per chunk of 128 values on the stack, and the
 * assembly loops take 4 rows a pass (22 instructions for 16 with the DSP
 * extension, 2.4 an MAC without). A vector whose length is not a multiple of 4
 * (an LSTM over 10 features) is extended with zeros to the next one, so the
 * loops read up to 3 values of the next row and add nothing for them; the last
 * 4 rows, whose next bytes are not the caller's, stop at the last multiple of
 * 4 and take their last values in C, as rows past the last multiple of 4 take
 * all theirs. Integer sums are the same in any order: the outputs are
 * bit-identical.
 */

#include "gate_sides.h"

#include "requantize_fast.h"

#if defined(__ARM_FEATURE_DSP)
#include "input_pairs_dsp.h"
#include "linear_sums_dsp.h"
#else
#include "linear_sums_scalar.h"
#endif

namespace et_zephyr::native::recurrent {
namespace {

/* Weight rows the assembly loops take a pass; values a step. */
constexpr int32_t kRows = 4;
constexpr int32_t kStep = 4;
/* Vector values extended on the stack at a time (256 bytes); a multiple of 4. */
constexpr int32_t kChunk = 128;

/* sums[i] = start[i] plus the products of x[from .. to - 1] with row i, for i
 * in first .. last - 1, in C (start may be sums). */
void c_sums(const int8_t *x, int32_t from, int32_t to, const int8_t *weights, int32_t columns,
            int32_t first, int32_t last, const int32_t *start, int32_t *sums) {
    for (int32_t i = first; i < last; i++) {
        const int8_t *w = weights + i * columns;
        int32_t sum = start[i];
        for (int32_t j = from; j < to; j++) {
            sum += x[j] * w[j];
        }
        sums[i] = sum;
    }
}

#if defined(__ARM_FEATURE_DSP)

/* The vector's count values from x as int16 pairs (input_pairs_dsp.h), zeros
 * past count up to the next multiple of 4. */
struct Extended {
    alignas(8) int32_t pairs[kChunk / 2];
    Extended(const int8_t *x, int32_t count) {
        const int32_t whole = count / kStep;
        extend_input_pairs(x, whole, offset_pair(0), pairs, 2);
        if (count % kStep != 0) {
            int8_t last[kStep] = {};
            for (int32_t i = 0; i < count % kStep; i++) {
                last[i] = x[whole * kStep + i];
            }
            extend_input_pairs(last, 1, offset_pair(0), pairs + 2 * whole, 2);
        }
    }
};

/* sums = start + products of steps x 4 extended values with groups x 4 rows. */
void loop_sums(const Extended &v, const int8_t *weights, int32_t steps, int32_t groups,
               int32_t columns, const int32_t *start, int32_t *sums) {
    et_zephyr_linear_sums_dsp(v.pairs, weights, steps, groups, start, sums, columns);
}

#else

struct Extended {
    int16_t values[kChunk];
    Extended(const int8_t *x, int32_t count) {
        int32_t i = 0;
#pragma GCC unroll 4
        for (; i < count; i++) {
            values[i] = x[i];
        }
        for (; i % kStep != 0; i++) {
            values[i] = 0;
        }
    }
};

void loop_sums(const Extended &v, const int8_t *weights, int32_t steps, int32_t groups,
               int32_t columns, const int32_t *start, int32_t *sums) {
    et_zephyr_linear_sums_scalar(v.values, weights, steps * kStep, columns, groups, sums, start);
}

#endif

/* sums[i] = bias[i] + x . row i for i < rows, rows columns values each (the
 * rows' stride). */
void gate_sums(const int8_t *x, const int8_t *weights, const int32_t *bias, int32_t columns,
               int32_t rows, int32_t *sums) {
    const int32_t full = rows - rows % kRows;
    const int32_t last_group = full - kRows;
    for (int32_t d0 = 0; d0 < columns; d0 += kChunk) {
        const int32_t count = columns - d0 < kChunk ? columns - d0 : kChunk;
        const int32_t whole = count / kStep;
        const int32_t padded = (count + kStep - 1) / kStep;
        const int32_t *const start = d0 == 0 ? bias : sums;
        if (full > 0) {
            const Extended v(x + d0, count);
            /* Every group but the last reads its rows' next values past count. */
            const int32_t groups = whole == padded ? full / kRows : full / kRows - 1;
            if (groups > 0) {
                loop_sums(v, weights + d0, padded, groups, columns, start, sums);
            }
            if (whole != padded) {
                if (whole > 0) {
                    loop_sums(v, weights + last_group * columns + d0, whole, 1, columns,
                              start + last_group, sums + last_group);
                }
                c_sums(x, d0 + kStep * whole, d0 + count, weights, columns, last_group, full,
                       whole > 0 ? sums : start, sums);
            }
        }
        c_sums(x, d0, d0 + count, weights, columns, full, rows, start, sums);
    }
}

/* A side's requantization, its q computed once (right shifts only). */
template <Requantization kHow> struct Requantizer {
    ChannelRequantization q;
    int32_t multiplier;
    int32_t shift;
    explicit Requantizer(const GateSide &side)
        : q(kHow == Requantization::kRight ? channel_requantization(side.multiplier, side.shift, 0)
                                           : ChannelRequantization{}),
          multiplier(side.multiplier), shift(side.shift) {}
    __attribute__((always_inline)) int32_t operator()(int32_t sum) const {
        if constexpr (kHow == Requantization::kRight) {
            return requantize_wide(sum, q);
        } else {
            return requantize_left(sum, multiplier, shift);
        }
    }
};

/* dst[i] = saturate16(saturate16(first(a[i])) + second(b[i])), as CMSIS-NN adds the
 * second side to the first's saturated value; without b the first alone. */
template <Requantization kFirst, Requantization kSecond>
void store(const Requantizer<kFirst> &first, const int32_t *a, const Requantizer<kSecond> &second,
           const int32_t *b, int32_t n, int16_t *dst) {
    for (int32_t i = 0; i < n; i++) {
        int32_t value = __ssat(first(a[i]), 16);
        if (b != nullptr) {
            value = __ssat(value + second(b[i]), 16);
        }
        dst[i] = static_cast<int16_t>(value);
    }
}

template <Requantization kFirst, Requantization kSecond>
void gate_rows(const GateSide &first, const int8_t *x, const GateSide *second, const int8_t *h,
               int16_t *dst) {
    /* Rows summed at a time: their sums take 2 x 128 bytes of stack. */
    constexpr int32_t kRowChunk = 32;
    int32_t a[kRowChunk];
    int32_t b[kRowChunk];
    const Requantizer<kFirst> first_requantizer(first);
    const Requantizer<kSecond> second_requantizer(second != nullptr ? *second : first);
    for (int32_t r0 = 0; r0 < first.rows; r0 += kRowChunk) {
        const int32_t n = first.rows - r0 < kRowChunk ? first.rows - r0 : kRowChunk;
        gate_sums(x, first.weights + r0 * first.columns, first.bias + r0, first.columns, n, a);
        if (second != nullptr) {
            gate_sums(h, second->weights + r0 * second->columns, second->bias + r0, second->columns,
                      n, b);
        }
        store(first_requantizer, a, second_requantizer, second != nullptr ? b : nullptr, n,
              dst + r0);
    }
}

template <Requantization kFirst>
void gate_rows_after(const GateSide &first, const int8_t *x, const GateSide *second,
                     const int8_t *h, int16_t *dst) {
    if (second == nullptr || second->requantization == kFirst) {
        gate_rows<kFirst, kFirst>(first, x, second, h, dst);
    } else if (kFirst == Requantization::kRight) {
        gate_rows<kFirst, Requantization::kLeft>(first, x, second, h, dst);
    } else {
        gate_rows<kFirst, Requantization::kRight>(first, x, second, h, dst);
    }
}

} // namespace

Requantization exact_requantization(const GateSide &side) {
    /* The largest product of int8 values, and a depth whose sums stay within
     * int32 by far. */
    constexpr int32_t kLargestInt8Product = 128 * 128;
    constexpr int32_t kLargestColumns = 1 << 14;
    if (side.columns < 1 || side.columns > kLargestColumns || side.rows < 1) {
        return Requantization::kNotExact;
    }
    const int32_t products = side.columns * kLargestInt8Product;
    const int32_t bias_bound = largest_bias_bound(side.bias, side.rows);
    if (channel_is_exact(side.multiplier, side.shift, bias_bound, products)) {
        return Requantization::kRight;
    }
    if (left_shift_is_exact(side.shift, int64_t{bias_bound} + products)) {
        return Requantization::kLeft;
    }
    return Requantization::kNotExact;
}

void gate_on_own_loops(const GateSide &first, const int8_t *x, const GateSide *second,
                       const int8_t *h, int16_t *dst) {
    if (first.requantization == Requantization::kRight) {
        gate_rows_after<Requantization::kRight>(first, x, second, h, dst);
    } else {
        gate_rows_after<Requantization::kLeft>(first, x, second, h, dst);
    }
}

} // namespace et_zephyr::native::recurrent
