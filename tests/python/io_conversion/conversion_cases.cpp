/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Runs lib/src/io_conversion.cpp (et_zephyr_quantize_int8/_int16,
 * et_zephyr_dequantize_int8/_int16) over the cases test_io_conversion.py writes to
 * cases.bin, on the host or on a Cortex-M under QEMU (semihosting gives fopen): groups
 * of [uint32 count][float scale][int32 zero point][count floats]. For each group it
 * writes the INT8 bytes, those dequantized as floats, the INT16 values and those
 * dequantized, to results.bin.
 */

#include <stdint.h>
#include <stdio.h>

#include <et_zephyr/et_zephyr.h>

#include "../case_files.h"
#include "../semihosting_exit.h"

namespace {

constexpr size_t kChunk = 256;

} // namespace

int main() {
    FILE *in;
    FILE *out;
    if (!open_case_files(&in, &out)) {
        semihosting_exit();
        return 1;
    }
    static float values[kChunk];
    static int8_t quantized[kChunk];
    static float dequantized[kChunk];
    static int16_t quantized16[kChunk];
    static float dequantized16[kChunk];
    uint32_t count;
    while (read_values(in, &count, 1)) {
        float scale;
        int32_t zero_point;
        if (!read_values(in, &scale, 1) || !read_values(in, &zero_point, 1) || count > kChunk ||
            !read_values(in, values, count)) {
            puts("malformed cases.bin");
            semihosting_exit();
            return 1;
        }
        et_zephyr_quantize_int8(values, quantized, count, scale, zero_point);
        et_zephyr_dequantize_int8(quantized, dequantized, count, scale, zero_point);
        fwrite(quantized, 1, count, out);
        fwrite(dequantized, sizeof(float), count, out);
        et_zephyr_quantize_int16(values, quantized16, count, scale, zero_point);
        et_zephyr_dequantize_int16(quantized16, dequantized16, count, scale, zero_point);
        fwrite(quantized16, sizeof(int16_t), count, out);
        fwrite(dequantized16, sizeof(float), count, out);
    }
    fclose(out);
    puts("done");
    semihosting_exit();
    return 0;
}
