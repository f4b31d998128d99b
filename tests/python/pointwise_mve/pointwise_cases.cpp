/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs the Helium matrix product (lib/src/kernels/pointwise_mve.cpp and
 * pointwise_pair_mve.S) on QEMU's Cortex-M55 (mps3-an547, semihosting) over
 * the cases test_pointwise_mve.py writes to cases.bin, and writes every
 * case's int8 outputs to results.bin for the test to compare with the host
 * reference.
 *
 * A case: 12 int32 (rows, depth, row_stride, channels, input_offset,
 * output_offset, activation_min, activation_max, per_tensor, has_bias,
 * pair_scratch, channel_bases), then the rows (rows x row_stride int8), the
 * weights (channels x depth int8), the bias (channels int32, if any), the
 * multipliers and shifts (channels int32 each, or one with per_tensor).
 */

#include <stdint.h>
#include <stdio.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "kernels/pointwise_mve.h"

using et_zephyr::native::pointwise_channel_bases;
using et_zephyr::native::pointwise_product;
using et_zephyr::native::PointwiseProduct;

namespace {

/* Room for the largest case the test writes. */
int8_t input[64 * 1024];
int8_t weights[64 * 1024];
int32_t bias[1024];
int32_t multipliers[1024];
int32_t shifts[1024];
int32_t bases[1024];
int8_t out[64 * 1024];
int8_t pair_scratch[2 * 1024];

} // namespace

int main() {
    FILE *cases;
    FILE *results;
    if (!open_case_files(&cases, &results)) {
        semihosting_exit();
        return 1;
    }
    int32_t header[12];
    int32_t count = 0;
    while (read_values(cases, header, 12)) {
        PointwiseProduct k{};
        k.rows = header[0];
        k.depth = header[1];
        k.row_stride = header[2];
        k.channels = header[3];
        k.input_offset = header[4];
        k.output_offset = header[5];
        k.activation_min = header[6];
        k.activation_max = header[7];
        k.per_tensor = header[8] != 0;
        const int32_t terms = k.per_tensor ? 1 : k.channels;
        if (!read_values(cases, input, static_cast<size_t>(k.rows * k.row_stride)) ||
            !read_values(cases, weights, static_cast<size_t>(k.channels * k.depth)) ||
            (header[9] != 0 && !read_values(cases, bias, static_cast<size_t>(k.channels))) ||
            !read_values(cases, multipliers, static_cast<size_t>(terms)) ||
            !read_values(cases, shifts, static_cast<size_t>(terms))) {
            puts("truncated case");
            semihosting_exit();
            return 1;
        }
        k.input = input;
        k.weights = weights;
        k.bias = header[9] != 0 ? bias : nullptr;
        k.multipliers = multipliers;
        k.shifts = shifts;
        k.out = out;
        k.pair_weights = header[10] != 0 ? pair_scratch : nullptr;
        k.channel_bases = nullptr;
        if (header[11] != 0) {
            pointwise_channel_bases(k, bases);
            k.channel_bases = bases;
        }
        pointwise_product(k);
        fwrite(out, 1, static_cast<size_t>(k.rows * k.channels), results);
        count++;
    }
    fclose(results);
    printf("%ld cases done\n", static_cast<long>(count));
    semihosting_exit();
    return 0;
}
