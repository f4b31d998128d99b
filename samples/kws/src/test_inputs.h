/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Test inputs the firmware generates itself (et-export --generated-vectors):
 * element k of the input is (float)(code_k + offset) * step, code_k the top 16 bits
 * of the k-th xorshift32 state minus 32768. One exact integer-to-float conversion and
 * one float32 multiply, so hardware and soft float give the floats that
 * et_zephyr/test_inputs.py computes on the host.
 */

#ifndef TEST_INPUTS_H_
#define TEST_INPUTS_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* How one input is generated: the xorshift32 seed (never 0), the offset added to
 * every code and the bits of the float32 step. */
struct vec_recipe {
    uint32_t seed;
    int32_t offset;
    uint32_t step_bits;
};

static inline void generate_input(float *dst, size_t count, const struct vec_recipe *recipe) {
    uint32_t state = recipe->seed;
    float step;

    memcpy(&step, &recipe->step_bits, sizeof(step));
    for (size_t k = 0; k < count; k++) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        int32_t code = (int32_t)(state >> 16) - 32768 + recipe->offset;

        dst[k] = (float)code * step;
    }
}

#endif /* TEST_INPUTS_H_ */
