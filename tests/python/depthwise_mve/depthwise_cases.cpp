/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs the Helium 3x3 depthwise convolution (lib/src/kernels/depthwise_mve.cpp
 * and depthwise_column_mve.S) on QEMU's Cortex-M55 (mps3-an547, semihosting)
 * over the cases test_depthwise_mve.py writes to cases.bin, and writes to
 * results.bin, for the test to compare with et-export's and the host
 * reference's, every case's depthwise_scratch_bytes (int32) and, where that is
 * not 0 (a shape the kernel takes), its int8 outputs and the kGuard bytes
 * after them (to see that nothing past the output was written).
 *
 * A case: 14 int32 (channels, in_height, in_width, out_height, out_width,
 * stride_y, stride_x, pad_y, pad_x, input_offset, output_offset,
 * activation_min, activation_max, has_bias), then the input (in_height x
 * in_width x channels int8), the weights (3 x 3 x channels int8), the bias
 * (channels int32, if any), the multipliers and shifts (channels int32 each).
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "kernels/depthwise_mve.h"

using et_zephyr::native::depthwise_convolution;
using et_zephyr::native::depthwise_scratch_bytes;
using et_zephyr::native::DepthwiseConvolution;
using et_zephyr::native::DepthwiseShape;

namespace {

/* Bytes after the output that must keep their value. */
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardValue = 0x5a;

/* Room for the largest case the test writes. */
int8_t input[96 * 1024];
int8_t weights[9 * 1024];
int32_t bias[1024];
int32_t multipliers[1024];
int32_t shifts[1024];
int8_t out[96 * 1024 + kGuard];
alignas(16) uint8_t scratch[32 * 1024];

} // namespace

int main() {
    FILE *cases;
    FILE *results;
    if (!open_case_files(&cases, &results)) {
        semihosting_exit();
        return 1;
    }
    int32_t header[14];
    int32_t count = 0;
    while (read_values(cases, header, 14)) {
        DepthwiseConvolution d{};
        DepthwiseShape &s = d.shape;
        s.channels = header[0];
        s.in_height = header[1];
        s.in_width = header[2];
        s.out_height = header[3];
        s.out_width = header[4];
        s.stride_y = header[5];
        s.stride_x = header[6];
        s.pad_y = header[7];
        s.pad_x = header[8];
        d.input_offset = header[9];
        d.output_offset = header[10];
        d.activation_min = header[11];
        d.activation_max = header[12];
        const size_t in_bytes = static_cast<size_t>(s.in_height) * s.in_width * s.channels;
        const size_t out_bytes = static_cast<size_t>(s.out_height) * s.out_width * s.channels;
        const size_t needed = depthwise_scratch_bytes(s);
        if (needed > sizeof(scratch) || in_bytes > sizeof(input) ||
            out_bytes + kGuard > sizeof(out) || s.channels > 1024) {
            printf("case %ld: too large\n", static_cast<long>(count));
            semihosting_exit();
            return 1;
        }
        const size_t channels = static_cast<size_t>(s.channels);
        if (!read_values(cases, input, in_bytes) || !read_values(cases, weights, 9 * channels) ||
            (header[13] != 0 && !read_values(cases, bias, channels)) ||
            !read_values(cases, multipliers, channels) || !read_values(cases, shifts, channels)) {
            puts("truncated cases.bin");
            semihosting_exit();
            return 1;
        }
        const int32_t scratch_bytes = static_cast<int32_t>(needed);
        fwrite(&scratch_bytes, sizeof(scratch_bytes), 1, results);
        count++;
        if (needed == 0) {
            continue;
        }
        memset(out, kGuardValue, out_bytes + kGuard);
        /* Whatever the last case left: the kernel must not depend on it. */
        memset(scratch, count * 37, sizeof(scratch));
        d.input = input;
        d.weights = weights;
        d.bias = header[13] != 0 ? bias : nullptr;
        d.multipliers = multipliers;
        d.shifts = shifts;
        d.out = out;
        d.scratch = scratch;
        depthwise_convolution(d);
        fwrite(out, 1, out_bytes + kGuard, results);
    }
    fclose(results);
    printf("%ld cases done\n", static_cast<long>(count));
    semihosting_exit();
    return 0;
}
