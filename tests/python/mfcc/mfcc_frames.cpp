/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/audio/mfcc.cpp on a QEMU Cortex-M, semihosted, over the frames
 * test_mfcc.py writes to cases.bin (480 int16 samples each, little-endian); for
 * each frame results.bin gets et_zephyr_mfcc_frame()'s return value and its 10
 * int32 coefficients. A last record checks that a NULL pointer is refused.
 * benchmarks/front_end.py counts the instructions of the one call in
 * compute_frame(), frame by frame.
 */

#include <stdint.h>
#include <stdio.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "et_zephyr/mfcc.h"

/* The frames' one call site, out of line: the benchmark's window ends at its return. */
extern "C" __attribute__((noinline)) int32_t compute_frame(const int16_t *samples,
                                                           struct et_zephyr_mfcc_scratch *scratch,
                                                           int32_t *coefficients) {
    const int32_t status = et_zephyr_mfcc_frame(samples, scratch, coefficients);
    __asm__ volatile("" ::: "memory"); /* a call and a return site, not a tail call */
    return status;
}

int main() {
    FILE *in;
    FILE *out;
    if (!open_case_files(&in, &out)) {
        semihosting_exit();
    }
    static struct et_zephyr_mfcc_scratch scratch;
    static int16_t samples[ET_ZEPHYR_MFCC_FRAME_LENGTH];
    int32_t coefficients[ET_ZEPHYR_MFCC_COEFFICIENTS];
    while (read_values(in, samples, ET_ZEPHYR_MFCC_FRAME_LENGTH)) {
        const int32_t status = compute_frame(samples, &scratch, coefficients);
        fwrite(&status, sizeof(status), 1, out);
        fwrite(coefficients, sizeof(coefficients[0]), ET_ZEPHYR_MFCC_COEFFICIENTS, out);
    }
    const int32_t refused = et_zephyr_mfcc_frame(samples, nullptr, coefficients);
    fwrite(&refused, sizeof(refused), 1, out);
    fclose(out);
    puts("done");
    semihosting_exit();
}
