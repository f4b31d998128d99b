/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::quantized_lstm.out: a whole LSTM layer, every time step, in CMSIS-NN's
 * arithmetic for arm_lstm_unidirectional_s8 (int8 input, output and weights, int16 gates
 * and cell state), from a zero state or a carried one. Each step is arm_nn_lstm_step_s8's
 * for one sequence, its gates' products gate_products.h's (on the DSP and scalar tiers
 * et-zephyr's 4-row loops, else CMSIS-NN's own), its sigmoid and tanh CMSIS-NN's
 * arm_nn_activation_s16 (on Helium activation_s16_mve.h's), its elementwise products
 * CMSIS-NN's. The program holds the layer's weights once, and the planned arena the input,
 * the output and the scratch's three int16 vectors of batch x hidden values (two for the
 * gates, one for the cell state). Sequences run one at a time (the same arithmetic as
 * CMSIS-NN's batched time-major steps, element by element), h in the output: each step
 * reads the h the one before wrote (a step reads all of h before it writes it); from a
 * zero state the first step has no recurrent term, as CMSIS-NN's loop. With last_step the
 * output is the last step's h only ([B, H], where a model reads y[:, -1]), each step
 * overwriting the one before. With a carried state (et-export --stateful) the first step
 * reads hidden_in and the cell state starts from cell_in, running in cell_out; the last h
 * is copied to hidden_out. Gates are in PyTorch's order (input, forget, cell, output); the
 * parameters are et-export's (scripts/et_zephyr/reference/lstm.py, whose arithmetic is
 * this kernel's).
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

constexpr int64_t kGates = 4;
constexpr size_t kGateScales = 4 * kGates; /* per gate: input and hidden multiplier, shift */
constexpr size_t kStateScales = 6;         /* f * c, i * g, o * tanh(c): multiplier, shift */
constexpr int32_t kScratchVectors = 3;     /* temp1, temp2, cell state */
constexpr int32_t kCellClip = INT16_MAX;   /* PyTorch clips nothing */
/* reference/lstm.py cell_scale_power: the cell's range within [2^-12, 2^8]. */
constexpr int64_t kMinCellPower = -27;
constexpr int64_t kMaxCellPower = -7;

bool valid(const Tensor &input, const Tensor &input_weights, const Tensor &hidden_weights,
           const Tensor &input_biases, const Tensor &hidden_biases, ArrayRef<int64_t> gate_scales,
           ArrayRef<int64_t> state_scales, int64_t output_zero_point, int64_t cell_scale_power,
           bool batch_first, bool last_step, const OptionalTensor &hidden_in,
           const OptionalTensor &cell_in, const OptionalTensor &hidden_out,
           const OptionalTensor &cell_out, const Tensor &out) {
    namespace recurrent = et_zephyr::native::recurrent;
    if (!recurrent::valid_layer(input, input_weights, hidden_weights, input_biases, hidden_biases,
                                kGates, gate_scales, kGateScales, state_scales, kStateScales,
                                output_zero_point, batch_first, last_step, out)) {
        return false;
    }
    const int64_t batch = input.size(batch_first ? 0 : 1);
    const int64_t hidden = hidden_weights.size(2);
    return cell_scale_power >= kMinCellPower && cell_scale_power <= kMaxCellPower &&
           recurrent::valid_state(hidden_in, hidden_out, ScalarType::Char, batch, hidden) &&
           recurrent::valid_state(cell_in, cell_out, ScalarType::Short, batch, hidden) &&
           hidden_in.has_value() == cell_in.has_value();
}

/* A gate: its two sides and activation. */
struct Gate {
    et_zephyr::native::recurrent::GateSide input;
    et_zephyr::native::recurrent::GateSide hidden;
    arm_nn_activation_type activation;
};

/* The layer as a step reads it: CMSIS-NN's cmsis_nn_lstm_params, the gates ours. */
struct Layer {
    Gate input_gate;
    Gate forget_gate;
    Gate cell_gate;
    Gate output_gate;
    int32_t hidden;
    int32_t forget_to_cell_multiplier;
    int32_t forget_to_cell_shift;
    int32_t input_to_cell_multiplier;
    int32_t input_to_cell_shift;
    int32_t cell_scale_power;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t output_offset;
};

/* The activation of a gate's two sides, into dst (hidden values); without h (a zero
 * state's first step) the input side only: arm_nn_lstm_calculate_gate_s8_s16. */
void gate(const Gate &g, const int8_t *x, const int8_t *h, int16_t *dst) {
    et_zephyr::native::recurrent::gate_into(g.input, x, h != nullptr ? &g.hidden : nullptr, h, dst);
    et_zephyr::native::recurrent::activate(dst, dst, g.input.rows, 0, g.activation);
}

/* One time step of one sequence: arm_nn_lstm_step_s8 with a batch of one, its gates
 * gate()'s; temp1 and temp2 hold hidden values each. */
void step(const Layer &p, int16_t *temp1, int16_t *temp2, int16_t *cell, const int8_t *x,
          const int8_t *h, int8_t *h_out) {
    const int32_t size = p.hidden;
    gate(p.forget_gate, x, h, temp1);
    arm_elementwise_mul_s16(temp1, cell, 0, 0, cell, 0, p.forget_to_cell_multiplier,
                            p.forget_to_cell_shift, NN_Q15_MIN, NN_Q15_MAX, size);
    gate(p.input_gate, x, h, temp1);
    gate(p.cell_gate, x, h, temp2);
    arm_elementwise_mul_acc_s16(temp1, temp2, 0, 0, cell, 0, p.input_to_cell_multiplier,
                                p.input_to_cell_shift, -kCellClip, kCellClip, size);
    gate(p.output_gate, x, h, temp1);
    et_zephyr::native::recurrent::activate(cell, temp2, size, p.cell_scale_power + 12, ARM_TANH);
    arm_elementwise_mul_s16_s8(temp1, temp2, h_out, p.output_offset, p.output_multiplier,
                               p.output_shift, size, 1, 1);
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_lstm_out(KernelRuntimeContext &context, const Tensor &input,
                           const Tensor &input_weights, const Tensor &hidden_weights,
                           const Tensor &input_biases, const Tensor &hidden_biases,
                           ArrayRef<int64_t> gate_scales, ArrayRef<int64_t> state_scales,
                           int64_t output_zero_point, int64_t cell_scale_power, bool batch_first,
                           bool last_step, const OptionalTensor &hidden_in,
                           const OptionalTensor &cell_in, const OptionalTensor &hidden_out,
                           const OptionalTensor &cell_out, const Tensor &scratch, Tensor &out) {
    if (!valid(input, input_weights, hidden_weights, input_biases, hidden_biases, gate_scales,
               state_scales, output_zero_point, cell_scale_power, batch_first, last_step, hidden_in,
               cell_in, hidden_out, cell_out, out)) {
        context.fail(Error::InvalidArgument);
        return out;
    }
    const auto hidden = static_cast<int32_t>(hidden_weights.size(2));
    const auto features = static_cast<int32_t>(input.size(2));
    const auto batch = static_cast<int32_t>(input.size(batch_first ? 0 : 1));
    const auto steps = static_cast<int32_t>(input.size(batch_first ? 1 : 0));
    const size_t vector_bytes = static_cast<size_t>(batch) * hidden * sizeof(int16_t);
    auto *const buffers = scratch.mutable_data_ptr<uint8_t>();
    if (scratch.nbytes() < kScratchVectors * vector_bytes ||
        reinterpret_cast<uintptr_t>(buffers) % alignof(int16_t) != 0) {
        context.fail(Error::MemoryAllocationFailed);
        return out;
    }

    static constexpr arm_nn_activation_type kActivations[kGates] = {ARM_SIGMOID, ARM_SIGMOID,
                                                                    ARM_TANH, ARM_SIGMOID};
    const auto *const w_input = input_weights.const_data_ptr<int8_t>();
    const auto *const w_hidden = hidden_weights.const_data_ptr<int8_t>();
    const auto *const b_input = input_biases.const_data_ptr<int32_t>();
    const auto *const b_hidden = hidden_biases.const_data_ptr<int32_t>();
    Gate gates[kGates] = {};
    for (int32_t g = 0; g < kGates; ++g) {
        using et_zephyr::native::recurrent::gate_side;
        const int64_t *const scales = gate_scales.data() + 4 * g;
        gates[g].input = gate_side(w_input + g * hidden * features, b_input + g * hidden,
                                   static_cast<int32_t>(scales[0]), static_cast<int32_t>(scales[1]),
                                   features, hidden);
        gates[g].hidden = gate_side(w_hidden + g * hidden * hidden, b_hidden + g * hidden,
                                    static_cast<int32_t>(scales[2]),
                                    static_cast<int32_t>(scales[3]), hidden, hidden);
        gates[g].activation = kActivations[g];
    }
    const Layer layer = {gates[0],
                         gates[1],
                         gates[2],
                         gates[3],
                         hidden,
                         static_cast<int32_t>(state_scales[0]),
                         static_cast<int32_t>(state_scales[1]),
                         static_cast<int32_t>(state_scales[2]),
                         static_cast<int32_t>(state_scales[3]),
                         static_cast<int32_t>(cell_scale_power),
                         static_cast<int32_t>(state_scales[4]),
                         static_cast<int32_t>(state_scales[5]),
                         static_cast<int32_t>(output_zero_point)};

    auto *const vectors = reinterpret_cast<int16_t *>(buffers);
    int16_t *cell = vectors + 2 * batch * hidden;
    if (cell_in.has_value()) {
        /* The cell state runs where it ends, from a copy of the carried one. */
        cell = cell_out->mutable_data_ptr<int16_t>();
        memcpy(cell, cell_in->const_data_ptr<int16_t>(), vector_bytes);
    } else {
        memset(cell, 0, vector_bytes);
    }
    const int8_t *const x = input.const_data_ptr<int8_t>();
    int8_t *const h = out.mutable_data_ptr<int8_t>();
    const int8_t *const h0 = hidden_in.has_value() ? hidden_in->const_data_ptr<int8_t>() : nullptr;
    for (int32_t b = 0; b < batch; ++b) {
        int16_t *const cell_b = cell + b * hidden;
        const int8_t *previous = h0 != nullptr ? h0 + b * hidden : nullptr;
        for (int32_t t = 0; t < steps; ++t) {
            const int32_t row = batch_first ? b * steps + t : t * batch + b;
            int8_t *const h_out = h + (last_step ? b : row) * hidden;
            step(layer, vectors, vectors + hidden, cell_b, x + row * features, previous, h_out);
            previous = h_out;
        }
        if (hidden_out.has_value() && previous != nullptr) {
            memcpy(hidden_out->mutable_data_ptr<int8_t>() + b * hidden, previous, hidden);
        }
    }
    return out;
}

} // namespace et_zephyr::native
