/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Patch gathering for et-zephyr's Helium convolution kernel
 * (conv_patches_mve.h). A window row is at most three runs: padding left of
 * the input, a contiguous stretch of it (channels-last: the window's columns
 * are adjacent), padding right of it; each run is copied or filled 16 bytes
 * a step with tail predication.
 */

#include "conv_patches_mve.h"

#include <arm_mve.h>
#include <stdint.h>

namespace {

constexpr int32_t kVector = 16;

inline int32_t clamp(int32_t value, int32_t low, int32_t high) {
    return value < low ? low : (value > high ? high : value);
}

/* Whole vectors, then the tail predicated. */
inline void copy_bytes(int8_t *dst, const int8_t *src, int32_t n) {
    for (; n >= kVector; n -= kVector, dst += kVector, src += kVector) {
        vstrbq_s8(dst, vldrbq_s8(src));
    }
    if (n > 0) {
        const mve_pred16_t valid = vctp8q(static_cast<uint32_t>(n));
        vstrbq_p_s8(dst, vldrbq_z_s8(src, valid), valid);
    }
}

inline void fill_bytes(int8_t *dst, int8x16_t value, int32_t n) {
    for (; n > 0; n -= kVector, dst += kVector) {
        vstrbq_p_s8(dst, value, vctp8q(static_cast<uint32_t>(n)));
    }
}

} // namespace

namespace et_zephyr::native {

void gather_patches(const Patches &patches, int32_t first, int32_t count, int8_t *rows) {
    /* A copy: the int8 stores below could alias the caller's struct. */
    const Patches p = patches;
    const int8x16_t pad = vdupq_n_s8(p.pad_value);
    const int32_t window_row = p.kernel_width * p.in_channels;
    for (int32_t i = 0; i < count; i++) {
        const int32_t out_y = (first + i) / p.out_width;
        const int32_t out_x = (first + i) % p.out_width;
        const int32_t y0 = out_y * p.stride_y - p.pad_y;
        const int32_t x0 = out_x * p.stride_x - p.pad_x;
        /* The window's columns inside the input: [begin, end). */
        const int32_t begin = clamp(-x0, 0, p.kernel_width);
        const int32_t end = clamp(p.in_width - x0, begin, p.kernel_width);
        const int32_t left = begin * p.in_channels;
        const int32_t inside = (end - begin) * p.in_channels;
        const int32_t right = window_row - left - inside;
        int8_t *row = rows + i * p.row_stride;
        const int8_t *source = p.input + (y0 * p.in_width + x0 + begin) * p.in_channels;
        const int32_t source_row = p.in_width * p.in_channels;
        if (window_row <= kVector) {
            /* One vector a window row: the input's lanes loaded, the padding's
             * selected (a predicated-off lane is not read). */
            const mve_pred16_t stored = vctp8q(static_cast<uint32_t>(window_row));
            const mve_pred16_t loaded =
                vctp8q(static_cast<uint32_t>(left + inside)) ^ vctp8q(static_cast<uint32_t>(left));
            source -= left;
            for (int32_t y = y0; y < y0 + p.kernel_height; y++, row += window_row) {
                const bool inside_rows = y >= 0 && y < p.in_height;
                const int8x16_t values =
                    inside_rows ? vpselq_s8(vldrbq_z_s8(source, loaded), pad, loaded) : pad;
                vstrbq_p_s8(row, values, stored);
                source += source_row;
            }
            continue;
        }
        if (left == 0 && right == 0 && y0 >= 0 && y0 + p.kernel_height <= p.in_height) {
            /* Inside the input: the window's rows only. */
            for (int32_t ky = 0; ky < p.kernel_height; ky++, row += window_row) {
                copy_bytes(row, source, window_row);
                source += source_row;
            }
            continue;
        }
        for (int32_t y = y0; y < y0 + p.kernel_height; y++, row += window_row) {
            if (y < 0 || y >= p.in_height) {
                fill_bytes(row, pad, window_row);
            } else {
                fill_bytes(row, pad, left);
                copy_bytes(row + left, source, inside);
                fill_bytes(row + left + inside, pad, right);
            }
            source += source_row;
        }
    }
}

} // namespace et_zephyr::native
