/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The benchmark firmware: set the stored input and run the model, CONFIG_BENCH_RUNS
 * times, print every output's bytes ("BENCH_OUTPUT <output> <hex>"), the argmax
 * of a float or INT8 output 0 ("BENCH_ARGMAX <index>"), with stack.conf the bytes of
 * the main and interrupt stacks ever used ("BENCH_STACK main|isr <used> of <size>")
 * and "BENCH_DONE ok" (or the failing call's status). benchmarks/firmware.py counts
 * the instructions of each inference under QEMU and compares the printed bytes with
 * the host reference.
 */

#include <stdbool.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include <et_zephyr/et_zephyr.h>

#include BENCH_MODEL_HEADER
#include "bench_input.h"

static struct et_zephyr_model model;

/* Not inlined: its line buffer is not on the stack while the model loads. */
static __noinline void print_output(int index, const struct et_zephyr_tensor_info *out) {
    static const char digits[] = "0123456789abcdef";
    const uint8_t *bytes = out->data;
    char chunk[65];
    size_t n = 0;

    printk("BENCH_OUTPUT %d ", index);
    for (size_t i = 0; i < out->nbytes; i++) {
        chunk[n++] = digits[bytes[i] >> 4];
        chunk[n++] = digits[bytes[i] & 0xfU];
        if (n == sizeof(chunk) - 1 || i + 1 == out->nbytes) {
            chunk[n] = '\0';
            printk("%s", chunk);
            n = 0;
        }
    }
    printk("\n");
}

#if defined(CONFIG_INIT_STACKS) && defined(CONFIG_THREAD_STACK_INFO)
/* Stack need measured, not guessed (stack.conf): Zephyr paints every stack with 0xaa at
 * start-up; what is still 0xaa after the inference was never used. */
K_KERNEL_STACK_ARRAY_DECLARE(z_interrupt_stacks, CONFIG_MP_MAX_NUM_CPUS, CONFIG_ISR_STACK_SIZE);

static void print_stack_use(void) {
    size_t unused = 0;

    if (k_thread_stack_space_get(k_current_get(), &unused) == 0) {
        printk("BENCH_STACK main %u of %u\n", (unsigned int)(CONFIG_MAIN_STACK_SIZE - unused),
               (unsigned int)CONFIG_MAIN_STACK_SIZE);
    }
    const uint8_t *isr = (const uint8_t *)K_KERNEL_STACK_BUFFER(z_interrupt_stacks[0]);
    size_t isr_size = K_KERNEL_STACK_SIZEOF(z_interrupt_stacks[0]);
    size_t isr_unused = 0;

    while (isr_unused < isr_size && isr[isr_unused] == 0xaaU) {
        isr_unused++;
    }
    printk("BENCH_STACK isr %u of %u\n", (unsigned int)(isr_size - isr_unused),
           (unsigned int)isr_size);
}
#endif

/* The index of the largest element of a float32 or INT8 output (--io int8: its scale is
 * positive, so the INT8 order is the float one). */
static size_t argmax(const struct et_zephyr_tensor_info *out) {
    size_t best = 0;

    for (size_t i = 1; i < out->numel; i++) {
        bool larger = out->dtype == ET_ZEPHYR_DTYPE_INT8
                          ? ((const int8_t *)out->data)[i] > ((const int8_t *)out->data)[best]
                          : ((const float *)out->data)[i] > ((const float *)out->data)[best];

        best = larger ? i : best;
    }
    return best;
}

static int fail(const char *what, int rc) {
    printk("BENCH_DONE %s: %s\n", what, et_zephyr_status_str(rc));
    return 0;
}

int main(void) {
    int rc = et_zephyr_init(&model, &BENCH_MODEL_CONFIG);

    if (rc != ET_ZEPHYR_OK) {
        return fail("et_zephyr_init", rc);
    }
    for (int run = 0; run < CONFIG_BENCH_RUNS; run++) {
        /* Every run: a plan may reuse an input's bytes once the input is consumed. */
        for (int i = 0; i < BENCH_NUM_INPUTS; i++) {
            rc = et_zephyr_set_input(&model, i, bench_inputs[i].data, bench_inputs[i].size);
            if (rc != ET_ZEPHYR_OK) {
                return fail("et_zephyr_set_input", rc);
            }
        }
        rc = et_zephyr_run(&model);
        if (rc != ET_ZEPHYR_OK) {
            return fail("et_zephyr_run", rc);
        }
    }
    for (size_t o = 0; o < et_zephyr_num_outputs(&model); o++) {
        struct et_zephyr_tensor_info out;

        rc = et_zephyr_output_info(&model, o, &out);
        if (rc != ET_ZEPHYR_OK) {
            return fail("et_zephyr_output_info", rc);
        }
        print_output((int)o, &out);
        if (o == 0 && out.numel > 0 &&
            (out.dtype == ET_ZEPHYR_DTYPE_FLOAT32 || out.dtype == ET_ZEPHYR_DTYPE_INT8)) {
            printk("BENCH_ARGMAX %u\n", (unsigned int)argmax(&out));
        }
    }
#if defined(CONFIG_INIT_STACKS) && defined(CONFIG_THREAD_STACK_INFO)
    print_stack_use();
#endif
    printk("BENCH_DONE ok\n");
    return 0;
}
