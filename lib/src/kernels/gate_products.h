/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * A recurrent gate's int16 vector from its sides (W x, R h), each CMSIS-NN's
 * arm_nn_vec_mat_mul_result_acc_s8_s16 for one sequence, 8 a time step in an
 * LSTM and 6 in et-zephyr's GRU. With et-zephyr's DSP or scalar linear kernel
 * built (CONFIG_ET_ZEPHYR_LINEAR_DSP, CONFIG_ET_ZEPHYR_LINEAR_SCALAR) a gate
 * whose sides requantize_fast.h requantizes exactly runs on gate_sides.h (4
 * rows a pass over the vector extended once, both sides' sums requantized in
 * one pass): the same integers, bit-identical gates. Every other gate, and
 * every gate elsewhere (Helium, whose CMSIS-NN loop takes 4 rows a pass
 * already; Armv6-M), runs CMSIS-NN's loop. The gates' sigmoid and tanh are
 * CMSIS-NN's arm_nn_activation_s16, on Helium activation_s16_mve.h's
 * (CONFIG_ET_ZEPHYR_RECURRENT_MVE).
 */

#ifndef ET_ZEPHYR_KERNELS_GATE_PRODUCTS_H_
#define ET_ZEPHYR_KERNELS_GATE_PRODUCTS_H_

#include <stdint.h>

#include "arm_nnsupportfunctions.h"
#include "gate_sides.h"

#if defined(CONFIG_ET_ZEPHYR_RECURRENT_MVE)
#include "activation_s16_mve.h"
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>
#endif

/* gate_sides.cpp is built (zephyr/cmake/et_zephyr.cmake). */
#if defined(CONFIG_ET_ZEPHYR_LINEAR_DSP) || defined(CONFIG_ET_ZEPHYR_LINEAR_SCALAR)
#define ET_ZEPHYR_GATE_SIDES 1
#endif

namespace et_zephyr::native::recurrent {

/* A side of rows weight rows of columns values, with the form
 * gate_on_own_loops() would requantize it in (kNotExact: CMSIS-NN's loop). */
inline GateSide gate_side(const int8_t *weights, const int32_t *bias, int32_t multiplier,
                          int32_t shift, int32_t columns, int32_t rows) {
    GateSide side = {weights, bias, multiplier, shift, columns, rows, Requantization::kNotExact};
#if defined(ET_ZEPHYR_GATE_SIDES)
    side.requantization = exact_requantization(side);
#endif
    return side;
}

/* dst[i] = 0 for i < count: 8 values a store with Helium, else a loop GCC
 * must not turn into a memset call (picolibc's sets byte by byte: 4
 * instructions a byte). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) inline void
zero_vector(int16_t *dst, int32_t count) {
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
    for (int32_t i = 0; i < count; i += 8) {
        vstrhq_p_s16(dst + i, vdupq_n_s16(0), vctp16q(static_cast<uint32_t>(count - i)));
    }
#else
    for (int32_t i = 0; i < count; i++) {
        dst[i] = 0;
    }
#endif
}

/* arm_nn_activation_s16 (sigmoid or tanh, Q0.15) of count values; with
 * CONFIG_ET_ZEPHYR_RECURRENT_MVE Helium's (activation_s16_mve.h). in may be out. */
inline void activate(const int16_t *in, int16_t *out, int32_t count, int32_t left_shift,
                     arm_nn_activation_type type) {
#if defined(CONFIG_ET_ZEPHYR_RECURRENT_MVE)
    if (type == ARM_SIGMOID) {
        sigmoid_s16_mve(in, out, count, left_shift);
    } else {
        tanh_s16_mve(in, out, count, left_shift);
    }
#else
    arm_nn_activation_s16(in, out, count, left_shift, type);
#endif
}

/* A gate's vector from its sides (gate_sides.h's gate_on_own_loops()): its first side
 * (x) alone when second is null, else both added. */
inline void gate_into(const GateSide &first, const int8_t *x, const GateSide *second,
                      const int8_t *h, int16_t *dst) {
#if defined(ET_ZEPHYR_GATE_SIDES)
    if (first.requantization != Requantization::kNotExact &&
        (second == nullptr || second->requantization != Requantization::kNotExact)) {
        gate_on_own_loops(first, x, second, h, dst);
        return;
    }
#endif
    zero_vector(dst, first.rows);
    arm_nn_vec_mat_mul_result_acc_s8_s16(x, first.weights, first.bias, dst, first.multiplier,
                                         first.shift, first.columns, first.rows, 1, 1);
    if (second != nullptr) {
        arm_nn_vec_mat_mul_result_acc_s8_s16(h, second->weights, second->bias, dst,
                                             second->multiplier, second->shift, second->columns,
                                             second->rows, 1, 1);
    }
}

} // namespace et_zephyr::native::recurrent

#endif /* ET_ZEPHYR_KERNELS_GATE_PRODUCTS_H_ */
