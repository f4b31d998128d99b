/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::quantized_gru.out: a whole GRU layer, every time step, from a zero state
 * or a carried one.
 * CMSIS-NN has no GRU; this is its LSTM's arithmetic rearranged for PyTorch's GRU
 * (gates reset r, update z, candidate n, in that order):
 *
 *   r = sigmoid(W_r x + R_r h + b_r)     z = sigmoid(W_z x + R_z h + b_z)
 *   n = tanh(W_n x + b_in + r * (R_n h + b_hn))
 *   h = (1 - z) * n + z * h
 *
 * with CMSIS-NN's pieces: each side of a gate arm_nn_vec_mat_mul_result_acc_s8_s16's
 * arithmetic (gate_products.h) into an int16 in Q3.12 (saturating), arm_nn_activation_s16's
 * sigmoid and tanh to Q0.15 (on Helium activation_s16_mve.h's), r * (R_n h + b_hn) added by
 * arm_elementwise_mul_acc_s16. The new h is requantized from Q0.15 products in one loop of
 * this file's. Sequences run one at a time; h lives in the output (the first step reads it
 * as the output's zero point, real zero: the recurrent products are then exactly zero and
 * b_hn remains), the scratch holds four int16 vectors of the hidden size. With last_step
 * the output is the last h only ([B, H]), each step overwriting the one before (a step
 * reads all of h before it writes it). With a carried state (et-export --stateful) the
 * first step reads hidden_in instead, and the last h is copied to hidden_out. The host
 * reference is scripts/et_zephyr/reference/gru.py.
 */

#include <stdint.h>
#include <string.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"
#include "arm_nnsupportfunctions.h"
#include "gate_products.h"
#include "recurrent_checks.h"

using executorch::runtime::Error;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;
using OptionalTensor = std::optional<Tensor>;

namespace {

constexpr int64_t kGates = 3;
constexpr size_t kGateScales = 4 * kGates; /* per gate: input and hidden multiplier, shift */
constexpr size_t kStateScales = 6;         /* r * n_h, (1 - z) * n, z * h: multiplier, shift */
constexpr int32_t kScratchVectors = 4;     /* r, z, the candidate's input and hidden sides */
constexpr int32_t kOne = 1 << 15;          /* 1.0 in Q0.15 */
enum Gate { kReset = 0, kUpdate = 1, kCandidate = 2 };

struct Layer {
    et_zephyr::native::recurrent::GateSide input_sides[kGates];  /* W x + b_i, per gate */
    et_zephyr::native::recurrent::GateSide hidden_sides[kGates]; /* R h + b_h, per gate */
    const int64_t *state_scales;                                 /* [6] */
    int32_t hidden;
    int32_t zero_point;
    int16_t *reset;
    int16_t *update;
    int16_t *input_side;
    int16_t *hidden_side;
};

/* sigmoid(input side + hidden side) of gate g into dst. */
void sigmoid_gate(const Layer &layer, Gate g, const int8_t *x, const int8_t *h, int16_t *dst) {
    et_zephyr::native::recurrent::gate_into(layer.input_sides[g], x, &layer.hidden_sides[g], h,
                                            dst);
    et_zephyr::native::recurrent::activate(dst, dst, layer.hidden, 0, ARM_SIGMOID);
}

/* One step: h_out from x and h (h_out may be h: h is read before it is written). */
void step(const Layer &layer, const int8_t *x, const int8_t *h, int8_t *h_out) {
    const int32_t size = layer.hidden;
    sigmoid_gate(layer, kReset, x, h, layer.reset);
    sigmoid_gate(layer, kUpdate, x, h, layer.update);
    using et_zephyr::native::recurrent::gate_into;
    gate_into(layer.input_sides[kCandidate], x, nullptr, nullptr, layer.input_side);
    gate_into(layer.hidden_sides[kCandidate], h, nullptr, nullptr, layer.hidden_side);
    const int64_t *state = layer.state_scales;
    arm_elementwise_mul_acc_s16(layer.reset, layer.hidden_side, 0, 0, layer.input_side, 0,
                                static_cast<int32_t>(state[0]), static_cast<int32_t>(state[1]),
                                INT16_MIN, INT16_MAX, size);
    int16_t *const candidate = layer.hidden_side;
    et_zephyr::native::recurrent::activate(layer.input_side, candidate, size, 0, ARM_TANH);
    for (int32_t i = 0; i < size; ++i) {
        const int32_t z = layer.update[i];
        const int32_t kept =
            arm_nn_requantize((kOne - z) * candidate[i], static_cast<int32_t>(state[2]),
                              static_cast<int32_t>(state[3]));
        const int32_t carried =
            arm_nn_requantize(z * (h[i] - layer.zero_point), static_cast<int32_t>(state[4]),
                              static_cast<int32_t>(state[5]));
        h_out[i] =
            static_cast<int8_t>(CLAMP(kept + carried + layer.zero_point, INT8_MAX, INT8_MIN));
    }
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_gru_out(KernelRuntimeContext &context, const Tensor &input,
                          const Tensor &input_weights, const Tensor &hidden_weights,
                          const Tensor &input_biases, const Tensor &hidden_biases,
                          ArrayRef<int64_t> gate_scales, ArrayRef<int64_t> state_scales,
                          int64_t output_zero_point, bool batch_first, bool last_step,
                          const OptionalTensor &hidden_in, const OptionalTensor &hidden_out,
                          const Tensor &scratch, Tensor &out) {
    namespace recurrent = et_zephyr::native::recurrent;
    if (!recurrent::valid_layer(input, input_weights, hidden_weights, input_biases, hidden_biases,
                                kGates, gate_scales, kGateScales, state_scales, kStateScales,
                                output_zero_point, batch_first, last_step, out) ||
        !recurrent::valid_state(hidden_in, hidden_out, ScalarType::Char,
                                input.size(batch_first ? 0 : 1), hidden_weights.size(2))) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto hidden = static_cast<int32_t>(hidden_weights.size(2));
    const auto features = static_cast<int32_t>(input.size(2));
    const auto batch = static_cast<int32_t>(input.size(batch_first ? 0 : 1));
    const auto steps = static_cast<int32_t>(input.size(batch_first ? 1 : 0));
    auto *const vectors = scratch.mutable_data_ptr<uint8_t>();
    if (scratch.nbytes() < kScratchVectors * hidden * sizeof(int16_t) ||
        reinterpret_cast<uintptr_t>(vectors) % alignof(int16_t) != 0) {
        context.fail(Error::MemoryAllocationFailed);
        return out;
    }
    int16_t *const buffers = reinterpret_cast<int16_t *>(vectors);
    Layer layer = {};
    const auto *const w_input = input_weights.const_data_ptr<int8_t>();
    const auto *const w_hidden = hidden_weights.const_data_ptr<int8_t>();
    const auto *const b_input = input_biases.const_data_ptr<int32_t>();
    const auto *const b_hidden = hidden_biases.const_data_ptr<int32_t>();
    for (int32_t g = 0; g < kGates; ++g) {
        using et_zephyr::native::recurrent::gate_side;
        const int64_t *const scales = gate_scales.data() + 4 * g;
        layer.input_sides[g] = gate_side(w_input + g * hidden * features, b_input + g * hidden,
                                         static_cast<int32_t>(scales[0]),
                                         static_cast<int32_t>(scales[1]), features, hidden);
        layer.hidden_sides[g] = gate_side(w_hidden + g * hidden * hidden, b_hidden + g * hidden,
                                          static_cast<int32_t>(scales[2]),
                                          static_cast<int32_t>(scales[3]), hidden, hidden);
    }
    layer.state_scales = state_scales.data();
    layer.hidden = hidden;
    layer.zero_point = static_cast<int32_t>(output_zero_point);
    layer.reset = buffers;
    layer.update = buffers + hidden;
    layer.input_side = buffers + 2 * hidden;
    layer.hidden_side = buffers + 3 * hidden;
    const int8_t *const x = input.const_data_ptr<int8_t>();
    int8_t *const h = out.mutable_data_ptr<int8_t>();
    const int8_t *const carried =
        hidden_in.has_value() ? hidden_in->const_data_ptr<int8_t>() : nullptr;
    for (int32_t b = 0; b < batch; ++b) {
        const int8_t *previous = carried != nullptr ? carried + b * hidden : nullptr;
        for (int32_t t = 0; t < steps; ++t) {
            const int32_t row = batch_first ? b * steps + t : t * batch + b;
            int8_t *const h_out = h + (last_step ? b : row) * hidden;
            if (previous == nullptr) {
                memset(h_out, layer.zero_point, hidden);
                previous = h_out;
            }
            step(layer, x + row * features, previous, h_out);
            previous = h_out;
        }
        if (hidden_out.has_value()) {
            memcpy(hidden_out->mutable_data_ptr<int8_t>() + b * hidden, previous, hidden);
        }
    }
    return out;
}

} // namespace et_zephyr::native
