/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * One side of a recurrent gate (W x or R h: an int8 vector, as it is, times
 * int8 weight rows plus CMSIS-NN's effective bias, the vector's zero point
 * folded in), requantized into the gate's int16 vector, saturating: CMSIS-NN's
 * arm_nn_vec_mat_mul_result_acc_s8_s16 for one sequence, on et-zephyr's loops
 * for the DSP-extension and scalar tiers (gate_sides.cpp, built with them).
 * gate_products.h picks these or CMSIS-NN's for the recurrent kernels.
 */

#ifndef ET_ZEPHYR_KERNELS_GATE_SIDES_H_
#define ET_ZEPHYR_KERNELS_GATE_SIDES_H_

#include <stdint.h>

namespace et_zephyr::native::recurrent {

/* How a side's sums become int16 values: arm_nn_requantize's arithmetic, as
 * requantize_fast.h computes it exactly for the sums the side can reach. */
enum class Requantization {
    kNotExact, /* neither form below is exact: CMSIS-NN's loop runs the side */
    kRight,    /* a right shift: requantize_wide() */
    kLeft,     /* a left shift: requantize_left() */
};

/* One side of one gate: rows weight rows of columns int8 values (rows stride
 * columns), their int32 bias, the requantization's multiplier and shift. */
struct GateSide {
    const int8_t *weights;
    const int32_t *bias;
    int32_t multiplier;
    int32_t shift;
    int32_t columns;
    int32_t rows;
    Requantization requantization;
};

/* The form of requantize_fast.h that is exact for every sum the side can
 * reach (|bias| plus columns products of int8 values), or kNotExact. Once a
 * layer: it reads every bias. */
Requantization exact_requantization(const GateSide &side);

/* A gate's vector from its sides, as CMSIS-NN adds them:
 * dst[i] = saturate16(saturate16(first_i) + second_i), side_i =
 * requantized(bias[i] + vector . row i), first's vector x and second's h
 * (second null: the first side alone). Neither side's requantization
 * kNotExact; both of first.rows rows. About 600 bytes of stack. */
void gate_on_own_loops(const GateSide &first, const int8_t *x, const GateSide *second,
                       const int8_t *h, int16_t *dst);

} // namespace et_zephyr::native::recurrent

#endif /* ET_ZEPHYR_KERNELS_GATE_SIDES_H_ */
