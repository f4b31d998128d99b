/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * et_zephyr::quantized_lstm.out: a whole LSTM layer, every time step, on CMSIS-NN's
 * arm_lstm_unidirectional_s8 (int8 input, output and weights, int16 gates and cell
 * state), from a zero state. The program holds the layer's weights once, and the planned
 * arena the input, the output and the scratch's three int16 vectors of batch x hidden
 * values (two for the gates, one for the cell state). With last_step the output is the
 * last step's h only ([B, H], where a model reads y[:, -1]): the steps run one by one on
 * arm_nn_lstm_step_s8, each reading the h the one before wrote in the output (a step
 * reads all of h before it writes it), so no other step's h is kept. With a carried state
 * (et-export --stateful) the layer starts from hidden_in and cell_in and leaves its final
 * h and cell state in hidden_out and cell_out, which it runs in: CMSIS-NN's own initial
 * state (cmsis_nn_lstm_context.hidden_state). Gates are in PyTorch's order
 * (input, forget, cell, output); the parameters are et-export's
 * (scripts/et_zephyr/reference/lstm.py, whose arithmetic is this kernel's).
 */

#include <stdint.h>
#include <string.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "arm_nnfunctions.h"
#include "arm_nnsupportfunctions.h"
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
    cmsis_nn_lstm_gate gates[kGates] = {};
    for (int32_t g = 0; g < kGates; ++g) {
        const int64_t *const scales = gate_scales.data() + 4 * g;
        gates[g].input_multiplier = static_cast<int32_t>(scales[0]);
        gates[g].input_shift = static_cast<int32_t>(scales[1]);
        gates[g].input_weights = w_input + g * hidden * features;
        gates[g].input_effective_bias = b_input + g * hidden;
        gates[g].hidden_multiplier = static_cast<int32_t>(scales[2]);
        gates[g].hidden_shift = static_cast<int32_t>(scales[3]);
        gates[g].hidden_weights = w_hidden + g * hidden * hidden;
        gates[g].hidden_effective_bias = b_hidden + g * hidden;
        gates[g].bias = nullptr;
        gates[g].activation_type = kActivations[g];
    }
    cmsis_nn_lstm_params params = {};
    params.time_major = batch_first ? 0 : 1;
    params.batch_size = batch;
    params.time_steps = steps;
    params.input_size = features;
    params.hidden_size = hidden;
    params.forget_to_cell_multiplier = static_cast<int32_t>(state_scales[0]);
    params.forget_to_cell_shift = static_cast<int32_t>(state_scales[1]);
    params.input_to_cell_multiplier = static_cast<int32_t>(state_scales[2]);
    params.input_to_cell_shift = static_cast<int32_t>(state_scales[3]);
    params.cell_clip = kCellClip;
    params.cell_scale_power = static_cast<int32_t>(cell_scale_power);
    params.output_multiplier = static_cast<int32_t>(state_scales[4]);
    params.output_shift = static_cast<int32_t>(state_scales[5]);
    params.output_offset = static_cast<int32_t>(output_zero_point);
    params.input_gate = gates[0];
    params.forget_gate = gates[1];
    params.cell_gate = gates[2];
    params.output_gate = gates[3];

    cmsis_nn_lstm_context state = {buffers, buffers + vector_bytes, buffers + 2 * vector_bytes,
                                   nullptr};
    const int8_t *const x = input.const_data_ptr<int8_t>();
    int8_t *const h = out.mutable_data_ptr<int8_t>();
    const size_t state_bytes = static_cast<size_t>(batch) * hidden;
    if (hidden_in.has_value()) {
        /* The state runs where it ends: in the outputs, from a copy of the inputs. */
        state.hidden_state = hidden_out->mutable_data_ptr<int8_t>();
        state.cell_state = cell_out->mutable_data_ptr<int16_t>();
        memcpy(state.hidden_state, hidden_in->const_data_ptr<int8_t>(), state_bytes);
        memcpy(state.cell_state, cell_in->const_data_ptr<int16_t>(), vector_bytes);
    } else {
        memset(state.cell_state, 0, vector_bytes);
    }
    const auto *const h0 = static_cast<const int8_t *>(state.hidden_state);
    arm_cmsis_nn_status status = ARM_CMSIS_NN_SUCCESS;
    if (!last_step) {
        /* From hidden_state (nullptr: zero), leaving the last h there. */
        status = arm_lstm_unidirectional_s8(x, h, &params, &state);
    } else if (!batch_first) {
        /* From a zero state the first step has no recurrent term, as CMSIS-NN's loop. */
        const int8_t *previous = h0;
        for (int32_t t = 0; t < steps && status == ARM_CMSIS_NN_SUCCESS; ++t) {
            status = arm_nn_lstm_step_s8(x + t * batch * features, previous, h, &params, &state, 1);
            previous = h;
        }
    } else {
        /* Batch-major: one sequence at a time, as arm_lstm_unidirectional_s8 runs them. */
        cmsis_nn_lstm_params sequence = params;
        sequence.batch_size = 1;
        for (int32_t b = 0; b < batch && status == ARM_CMSIS_NN_SUCCESS; ++b) {
            cmsis_nn_lstm_context one = state;
            one.cell_state = static_cast<int16_t *>(state.cell_state) + b * hidden;
            int8_t *const h_b = h + b * hidden;
            const int8_t *previous = h0 != nullptr ? h0 + b * hidden : nullptr;
            for (int32_t t = 0; t < steps && status == ARM_CMSIS_NN_SUCCESS; ++t) {
                status = arm_nn_lstm_step_s8(x + (b * steps + t) * features, previous, h_b,
                                             &sequence, &one, 1);
                previous = h_b;
            }
        }
    }
    if (last_step && hidden_in.has_value()) {
        memcpy(state.hidden_state, h, state_bytes);
    }
    if (status != ARM_CMSIS_NN_SUCCESS) {
        context.fail(Error::InvalidArgument);
    }
    return out;
}

} // namespace et_zephyr::native
