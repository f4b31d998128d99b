/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::quantized_layer_norm.out: LayerNorm over the last dimension of an
 * int8 tensor (transformers' pre-norm), which CMSIS-NN has no kernel for. The
 * arithmetic is layer_norm.h's, integer only, so the device's bytes are the
 * host reference's (scripts/et_zephyr/reference/layer_norm.py).
 */

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "layer_norm.h"

using executorch::runtime::Error;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;

namespace {

bool is_int8(int64_t value) {
    return value >= INT8_MIN && value <= INT8_MAX;
}

bool valid(const Tensor &input, const Tensor &multipliers, const Tensor &biases,
           int64_t input_zero_point, int64_t output_zero_point, int64_t epsilon, int64_t shift,
           const Tensor &out) {
    const auto channels = multipliers.numel();
    return input.scalar_type() == ScalarType::Char && out.scalar_type() == ScalarType::Char &&
           multipliers.scalar_type() == ScalarType::Int &&
           biases.scalar_type() == ScalarType::Int && biases.numel() == channels && channels > 0 &&
           channels <= et_zephyr::native::kLayerNormMaxChannels && input.dim() > 0 &&
           input.size(input.dim() - 1) == channels && out.numel() == input.numel() &&
           is_int8(input_zero_point) && is_int8(output_zero_point) && epsilon >= 0 &&
           epsilon <= (int64_t{1} << 61) && shift >= 1 && shift <= 46;
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_layer_norm_out(KernelRuntimeContext &context, const Tensor &input,
                                 const Tensor &multipliers, const Tensor &biases,
                                 int64_t input_zero_point, int64_t output_zero_point,
                                 int64_t epsilon, int64_t shift, Tensor &out) {
    if (!valid(input, multipliers, biases, input_zero_point, output_zero_point, epsilon, shift,
               out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const LayerNorm params{
        multipliers.const_data_ptr<int32_t>(),
        biases.const_data_ptr<int32_t>(),
        static_cast<int32_t>(multipliers.numel()),
        static_cast<int32_t>(input_zero_point),
        static_cast<int32_t>(output_zero_point),
        epsilon,
        static_cast<int32_t>(shift),
    };
    layer_norm(params, input.const_data_ptr<int8_t>(), out.mutable_data_ptr<int8_t>(),
               static_cast<int32_t>(input.numel() / multipliers.numel()));
    return out;
}

} // namespace et_zephyr::native
