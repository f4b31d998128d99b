/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs the scalar kernels' matrix product (lib/src/kernels/
 * rows_times_weights_scalar.cpp and its assembly loop linear_sums_scalar.S)
 * on a Cortex-M3 (QEMU's mps2-an385, semihosting) over the cases
 * test_rows_times_weights_scalar.py writes to cases.bin, and writes to
 * results.bin, per case, whether the kernel takes it (rows_times_weights_exact,
 * one byte) and its rows x channels int8 outputs. A case is, as little-endian
 * int32: rows, depth, channels, input offset, output offset, activation min
 * and max, whether multipliers are per channel, whether it has a bias; then
 * rows x depth input bytes, channels x depth weight bytes, the bias (channels
 * int32, if any), the multipliers and the shifts (channels or one int32 each).
 */

#include <stdint.h>
#include <stdio.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "kernels/rows_times_weights_scalar.h"

using et_zephyr::native::rows_times_weights_exact;
using et_zephyr::native::rows_times_weights_scalar;
using et_zephyr::native::RowsTimesWeights;

namespace {

constexpr int32_t kMaxInput = 8192;
constexpr int32_t kMaxWeights = 65536;
constexpr int32_t kMaxChannels = 1024;

} // namespace

int main() {
    FILE *in;
    FILE *out;
    if (!open_case_files(&in, &out)) {
        semihosting_exit();
    }
    static int8_t input[kMaxInput];
    static int8_t weights[kMaxWeights];
    static int8_t outputs[kMaxInput];
    static int32_t bias[kMaxChannels];
    static int32_t multipliers[kMaxChannels];
    static int32_t shifts[kMaxChannels];
    int32_t header[9];
    while (read_values(in, header, 9)) {
        RowsTimesWeights k{};
        k.rows = header[0];
        k.depth = header[1];
        k.channels = header[2];
        k.input_offset = header[3];
        k.output_offset = header[4];
        k.activation_min = header[5];
        k.activation_max = header[6];
        k.per_channel = header[7] != 0;
        const int32_t terms = k.per_channel ? k.channels : 1;
        if (k.rows * k.depth > kMaxInput || k.channels * k.depth > kMaxWeights ||
            k.channels > kMaxChannels || k.rows * k.channels > kMaxInput ||
            !read_values(in, input, k.rows * k.depth) ||
            !read_values(in, weights, k.channels * k.depth) ||
            (header[8] != 0 && !read_values(in, bias, k.channels)) ||
            !read_values(in, multipliers, terms) || !read_values(in, shifts, terms)) {
            puts("malformed cases.bin");
            semihosting_exit();
        }
        k.input = input;
        k.weights = weights;
        k.bias = header[8] != 0 ? bias : nullptr;
        k.multipliers = multipliers;
        k.shifts = shifts;
        k.out = outputs;
        const int8_t taken = rows_times_weights_exact(k) ? 1 : 0;
        fwrite(&taken, 1, 1, out);
        if (taken != 0) {
            rows_times_weights_scalar(k);
            fwrite(outputs, 1, k.rows * k.channels, out);
        }
    }
    fclose(out);
    puts("done");
    semihosting_exit();
}
