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
 * tier. Without the temp memory, or for arguments it does not take, the
 * upstream kernel runs.
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnsupportfunctions.h"

using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace cortex_m::native {
/* The upstream kernel (backends/cortex_m/ops/op_softmax.cpp). */
Tensor &softmax_out(KernelRuntimeContext &, const Tensor &, int64_t, int64_t, int64_t, int64_t,
                    int64_t, int64_t, Tensor &);
} // namespace cortex_m::native

namespace {

/* Differences between a row's maximum and an int8 element: 0..255. */
constexpr int32_t kDifferences = 256;
/* The sum's fixed-point format, as arm_nn_softmax_common_s8. */
constexpr int32_t kAccumBits = 12;
constexpr int32_t kOutputZeroPoint = -128;

/* Arguments this kernel computes exactly as CMSIS-NN does, or false (the
 * upstream kernel runs, and checks). */
bool handled(const Tensor &input, int64_t dim, int64_t output_zero_point, int64_t multiplier,
             int64_t shift, const Tensor &out) {
    if (input.scalar_type() != ScalarType::Char || out.scalar_type() != ScalarType::Char) {
        return false;
    }
    if (input.dim() < 1 || (dim >= 0 ? dim : dim + input.dim()) != input.dim() - 1) {
        return false;
    }
    if (out.numel() != input.numel() || input.numel() == 0 || input.size(input.dim() - 1) == 0 ||
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

void softmax_rows(const int8_t *input, int8_t *output, int32_t rows, int32_t row_size,
                  int32_t largest, const int32_t *table) {
    for (int32_t row = 0; row < rows; ++row, input += row_size, output += row_size) {
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
        const int32_t headroom = CLZ(sum);
        const int32_t shifted_scale = ONE_OVER1((sum > 0 ? sum << headroom : 0) - (1 << 31));
        const int32_t bits_over_unit = kAccumBits - headroom + 23;
        for (int32_t col = 0; col < row_size; ++col) {
            const int32_t d = max - input[col];
            if (d <= largest) {
                const int32_t result =
                    DIV_POW2(MUL_SAT(shifted_scale, table[d]), bits_over_unit) + NN_Q7_MIN;
                output[col] = static_cast<int8_t>(CLAMP(result, NN_Q7_MAX, NN_Q7_MIN));
            } else {
                output[col] = NN_Q7_MIN;
            }
        }
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
    const int32_t row_size = static_cast<int32_t>(input.size(input.dim() - 1));
    const int32_t rows = static_cast<int32_t>(input.numel()) / row_size;
    softmax_rows(input.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(), rows, row_size,
                 static_cast<int32_t>(largest), exponentials);
    return out;
}

} // namespace et_zephyr::native
