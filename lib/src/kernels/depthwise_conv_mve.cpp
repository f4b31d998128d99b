/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * cortex_m::quantized_depthwise_conv2d.out for Helium (MVE with floating
 * point), for 3x3 depthwise convolutions: stride 1, or 2 down and 1 or 2
 * across; no dilation, depth multiplier 1, padding 0 or 1, channels a
 * multiple of 4.
 *
 * CMSIS-NN's arm_depthwise_conv_s8_opt copies every output pixel's 3x3 window
 * into a buffer (im2col), multiplies with a separate vmul and vadd per tap and
 * reloads the requantization parameters after every 4 pixels. Here, one group
 * of 4 channels at a time:
 * - the group's input is converted once into float32 vectors, column by
 *   column into a ring of 3 zero-point-padded columns (moving by the stride
 *   across), so that every tap of an output is a load at a fixed offset;
 * - 4 outputs down a column are computed together: each loaded input vector
 *   serves the (up to) 3 of them that need it (2 at stride 2 down), with the
 *   3 taps of a kernel column held in registers;
 * - products are summed with fused multiply-adds in float32. Every operand and
 *   partial sum is an integer below 2^24 in magnitude (at most 9 products of
 *   int8 values, |sum| <= 147456), so float32 holds them exactly and the sum
 *   is the exact integer sum; vfma needs no temporary register, which keeps
 *   4 sums, 3 taps and an input in Helium's 8 vector registers.
 * The input offset times the kernel sum is added once per channel, and the
 * requantization is CMSIS-NN's (arm_requantize_mve_32x4): outputs are
 * bit-identical to the upstream kernel's. Other shapes, and inputs whose 3
 * columns do not fit the scratch buffer planned for CMSIS-NN, go to the
 * upstream kernel.
 */

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

#include "conv_checks.h"
#include "requantize_mve.h"
#include "upstream_kernels.h"

using et_zephyr::native::all_equal;
using et_zephyr::native::has_int8_types;
using et_zephyr::native::has_nhwc_bytes;
using et_zephyr::native::make_requantization;
using et_zephyr::native::Requantization;
using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

namespace {

/* Channels per vector (32-bit lanes). */
constexpr int32_t kLanes = 4;
constexpr int32_t kTaps = 9;
/* Outputs down a column computed together. */
constexpr int32_t kPixels = 4;

struct Shape {
    int32_t channels;
    int32_t in_height;
    int32_t in_width;
    int32_t out_height;
    int32_t out_width;
    int32_t stride_y;
    int32_t stride_x;
    int32_t pad_y;
    int32_t pad_x;

    /* A padded input column of one channel group, one float32 vector a pixel:
     * the rows the outputs read. */
    int32_t column_height() const { return (out_height - 1) * stride_y + 3; }
    /* Scratch: the group's 9 taps, then the 3 input columns an output column
     * reads. */
    size_t scratch_bytes() const {
        return sizeof(float32x4_t) * (kTaps + 3 * static_cast<size_t>(column_height()));
    }
};

/* 1 both ways, or 2 down and 1 or 2 across. */
bool is_stride(int64_t down, int64_t across) {
    return (down == 1 && across == 1) || (down == 2 && (across == 1 || across == 2));
}
bool is_padding(int64_t padding) {
    return padding == 0 || padding == 1;
}

/* The shape this kernel handles, or false (then the upstream kernel runs). */
bool handled_shape(const Tensor &input, const Tensor &weight, const std::optional<Tensor> &bias,
                   ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                   int64_t depth_multiplier, const Tensor &multipliers, const Tensor &shifts,
                   const Tensor &scratch, const Tensor &out, Shape *shape) {
    if (input.dim() != 4 || weight.dim() != 4 || out.dim() != 4 || depth_multiplier != 1 ||
        !all_equal(dilation, 1) || stride.size() != 2 || !is_stride(stride[0], stride[1]) ||
        padding.size() != 2 || !is_padding(padding[0]) || !is_padding(padding[1])) {
        return false;
    }
    if (!has_int8_types(input, weight, bias, multipliers, shifts, out)) {
        return false;
    }
    /* All three are 4-D: sizes()[d] needs no bounds check. */
    const auto in_sizes = input.sizes();
    const auto w_sizes = weight.sizes();
    const auto out_sizes = out.sizes();
    const int64_t channels = in_sizes[1];
    /* Weights are [1, 3, 3, C] (IHWO), contiguous. */
    if (in_sizes[0] != 1 || channels % kLanes != 0 || w_sizes[0] != 1 || w_sizes[1] != 3 ||
        w_sizes[2] != 3 || w_sizes[3] != channels || out_sizes[1] != channels ||
        multipliers.numel() != channels || shifts.numel() != channels ||
        (bias.has_value() && bias->numel() != channels)) {
        return false;
    }
    /* The scratch holds float32 vectors: word aligned. */
    if (!has_nhwc_bytes(input) || !has_nhwc_bytes(out) ||
        (reinterpret_cast<uintptr_t>(scratch.const_data_ptr()) & 3U) != 0) {
        return false;
    }
    /* The kernel reads the input channel group by channel group while it
     * writes: an output that overlaps the input (et-export plans that only for
     * CMSIS-NN's order, as it did for stride 2 before this kernel took it) is
     * the upstream kernel's. */
    const auto *in_bytes = static_cast<const uint8_t *>(input.const_data_ptr());
    const auto *out_bytes = static_cast<const uint8_t *>(out.const_data_ptr());
    if (in_bytes < out_bytes + out.nbytes() && out_bytes < in_bytes + input.nbytes()) {
        return false;
    }
    shape->channels = static_cast<int32_t>(channels);
    shape->in_height = static_cast<int32_t>(in_sizes[2]);
    shape->in_width = static_cast<int32_t>(in_sizes[3]);
    shape->stride_y = static_cast<int32_t>(stride[0]);
    shape->stride_x = static_cast<int32_t>(stride[1]);
    shape->pad_y = static_cast<int32_t>(padding[0]);
    shape->pad_x = static_cast<int32_t>(padding[1]);
    shape->out_height = static_cast<int32_t>(out_sizes[2]);
    shape->out_width = static_cast<int32_t>(out_sizes[3]);
    if (shape->in_height + 2 * shape->pad_y < 3 || shape->in_width + 2 * shape->pad_x < 3 ||
        shape->out_height != (shape->in_height + 2 * shape->pad_y - 3) / shape->stride_y + 1 ||
        shape->out_width != (shape->in_width + 2 * shape->pad_x - 3) / shape->stride_x + 1) {
        return false;
    }
    return scratch.nbytes() >= shape->scratch_bytes();
}

/* Where a padded input column's values come from, worked out once a layer:
 * its padded rows (those the outputs read), the top padding, the input rows
 * below it (a stride-2 layer may leave the last one and the bottom padding
 * unread) and the bytes between them. */
struct ColumnLayout {
    int32_t height;
    int32_t top;
    int32_t rows;
    int32_t row_bytes;
};

ColumnLayout column_layout(const Shape &s) {
    const int32_t height = s.column_height();
    const int32_t rows = height - s.pad_y < s.in_height ? height - s.pad_y : s.in_height;
    return {height, s.pad_y, rows, s.in_width * s.channels};
}

/* Padded input column x of channel group c as float32 vectors, the padding
 * filled with the zero point (whose offset input is 0: it adds nothing to the
 * sums). */
__attribute__((always_inline)) inline void fill_column(float32x4_t *column, const int8_t *input,
                                                       int32_t x, int32_t c, float32x4_t zero_point,
                                                       const ColumnLayout &l, const Shape &s) {
    const int32_t ix = x - s.pad_x;
    int32_t filled = 0;
    if (ix >= 0 && ix < s.in_width) {
        if (l.top != 0) {
            column[0] = zero_point;
        }
        const int8_t *src = input + ix * s.channels + c;
        float32x4_t *dst = column + l.top;
        for (int32_t iy = 0; iy < l.rows; iy++) {
            dst[iy] = vcvtq_f32_s32(vldrbq_s32(src));
            src += l.row_bytes;
        }
        filled = l.top + l.rows;
    }
    for (int32_t y = filled; y < l.height; y++) {
        column[y] = zero_point;
    }
}

// clang-format off
/* One kernel column (3 taps) over the input vectors of 4 sums down a column;
 * FMA0 is the sums' first operation. At stride 1, 6 input vectors, each
 * serving up to 3 sums; */
#define ET_ZEPHYR_KERNEL_COLUMN(COLUMN, TAP0, FMA0)                                                \
    "vldrw.32 %q[w0], [%[taps], #" #TAP0 "]\n\t"                                                   \
    "vldrw.32 %q[x], [%[" COLUMN "]], #64\n\t"                                                     \
    "vldrw.32 %q[w1], [%[taps], #" #TAP0 "+16]\n\t"                                                \
    FMA0 " %q[a0], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-48]\n\t"                                                    \
    "vldrw.32 %q[w2], [%[taps], #" #TAP0 "+32]\n\t"                                                \
    "vfma.f32 %q[a0], %q[x], %q[w1]\n\t"                                                           \
    FMA0 " %q[a1], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-32]\n\t"                                                    \
    "vfma.f32 %q[a0], %q[x], %q[w2]\n\t"                                                           \
    "vfma.f32 %q[a1], %q[x], %q[w1]\n\t"                                                           \
    FMA0 " %q[a2], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-16]\n\t"                                                    \
    "vfma.f32 %q[a1], %q[x], %q[w2]\n\t"                                                           \
    "vfma.f32 %q[a2], %q[x], %q[w1]\n\t"                                                           \
    FMA0 " %q[a3], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #0]\n\t"                                                      \
    "vfma.f32 %q[a2], %q[x], %q[w2]\n\t"                                                           \
    "vfma.f32 %q[a3], %q[x], %q[w1]\n\t"                                                           \
    "vldrw.32 %q[x], [%[" COLUMN "], #16]\n\t"                                                     \
    "vfma.f32 %q[a3], %q[x], %q[w2]\n\t"
/* at stride 2, 9 input vectors, each serving up to 2. */
#define ET_ZEPHYR_KERNEL_COLUMN_STRIDE_2(COLUMN, TAP0, FMA0)                                       \
    "vldrw.32 %q[w0], [%[taps], #" #TAP0 "]\n\t"                                                   \
    "vldrw.32 %q[x], [%[" COLUMN "]], #128\n\t"                                                    \
    "vldrw.32 %q[w1], [%[taps], #" #TAP0 "+16]\n\t"                                                \
    FMA0 " %q[a0], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-112]\n\t"                                                   \
    "vldrw.32 %q[w2], [%[taps], #" #TAP0 "+32]\n\t"                                                \
    "vfma.f32 %q[a0], %q[x], %q[w1]\n\t"                                                           \
    "vldrw.32 %q[x], [%[" COLUMN "], #-96]\n\t"                                                    \
    "vfma.f32 %q[a0], %q[x], %q[w2]\n\t"                                                           \
    FMA0 " %q[a1], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-80]\n\t"                                                    \
    "vfma.f32 %q[a1], %q[x], %q[w1]\n\t"                                                           \
    "vldrw.32 %q[x], [%[" COLUMN "], #-64]\n\t"                                                    \
    "vfma.f32 %q[a1], %q[x], %q[w2]\n\t"                                                           \
    FMA0 " %q[a2], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-48]\n\t"                                                    \
    "vfma.f32 %q[a2], %q[x], %q[w1]\n\t"                                                           \
    "vldrw.32 %q[x], [%[" COLUMN "], #-32]\n\t"                                                    \
    "vfma.f32 %q[a2], %q[x], %q[w2]\n\t"                                                           \
    FMA0 " %q[a3], %q[x], %q[w0]\n\t"                                                              \
    "vldrw.32 %q[x], [%[" COLUMN "], #-16]\n\t"                                                    \
    "vfma.f32 %q[a3], %q[x], %q[w1]\n\t"                                                           \
    "vldrw.32 %q[x], [%[" COLUMN "], #0]\n\t"                                                      \
    "vfma.f32 %q[a3], %q[x], %q[w2]\n\t"
/* Sums requantized as requantize_mve.h describes, the Requantization's
 * vectors loaded one at a time into w0 (the taps are done with): EACH(OP)
 * applies OP to every sum (ET_ZEPHYR_ONE_SUM or ET_ZEPHYR_FOUR_SUMS). */
#define ET_ZEPHYR_REQUANTIZE(EACH)                                                                 \
    "vldrw.32 %q[w0], [%[q]]\n\t"                                                                  \
    EACH(ET_ZEPHYR_TO_INT) EACH(ET_ZEPHYR_ADD_W0)                                                  \
    "vldrw.32 %q[w0], [%[q], #32]\n\t"                                                             \
    EACH(ET_ZEPHYR_SHIFT_LEFT)                                                                     \
    "vldrw.32 %q[w0], [%[q], #16]\n\t"                                                             \
    EACH(ET_ZEPHYR_MULTIPLY)                                                                       \
    "vldrw.32 %q[w0], [%[q], #48]\n\t"                                                             \
    EACH(ET_ZEPHYR_DIVIDE_ROUNDING) EACH(ET_ZEPHYR_ADD_OFFSET)                                     \
    "vldrw.32 %q[w0], [%[q], #64]\n\t"                                                             \
    EACH(ET_ZEPHYR_MAX_W0)                                                                         \
    "vldrw.32 %q[w0], [%[q], #80]\n\t"                                                             \
    EACH(ET_ZEPHYR_MIN_W0)
#define ET_ZEPHYR_ONE_SUM(OP) OP("a0")
#define ET_ZEPHYR_FOUR_SUMS(OP) OP("a0") OP("a1") OP("a2") OP("a3")
#define ET_ZEPHYR_TO_INT(A) "vcvt.s32.f32 %q[" A "], %q[" A "]\n\t"
#define ET_ZEPHYR_ADD_W0(A) "vadd.i32 %q[" A "], %q[" A "], %q[w0]\n\t"
#define ET_ZEPHYR_SHIFT_LEFT(A) "vshl.s32 %q[" A "], %q[" A "], %q[w0]\n\t"
#define ET_ZEPHYR_MULTIPLY(A) "vqrdmulh.s32 %q[" A "], %q[" A "], %q[w0]\n\t"
/* Round half away from zero, as arm_divide_by_power_of_two_mve_32x4: the
 * right shifts are in w0. */
#define ET_ZEPHYR_DIVIDE_ROUNDING(A)                                                               \
    "vand %q[x], %q[" A "], %q[w0]\n\t"                                                            \
    "vshr.s32 %q[x], %q[x], #31\n\t"                                                               \
    "vqadd.s32 %q[" A "], %q[" A "], %q[x]\n\t"                                                    \
    "vrshl.s32 %q[" A "], %q[" A "], %q[w0]\n\t"
#define ET_ZEPHYR_ADD_OFFSET(A) "vadd.i32 %q[" A "], %q[" A "], %[offset]\n\t"
#define ET_ZEPHYR_MAX_W0(A) "vmax.s32 %q[" A "], %q[" A "], %q[w0]\n\t"
#define ET_ZEPHYR_MIN_W0(A) "vmin.s32 %q[" A "], %q[" A "], %q[w0]\n\t"
/* The 4 sums requantized and stored down the output column. */
#define ET_ZEPHYR_REQUANTIZE_AND_STORE                                                             \
    ET_ZEPHYR_REQUANTIZE(ET_ZEPHYR_FOUR_SUMS)                                                      \
    "vstrb.32 %q[a0], [%[out]]\n\t"                                                                \
    "add %[row], %[out], %[row_bytes]\n\t"                                                         \
    "vstrb.32 %q[a1], [%[row]]\n\t"                                                                \
    "add %[row], %[row], %[row_bytes]\n\t"                                                         \
    "vstrb.32 %q[a2], [%[row]]\n\t"                                                                \
    "add %[row], %[row], %[row_bytes]\n\t"                                                         \
    "vstrb.32 %q[a3], [%[row]]\n\t"
// clang-format on
static_assert(offsetof(Requantization, multiplier) == 16 &&
                  offsetof(Requantization, left_shift) == 32 &&
                  offsetof(Requantization, right_shift) == 48 &&
                  offsetof(Requantization, activation_min) == 64 &&
                  offsetof(Requantization, activation_max) == 80,
              "ET_ZEPHYR_REQUANTIZE loads a Requantization at these offsets");

/*
 * The 3x3 taps of 4 outputs down a column, STRIDE rows apart: sum[p] = sum
 * over kx, ky of columns[kx][STRIDE p + ky] * taps[3 kx + ky], each
 * columns[kx] pointing at the 3 STRIDE + 3 input vectors they read, taps
 * transposed; then the sums requantized with q and stored to out and the 3
 * output rows below it, row_bytes apart; each columns[kx] moved on to the
 * next block's rows (by its first load). In assembly because GCC 12 spills
 * the 8 live vectors (4 sums, a kernel column's 3 taps and an input) and
 * reloads the requantization's vectors through extra address arithmetic.
 * The first kernel column starts each sum with a multiply.
 */
template <int32_t STRIDE>
__attribute__((always_inline)) inline void
block_of_four(const float32x4_t *&column0, const float32x4_t *&column1, const float32x4_t *&column2,
              const float32x4_t *taps, const Requantization &q, int8_t *out, int32_t row_bytes) {
    float32x4_t a0;
    float32x4_t a1;
    float32x4_t a2;
    float32x4_t a3;
    float32x4_t w0;
    float32x4_t w1;
    float32x4_t w2;
    float32x4_t x;
    int8_t *row;
    using Rows = const float32x4_t(*)[3 * STRIDE + 3];
#define ET_ZEPHYR_BLOCK_OPERANDS                                                                                \
    : [a0] "=&w"(a0), [a1] "=&w"(a1), [a2] "=&w"(a2), [a3] "=&w"(a3), [w0] "=&w"(w0),             \
      [w1] "=&w"(w1), [w2] "=&w"(w2), [x] "=&w"(x), [row] "=&l"(row), [column0] "+r"(column0),    \
      [column1] "+r"(column1), [column2] "+r"(column2)                                             \
    : [taps] "r"(taps), [q] "r"(&q), [offset] "r"(q.output_offset), [out] "l"(out), [row_bytes] "r"(row_bytes),      \
      "m"(*reinterpret_cast<Rows>(column0)), "m"(*reinterpret_cast<Rows>(column1)),                \
      "m"(*reinterpret_cast<Rows>(column2)),                                                       \
      "m"(*reinterpret_cast<const float32x4_t(*)[kTaps]>(taps)), "m"(q)                            \
    : "memory"
    if constexpr (STRIDE == 1) {
        __asm__ volatile(ET_ZEPHYR_KERNEL_COLUMN("column0", 0, "vmul.f32")
                             ET_ZEPHYR_KERNEL_COLUMN("column1", 48, "vfma.f32")
                                 ET_ZEPHYR_KERNEL_COLUMN("column2", 96, "vfma.f32")
                                     ET_ZEPHYR_REQUANTIZE_AND_STORE ET_ZEPHYR_BLOCK_OPERANDS);
    } else {
        __asm__ volatile(ET_ZEPHYR_KERNEL_COLUMN_STRIDE_2("column0", 0, "vmul.f32")
                             ET_ZEPHYR_KERNEL_COLUMN_STRIDE_2("column1", 48, "vfma.f32")
                                 ET_ZEPHYR_KERNEL_COLUMN_STRIDE_2("column2", 96, "vfma.f32")
                                     ET_ZEPHYR_REQUANTIZE_AND_STORE ET_ZEPHYR_BLOCK_OPERANDS);
    }
#undef ET_ZEPHYR_BLOCK_OPERANDS
}

/* One tap of one output: the input vector at OFFSET bytes of COLUMN times the
 * tap at TAP bytes. */
#define ET_ZEPHYR_ONE_TAP(COLUMN, OFFSET, TAP)                                                     \
    "vldrw.32 %q[x], [%[" COLUMN "], #" #OFFSET "]\n\t"                                            \
    "vldrw.32 %q[w0], [%[taps], #" #TAP "]\n\t"                                                    \
    "vfma.f32 %q[a0], %q[x], %q[w0]\n\t"

/* The same for one output (the last row of a column whose height is not a
 * multiple of 4), stored at out. */
__attribute__((always_inline)) inline void
one_output(const float32x4_t *column0, const float32x4_t *column1, const float32x4_t *column2,
           const float32x4_t *taps, const Requantization &q, int8_t *out) {
    float32x4_t a0;
    float32x4_t w0;
    float32x4_t x;
    using Window = const float32x4_t(*)[3];
    // clang-format off
    __asm__ volatile(
        "vldrw.32 %q[x], [%[column0]]\n\t"
        "vldrw.32 %q[w0], [%[taps]]\n\t"
        "vmul.f32 %q[a0], %q[x], %q[w0]\n\t"
        ET_ZEPHYR_ONE_TAP("column0", 16, 16)
        ET_ZEPHYR_ONE_TAP("column0", 32, 32)
        ET_ZEPHYR_ONE_TAP("column1", 0, 48)
        ET_ZEPHYR_ONE_TAP("column1", 16, 64)
        ET_ZEPHYR_ONE_TAP("column1", 32, 80)
        ET_ZEPHYR_ONE_TAP("column2", 0, 96)
        ET_ZEPHYR_ONE_TAP("column2", 16, 112)
        ET_ZEPHYR_ONE_TAP("column2", 32, 128)
        ET_ZEPHYR_REQUANTIZE(ET_ZEPHYR_ONE_SUM)
        "vstrb.32 %q[a0], [%[out]]\n\t"
        : [a0] "=&w"(a0), [w0] "=&w"(w0), [x] "=&w"(x)
        : [column0] "r"(column0), [column1] "r"(column1), [column2] "r"(column2), [taps] "r"(taps),
          [q] "r"(&q), [offset] "r"(q.output_offset), [out] "l"(out),
          "m"(*reinterpret_cast<Window>(column0)), "m"(*reinterpret_cast<Window>(column1)),
          "m"(*reinterpret_cast<Window>(column2)),
          "m"(*reinterpret_cast<const float32x4_t(*)[kTaps]>(taps)), "m"(q)
        : "memory");
    // clang-format on
}
#undef ET_ZEPHYR_ONE_TAP
#undef ET_ZEPHYR_KERNEL_COLUMN
#undef ET_ZEPHYR_KERNEL_COLUMN_STRIDE_2
#undef ET_ZEPHYR_REQUANTIZE_AND_STORE
#undef ET_ZEPHYR_REQUANTIZE
#undef ET_ZEPHYR_ONE_SUM
#undef ET_ZEPHYR_FOUR_SUMS
#undef ET_ZEPHYR_TO_INT
#undef ET_ZEPHYR_ADD_W0
#undef ET_ZEPHYR_SHIFT_LEFT
#undef ET_ZEPHYR_MULTIPLY
#undef ET_ZEPHYR_DIVIDE_ROUNDING
#undef ET_ZEPHYR_ADD_OFFSET
#undef ET_ZEPHYR_MAX_W0
#undef ET_ZEPHYR_MIN_W0

/*
 * One layer, 4 channels at a time; STRIDE down (1, or 2: MobileNet's few
 * strided layers), the ring of input columns moving by the stride across.
 * Each stride a function of its own: the loops keep their registers.
 */
template <int32_t STRIDE>
__attribute__((noinline)) void
depthwise(const int8_t *in, const int8_t *w, const int32_t *bias_data, const int32_t *mult_data,
          const int32_t *shift_data, int8_t *dst, float32x4_t *taps, Shape s, int32_t input_offset,
          int32_t output_offset, int32_t activation_min, int32_t activation_max) {
    const int32_t channels = s.channels;
    const ColumnLayout layout = column_layout(s);
    const int32_t height = layout.height;
    const int32_t out_row_bytes = s.out_width * channels;
    /* An output column: blocks of 4 outputs, then single ones. */
    const int32_t column_blocks = s.out_height / kPixels;
    const int32_t column_rest = s.out_height % kPixels;
    float32x4_t *const slots = taps + kTaps;
    /* The input's zero point, whose offset input is 0. */
    const float32x4_t zero_point = vdupq_n_f32(static_cast<float>(-input_offset));
    for (int32_t c = 0; c < channels; c += kLanes) {
        /* Taps transposed (column by column), and their sum per channel. */
        int32x4_t kernel_sum = vdupq_n_s32(0);
        for (int32_t ky = 0; ky < 3; ky++) {
            for (int32_t kx = 0; kx < 3; kx++) {
                const int32x4_t tap = vldrbq_s32(w + (3 * ky + kx) * channels + c);
                kernel_sum = vaddq_s32(kernel_sum, tap);
                taps[3 * kx + ky] = vcvtq_f32_s32(tap);
            }
        }
        int32x4_t base = vmulq_n_s32(kernel_sum, input_offset);
        if (bias_data != nullptr) {
            base = vaddq_s32(base, vldrwq_s32(bias_data + c));
        }
        const Requantization q =
            make_requantization(base, vldrwq_s32(mult_data + c), vldrwq_s32(shift_data + c),
                                output_offset, activation_min, activation_max);
        /* The outputs of output column ox from its 3 padded input columns. */
        const auto output_column = [&](const float32x4_t *column0, const float32x4_t *column1,
                                       const float32x4_t *column2, int32_t ox) {
            int8_t *o = dst + ox * channels + c;
            for (int32_t blocks = column_blocks; blocks > 0; blocks--) {
                block_of_four<STRIDE>(column0, column1, column2, taps, q, o, out_row_bytes);
                o += kPixels * out_row_bytes;
            }
            for (int32_t rows = column_rest; rows > 0; rows--) {
                one_output(column0, column1, column2, taps, q, o);
                column0 += STRIDE;
                column1 += STRIDE;
                column2 += STRIDE;
                o += out_row_bytes;
            }
        };
        if constexpr (STRIDE == 1) {
            /* Stride 1 both ways: input column x goes into `right`, and the
             * 3 columns rotate by one (one place that fills a column: its
             * code is long). */
            float32x4_t *left = slots;
            float32x4_t *middle = slots + height;
            float32x4_t *right = slots + 2 * height;
            for (int32_t x = 0; x < s.out_width + 2; x++) {
                fill_column(right, in, x, c, zero_point, layout, s);
                if (x >= 2) {
                    output_column(left, middle, right, x - 2);
                }
                float32x4_t *const oldest = left;
                left = middle;
                middle = right;
                right = oldest;
            }
        } else {
            /* A ring of 3 padded input columns, column x in ring[x % 3],
             * moving by the stride across. */
            float32x4_t *const ring[3] = {slots, slots + height, slots + 2 * height};
            int32_t filled = 0;
            for (int32_t ox = 0; ox < s.out_width; ox++) {
                const int32_t x = ox * s.stride_x;
                for (; filled < x + 3; filled++) {
                    fill_column(ring[filled % 3], in, filled, c, zero_point, layout, s);
                }
                output_column(ring[x % 3], ring[(x + 1) % 3], ring[(x + 2) % 3], ox);
            }
        }
    }
}

} // namespace

namespace et_zephyr::native {

Tensor &quantized_depthwise_conv2d_out(KernelRuntimeContext &context, const Tensor &input,
                                       const Tensor &weight, const std::optional<Tensor> &bias,
                                       ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                                       ArrayRef<int64_t> dilation, int64_t depth_multiplier,
                                       int64_t input_offset, int64_t output_offset,
                                       const Tensor &requantize_multipliers,
                                       const Tensor &requantize_shifts, int64_t activation_min,
                                       int64_t activation_max, const Tensor &scratch, Tensor &out) {
    Shape s{};
    if (!handled_shape(input, weight, bias, stride, padding, dilation, depth_multiplier,
                       requantize_multipliers, requantize_shifts, scratch, out, &s)) {
        if constexpr (!kUpstreamFallback) {
            fail_without_fallback(context, "depthwise_conv_mve");
            return out;
        }
        return cortex_m::native::quantized_depthwise_conv2d_out(
            context, input, weight, bias, stride, padding, dilation, depth_multiplier, input_offset,
            output_offset, requantize_multipliers, requantize_shifts, activation_min,
            activation_max, scratch, out);
    }
    const int8_t *in = input.const_data_ptr<int8_t>();
    const int8_t *w = weight.const_data_ptr<int8_t>();
    const int32_t *bias_data = bias.has_value() ? bias->const_data_ptr<int32_t>() : nullptr;
    const int32_t *mult_data = requantize_multipliers.const_data_ptr<int32_t>();
    const int32_t *shift_data = requantize_shifts.const_data_ptr<int32_t>();
    int8_t *dst = out.mutable_data_ptr<int8_t>();
    auto *taps = reinterpret_cast<float32x4_t *>(scratch.mutable_data_ptr<int8_t>());
    const auto layer = s.stride_y == 1 ? depthwise<1> : depthwise<2>;
    layer(in, w, bias_data, mult_data, shift_data, dst, taps, s, static_cast<int32_t>(input_offset),
          static_cast<int32_t>(output_offset), static_cast<int32_t>(activation_min),
          static_cast<int32_t>(activation_max));
    return out;
}

} // namespace et_zephyr::native
