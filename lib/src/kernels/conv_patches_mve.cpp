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

/* Out of line: padding runs are the edges' (a call there costs little). */
__attribute__((noinline)) void fill_bytes(int8_t *dst, int8x16_t value, int32_t n) {
    for (; n > 0; n -= kVector, dst += kVector) {
        vstrbq_p_s8(dst, value, vctp8q(static_cast<uint32_t>(n)));
    }
}

/* The patches of a row of output pixels whose windows lie inside the input
 * across, [begin, end) of `count`: window i starts at column x0 + i * stride,
 * `size` wide, over an input `extent` wide. */
struct Interior {
    int32_t begin;
    int32_t end;
};

inline Interior interior(int32_t x0, int32_t stride, int32_t size, int32_t extent, int32_t count) {
    const int32_t begin = x0 >= 0 ? 0 : (stride - 1 - x0) / stride;
    const int32_t room = extent - size - x0;
    const int32_t end = room < 0 ? 0 : room / stride + 1;
    const int32_t first = begin < count ? begin : count;
    return {first, clamp(end, first, count)};
}

/* Patches whose windows lie inside the input, of window rows up to a vector:
 * each window row one predicated copy, for `count` patches from `input` on. */
void copy_windows(const et_zephyr::native::Patches &p, const int8_t *input, int32_t count,
                  int8_t *row) {
    const int32_t window_row = p.kernel_width * p.in_channels;
    const int32_t source_row = p.in_width * p.in_channels;
    const int32_t source_step = p.stride_x * p.in_channels;
    const mve_pred16_t lanes = vctp8q(static_cast<uint32_t>(window_row));
    for (int32_t i = 0; i < count; i++, row += p.row_stride, input += source_step) {
        const int8_t *source = input;
        int8_t *dst = row;
        for (int32_t y = 0; y < p.kernel_height; y++, dst += window_row) {
            vstrbq_p_s8(dst, vldrbq_z_s8(source, lanes), lanes);
            source += source_row;
        }
    }
}

/* The window's rows (or columns) inside the input, [begin, end), for a
 * window of `size` starting at `origin` over an input of `extent`. */
struct Span {
    int32_t begin;
    int32_t end;
};

inline Span inside(int32_t origin, int32_t size, int32_t extent) {
    const int32_t begin = clamp(-origin, 0, size);
    return {begin, clamp(extent - origin, begin, size)};
}

} // namespace

namespace et_zephyr::native {

/*
 * Output pixels go a row at a time: which window rows lie inside the input is
 * worked out once per output row, and which window columns do from each
 * patch's x, which steps by the stride. For window rows up to a vector, where
 * the rows are all inside, the patches whose columns are too (most of them)
 * are plain copies.
 */
void gather_patches(const Patches &patches, int32_t first, int32_t count, int8_t *rows) {
    /* A copy: the int8 stores below could alias the caller's struct. */
    const Patches p = patches;
    const int8x16_t pad = vdupq_n_s8(p.pad_value);
    const int32_t window_row = p.kernel_width * p.in_channels;
    const int32_t source_row = p.in_width * p.in_channels;
    const int32_t source_step = p.stride_x * p.in_channels;
    int32_t out_y = first / p.out_width;
    int32_t out_x = first - out_y * p.out_width;
    while (count > 0) {
        const int32_t run = count < p.out_width - out_x ? count : p.out_width - out_x;
        const int32_t y0 = out_y * p.stride_y - p.pad_y;
        const Span ky = inside(y0, p.kernel_height, p.in_height);
        int32_t x0 = out_x * p.stride_x - p.pad_x;
        /* The input offset of the patch's first window row inside the input. */
        int32_t offset = (y0 + ky.begin) * source_row + x0 * p.in_channels;
        int8_t *row = rows;
        Interior copies{0, 0};
        if (window_row <= kVector && ky.begin == 0 && ky.end == p.kernel_height) {
            copies = interior(x0, p.stride_x, p.kernel_width, p.in_width, run);
        }
        for (int32_t i = 0; i < run; i++, x0 += p.stride_x, offset += source_step) {
            if (i == copies.begin && copies.end > copies.begin) {
                /* The interior patches at once; the loop's step then moves
                 * past the last of them. */
                const int32_t last = copies.end - 1 - i;
                copy_windows(p, p.input + offset, last + 1, row);
                row += (last + 1) * p.row_stride;
                x0 += last * p.stride_x;
                offset += last * source_step;
                i += last;
                continue;
            }
            const Span kx = inside(x0, p.kernel_width, p.in_width);
            const int32_t left = kx.begin * p.in_channels;
            const int32_t copied = (kx.end - kx.begin) * p.in_channels;
            int8_t *dst = row;
            row += p.row_stride;
            if (ky.begin > 0) {
                fill_bytes(dst, pad, ky.begin * window_row);
                dst += ky.begin * window_row;
            }
            const int8_t *source = p.input + offset;
            if (window_row <= kVector) {
                /* One vector a window row: the input's lanes loaded, the
                 * padding's selected (a predicated-off lane is not read). */
                const mve_pred16_t stored = vctp8q(static_cast<uint32_t>(window_row));
                const mve_pred16_t loaded = vctp8q(static_cast<uint32_t>(left + copied)) ^
                                            vctp8q(static_cast<uint32_t>(left));
                for (int32_t y = ky.begin; y < ky.end; y++, dst += window_row) {
                    vstrbq_p_s8(dst, vpselq_s8(vldrbq_z_s8(source, loaded), pad, loaded), stored);
                    source += source_row;
                }
            } else if (copied == window_row) {
                /* Away from the left and right edges: the rows are copies. */
                for (int32_t y = ky.begin; y < ky.end; y++, dst += window_row) {
                    copy_bytes(dst, source, window_row);
                    source += source_row;
                }
            } else {
                source += left;
                const int32_t right = window_row - left - copied;
                for (int32_t y = ky.begin; y < ky.end; y++, dst += window_row) {
                    if (left > 0) {
                        fill_bytes(dst, pad, left);
                    }
                    copy_bytes(dst + left, source, copied);
                    if (right > 0) {
                        fill_bytes(dst + left + copied, pad, right);
                    }
                    source += source_row;
                }
            }
            if (ky.end < p.kernel_height) {
                fill_bytes(dst, pad, (p.kernel_height - ky.end) * window_row);
            }
        }
        rows += run * p.row_stride;
        count -= run;
        out_x = 0;
        out_y++;
    }
}

} // namespace et_zephyr::native
