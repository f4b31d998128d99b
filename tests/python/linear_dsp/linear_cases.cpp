/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/kernels/linear_sums_dsp.S on a Cortex-M4 (QEMU's mps2-an386,
 * semihosting), its input extended by input_pairs_dsp.h as linear_dsp.cpp
 * does, over the cases test_linear_dsp.py writes to cases.bin, and writes
 * each case's sums to sums.bin. A case is, as little-endian int32: steps,
 * channels (a multiple of 4), input offset, whether it has a bias; then
 * steps x 4 input bytes, channels x steps x 4 weight bytes and, with a bias,
 * the channels' bias.
 */

#include <stdint.h>
#include <stdio.h>

#include "../semihosting_exit.h"
#include "kernels/input_pairs_dsp.h"
#include "kernels/linear_sums_dsp.h"

using et_zephyr::native::extend_input_pairs;
using et_zephyr::native::offset_pair;

namespace {

constexpr int32_t kMaxDepth = 4096;
constexpr int32_t kMaxChannels = 64;

bool read_word(FILE *in, int32_t *word) {
    return fread(word, sizeof(*word), 1, in) == 1;
}

bool read_bytes(FILE *in, void *bytes, int32_t count) {
    return fread(bytes, 1, count, in) == static_cast<size_t>(count);
}

} // namespace

int main() {
    FILE *in = fopen("cases.bin", "rb");
    FILE *out = fopen("sums.bin", "wb");
    if (in == nullptr || out == nullptr) {
        puts("cannot open cases.bin or sums.bin");
        semihosting_exit();
    }
    static int8_t x[kMaxDepth];
    alignas(8) static int32_t pairs[kMaxDepth / 2];
    static int8_t weights[kMaxChannels * kMaxDepth];
    static int32_t bias[kMaxChannels];
    static int32_t sums[kMaxChannels];
    int32_t steps;
    while (read_word(in, &steps)) {
        int32_t channels;
        int32_t offset;
        int32_t has_bias;
        if (!read_word(in, &channels) || !read_word(in, &offset) || !read_word(in, &has_bias) ||
            steps * 4 > kMaxDepth || channels > kMaxChannels || channels % 4 != 0 ||
            !read_bytes(in, x, steps * 4) || !read_bytes(in, weights, channels * steps * 4) ||
            (has_bias != 0 && !read_bytes(in, bias, channels * 4))) {
            puts("malformed cases.bin");
            semihosting_exit();
        }
        extend_input_pairs(x, steps, offset_pair(offset), pairs, 2);
        et_zephyr_linear_sums_dsp(pairs, weights, steps, channels / 4,
                                  has_bias != 0 ? bias : nullptr, sums);
        fwrite(sums, sizeof(sums[0]), channels, out);
    }
    fclose(out);
    puts("done");
    semihosting_exit();
}
