/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/kernels/activation_s16_mve.cpp on QEMU's mps3-an547
 * (Cortex-M55, Helium), semihosted, over the cases test_activation_s16_mve.py
 * writes to cases.bin (its table.cpp defines CMSIS-NN's sigmoid table). A
 * case is, as little-endian int32: 0 for sigmoid or 1 for tanh, the left
 * shift, whether the output overwrites the input, the count; then count int16
 * inputs. results.bin gets each case's count int16 outputs.
 */

#include <stdint.h>
#include <stdio.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "kernels/activation_s16_mve.h"

using et_zephyr::native::recurrent::sigmoid_s16_mve;
using et_zephyr::native::recurrent::tanh_s16_mve;

namespace {

constexpr int32_t kMaxCount = 1 << 16;

} // namespace

int main() {
    FILE *in;
    FILE *out;
    if (!open_case_files(&in, &out)) {
        semihosting_exit();
    }
    static int16_t inputs[kMaxCount];
    static int16_t outputs[kMaxCount];
    int32_t header[4];
    while (read_values(in, header, 4)) {
        const int32_t count = header[3];
        if (count < 1 || count > kMaxCount || !read_values(in, inputs, count)) {
            puts("malformed cases.bin");
            semihosting_exit();
        }
        int16_t *const result = header[2] != 0 ? inputs : outputs;
        if (header[0] == 0) {
            sigmoid_s16_mve(inputs, result, count, header[1]);
        } else {
            tanh_s16_mve(inputs, result, count, header[1]);
        }
        fwrite(result, sizeof(result[0]), count, out);
    }
    fclose(out);
    puts("done");
    semihosting_exit();
}
