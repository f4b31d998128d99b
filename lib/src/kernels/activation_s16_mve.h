/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * CMSIS-NN's arm_nn_activation_s16 (sigmoid or tanh of int16 values: a
 * 256-entry table of sigmoid, interpolated) on Helium, 4 values a vector:
 * the recurrent kernels' gate activations and the LSTM's tanh of its cell
 * state. CMSIS-NN has no vector form of it (about 25 instructions a value on
 * the Cortex-M55); this takes about 11 (38 a vector of 4: its constants
 * outnumber the 8 vector registers). Same integers, bit-identical values.
 */

#ifndef ET_ZEPHYR_KERNELS_ACTIVATION_S16_MVE_H_
#define ET_ZEPHYR_KERNELS_ACTIVATION_S16_MVE_H_

#include <stdint.h>

/* CMSIS-NN's table (arm_nntables.c): sigmoid(i / 24) in 0.16 for i < 256. */
extern "C" const uint16_t sigmoid_table_uint16[256];

namespace et_zephyr::native::recurrent {

/* out[i] = arm_nn_activation_s16's sigmoid of in[i] (Q3.12 after its left
 * shift) in Q0.15, for i < size; in and out may be the same. */
void sigmoid_s16_mve(const int16_t *in, int16_t *out, int32_t size, int32_t left_shift);

/* The same for tanh. */
void tanh_s16_mve(const int16_t *in, int16_t *out, int32_t size, int32_t left_shift);

} // namespace et_zephyr::native::recurrent

#endif /* ET_ZEPHYR_KERNELS_ACTIVATION_S16_MVE_H_ */
