/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/kernels/linear_sums_dsp.S on a Cortex-M4 (QEMU's mps2-an386,
 * semihosting), its input extended by input_pairs_dsp.h as linear_dsp.cpp
 * does, over the cases test_linear_dsp.py writes to cases.bin, and writes
 * each case's sums to results.bin. A case is, as little-endian int32: steps,
 * channels (a multiple of 4), input offset, its bias (0: none, 1: its own
 * array, 2: started in the sums, as the recurrent kernels pass it), the row
 * stride in bytes (at least steps x 4); then steps x 4 input bytes,
 * channels x stride weight bytes and, with a bias, the channels' bias.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "kernels/input_pairs_dsp.h"
#include "kernels/linear_sums_dsp.h"

using et_zephyr::native::extend_input_pairs;
using et_zephyr::native::offset_pair;

namespace {

constexpr int32_t kMaxDepth = 4096;
constexpr int32_t kMaxChannels = 64;
enum Bias { kNoBias = 0, kOwnBias = 1, kBiasInSums = 2 };

} // namespace

int main() {
    FILE *in;
    FILE *out;
    if (!open_case_files(&in, &out)) {
        semihosting_exit();
    }
    static int8_t x[kMaxDepth];
    alignas(8) static int32_t pairs[kMaxDepth / 2];
    static int8_t weights[kMaxChannels * kMaxDepth];
    static int32_t bias[kMaxChannels];
    static int32_t sums[kMaxChannels];
    int32_t steps;
    while (read_values(in, &steps, 1)) {
        int32_t channels;
        int32_t offset;
        int32_t kind;
        int32_t stride;
        if (!read_values(in, &channels, 1) || !read_values(in, &offset, 1) ||
            !read_values(in, &kind, 1) || !read_values(in, &stride, 1) || stride > kMaxDepth ||
            stride < steps * 4 || channels > kMaxChannels || channels % 4 != 0 ||
            !read_values(in, x, steps * 4) || !read_values(in, weights, channels * stride) ||
            (kind != kNoBias && !read_values(in, bias, channels))) {
            puts("malformed cases.bin");
            semihosting_exit();
        }
        extend_input_pairs(x, steps, offset_pair(offset), pairs, 2);
        const int32_t *start = kind == kOwnBias ? bias : nullptr;
        if (kind == kBiasInSums) {
            memcpy(sums, bias, channels * sizeof(bias[0]));
            start = sums;
        }
        et_zephyr_linear_sums_dsp(pairs, weights, steps, channels / 4, start, sums, stride);
        fwrite(sums, sizeof(sums[0]), channels, out);
    }
    fclose(out);
    puts("done");
    semihosting_exit();
}
