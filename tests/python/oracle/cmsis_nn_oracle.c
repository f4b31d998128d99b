/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Flat-argument entry points into CMSIS-NN's C code, built for the host by
 * tests/python/test_reference_cmsis_nn.py (its scalar paths: no DSP, no Helium), so
 * the host reference can be compared with the library itself, operator by operator.
 */

#include <stdint.h>
#include <string.h>

#include "arm_nnfunctions.h"
#include "arm_nnsupportfunctions.h"

static int8_t scratch[1 << 20];

static cmsis_nn_context context(void) {
    cmsis_nn_context ctx = {scratch, sizeof(scratch)};
    return ctx;
}

void oracle_requantize(const int32_t *in, int32_t count, int32_t multiplier, int32_t shift,
                       int32_t *out) {
    for (int32_t i = 0; i < count; i++) {
        out[i] = arm_nn_requantize(in[i], multiplier, shift);
    }
}

/* NHWC images, one after another. */
int oracle_avgpool(const int8_t *in, int32_t n, int32_t h, int32_t w, int32_t c, int32_t kh,
                   int32_t kw, int32_t sh, int32_t sw, int32_t ph, int32_t pw, int32_t oh,
                   int32_t ow, int8_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_pool_params params = {{sw, sh}, {pw, ph}, {-128, 127}};
    cmsis_nn_dims input = {1, h, w, c}, filter = {1, kh, kw, 1}, output = {1, oh, ow, c};
    for (int32_t b = 0; b < n; b++) {
        if (arm_avgpool_s8(&ctx, &params, &input, in + b * h * w * c, &filter, &output,
                           out + b * oh * ow * c) != ARM_CMSIS_NN_SUCCESS) {
            return 1;
        }
    }
    return 0;
}

int oracle_maxpool(const int8_t *in, int32_t n, int32_t h, int32_t w, int32_t c, int32_t kh,
                   int32_t kw, int32_t sh, int32_t sw, int32_t ph, int32_t pw, int32_t oh,
                   int32_t ow, int32_t act_min, int32_t act_max, int8_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_pool_params params = {{sw, sh}, {pw, ph}, {act_min, act_max}};
    cmsis_nn_dims input = {1, h, w, c}, filter = {1, kh, kw, 1}, output = {1, oh, ow, c};
    for (int32_t b = 0; b < n; b++) {
        if (arm_max_pool_s8(&ctx, &params, &input, in + b * h * w * c, &filter, &output,
                            out + b * oh * ow * c) != ARM_CMSIS_NN_SUCCESS) {
            return 1;
        }
    }
    return 0;
}

/* 16x8: NHWC int16 images, the whole batch in one call. */
int oracle_pool_s16(const int16_t *in, int32_t n, int32_t h, int32_t w, int32_t c, int32_t kh,
                    int32_t kw, int32_t sh, int32_t sw, int32_t ph, int32_t pw, int32_t oh,
                    int32_t ow, int32_t act_min, int32_t act_max, int32_t average, int16_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_pool_params params = {{sw, sh}, {pw, ph}, {act_min, act_max}};
    cmsis_nn_dims input = {n, h, w, c}, filter = {1, kh, kw, 1}, output = {n, oh, ow, c};
    arm_cmsis_nn_status status =
        average ? arm_avgpool_s16(&ctx, &params, &input, in, &filter, &output, out)
                : arm_max_pool_s16(&ctx, &params, &input, in, &filter, &output, out);
    return status != ARM_CMSIS_NN_SUCCESS;
}

/* 16x8: int16 a + b, TensorFlow Lite's left shift of 15. */
int oracle_add_s16(const int16_t *a, const int16_t *b, int32_t count, int32_t a_mult,
                   int32_t a_shift, int32_t b_mult, int32_t b_shift, int32_t out_mult,
                   int32_t out_shift, int32_t act_min, int32_t act_max, int16_t *out) {
    return arm_elementwise_add_s16(a, b, 0, a_mult, a_shift, 0, b_mult, b_shift, 15, out, 0,
                                   out_mult, out_shift, act_min, act_max,
                                   count) != ARM_CMSIS_NN_SUCCESS;
}

void oracle_softmax(const int8_t *in, int32_t rows, int32_t row_size, int32_t mult, int32_t shift,
                    int32_t diff_min, int8_t *out) {
    arm_softmax_s8(in, rows, row_size, mult, shift, diff_min, out);
}

/* lhs [batch, rows, inner], rhs transposed [batch, cols, inner]. */
int oracle_batch_matmul(const int8_t *lhs, const int8_t *rhs, int32_t batch, int32_t rows,
                        int32_t cols, int32_t inner, int32_t lhs_offset, int32_t rhs_offset,
                        int32_t out_offset, int32_t mult, int32_t shift, int8_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_bmm_params params = {false, false, {lhs_offset, rhs_offset, out_offset, {-128, 127}}};
    cmsis_nn_per_tensor_quant_params quant = {mult, shift};
    cmsis_nn_dims lhs_dims = {1, batch, rows, inner}, rhs_dims = {1, batch, cols, inner};
    cmsis_nn_dims out_dims = {1, batch, rows, cols};
    return arm_batch_matmul_s8(&ctx, &params, &quant, &lhs_dims, lhs, &rhs_dims, rhs, &out_dims,
                               out) != ARM_CMSIS_NN_SUCCESS;
}

void oracle_add(const int8_t *a, const int8_t *b, int32_t count, int32_t a_offset, int32_t a_mult,
                int32_t a_shift, int32_t b_offset, int32_t b_mult, int32_t b_shift,
                int32_t left_shift, int32_t out_offset, int32_t out_mult, int32_t out_shift,
                int32_t act_min, int32_t act_max, int8_t *out) {
    arm_elementwise_add_s8(a, b, a_offset, a_mult, a_shift, b_offset, b_mult, b_shift, left_shift,
                           out, out_offset, out_mult, out_shift, act_min, act_max, count);
}

void oracle_mul(const int8_t *a, const int8_t *b, int32_t count, int32_t a_offset, int32_t b_offset,
                int32_t out_offset, int32_t out_mult, int32_t out_shift, int32_t act_min,
                int32_t act_max, int8_t *out) {
    arm_elementwise_mul_s8(a, b, a_offset, b_offset, out, out_offset, out_mult, out_shift, act_min,
                           act_max, count);
}

/* input [batches, in_features], weights [out_features, in_features]. */
int oracle_fully_connected(const int8_t *in, const int8_t *weights, const int32_t *bias,
                           int32_t batches, int32_t in_features, int32_t out_features,
                           int32_t in_offset, int32_t filter_offset, int32_t out_offset,
                           int32_t mult, int32_t shift, int32_t act_min, int32_t act_max,
                           int8_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_fc_params params = {in_offset, filter_offset, out_offset, {act_min, act_max}};
    cmsis_nn_per_tensor_quant_params quant = {mult, shift};
    cmsis_nn_dims input = {batches, 1, 1, in_features}, filter = {in_features, 1, 1, out_features};
    cmsis_nn_dims bias_dims = {1, 1, 1, out_features}, output = {batches, 1, 1, out_features};
    return arm_fully_connected_s8(&ctx, &params, &quant, &input, in, &filter, weights, &bias_dims,
                                  bias, &output, out) != ARM_CMSIS_NN_SUCCESS;
}

/* 16x8: int16 input [batches, in_features], int8 weights, int64 bias (NULL: none). */
int oracle_fully_connected_s16(const int16_t *in, const int8_t *weights, const int64_t *bias,
                               int32_t batches, int32_t in_features, int32_t out_features,
                               int32_t mult, int32_t shift, int32_t act_min, int32_t act_max,
                               int16_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_fc_params params = {0, 0, 0, {act_min, act_max}};
    cmsis_nn_per_tensor_quant_params quant = {mult, shift};
    cmsis_nn_dims input = {batches, 1, 1, in_features}, filter = {in_features, 1, 1, out_features};
    cmsis_nn_dims bias_dims = {1, 1, 1, out_features}, output = {batches, 1, 1, out_features};
    return arm_fully_connected_s16(&ctx, &params, &quant, &input, in, &filter, weights, &bias_dims,
                                   bias, &output, out) != ARM_CMSIS_NN_SUCCESS;
}

/* 16x8: NHWC int16 input, OHWI weights, int64 bias (NULL: none), per-channel
 * requantization. */
int oracle_convolve_s16(const int16_t *in, const int8_t *weights, const int64_t *bias,
                        const int32_t *mults, const int32_t *shifts, int32_t n, int32_t h,
                        int32_t w, int32_t c, int32_t oc, int32_t kh, int32_t kw, int32_t sh,
                        int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw, int32_t oh,
                        int32_t ow, int32_t act_min, int32_t act_max, int16_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_conv_params params = {0, 0, {sw, sh}, {pw, ph}, {dw, dh}, {act_min, act_max}};
    cmsis_nn_per_channel_quant_params quant = {(int32_t *)mults, (int32_t *)shifts};
    cmsis_nn_dims input = {n, h, w, c}, filter = {oc, kh, kw, c}, bias_dims = {1, 1, 1, oc};
    cmsis_nn_dims output = {n, oh, ow, oc};
    cmsis_nn_bias_data bias_data = {bias, false};
    return arm_convolve_wrapper_s16(&ctx, &params, &quant, &input, in, &filter, weights, &bias_dims,
                                    &bias_data, &output, out) != ARM_CMSIS_NN_SUCCESS;
}

/* 16x8: NHWC int16 input, [1, H, W, C * multiplier] weights, int64 bias. */
int oracle_depthwise_s16(const int16_t *in, const int8_t *weights, const int64_t *bias,
                         const int32_t *mults, const int32_t *shifts, int32_t n, int32_t h,
                         int32_t w, int32_t c, int32_t multiplier, int32_t kh, int32_t kw,
                         int32_t sh, int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw,
                         int32_t oh, int32_t ow, int32_t act_min, int32_t act_max, int16_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_dw_conv_params params = {0,        0,        multiplier,        {sw, sh},
                                      {pw, ph}, {dw, dh}, {act_min, act_max}};
    cmsis_nn_per_channel_quant_params quant = {(int32_t *)mults, (int32_t *)shifts};
    cmsis_nn_dims input = {n, h, w, c}, filter = {1, kh, kw, c * multiplier};
    cmsis_nn_dims bias_dims = {1, 1, 1, c * multiplier}, output = {n, oh, ow, c * multiplier};
    return arm_depthwise_conv_wrapper_s16(&ctx, &params, &quant, &input, in, &filter, weights,
                                          &bias_dims, bias, &output, out) != ARM_CMSIS_NN_SUCCESS;
}

/* NHWC input, OHWI weights, per-channel requantization. */
int oracle_convolve(const int8_t *in, const int8_t *weights, const int32_t *bias,
                    const int32_t *mults, const int32_t *shifts, int32_t n, int32_t h, int32_t w,
                    int32_t c, int32_t oc, int32_t kh, int32_t kw, int32_t sh, int32_t sw,
                    int32_t ph, int32_t pw, int32_t dh, int32_t dw, int32_t oh, int32_t ow,
                    int32_t in_offset, int32_t out_offset, int32_t act_min, int32_t act_max,
                    int8_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_conv_params params = {in_offset, out_offset, {sw, sh},
                                   {pw, ph},  {dw, dh},   {act_min, act_max}};
    cmsis_nn_per_channel_quant_params quant = {(int32_t *)mults, (int32_t *)shifts};
    cmsis_nn_dims input = {n, h, w, c}, filter = {oc, kh, kw, c}, bias_dims = {1, 1, 1, oc};
    cmsis_nn_dims output = {n, oh, ow, oc};
    return arm_convolve_wrapper_s8(&ctx, &params, &quant, &input, in, &filter, weights, &bias_dims,
                                   bias, &output, out) != ARM_CMSIS_NN_SUCCESS;
}

/* NHWC input, OHWI weights; the wrapper's choice of path, as ExecuTorch's kernel calls it
 * (output_padding passed as padding_offsets). */
int oracle_transpose_conv(const int8_t *in, const int8_t *weights, const int32_t *bias,
                          const int32_t *mults, const int32_t *shifts, int32_t n, int32_t h,
                          int32_t w, int32_t c, int32_t oc, int32_t kh, int32_t kw, int32_t sh,
                          int32_t sw, int32_t ph, int32_t pw, int32_t oph, int32_t opw, int32_t oh,
                          int32_t ow, int32_t in_offset, int32_t out_offset, int32_t act_min,
                          int32_t act_max, int8_t *out) {
    static int8_t reverse[1 << 16];
    cmsis_nn_context ctx = context();
    cmsis_nn_context reverse_ctx = {reverse, sizeof(reverse)};
    cmsis_nn_transpose_conv_params params = {in_offset,  out_offset, {sw, sh},          {pw, ph},
                                             {opw, oph}, {1, 1},     {act_min, act_max}};
    cmsis_nn_per_channel_quant_params quant = {(int32_t *)mults, (int32_t *)shifts};
    cmsis_nn_dims input = {n, h, w, c}, filter = {oc, kh, kw, c}, bias_dims = {1, 1, 1, oc};
    cmsis_nn_dims output = {n, oh, ow, oc};
    return arm_transpose_conv_wrapper_s8(&ctx, &reverse_ctx, &params, &quant, &input, in, &filter,
                                         weights, &bias_dims, bias, &output,
                                         out) != ARM_CMSIS_NN_SUCCESS;
}

/* NHWC input, [1, H, W, C * multiplier] weights. */
int oracle_depthwise(const int8_t *in, const int8_t *weights, const int32_t *bias,
                     const int32_t *mults, const int32_t *shifts, int32_t n, int32_t h, int32_t w,
                     int32_t c, int32_t multiplier, int32_t kh, int32_t kw, int32_t sh, int32_t sw,
                     int32_t ph, int32_t pw, int32_t dh, int32_t dw, int32_t oh, int32_t ow,
                     int32_t in_offset, int32_t out_offset, int32_t act_min, int32_t act_max,
                     int8_t *out) {
    cmsis_nn_context ctx = context();
    cmsis_nn_dw_conv_params params = {in_offset, out_offset, multiplier,        {sw, sh},
                                      {pw, ph},  {dw, dh},   {act_min, act_max}};
    cmsis_nn_per_channel_quant_params quant = {(int32_t *)mults, (int32_t *)shifts};
    const int32_t oc = c * multiplier;
    cmsis_nn_dims input = {n, h, w, c}, filter = {1, kh, kw, oc}, bias_dims = {1, 1, 1, oc};
    cmsis_nn_dims output = {n, oh, ow, oc};
    return arm_depthwise_conv_wrapper_s8(&ctx, &params, &quant, &input, in, &filter, weights,
                                         &bias_dims, bias, &output, out) != ARM_CMSIS_NN_SUCCESS;
}

/* A whole int8 LSTM layer from a zero state, as lib/src/kernels/quantized_lstm.cpp calls it:
 * weights [4, H, I] and [4, H, H], biases [4, H], gates in PyTorch's order (input, forget,
 * cell, output), gate_scales [4, 4], state_scales [6]. */
int oracle_lstm(const int8_t *in, int32_t batch, int32_t steps, int32_t input_size,
                int32_t hidden_size, int32_t time_major, const int8_t *input_weights,
                const int8_t *hidden_weights, const int32_t *input_biases,
                const int32_t *hidden_biases, const int32_t *gate_scales,
                const int32_t *state_scales, int32_t output_offset, int32_t cell_power, int8_t *out,
                int8_t *hidden_state, int16_t *cell_state) {
    /* hidden_state (and cell_state) NULL: from a zero state; otherwise from them, and left
     * holding the final state, as CMSIS-NN's own hidden_state. */
    static int16_t temp1[4096], temp2[4096], cell[4096];
    if (batch * hidden_size > 4096) {
        return 1;
    }
    if (hidden_state != NULL) {
        memcpy(cell, cell_state, batch * hidden_size * sizeof(int16_t));
    }
    const arm_nn_activation_type activations[4] = {ARM_SIGMOID, ARM_SIGMOID, ARM_TANH, ARM_SIGMOID};
    cmsis_nn_lstm_gate gates[4];
    for (int g = 0; g < 4; g++) {
        gates[g].input_multiplier = gate_scales[4 * g];
        gates[g].input_shift = gate_scales[4 * g + 1];
        gates[g].input_weights = input_weights + g * hidden_size * input_size;
        gates[g].input_effective_bias = input_biases + g * hidden_size;
        gates[g].hidden_multiplier = gate_scales[4 * g + 2];
        gates[g].hidden_shift = gate_scales[4 * g + 3];
        gates[g].hidden_weights = hidden_weights + g * hidden_size * hidden_size;
        gates[g].hidden_effective_bias = hidden_biases + g * hidden_size;
        gates[g].bias = NULL;
        gates[g].activation_type = activations[g];
    }
    cmsis_nn_lstm_params params = {
        time_major, batch,           steps,           input_size,      hidden_size,
        0,          state_scales[0], state_scales[1], state_scales[2], state_scales[3],
        32767,      cell_power,      state_scales[4], state_scales[5], output_offset,
        gates[1],   gates[0],        gates[2],        gates[3],
    };
    cmsis_nn_lstm_context buffers = {temp1, temp2, cell, hidden_state};
    const int failed =
        arm_lstm_unidirectional_s8(in, out, &params, &buffers) != ARM_CMSIS_NN_SUCCESS;
    if (hidden_state != NULL) {
        memcpy(cell_state, cell, batch * hidden_size * sizeof(int16_t));
    }
    return failed;
}

int oracle_activation_s16(const int16_t *in, int32_t count, int32_t left_shift, int32_t tanh,
                          int16_t *out) {
    return arm_nn_activation_s16(in, out, count, left_shift, tanh ? ARM_TANH : ARM_SIGMOID) !=
           ARM_CMSIS_NN_SUCCESS;
}
