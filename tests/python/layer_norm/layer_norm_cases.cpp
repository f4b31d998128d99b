/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/kernels/layer_norm.h on the cases of cases.bin and writes the int8
 * outputs to results.bin, on the host or on a Cortex-M under QEMU (semihosting).
 * test_layer_norm.py writes the cases and compares every byte with the host
 * reference (scripts/et_zephyr/reference/layer_norm.py).
 *
 * cases.bin, little-endian, case after case: int32 rows, channels, input zero
 * point, output zero point, shift; int64 epsilon; int32 multipliers[channels],
 * biases[channels]; int8 inputs[rows * channels].
 */

#include <stdint.h>
#include <stdio.h>

#include "kernels/layer_norm.h"
#include "../case_files.h"
#include "../semihosting_exit.h"

using et_zephyr::native::kLayerNormMaxChannels;
using et_zephyr::native::layer_norm;
using et_zephyr::native::LayerNorm;

namespace {

constexpr int32_t kMaxValues = 4 * kLayerNormMaxChannels;

int32_t multipliers[kLayerNormMaxChannels];
int32_t biases[kLayerNormMaxChannels];
int8_t inputs[kMaxValues];
int8_t outputs[kMaxValues];

} // namespace

int main() {
    FILE *cases;
    FILE *results;
    if (!open_case_files(&cases, &results)) {
        semihosting_exit();
        return 1;
    }
    int32_t header[5];
    int64_t epsilon = 0;
    int32_t count = 0;
    while (read_values(cases, header, 5)) {
        const int32_t rows = header[0];
        const int32_t channels = header[1];
        if (channels < 1 || channels > kLayerNormMaxChannels || rows < 1 ||
            rows * channels > kMaxValues || !read_values(cases, &epsilon, 1) ||
            !read_values(cases, multipliers, static_cast<size_t>(channels)) ||
            !read_values(cases, biases, static_cast<size_t>(channels)) ||
            !read_values(cases, inputs, static_cast<size_t>(rows * channels))) {
            printf("case %ld is malformed\n", static_cast<long>(count));
            semihosting_exit();
            return 1;
        }
        const LayerNorm params{multipliers, biases,  channels, header[2],
                               header[3],   epsilon, header[4]};
        layer_norm(params, inputs, outputs, rows);
        fwrite(outputs, 1, static_cast<size_t>(rows * channels), results);
        ++count;
    }
    fclose(results);
    fclose(cases);
    printf("%ld cases done\n", static_cast<long>(count));
    semihosting_exit();
    return 0;
}
