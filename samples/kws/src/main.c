/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs et-export's test inputs through the embedded model and prints, for each,
 * the recognized class, its score and the cycles of the inference, then one
 * "ET_OUTPUT <input> <output> <hex>" line per output with its raw bytes (the
 * pytest harness compares them with the host reference), and a final
 * "ET_DONE PASS|FAIL" line from the firmware's own CRC-32 check against the
 * expected bytes (the console harness of FVP runs matches it). Built with
 * CONFIG_ET_ZEPHYR_PROFILING, it also prints the cycles per operator.
 *
 * Test inputs are stored in flash, or generated here from a recipe (et-export
 * --generated-vectors; et_zephyr/artifacts/test_inputs.py computes the same floats on the host)
 * and, for an INT8 input (et-export --io int8), quantized with the C API's
 * et_zephyr_quantize_int8(), as the host reference assumes.
 *
 * The model comes from APP_MODEL_HEADER / APP_MODEL_CONFIG (set by CMake), the
 * vectors from vectors.h (gen_vectors.py). samples/hello uses this file too.
 */

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/crc.h>
#include <zephyr/sys/printk.h>

#include <et_zephyr/et_zephyr.h>

#include APP_MODEL_HEADER
#include "test_inputs.h"
#include "vectors.h"

static struct et_zephyr_model model;

/* "-12.345" for a value, with three decimals (printk has no %f). */
static const char *fixed3(char *buf, size_t size, float value) {
    const char *sign = value < 0.0f ? "-" : "";
    uint32_t milli = (uint32_t)(fabsf(value) * 1000.0f + 0.5f);

    snprintk(buf, size, "%s%u.%03u", sign, milli / 1000U, milli % 1000U);
    return buf;
}

static void print_hex(const uint8_t *data, size_t size) {
    static const char digits[] = "0123456789abcdef";
    char chunk[65];
    size_t n = 0;

    for (size_t i = 0; i < size; i++) {
        chunk[n++] = digits[data[i] >> 4];
        chunk[n++] = digits[data[i] & 0xfU];
        if (n == sizeof(chunk) - 1 || i + 1 == size) {
            chunk[n] = '\0';
            printk("%s", chunk);
            n = 0;
        }
    }
}

static int set_input(int v, int i) {
    const struct vec_buffer *stored = &vec_inputs[v][i];

    if (stored->data != NULL) {
        return et_zephyr_set_input(&model, i, stored->data, stored->size);
    }
#if VEC_NUM_GENERATED > 0
    void *buffer;
    size_t nbytes;
    int rc = et_zephyr_input_buffer(&model, i, &buffer, &nbytes);

    if (rc == ET_ZEPHYR_OK && nbytes != stored->size) {
        rc = ET_ZEPHYR_ERR_SIZE_MISMATCH;
    }
    struct et_zephyr_tensor_info info;

    if (rc == ET_ZEPHYR_OK) {
        rc = et_zephyr_input_info(&model, i, &info);
    }
    if (rc == ET_ZEPHYR_OK &&
        (info.dtype == ET_ZEPHYR_DTYPE_INT8 || info.dtype == ET_ZEPHYR_DTYPE_INT16)) {
        /* An --io int8 (int16) program: the floats quantized as an application would. */
        generate_quantized_input(buffer, info.numel, &vec_recipes[v][i], info.scale,
                                 info.zero_point, info.dtype == ET_ZEPHYR_DTYPE_INT16);
    } else if (rc == ET_ZEPHYR_OK) {
        generate_input(buffer, info.numel, &vec_recipes[v][i]);
    }
    return rc;
#else
    return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
#endif
}

static size_t argmax(const float *y, size_t n) {
    size_t best = 0;

    for (size_t i = 1; i < n; i++) {
        if (y[i] > y[best]) {
            best = i;
        }
    }
    return best;
}

/* Recognized class and its softmax probability, when output 0 holds scores: float32, or
 * INT8 (et-export --io int8) dequantized with et_zephyr_output_float(). */
static void print_result(int index, uint32_t cycles) {
    struct et_zephyr_tensor_info out;
    static float dequantized[64];
    char score[16];
    char logit[16];
    const float *y = NULL;

    if (et_zephyr_output_info(&model, 0, &out) != ET_ZEPHYR_OK) {
        out.numel = 0;
    } else if (out.dtype == ET_ZEPHYR_DTYPE_FLOAT32) {
        y = out.data;
    } else if ((out.dtype == ET_ZEPHYR_DTYPE_INT8 || out.dtype == ET_ZEPHYR_DTYPE_INT16) &&
               out.numel <= ARRAY_SIZE(dequantized) &&
               et_zephyr_output_float(&model, 0, dequantized, out.numel) == ET_ZEPHYR_OK) {
        y = dequantized;
    }
    if (y == NULL || out.numel == 0) {
        printk("input %d: %u cycles\n", index, cycles);
        return;
    }
    size_t best = argmax(y, out.numel);
    float sum = 0.0f;

    for (size_t i = 0; i < out.numel; i++) {
        sum += expf(y[i] - y[best]);
    }
    const char *label = NULL;

#if VEC_NUM_LABELS > 0
    if (best < VEC_NUM_LABELS) {
        label = vec_labels[best];
    }
#endif
    if (label != NULL) {
        printk("input %d: \"%s\"", index, label);
    } else {
        printk("input %d: class %u", index, (unsigned int)best);
    }
    printk(" score %s (logit %s), %u cycles\n", fixed3(score, sizeof(score), 1.0f / sum),
           fixed3(logit, sizeof(logit), y[best]), cycles);
}

#if VEC_NUM_CLIPS > 0 && VEC_NUM_LABELS > 0
static const char *label_name(size_t index) {
    return index < VEC_NUM_LABELS ? vec_labels[index] : "?";
}

/* Labelled test clips: the device's own accuracy (no host reference for these bytes). */
static void run_clips(void) {
    unsigned int correct = 0;

    for (int c = 0; c < VEC_NUM_CLIPS; c++) {
        struct et_zephyr_tensor_info out;
        int rc = et_zephyr_set_input(&model, 0, vec_clips[c], sizeof(vec_clips[c]));

        if (rc == ET_ZEPHYR_OK) {
            rc = et_zephyr_run(&model);
        }
        if (rc == ET_ZEPHYR_OK) {
            rc = et_zephyr_output_info(&model, 0, &out);
        }
        if (rc != ET_ZEPHYR_OK || out.dtype != ET_ZEPHYR_DTYPE_FLOAT32) {
            printk("clip %d: %s\n", c, et_zephyr_status_str(rc));
            continue;
        }
        size_t best = argmax(out.data, out.numel);

        correct += best == vec_clip_labels[c] ? 1U : 0U;
        printk("clip %d: \"%s\" recognized as \"%s\", %u cycles\n", c,
               label_name(vec_clip_labels[c]), label_name(best),
               (uint32_t)et_zephyr_last_run_cycles(&model));
    }
    printk("ET_ACCURACY %u of %d test clips\n", correct, VEC_NUM_CLIPS);
}
#endif

#if defined(CONFIG_ET_ZEPHYR_PROFILING)
/*
 * Cycles per operator over the test inputs, costliest first:
 * "ET_PROFILE <operator> <calls> <cycles> <share> %" (et-profile reads these lines).
 */
static void print_profile(void) {
    struct et_zephyr_op_profile ops[32];
    size_t count = 0;
    int rc = et_zephyr_get_op_profile(&model, ops, ARRAY_SIZE(ops), &count);

    if (rc != ET_ZEPHYR_OK) {
        printk("profile: %s\n", et_zephyr_status_str(rc));
        return;
    }
    uint64_t total = 0;

    for (size_t i = 0; i < count; i++) {
        total += ops[i].cycles;
    }
    printk("cycles per operator over %d runs:\n", VEC_COUNT);
    for (size_t printed = 0; printed < count; printed++) {
        size_t top = printed;

        for (size_t i = printed + 1; i < count; i++) {
            top = ops[i].cycles > ops[top].cycles ? i : top;
        }
        struct et_zephyr_op_profile op = ops[top];

        ops[top] = ops[printed];
        uint32_t permille = total > 0 ? (uint32_t)((op.cycles * 1000U + total / 2U) / total) : 0U;

        printk("ET_PROFILE %-42s %5u %12llu %3u.%u %%\n", op.op, op.calls,
               (unsigned long long)op.cycles, permille / 10U, permille % 10U);
    }
}
#endif

int main(void) {
    int rc = et_zephyr_init(&model, &APP_MODEL_CONFIG);

    if (rc != ET_ZEPHYR_OK) {
        printk("ET_DONE FAIL: et_zephyr_init: %s\n", et_zephyr_status_str(rc));
        return 0;
    }
    if (et_zephyr_num_inputs(&model) != VEC_NUM_INPUTS ||
        et_zephyr_num_outputs(&model) != VEC_NUM_OUTPUTS) {
        printk("ET_DONE FAIL: the model has %u inputs and %u outputs, the vectors %u and %u\n",
               (unsigned int)et_zephyr_num_inputs(&model),
               (unsigned int)et_zephyr_num_outputs(&model), VEC_NUM_INPUTS, VEC_NUM_OUTPUTS);
        return 0;
    }
    printk("%d test inputs, %d outputs each; method arena used %u bytes\n", VEC_COUNT,
           VEC_NUM_OUTPUTS, (unsigned int)et_zephyr_method_arena_used(&model));

    unsigned int matched = 0;

    for (int v = 0; v < VEC_COUNT; v++) {
        for (int i = 0; i < VEC_NUM_INPUTS && rc == ET_ZEPHYR_OK; i++) {
            rc = set_input(v, i);
        }
        if (rc == ET_ZEPHYR_OK) {
            rc = et_zephyr_run(&model);
        }
        if (rc != ET_ZEPHYR_OK) {
            printk("ET_DONE FAIL: input %d: %s\n", v, et_zephyr_status_str(rc));
            return 0;
        }
        print_result(v, (uint32_t)et_zephyr_last_run_cycles(&model));

        for (int o = 0; o < VEC_NUM_OUTPUTS; o++) {
            struct et_zephyr_tensor_info out;

            rc = et_zephyr_output_info(&model, o, &out);
            if (rc != ET_ZEPHYR_OK) {
                printk("ET_DONE FAIL: output %d: %s\n", o, et_zephyr_status_str(rc));
                return 0;
            }
            uint32_t crc = crc32_ieee(out.data, out.nbytes);
            bool same = out.nbytes == vec_output_size[o] && crc == vec_output_crc[v][o];

            if (IS_ENABLED(CONFIG_APP_PRINT_OUTPUTS)) {
                printk("ET_OUTPUT %d %d ", v, o);
                print_hex(out.data, out.nbytes);
                printk("\n");
            } else if (IS_ENABLED(CONFIG_APP_PRINT_OUTPUT_CRCS)) {
                printk("ET_CRC %d %d %u %08x\n", v, o, (unsigned int)out.nbytes, crc);
            }
            if (!same) {
                printk("ET_MISMATCH input %d output %d: %u bytes crc32 %08x, expected %u "
                       "bytes crc32 %08x\n",
                       v, o, (unsigned int)out.nbytes, crc, (unsigned int)vec_output_size[o],
                       vec_output_crc[v][o]);
            }
            matched += same ? 1U : 0U;
        }
    }
#if defined(CONFIG_ET_ZEPHYR_PROFILING)
    print_profile();
#endif
#if VEC_NUM_CLIPS > 0 && VEC_NUM_LABELS > 0
    run_clips();
#endif
    unsigned int total = VEC_COUNT * VEC_NUM_OUTPUTS;

    printk("ET_DONE %s: %u of %u outputs match the host reference\n",
           matched == total ? "PASS" : "FAIL", matched, total);
    return 0;
}
