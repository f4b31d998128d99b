/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Test inputs the firmware generates itself (et-export --generated-vectors):
 * element k of the input is (float)(code_k + offset) * step, code_k the top 16 bits
 * of the k-th xorshift32 state minus 32768. One exact integer-to-float conversion and
 * one float32 multiply, so hardware and soft float give the floats that
 * et_zephyr/artifacts/test_inputs.py computes on the host. For an INT8 input the firmware
 * quantizes them with et_zephyr_quantize_int8(), as the host reference does.
 */

#ifndef TEST_INPUTS_H_
#define TEST_INPUTS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <et_zephyr/et_zephyr.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(array) (sizeof(array) / sizeof((array)[0]))
#endif

/* How one input is generated: the xorshift32 seed (never 0), the offset added to
 * every code and the bits of the float32 step. */
struct vec_recipe {
    uint32_t seed;
    int32_t offset;
    uint32_t step_bits;
};

/* Elements [first, first + count) of the input; returns the generator's state after them,
 * to continue from. */
static inline uint32_t generate_floats(float *dst, size_t count, uint32_t state,
                                       const struct vec_recipe *recipe) {
    float step;

    memcpy(&step, &recipe->step_bits, sizeof(step));
    for (size_t k = 0; k < count; k++) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        int32_t code = (int32_t)(state >> 16) - 32768 + recipe->offset;

        dst[k] = (float)code * step;
    }
    return state;
}

static inline void generate_input(float *dst, size_t count, const struct vec_recipe *recipe) {
    (void)generate_floats(dst, count, recipe->seed, recipe);
}

/* The generated floats of an INT8 input (or, with @p int16, an INT16 one), quantized in
 * chunks (no float copy of the whole input) with et_zephyr_quantize_int8() or
 * et_zephyr_quantize_int16(). */
static inline void generate_quantized_input(void *dst, size_t count,
                                            const struct vec_recipe *recipe, float scale,
                                            int32_t zero_point, bool int16) {
    float chunk[32];
    uint32_t state = recipe->seed;

    for (size_t first = 0; first < count; first += ARRAY_SIZE(chunk)) {
        size_t n = count - first < ARRAY_SIZE(chunk) ? count - first : ARRAY_SIZE(chunk);

        state = generate_floats(chunk, n, state, recipe);
        if (int16) {
            et_zephyr_quantize_int16(chunk, (int16_t *)dst + first, n, scale, zero_point);
        } else {
            et_zephyr_quantize_int8(chunk, (int8_t *)dst + first, n, scale, zero_point);
        }
    }
}

#endif /* TEST_INPUTS_H_ */
