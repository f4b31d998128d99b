/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The et-zephyr C API: initialization, inputs and outputs, the errors it
 * promises (wrong input, arenas too small with the size needed in the log,
 * truncated or corrupt programs) and repeatable runs.
 */

#include <stdio.h>
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/crc.h>
#include <zephyr/sys/printk-hooks.h>
#include <zephyr/sys/printk.h>
#include <zephyr/ztest.h>

#include <et_zephyr/et_zephyr.h>

#include "hello_model.h"
#include "vectors.h"

#define RUNS 1000

static struct et_zephyr_model model;

/* A copy of the program in RAM, to damage. */
static uint8_t pte_copy[8192] __aligned(ET_ZEPHYR_ALIGNMENT);

/* Everything printed (et-zephyr's log lines included) since log_reset(). */
static char log_text[1024];
static size_t log_len;
static printk_hook_fn_t console_hook;

static int capture(int c) {
    if (log_len + 1 < sizeof(log_text)) {
        log_text[log_len++] = (char)c;
        log_text[log_len] = '\0';
    }
    return console_hook != NULL ? console_hook(c) : c;
}

static void log_reset(void) {
    log_len = 0;
    log_text[0] = '\0';
}

static void *suite_setup(void) {
    console_hook = __printk_get_hook();
    __printk_hook_install(capture);
    zassert_true(hello_config.pte_size <= sizeof(pte_copy), "program larger than the copy");
    return NULL;
}

static void after_each(void *fixture) {
    ARG_UNUSED(fixture);
    et_zephyr_deinit(&model);
}

static int init_with(const struct et_zephyr_config *config) {
    log_reset();
    return et_zephyr_init(&model, config);
}

static void set_vector_input(int v) {
    for (int i = 0; i < VEC_NUM_INPUTS; i++) {
        zassert_equal(et_zephyr_set_input(&model, i, vec_inputs[v][i].data, vec_inputs[v][i].size),
                      ET_ZEPHYR_OK, "set_input %d", i);
    }
}

static uint32_t output_crc(int o, size_t *nbytes) {
    struct et_zephyr_tensor_info out;

    zassert_equal(et_zephyr_output_info(&model, o, &out), ET_ZEPHYR_OK);
    zassert_not_null(out.data);
    *nbytes = out.nbytes;
    return crc32_ieee(out.data, out.nbytes);
}

ZTEST(et_zephyr_api, test_init_and_info) {
    struct et_zephyr_requirements req;
    struct et_zephyr_tensor_info info;

    zassert_equal(et_zephyr_get_requirements(hello_config.pte, hello_config.pte_size, NULL, &req),
                  ET_ZEPHYR_OK);
    zassert_true(req.planned_arena_size <= hello_config.planned_arena_size);
    zassert_equal(req.num_inputs, VEC_NUM_INPUTS);
    zassert_equal(req.num_outputs, VEC_NUM_OUTPUTS);

    zassert_equal(et_zephyr_num_inputs(&model), 0, "not initialized yet");
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_ERR_NOT_INITIALIZED);
    zassert_equal(init_with(&hello_config), ET_ZEPHYR_OK, "%s", log_text);
    zassert_equal(et_zephyr_num_inputs(&model), VEC_NUM_INPUTS);
    zassert_equal(et_zephyr_num_outputs(&model), VEC_NUM_OUTPUTS);
    zassert_true(et_zephyr_method_arena_used(&model) <= hello_config.method_arena_size);

    zassert_equal(et_zephyr_input_info(&model, 0, &info), ET_ZEPHYR_OK);
    zassert_equal(info.dtype, ET_ZEPHYR_DTYPE_FLOAT32);
    zassert_equal(info.rank, 2);
    zassert_equal(info.shape[0], 1);
    zassert_equal(info.shape[1], 8);
    zassert_equal(info.nbytes, vec_inputs[0][0].size);
    zassert_equal(et_zephyr_output_info(&model, 0, &info), ET_ZEPHYR_OK);
    zassert_equal(info.dtype, ET_ZEPHYR_DTYPE_FLOAT32);
    zassert_equal(info.nbytes, vec_output_size[0]);
    zassert_equal(et_zephyr_input_info(&model, VEC_NUM_INPUTS, &info),
                  ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    zassert_equal(et_zephyr_output_info(&model, VEC_NUM_OUTPUTS, &info),
                  ET_ZEPHYR_ERR_INVALID_ARGUMENT);
}

ZTEST(et_zephyr_api, test_run_matches_host_reference) {
    zassert_equal(init_with(&hello_config), ET_ZEPHYR_OK, "%s", log_text);
    for (int v = 0; v < VEC_COUNT; v++) {
        set_vector_input(v);
        zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_OK);
        for (int o = 0; o < VEC_NUM_OUTPUTS; o++) {
            size_t nbytes;
            uint32_t crc = output_crc(o, &nbytes);

            zassert_equal(nbytes, vec_output_size[o]);
            zassert_equal(crc, vec_output_crc[v][o], "input %d output %d: crc %08x, host %08x", v,
                          o, crc, vec_output_crc[v][o]);
        }
    }
}

/* Filling the input's own buffer gives the same outputs as copying the input in. */
ZTEST(et_zephyr_api, test_input_buffer) {
    void *buffer = NULL;
    size_t nbytes = 0;

    zassert_equal(et_zephyr_input_buffer(&model, 0, &buffer, &nbytes),
                  ET_ZEPHYR_ERR_NOT_INITIALIZED);
    zassert_equal(init_with(&hello_config), ET_ZEPHYR_OK, "%s", log_text);
    zassert_equal(et_zephyr_input_buffer(&model, VEC_NUM_INPUTS, &buffer, &nbytes),
                  ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    for (int v = 0; v < VEC_COUNT; v++) {
        for (int i = 0; i < VEC_NUM_INPUTS; i++) {
            zassert_equal(et_zephyr_input_buffer(&model, i, &buffer, &nbytes), ET_ZEPHYR_OK);
            zassert_equal(nbytes, vec_inputs[v][i].size);
            zassert_true((uint8_t *)buffer >= (uint8_t *)hello_config.planned_arena &&
                         (uint8_t *)buffer + nbytes <= (uint8_t *)hello_config.planned_arena +
                                                           hello_config.planned_arena_size);
            memcpy(buffer, vec_inputs[v][i].data, nbytes);
        }
        zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_OK);
        size_t size;

        zassert_equal(output_crc(0, &size), vec_output_crc[v][0], "input %d", v);
    }
    /* Taking the buffer sets the input for one run only. */
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
}

ZTEST(et_zephyr_api, test_wrong_input) {
    const struct vec_buffer *in = &vec_inputs[0][0];
    const int32_t good_shape[] = {1, 8};
    const int32_t bad_shape[] = {1, 9};
    const int32_t bad_rank[] = {8};

    zassert_equal(init_with(&hello_config), ET_ZEPHYR_OK, "%s", log_text);
    zassert_equal(et_zephyr_set_input(&model, 0, in->data, in->size - 1),
                  ET_ZEPHYR_ERR_SIZE_MISMATCH);
    zassert_equal(et_zephyr_set_input(&model, 0, in->data, in->size + 4),
                  ET_ZEPHYR_ERR_SIZE_MISMATCH);
    zassert_equal(et_zephyr_set_input(&model, 1, in->data, in->size),
                  ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    zassert_equal(et_zephyr_set_input(&model, 0, NULL, in->size), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    zassert_equal(et_zephyr_set_input_tensor(&model, 0, ET_ZEPHYR_DTYPE_FLOAT32, bad_shape, 2,
                                             in->data, in->size),
                  ET_ZEPHYR_ERR_SHAPE_MISMATCH);
    zassert_equal(et_zephyr_set_input_tensor(&model, 0, ET_ZEPHYR_DTYPE_FLOAT32, bad_rank, 1,
                                             in->data, in->size),
                  ET_ZEPHYR_ERR_SHAPE_MISMATCH);
    zassert_equal(et_zephyr_set_input_tensor(&model, 0, ET_ZEPHYR_DTYPE_INT8, good_shape, 2,
                                             in->data, in->size),
                  ET_ZEPHYR_ERR_DTYPE_MISMATCH);
    /* No input was accepted: the run is refused. */
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
    zassert_equal(et_zephyr_set_input_tensor(&model, 0, ET_ZEPHYR_DTYPE_FLOAT32, good_shape, 2,
                                             in->data, in->size),
                  ET_ZEPHYR_OK);
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_OK);
    /* Planned memory reuses the input: it must be set again before the next run. */
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
}

ZTEST(et_zephyr_api, test_planned_arena_too_small) {
    struct et_zephyr_requirements req;
    struct et_zephyr_config config = hello_config;
    char needed[48];

    zassert_equal(et_zephyr_get_requirements(hello_config.pte, hello_config.pte_size, NULL, &req),
                  ET_ZEPHYR_OK);
    config.planned_arena_size = req.planned_arena_size - ET_ZEPHYR_ALIGNMENT;
    zassert_equal(init_with(&config), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
    snprintf(needed, sizeof(needed), "%u bytes needed", (unsigned int)req.planned_arena_size);
    zassert_not_null(strstr(log_text, needed), "log does not say \"%s\": %s", needed, log_text);
    zassert_equal(et_zephyr_num_inputs(&model), 0, "a failed init leaves no model");
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_ERR_NOT_INITIALIZED);

    config.planned_arena = NULL;
    config.planned_arena_size = 0;
    zassert_equal(init_with(&config), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
}

ZTEST(et_zephyr_api, test_method_arena_too_small) {
    struct et_zephyr_config config = hello_config;

    config.method_arena_size = 256;
    zassert_equal(init_with(&config), ET_ZEPHYR_ERR_METHOD_ARENA_TOO_SMALL);
    zassert_not_null(strstr(log_text, "method arena too small: 256 bytes given, at least "),
                     "log: %s", log_text);
    zassert_not_null(strstr(log_text, "bytes needed"), "log: %s", log_text);

    /* The arena the model needs, to the byte, is enough. */
    zassert_equal(init_with(&hello_config), ET_ZEPHYR_OK, "%s", log_text);
    size_t used = et_zephyr_method_arena_used(&model);

    et_zephyr_deinit(&model);
    config.method_arena_size = used;
    zassert_equal(init_with(&config), ET_ZEPHYR_OK, "%u bytes: %s", (unsigned int)used, log_text);
}

static void expect_invalid_program(const void *pte, size_t size, const char *what) {
    struct et_zephyr_config config = hello_config;
    struct et_zephyr_requirements req;

    config.pte = pte;
    config.pte_size = size;
    int rc = init_with(&config);

    zassert_equal(rc, ET_ZEPHYR_ERR_INVALID_PROGRAM, "%s (%u bytes): %s", what, (unsigned int)size,
                  et_zephyr_status_str(rc));
    zassert_not_equal(log_len, 0, "%s: no log line", what);
    zassert_equal(et_zephyr_num_inputs(&model), 0);
    rc = et_zephyr_get_requirements(pte, size, NULL, &req);
    zassert_equal(rc, ET_ZEPHYR_ERR_INVALID_PROGRAM, "%s: get_requirements %s", what,
                  et_zephyr_status_str(rc));
}

ZTEST(et_zephyr_api, test_truncated_program) {
    const size_t size = hello_config.pte_size;
    const size_t lengths[] = {4, 8, 16, 64, size / 4, size / 2, size - 64};

    for (size_t i = 0; i < ARRAY_SIZE(lengths); i++) {
        memcpy(pte_copy, hello_config.pte, lengths[i]);
        expect_invalid_program(pte_copy, lengths[i], "truncated");
    }
    /* The untruncated copy still loads. */
    memcpy(pte_copy, hello_config.pte, size);
    struct et_zephyr_config config = hello_config;

    config.pte = pte_copy;
    zassert_equal(init_with(&config), ET_ZEPHYR_OK, "%s", log_text);
}

ZTEST(et_zephyr_api, test_corrupt_program) {
    const size_t size = hello_config.pte_size;

    /* Not a .pte at all. */
    memset(pte_copy, 0, size);
    expect_invalid_program(pte_copy, size, "zeros");
    memset(pte_copy, 0xff, size);
    expect_invalid_program(pte_copy, size, "0xff");

    /* The flatbuffer identifier "ET12" (bytes 4..7) damaged. */
    memcpy(pte_copy, hello_config.pte, size);
    pte_copy[4] ^= 0x20;
    expect_invalid_program(pte_copy, size, "identifier");

    /* The root table offset (bytes 0..3) pointing outside the program. */
    memcpy(pte_copy, hello_config.pte, size);
    pte_copy[2] = 0xff;
    pte_copy[3] = 0x7f;
    expect_invalid_program(pte_copy, size, "root offset");

    /* Not aligned to 16 bytes. */
    memcpy(pte_copy + 4, hello_config.pte, size - 4);
    struct et_zephyr_config config = hello_config;

    config.pte = pte_copy + 4;
    config.pte_size = size - 4;
    zassert_equal(init_with(&config), ET_ZEPHYR_ERR_PTE_ALIGNMENT);
}

/* Hostile programs: they pass the flatbuffer verifier, and the plan validation refuses them
 * before the runtime places a tensor (tests/CMakeLists.txt embeds them). */
#define HOSTILE(kind)                                                                              \
    extern const uint8_t hostile_##kind[];                                                         \
    extern const uint8_t hostile_##kind##_end[];
HOSTILE(offset)
HOSTILE(size)
HOSTILE(io_dtype)
HOSTILE(scratch)

/* The convolution plans more than the hello model's arena holds. */
static uint8_t conv_planned_arena[1024] __aligned(ET_ZEPHYR_ALIGNMENT);

static void expect_refused(const uint8_t *pte, const uint8_t *end, bool verify,
                           const int32_t *input_dtypes, int want, const char *log) {
    struct et_zephyr_config config = hello_config;

    if (pte == hostile_scratch) {
        config.planned_arena = conv_planned_arena;
        config.planned_arena_size = sizeof(conv_planned_arena);
    }
    config.pte = pte;
    config.pte_size = (size_t)(end - pte);
    config.verify = verify;
    config.input_dtypes = input_dtypes;
    config.num_input_dtypes = input_dtypes != NULL ? 1 : 0;
    int rc = init_with(&config);

    zassert_equal(rc, want, "%s, want %s: %s", et_zephyr_status_str(rc), et_zephyr_status_str(want),
                  log_text);
    zassert_not_null(strstr(log_text, log), "log lacks \"%s\": %s", log, log_text);
    zassert_equal(et_zephyr_num_inputs(&model), 0, "a refused program leaves no model");
}

ZTEST(et_zephyr_api, test_hostile_programs) {
    static const int32_t float32[] = {ET_ZEPHYR_DTYPE_FLOAT32};

    for (int verify = 0; verify <= 1; verify++) {
        expect_refused(hostile_offset, hostile_offset_end, verify, NULL,
                       ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS, "past the end of its planned buffer");
        expect_refused(hostile_size, hostile_size_end, verify, NULL, ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE,
                       "make more than 4 GiB");
        expect_refused(hostile_io_dtype, hostile_io_dtype_end, verify, float32,
                       ET_ZEPHYR_ERR_IO_MISMATCH, "has dtype 1, the config says 6");
    }
#if defined(CONFIG_ET_ZEPHYR_VERIFY_PROGRAM)
    /* A convolution whose scratch is half CMSIS-NN's need on every ISA tier (a build without
     * verification checks bounds only; the op wrapper then refuses the scratch at run time). */
    expect_refused(hostile_scratch, hostile_scratch_end, true, NULL,
                   ET_ZEPHYR_ERR_SCRATCH_TOO_SMALL, "(cortex_m::quantized_conv2d): 40 bytes");
#endif
    /* The genuine program with the config's dtypes still loads. */
    struct et_zephyr_config config = hello_config;

    config.input_dtypes = float32;
    config.num_input_dtypes = 1;
    zassert_equal(init_with(&config), ET_ZEPHYR_OK, "%s", log_text);
}

ZTEST(et_zephyr_api, test_repeated_runs_identical) {
    uint32_t crc[VEC_NUM_OUTPUTS];
    uint64_t first = 0;
    uint64_t least = UINT64_MAX;
    uint64_t most = 0;

    zassert_equal(init_with(&hello_config), ET_ZEPHYR_OK, "%s", log_text);
    /* One warm-up run: the first touches cold state (e.g. the kernel table). */
    set_vector_input(1);
    zassert_equal(et_zephyr_run(&model), ET_ZEPHYR_OK);
    for (int run = 0; run < RUNS; run++) {
        set_vector_input(1);
        /* No interrupt in the measured run (e.g. the system timer's wrap-around). */
        unsigned int key = irq_lock();
        int rc = et_zephyr_run(&model);

        irq_unlock(key);
        zassert_equal(rc, ET_ZEPHYR_OK, "run %d", run);
        uint64_t c = et_zephyr_last_run_cycles(&model);

        for (int o = 0; o < VEC_NUM_OUTPUTS; o++) {
            size_t nbytes;
            uint32_t now = output_crc(o, &nbytes);

            if (run == 0) {
                crc[o] = now;
                zassert_equal(now, vec_output_crc[1][o], "output %d differs from the host", o);
            } else {
                zassert_equal(now, crc[o], "run %d output %d differs from run 0", run, o);
            }
        }
        if (run == 0) {
            first = c;
            zassert_true(first > 0, "no cycles measured");
        }
        least = MIN(least, c);
        most = MAX(most, c);
    }
    printk("%d runs: identical outputs; cycles %u..%u (run 0: %u)\n", RUNS, (unsigned int)least,
           (unsigned int)most, (unsigned int)first);
    zassert_true(most - least <= CONFIG_TEST_CYCLE_TOLERANCE,
                 "cycles vary from %u to %u (tolerance %d)", (unsigned int)least,
                 (unsigned int)most, CONFIG_TEST_CYCLE_TOLERANCE);
}

ZTEST_SUITE(et_zephyr_api, NULL, suite_setup, NULL, after_each, NULL);
