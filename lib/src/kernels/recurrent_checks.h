/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The operands et-zephyr's whole recurrent layers (quantized_lstm.cpp,
 * quantized_gru.cpp) take: int8 input [B, T, I] or [T, B, I] and output (every
 * step's h, or with last_step the last one's [B, H]), int8 weights [gates, H, I]
 * and [gates, H, H], int32 biases [gates, H], requantization scales as
 * (multiplier, shift) pairs, a carried state's [B, H] tensors, all in the default dim
 * order.
 */

#ifndef ET_ZEPHYR_KERNELS_RECURRENT_CHECKS_H_
#define ET_ZEPHYR_KERNELS_RECURRENT_CHECKS_H_

#include <stddef.h>
#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/exec_aten/util/dim_order_util.h>

namespace et_zephyr::native::recurrent {

using torch::executor::ArrayRef;
using torch::executor::ScalarType;
using torch::executor::Tensor;

inline bool is_default_order(const Tensor &t) {
    return executorch::runtime::is_contiguous_dim_order(t.dim_order().data(), t.dim());
}

inline bool has_shape(const Tensor &t, ScalarType type, int64_t d0, int64_t d1, int64_t d2) {
    return t.scalar_type() == type && t.dim() == 3 && t.size(0) == d0 && t.size(1) == d1 &&
           t.size(2) == d2 && is_default_order(t);
}

/* `count` words: (multiplier, shift) pairs arm_nn_requantize takes. */
inline bool valid_scales(ArrayRef<int64_t> scales, size_t count) {
    if (scales.size() != count) {
        return false;
    }
    for (size_t k = 0; k < count; k += 2) {
        if (scales[k] < 0 || scales[k] > INT32_MAX || scales[k + 1] < -31 || scales[k + 1] > 31) {
            return false;
        }
    }
    return true;
}

inline bool valid_output(const Tensor &input, int64_t hidden, bool batch_first, bool last_step,
                         const Tensor &out) {
    if (!last_step) {
        return has_shape(out, ScalarType::Char, input.size(0), input.size(1), hidden);
    }
    return out.scalar_type() == ScalarType::Char && out.dim() == 2 &&
           out.size(0) == input.size(batch_first ? 0 : 1) && out.size(1) == hidden &&
           is_default_order(out);
}

/* A carried state (et-export --stateful): the input it starts from and the output it
 * ends in both given or both absent, each [batch, hidden] of `type`. */
inline bool valid_state(const std::optional<Tensor> &in, const std::optional<Tensor> &out,
                        ScalarType type, int64_t batch, int64_t hidden) {
    if (in.has_value() != out.has_value()) {
        return false;
    }
    const auto fits = [&](const Tensor &t) {
        return t.scalar_type() == type && t.dim() == 2 && t.size(0) == batch &&
               t.size(1) == hidden && is_default_order(t);
    };
    return !in.has_value() || (fits(*in) && fits(*out));
}

/* A layer of `gates` gates with `gate_words` gate scale words and `state_words`
 * state scale words. */
inline bool valid_layer(const Tensor &input, const Tensor &input_weights,
                        const Tensor &hidden_weights, const Tensor &input_biases,
                        const Tensor &hidden_biases, int64_t gates, ArrayRef<int64_t> gate_scales,
                        size_t gate_words, ArrayRef<int64_t> state_scales, size_t state_words,
                        int64_t output_zero_point, bool batch_first, bool last_step,
                        const Tensor &out) {
    if (input.dim() != 3 || hidden_weights.dim() != 3 || input.numel() == 0) {
        return false;
    }
    const int64_t hidden = hidden_weights.size(2);
    const int64_t features = input.size(2);
    return input.scalar_type() == ScalarType::Char && is_default_order(input) &&
           valid_output(input, hidden, batch_first, last_step, out) &&
           has_shape(input_weights, ScalarType::Char, gates, hidden, features) &&
           has_shape(hidden_weights, ScalarType::Char, gates, hidden, hidden) &&
           input_biases.scalar_type() == ScalarType::Int &&
           input_biases.numel() == gates * hidden &&
           hidden_biases.scalar_type() == ScalarType::Int &&
           hidden_biases.numel() == gates * hidden && valid_scales(gate_scales, gate_words) &&
           valid_scales(state_scales, state_words) && output_zero_point >= INT8_MIN &&
           output_zero_point <= INT8_MAX && input.numel() <= INT32_MAX && out.numel() <= INT32_MAX;
}

} // namespace et_zephyr::native::recurrent

#endif // ET_ZEPHYR_KERNELS_RECURRENT_CHECKS_H_
