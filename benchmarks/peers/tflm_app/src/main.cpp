/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The peer firmware: TensorFlow Lite Micro runs the model of peer_model.h on an all-zero
 * input CONFIG_BENCH_RUNS times through bench_invoke(), then prints every output's bytes
 * ("BENCH_OUTPUT <output> <hex>"), the arena bytes used ("BENCH_ARENA <bytes>") and
 * "BENCH_DONE ok" (or what failed). benchmarks/peers/side_by_side.py counts each
 * MicroInterpreter::Invoke() under QEMU, as benchmarks/firmware.py counts et-zephyr's
 * Method::execute().
 */

#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include <tensorflow/lite/micro/micro_interpreter.h>
#include <tensorflow/lite/micro/micro_mutable_op_resolver.h>
#include <tensorflow/lite/schema/schema_generated.h>

#include "peer_model.h"

namespace {

alignas(16) uint8_t tensor_arena[CONFIG_PEER_ARENA_SIZE];

void print_output(int index, const TfLiteTensor *out) {
    static const char digits[] = "0123456789abcdef";
    const uint8_t *bytes = out->data.uint8;

    printk("BENCH_OUTPUT %d ", index);
    for (size_t i = 0; i < out->bytes; i++) {
        printk("%c%c", digits[bytes[i] >> 4], digits[bytes[i] & 0xfU]);
    }
    printk("\n");
}

int fail(const char *what) {
    printk("BENCH_DONE %s failed\n", what);
    return 0;
}

} // namespace

/* The window's caller: the counter counts from Invoke()'s entry to its return here. */
extern "C" __attribute__((noinline)) TfLiteStatus
bench_invoke(tflite::MicroInterpreter *interpreter) {
    TfLiteStatus status = interpreter->Invoke();

    /* Not a tail call: Invoke() must return here, where the window ends. */
    __asm__ volatile("" ::: "memory");
    return status;
}

int main(void) {
    const tflite::Model *model = tflite::GetModel(peer_model);

    if (model->version() != TFLITE_SCHEMA_VERSION) {
        return fail("the model's schema version");
    }
    static tflite::MicroMutableOpResolver<PEER_NUM_OPS> resolver;
    PEER_ADD_OPS(resolver);
    static tflite::MicroInterpreter interpreter(model, resolver, tensor_arena,
                                                sizeof(tensor_arena));

    if (interpreter.AllocateTensors() != kTfLiteOk) {
        return fail("AllocateTensors()");
    }
    for (size_t i = 0; i < interpreter.inputs_size(); i++) {
        TfLiteTensor *input = interpreter.input(i);

        memset(input->data.raw, 0, input->bytes);
    }
    for (int run = 0; run < CONFIG_BENCH_RUNS; run++) {
        if (bench_invoke(&interpreter) != kTfLiteOk) {
            return fail("Invoke()");
        }
    }
    for (size_t o = 0; o < interpreter.outputs_size(); o++) {
        print_output(static_cast<int>(o), interpreter.output(o));
    }
    printk("BENCH_ARENA %u\n", static_cast<unsigned int>(interpreter.arena_used_bytes()));
    printk("BENCH_DONE ok\n");
    return 0;
}
