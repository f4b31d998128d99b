/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/kernels/gate_sides.cpp (the recurrent kernels' gates on the
 * DSP extension's or the scalar assembly loop) on QEMU's mps2-an386
 * (Cortex-M4) or mps2-an385 (Cortex-M3), semihosted, over the cases
 * test_gate_sides.py writes to cases.bin. A case is rows and the number of
 * sides (1 or 2) as little-endian int32, then per side: columns, multiplier,
 * shift (int32), the columns int8 vector values, rows x columns int8 weights
 * and rows int32 biases. For each case results.bin gets each side's
 * requantization as exact_requantization() chooses it (int32) and, where neither is
 * kNotExact, the rows int16 values of gate_on_own_loops().
 */

#include <stdint.h>
#include <stdio.h>

#include "../case_files.h"
#include "../semihosting_exit.h"
#include "kernels/gate_sides.h"

using et_zephyr::native::recurrent::exact_requantization;
using et_zephyr::native::recurrent::gate_on_own_loops;
using et_zephyr::native::recurrent::GateSide;
using et_zephyr::native::recurrent::Requantization;

namespace {

constexpr int32_t kMaxColumns = 1024;
constexpr int32_t kMaxRows = 160;

struct Side {
    int8_t x[kMaxColumns];
    int8_t weights[kMaxRows * kMaxColumns];
    int32_t bias[kMaxRows];
};

/* One side's operands from the file, or false. */
bool read_side(FILE *in, int32_t rows, Side *side, GateSide *out) {
    int32_t header[3];
    if (!read_values(in, header, 3) || header[0] < 1 || header[0] > kMaxColumns ||
        !read_values(in, side->x, header[0]) || !read_values(in, side->weights, rows * header[0]) ||
        !read_values(in, side->bias, rows)) {
        return false;
    }
    *out = {side->weights,
            side->bias,
            header[1],
            header[2],
            header[0],
            rows,
            Requantization::kNotExact};
    out->requantization = exact_requantization(*out);
    return true;
}

} // namespace

int main() {
    FILE *in;
    FILE *out;
    if (!open_case_files(&in, &out)) {
        semihosting_exit();
    }
    static Side sides[2];
    static int16_t values[kMaxRows];
    int32_t header[2];
    while (read_values(in, header, 2)) {
        const int32_t rows = header[0];
        const int32_t count = header[1];
        GateSide gate[2];
        bool ok = rows >= 1 && rows <= kMaxRows && (count == 1 || count == 2);
        for (int32_t i = 0; ok && i < count; i++) {
            ok = read_side(in, rows, &sides[i], &gate[i]);
        }
        if (!ok) {
            puts("malformed cases.bin");
            semihosting_exit();
        }
        bool exact = true;
        for (int32_t i = 0; i < count; i++) {
            const auto how = static_cast<int32_t>(gate[i].requantization);
            fwrite(&how, sizeof(how), 1, out);
            exact = exact && gate[i].requantization != Requantization::kNotExact;
        }
        if (exact) {
            gate_on_own_loops(gate[0], sides[0].x, count == 2 ? &gate[1] : nullptr, sides[1].x,
                              values);
            fwrite(values, sizeof(values[0]), rows, out);
        }
    }
    fclose(out);
    puts("done");
    semihosting_exit();
}
