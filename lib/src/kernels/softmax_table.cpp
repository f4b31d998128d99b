/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::softmax.out with the exponentials looked up instead of computed.
 *
 * arm_softmax_s8 (arm_nn_softmax_common_s8: with GCC 12.2 CMSIS-NN compiles its
 * Helium variant out, ARM_GCC_12_2_ICE) evaluates the fixed-point exp of each
 * element's difference to its row's maximum twice, for the sum and for the
 * output, about 100 instructions each. Between int8 values that difference
 * takes at most 256 values: here the 256 exponentials are computed once per
 * call, with CMSIS-NN's own functions, into a table in the temp arena
 * (et-export sizes it), and each element costs a lookup. The same integers in
 * the same order: outputs bit-identical to the upstream kernel's, on every ISA
 * tier (on Helium, 4 elements at a time). Without the temp memory, or for
 * arguments it does not take, the upstream kernel runs.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnsupportfunctions.h"
#include "upstream_kernels.h"

using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

/* Differences between a row's maximum and an int8 element: 0..255. */
constexpr int32_t kDifferences = 256;
/* The sum's fixed-point format, as arm_nn_softmax_common_s8. */
constexpr int32_t kAccumBits = 12;
constexpr int32_t kOutputZeroPoint = -128;

/* The dimension laid out innermost in memory: its rows are contiguous. The last one,
 * or channels in a channels-last image (a softmax over a detector's classes). */
int64_t innermost(const Tensor &tensor) {
    return static_cast<int64_t>(tensor.dim_order()[tensor.dim() - 1]);
}

bool same_dim_order(const Tensor &a, const Tensor &b) {
    if (a.dim() != b.dim()) {
        return false;
    }
    for (ssize_t i = 0; i < a.dim(); ++i) {
        if (a.dim_order()[i] != b.dim_order()[i]) {
            return false;
        }
    }
    return true;
}

/* Arguments this kernel computes exactly as CMSIS-NN does, or false (the
 * upstream kernel runs, and checks: it takes the last dimension only). */
bool handled(const Tensor &input, int64_t dim, int64_t output_zero_point, int64_t multiplier,
             int64_t shift, const Tensor &out) {
    if (input.scalar_type() != ScalarType::Char || out.scalar_type() != ScalarType::Char) {
        return false;
    }
    if (input.dim() < 1 || (dim >= 0 ? dim : dim + input.dim()) != innermost(input) ||
        !same_dim_order(input, out)) {
        return false;
    }
    if (out.numel() != input.numel() || input.numel() == 0 || input.size(innermost(input)) == 0 ||
        input.numel() > INT32_MAX) {
        return false;
    }
    return output_zero_point == kOutputZeroPoint && multiplier >= INT32_MIN &&
           multiplier <= INT32_MAX && shift >= 0 && shift <= 31;
}

/* exp of each difference d that diff_min admits, as arm_nn_softmax_common_s8
 * computes it for an element d below its row's maximum. */
void fill_exponentials(int32_t multiplier, int32_t shift, int32_t largest, int32_t *table) {
    const uint32_t scale = 1u << shift;
    for (int32_t d = 0; d <= largest; ++d) {
        /* diff * mask in int32, wrapping as the C code does on the cores. */
        const int32_t scaled = static_cast<int32_t>(static_cast<uint32_t>(-d) * scale);
        table[d] = EXP_ON_NEG(MUL_SAT(scaled, multiplier));
    }
}

/* The sum's reciprocal, as arm_nn_softmax_common_s8 derives it. */
struct RowScale {
    int32_t shifted_scale;
    int32_t bits_over_unit;
};

RowScale row_scale(int32_t sum) {
    const int32_t headroom = CLZ(sum);
    return {ONE_OVER1((sum > 0 ? sum << headroom : 0) - (1 << 31)), kAccumBits - headroom + 23};
}

int8_t output_of(const RowScale &scale, int32_t exponential) {
    const int32_t result =
        DIV_POW2(MUL_SAT(scale.shifted_scale, exponential), scale.bits_over_unit) + NN_Q7_MIN;
    return static_cast<int8_t>(CLAMP(result, NN_Q7_MAX, NN_Q7_MIN));
}

void softmax_row(const int8_t *input, int8_t *output, int32_t row_size, int32_t largest,
                 const int32_t *table) {
    int8_t max = input[0];
    for (int32_t col = 1; col < row_size; ++col) {
        max = MAX(max, input[col]);
    }
    int32_t sum = 0;
    for (int32_t col = 0; col < row_size; ++col) {
        const int32_t d = max - input[col];
        if (d <= largest) {
            sum += DIV_POW2(table[d], kAccumBits);
        }
    }
    const RowScale scale = row_scale(sum);
    for (int32_t col = 0; col < row_size; ++col) {
        const int32_t d = max - input[col];
        output[col] = d <= largest ? output_of(scale, table[d]) : NN_Q7_MIN;
    }
}

#if defined(ARM_MATH_MVEI)
/* Helium: 16 elements a step for the maximum, 4 for the rest, the table read
 * by gathers. The exponentials and the reciprocal are non-negative, and there
 * vrshr and vqrdmulh round exactly as DIV_POW2 and MUL_SAT do: the same
 * integers. A row whose output shift passes 31 (a sum beyond 2^27: rows of
 * hundreds of equal maxima) takes the scalar code, which shifts as CMSIS-NN's
 * does. */
/* The exponentials of 4 elements from col on, and which of them diff_min admits
 * (the others, and lanes past the row, read nothing). */
struct Exponentials {
    int32x4_t values;
    mve_pred16_t inside;
};

__attribute__((always_inline)) inline Exponentials exponentials_at(const int8_t *input, int32_t col,
                                                                   mve_pred16_t valid, int8_t max,
                                                                   int32_t largest,
                                                                   const int32_t *table) {
    const int32x4_t d = vsubq_s32(vdupq_n_s32(max), vldrbq_z_s32(input + col, valid));
    const mve_pred16_t inside = vcmpleq_m_n_s32(d, largest, valid);
    return {vldrwq_gather_shifted_offset_z_s32(table, vreinterpretq_u32_s32(d), inside), inside};
}

void softmax_row_mve(const int8_t *input, int8_t *output, int32_t row_size, int32_t largest,
                     const int32_t *table) {
    int8_t max = INT8_MIN;
    for (int32_t col = 0; col < row_size; col += 16) {
        const mve_pred16_t valid = vctp8q(static_cast<uint32_t>(row_size - col));
        max = vmaxvq_p_s8(max, vldrbq_z_s8(input + col, valid), valid);
    }
    int32_t sum = 0;
    for (int32_t col = 0; col < row_size; col += 4) {
        const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(row_size - col));
        const Exponentials e = exponentials_at(input, col, valid, max, largest, table);
        sum = vaddvaq_p_s32(sum, vrshrq_n_s32(e.values, kAccumBits), e.inside);
    }
    const RowScale scale = row_scale(sum);
    if (scale.bits_over_unit > 31) {
        softmax_row(input, output, row_size, largest, table);
        return;
    }
    const int32x4_t shift = vdupq_n_s32(-scale.bits_over_unit);
    for (int32_t col = 0; col < row_size; col += 4) {
        const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(row_size - col));
        const Exponentials e = exponentials_at(input, col, valid, max, largest, table);
        int32x4_t result = vrshlq_s32(vqrdmulhq_n_s32(e.values, scale.shifted_scale), shift);
        result = vmaxq_s32(vaddq_n_s32(result, NN_Q7_MIN), vdupq_n_s32(NN_Q7_MIN));
        result = vminq_s32(result, vdupq_n_s32(NN_Q7_MAX));
        result = vpselq_s32(result, vdupq_n_s32(NN_Q7_MIN), e.inside);
        vstrbq_p_s32(output + col, result, valid);
    }
}
#endif

void softmax_rows(const int8_t *input, int8_t *output, int32_t rows, int32_t row_size,
                  int32_t largest, const int32_t *table) {
    for (int32_t row = 0; row < rows; ++row, input += row_size, output += row_size) {
#if defined(ARM_MATH_MVEI)
        softmax_row_mve(input, output, row_size, largest, table);
#else
        softmax_row(input, output, row_size, largest, table);
#endif
    }
}

} // namespace

namespace et_zephyr::native {

Tensor &softmax_out(KernelRuntimeContext &context, const Tensor &input, int64_t dim,
                    int64_t input_zero_point, int64_t output_zero_point, int64_t input_multiplier,
                    int64_t input_shift, int64_t diff_min, Tensor &out) {
    auto upstream = [&]() -> Tensor & {
        return cortex_m::native::softmax_out(context, input, dim, input_zero_point,
                                             output_zero_point, input_multiplier, input_shift,
                                             diff_min, out);
    };
    if (!handled(input, dim, output_zero_point, input_multiplier, input_shift, out)) {
        return upstream();
    }
    auto table = context.allocate_temp(kDifferences * sizeof(int32_t), alignof(int32_t));
    if (!table.ok()) {
        return upstream();
    }
    /* The largest difference the row's sum and outputs take in: -diff_min, at
     * most 255; -1 (none) for a positive diff_min. */
    const int64_t largest = diff_min > 0 ? -1 : (-diff_min < kDifferences ? -diff_min : 255);
    int32_t *exponentials = static_cast<int32_t *>(table.get());
    fill_exponentials(static_cast<int32_t>(input_multiplier), static_cast<int32_t>(input_shift),
                      static_cast<int32_t>(largest), exponentials);
    const int32_t row_size = static_cast<int32_t>(input.size(innermost(input)));
    const int32_t rows = static_cast<int32_t>(input.numel()) / row_size;
    softmax_rows(input.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(), rows, row_size,
                 static_cast<int32_t>(largest), exponentials);
    return out;
}

} // namespace et_zephyr::native
