/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/kernels/requantize_fast.h on a Cortex-M4 or M3 (QEMU's
 * mps2-an386, mps2-an385, semihosting) over every right shift it takes, edge and ordinary
 * multipliers and output offsets, and sums drawn by a xorshift generator
 * (random magnitudes, and values next to the rounding midpoints of both
 * roundings), and writes the int8 results to requantized.bin. The test
 * (test_requantize_fast.py) draws the same sums and compares every byte with
 * the host reference's CMSIS-NN requantization.
 */

#include <stdint.h>
#include <stdio.h>

#include "../semihosting_exit.h"
#include "kernels/requantize_fast.h"

using et_zephyr::native::channel_requantization;
using et_zephyr::native::kExactSumBound;
using et_zephyr::native::requantize;

namespace {

constexpr int32_t kMultipliers[] = {0, 1 << 30, (1 << 30) + 1, 1518500250, 1932735283, INT32_MAX};
constexpr int32_t kOffsets[] = {-128, -1, 0, 127};

uint32_t state = 0x9E3779B9U;

uint32_t next() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

/* Odd draws: a random magnitude of 1 to 29 bits; even draws: next to the
 * value whose doubling high multiply lands on a midpoint of the shift. */
int32_t draw(int32_t index, int32_t multiplier, int32_t right_shift) {
    const uint32_t a = next();
    const uint32_t b = next();
    const uint32_t c = next();
    int64_t sum;
    if (index % 2 != 0 || multiplier == 0) {
        sum = static_cast<int64_t>(b & ((1U << (1 + a % 29)) - 1));
        sum = (c & 1U) != 0 ? -sum : sum;
    } else {
        /* At most 2^29 steps: target * 2^31 fits 64 bits. */
        const int64_t limit = right_shift < 18 ? 2048 : int64_t{1} << (29 - right_shift);
        const int64_t steps = static_cast<int64_t>(a % (2 * limit + 1)) - limit;
        const int64_t target =
            steps * (int64_t{1} << right_shift) + (int64_t{1} << (right_shift - 1));
        sum = target * (int64_t{1} << 31) / multiplier + static_cast<int64_t>(c % 3) - 1;
    }
    if (sum > kExactSumBound) {
        sum = kExactSumBound;
    }
    if (sum < -kExactSumBound) {
        sum = -kExactSumBound;
    }
    return static_cast<int32_t>(sum);
}

} // namespace

int main() {
    FILE *out = fopen("requantized.bin", "wb");
    if (out == nullptr) {
        puts("cannot open requantized.bin");
        semihosting_exit();
    }
    static int8_t results[SUMS];
    for (int32_t shift = -1; shift >= -23; shift--) {
        for (const int32_t multiplier : kMultipliers) {
            for (const int32_t offset : kOffsets) {
                const auto q = channel_requantization(multiplier, shift, offset);
                for (int32_t i = 0; i < SUMS; i++) {
                    results[i] = static_cast<int8_t>(requantize(draw(i, multiplier, -shift), q));
                }
                fwrite(results, 1, sizeof(results), out);
            }
        }
    }
    fclose(out);
    puts("done");
    semihosting_exit();
    return 0;
}
