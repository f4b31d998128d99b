/*
 * SPDX-License-Identifier: Apache-2.0
 */

/* The C API used from C (C11, -Wall -Wextra -Werror): init, set input, run,
 * read the output of affine_relu.pte. Returns 0 on success. */

#include <stdio.h>
#include <string.h>

#include <et_zephyr/et_zephyr.h>

#include "c_api_smoke.h"

static uint8_t planned[256] __attribute__((aligned(16)));
static uint8_t method_arena[4096] __attribute__((aligned(16)));
static struct et_zephyr_model model;

int c_api_smoke(const void *pte, size_t pte_size) {
    struct et_zephyr_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.pte = pte;
    cfg.pte_size = pte_size;
    cfg.planned_arena = planned;
    cfg.planned_arena_size = sizeof(planned);
    cfg.method_arena = method_arena;
    cfg.method_arena_size = sizeof(method_arena);

    int rc = et_zephyr_init(&model, &cfg);
    if (rc != ET_ZEPHYR_OK) {
        fprintf(stderr, "init: %s\n", et_zephyr_status_str(rc));
        return 1;
    }
    const float x[6] = {-3.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.0f};
    const int32_t shape[2] = {2, 3};
    rc = et_zephyr_set_input_tensor(&model, 0, ET_ZEPHYR_DTYPE_FLOAT32, shape, 2, x, sizeof(x));
    if (rc == ET_ZEPHYR_OK) {
        rc = et_zephyr_run(&model);
    }
    struct et_zephyr_tensor_info out;
    if (rc == ET_ZEPHYR_OK) {
        rc = et_zephyr_output_info(&model, 0, &out);
    }
    if (rc != ET_ZEPHYR_OK) {
        fprintf(stderr, "run: %s\n", et_zephyr_status_str(rc));
        et_zephyr_deinit(&model);
        return 2;
    }
    const float *y = (const float *)out.data;
    for (size_t i = 0; i < 6; ++i) {
        const float want = x[i] * 2.0f + 1.0f > 0.0f ? x[i] * 2.0f + 1.0f : 0.0f;
        if (y[i] != want) {
            fprintf(stderr, "y[%zu] = %f, want %f\n", i, (double)y[i], (double)want);
            et_zephyr_deinit(&model);
            return 3;
        }
    }
    et_zephyr_deinit(&model);
    return et_zephyr_num_inputs(&model) == 0 ? 0 : 4;
}
