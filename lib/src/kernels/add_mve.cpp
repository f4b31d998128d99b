/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_add.out for Helium (MVE): the arithmetic of CMSIS-NN's
 * arm_elementwise_add_s8 (each input offset, shifted left by 20 and
 * requantized; their sum requantized, offset and clamped; double rounding)
 * with every constant a scalar operand, where GCC 12 keeps CMSIS-NN's in
 * vectors it spills and reloads (55 instructions per 4 outputs). For inputs
 * of the output's sizes and dim order whose three shifts are 0 or right
 * shifts (a quantizer's scales for an add); a channel broadcast, or a left
 * shift, goes to the upstream kernel. Bit-identical outputs.
 */

#include <arm_mve.h>
#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "upstream_kernels.h"

using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

/* op_quantized_add.cpp's: the inputs' precision before their requantization. */
constexpr int32_t kLeftShift = 20;

/* A requantization whose shift is 0 or right: multiplier (Q31), shift <= 0,
 * and the shift that takes a value's sign bit down to the rounding's fix-up
 * (-31; -32 where the shift is 0 and there is no fix-up). */
struct RightScale {
    int32_t multiplier;
    int32_t shift;
    int32_t sign_shift;
};

bool right_scale(int64_t multiplier, int64_t shift, RightScale *scale) {
    if (multiplier < INT32_MIN || multiplier > INT32_MAX || shift > 0 || shift < -31) {
        return false;
    }
    scale->multiplier = static_cast<int32_t>(multiplier);
    scale->shift = static_cast<int32_t>(shift);
    scale->sign_shift = shift < 0 ? -31 : -32;
    return true;
}

bool same_layout(const Tensor &a, const Tensor &b) {
    if (a.dim() != b.dim()) {
        return false;
    }
    for (ssize_t d = 0; d < a.dim(); d++) {
        if (a.size(d) != b.size(d) || a.dim_order()[d] != b.dim_order()[d]) {
            return false;
        }
    }
    return true;
}

/*
 * arm_requantize_mve without a left shift: vqrdmulh, then
 * arm_divide_by_power_of_two_mve, whose fix-up subtracts 1 from a negative
 * value before a rounding shift (none for a shift of 0: the sign bit shifted
 * out entirely).
 */
__attribute__((always_inline)) inline int32x4_t requantize(int32x4_t value, RightScale scale) {
    const int32x4_t product = vqrdmulhq_n_s32(value, scale.multiplier);
    const uint32x4_t negative = vshlq_r_u32(vreinterpretq_u32_s32(product), scale.sign_shift);
    return vrshlq_n_s32(vqsubq_s32(product, vreinterpretq_s32_u32(negative)), scale.shift);
}

/* A call's constants: the offsets shifted left with the values (2^20 (x + offset)
 * as one multiply-add), the output's offset and clamp. */
struct Terms {
    RightScale scale1;
    RightScale scale2;
    RightScale scale_out;
    int32_t shifted_offset1;
    int32_t shifted_offset2;
    int32_t output_offset;
    int32x4_t activation_min;
    int32x4_t activation_max;
};

/* 4 outputs of int8 inputs in int32 lanes. */
__attribute__((always_inline)) inline int32x4_t sum_of(int32x4_t x1, int32x4_t x2, const Terms &t) {
    const int32x4_t scale = vdupq_n_s32(1 << kLeftShift);
    x1 = vmlasq_n_s32(x1, scale, t.shifted_offset1);
    x2 = vmlasq_n_s32(x2, scale, t.shifted_offset2);
    const int32x4_t sum =
        requantize(vaddq_s32(requantize(x1, t.scale1), requantize(x2, t.scale2)), t.scale_out);
    return vminq_s32(vmaxq_s32(vaddq_n_s32(sum, t.output_offset), t.activation_min),
                     t.activation_max);
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_add_out(KernelRuntimeContext &context, const Tensor &input1,
                          int64_t input1_zero_point, int64_t input1_multiplier,
                          int64_t input1_shift, const Tensor &input2, int64_t input2_zero_point,
                          int64_t input2_multiplier, int64_t input2_shift,
                          int64_t output_zero_point, int64_t output_multiplier,
                          int64_t output_shift, int64_t activation_min, int64_t activation_max,
                          Tensor &out) {
    RightScale scale1;
    RightScale scale2;
    RightScale scale_out;
    if (input1.scalar_type() != ScalarType::Char || input2.scalar_type() != ScalarType::Char ||
        out.scalar_type() != ScalarType::Char || !same_layout(input1, out) ||
        !same_layout(input2, out) || !right_scale(input1_multiplier, input1_shift, &scale1) ||
        !right_scale(input2_multiplier, input2_shift, &scale2) ||
        !right_scale(output_multiplier, output_shift, &scale_out)) {
        return cortex_m::native::quantized_add_out(
            context, input1, input1_zero_point, input1_multiplier, input1_shift, input2,
            input2_zero_point, input2_multiplier, input2_shift, output_zero_point,
            output_multiplier, output_shift, activation_min, activation_max, out);
    }
    const int8_t *a = input1.const_data_ptr<int8_t>();
    const int8_t *b = input2.const_data_ptr<int8_t>();
    int8_t *dst = out.mutable_data_ptr<int8_t>();
    /* CMSIS-NN adds offsets, the negated zero points. */
    const Terms terms{scale1,
                      scale2,
                      scale_out,
                      static_cast<int32_t>(-input1_zero_point) * (1 << kLeftShift),
                      static_cast<int32_t>(-input2_zero_point) * (1 << kLeftShift),
                      static_cast<int32_t>(output_zero_point),
                      vdupq_n_s32(static_cast<int32_t>(activation_min)),
                      vdupq_n_s32(static_cast<int32_t>(activation_max))};
    int32_t left = static_cast<int32_t>(out.numel());
    for (; left >= 8; left -= 8, a += 8, b += 8, dst += 8) {
        vstrbq_s32(dst, sum_of(vldrbq_s32(a), vldrbq_s32(b), terms));
        vstrbq_s32(dst + 4, sum_of(vldrbq_s32(a + 4), vldrbq_s32(b + 4), terms));
    }
    for (; left > 0; left -= 4, a += 4, b += 4, dst += 4) {
        const mve_pred16_t valid = vctp32q(static_cast<uint32_t>(left));
        vstrbq_p_s32(dst, sum_of(vldrbq_z_s32(a, valid), vldrbq_z_s32(b, valid), terms), valid);
    }
    return out;
}

} // namespace et_zephyr::native
