/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The Helium 3x3 depthwise convolution (depthwise_mve.h).
 *
 * CMSIS-NN's arm_depthwise_conv_s8_opt copies every output pixel's 3x3 window
 * into a buffer (im2col), multiplies with a separate vmul and vadd per tap and
 * group of 4 channels, and reloads the requantization parameters after every
 * 4 pixels. Here one channel's 3x3 window is 9 contiguous bytes and one
 * vmladav (16 int8 lanes, the weights past the 9th zero) sums an output:
 * - 8 channels at a time, each channel's input goes into a strip of 3 bytes a
 *   padded input row, one for each of the 3 input columns an output column
 *   reads, so that output row y's window is the strip's bytes from
 *   3 * stride * y. The 3 columns are a ring (padded column x in byte x % 3 of
 *   each row): moving across, only new columns are written, 8 channels a
 *   scatter store, and the weights come in 3 orders, one per turn of the ring.
 * - A 16-byte load holds two outputs' windows (3 * stride bytes apart): two
 *   weight vectors, the second shifted by 3 * stride lanes. Each output column
 *   of the group's channels runs in depthwise_column_mve.S, 4 outputs a block.
 * - The sums are exact int32 and the requantization is CMSIS-NN's
 *   (requantize_mve.h), 4 outputs down a column at a time: outputs are
 *   bit-identical to the upstream kernel's.
 */

#include "depthwise_mve.h"

#include <arm_mve.h>
#include <stddef.h>
#include <stdint.h>

#include "requantize_mve.h"

using et_zephyr::native::ActivationRange;
using et_zephyr::native::ChannelTerms;
using et_zephyr::native::DepthwiseConvolution;
using et_zephyr::native::DepthwiseShape;

namespace {

/* Channels transposed together: the 16-bit lanes of a scatter store. */
constexpr int32_t kGroup = 8;
/* Outputs down a column requantized together: a vector of int32 sums. */
constexpr int32_t kRows = 4;
/* A window's weight vector: 16 int8 lanes. */
constexpr int32_t kVector = 16;
/* A channel's record for one turn of the ring (depthwise_column_mve.S): the
 * weight vectors of the first and the second output of a load, then the
 * channel's ChannelTerms. */
constexpr int32_t kRecordBytes = 2 * kVector + sizeof(ChannelTerms);
/* The group's records for one turn of the ring, and for all 3. */
constexpr int32_t kTurnBytes = kGroup * kRecordBytes;
constexpr int32_t kRecordsBytes = 3 * kTurnBytes;

/* The padded input rows the outputs read. */
int32_t column_height(const DepthwiseShape &s) {
    return (s.out_height - 1) * s.stride_y + 3;
}

/* A channel's strip: 3 bytes a padded row, and what the last block's second
 * load reads past them (outputs past the column are computed, not stored). */
int32_t strip_bytes(const DepthwiseShape &s) {
    const int32_t computed = (s.out_height + kRows - 1) / kRows * kRows;
    return 3 * s.stride_y * (computed - 2) + kVector;
}

/* 1 both ways, or 2 down and 1 or 2 across. */
bool is_stride(int32_t down, int32_t across) {
    return (down == 1 && across == 1) || (down == 2 && (across == 1 || across == 2));
}

bool is_padding(int32_t padding) {
    return padding == 0 || padding == 1;
}

/* The operands of depthwise_column_mve.S: first the 6 words of its frame. */
struct ColumnRun {
    int32_t strip_next; /* from where a channel's blocks leave its strip to the next strip */
    int32_t out_next;   /* the same for its outputs */
    int32_t blocks;     /* whole blocks of 4 outputs down a column */
    int32_t strip_back; /* how far back the last block starts, or 0: none */
    int32_t out_back;
    const uint8_t *records_end;
    /* The rest: read once a call. */
    const uint8_t *records; /* the turn's, of the group's first channel */
    const uint8_t *strip;   /* the group's first channel's */
    int8_t *out;            /* the column's first output of the group's first channel */
    int32_t block_bytes;    /* 4 output rows */
    int32_t output_offset;
    int32_t short_rows; /* the outputs of a column under 4 high */
    uint32x4_t rows;    /* byte offsets of 4 output rows */
    ActivationRange range;
};
static_assert(sizeof(void *) != 4 ||
                  (offsetof(ColumnRun, records) == 24 && offsetof(ColumnRun, block_bytes) == 36 &&
                   offsetof(ColumnRun, short_rows) == 44 && offsetof(ColumnRun, rows) == 48 &&
                   offsetof(ColumnRun, range) == 64),
              "depthwise_column_mve.S reads ColumnRun at these offsets");

} // namespace

/* lib/src/kernels/depthwise_column_mve.S, for stride 1 and 2 down. */
extern "C" void et_zephyr_depthwise_stride1_column_mve(const ColumnRun *run);
extern "C" void et_zephyr_depthwise_stride2_column_mve(const ColumnRun *run);

namespace {

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

ColumnLayout column_layout(const DepthwiseShape &s) {
    const int32_t height = column_height(s);
    const int32_t rows = height - s.pad_y < s.in_height ? height - s.pad_y : s.in_height;
    return {height, s.pad_y, rows, s.in_width * s.channels};
}

/* The group's weight vectors into its records (zeroed by the layer: the same
 * lanes are written for every group): for the ring's turn t (an output
 * column's first input column in byte t of a strip row), tap (ky, kx) in lane
 * 3 ky + (t + kx) % 3 of the first vector and 3 stride_y lanes on in the
 * second; then each channel's terms into each turn's record, its weight sum
 * that of its taps. */
__attribute__((noinline)) void group_records(uint8_t *records, const int8_t *w, const int32_t *bias,
                                             const int32_t *multipliers, const int32_t *shifts,
                                             int32_t channels, int32_t stride_y,
                                             int32_t input_offset) {
    const uint16x8_t channel_offsets = vmulq_n_u16(vidupq_n_u16(0, 1), kRecordBytes);
    const int32_t second = kVector + 3 * stride_y;
    int16x8_t weight_sums = vdupq_n_s16(0);
    for (int32_t ky = 0; ky < 3; ky++, w += 3 * channels, records += 3) {
        /* kx and the turn unrolled: the lanes are constants. */
        const auto tap = [&](int32_t kx) {
            const int16x8_t values = vldrbq_s16(w + kx * channels);
            weight_sums = vaddq_s16(weight_sums, values);
            const auto bytes = vreinterpretq_u16_s16(values);
            for (int32_t t = 0; t < 3; t++) {
                uint8_t *first = records + t * kTurnBytes + (t + kx) % 3;
                vstrbq_scatter_offset_u16(first, channel_offsets, bytes);
                vstrbq_scatter_offset_u16(first + second, channel_offsets, bytes);
            }
        };
        tap(0);
        tap(1);
        tap(2);
    }
    records -= 9;
    /* Channels 0, 2, 4, 6 in the even 16-bit lanes, 1, 3, 5, 7 in the odd. */
    const int32x4_t sums[2] = {vmovlbq_s16(weight_sums), vmovltq_s16(weight_sums)};
    for (int32_t odd = 0; odd < 2; odd++) {
        const uint32x4_t group_channel = vidupq_n_u32(static_cast<uint32_t>(odd), 2);
        const int32x4_t shift = vldrwq_gather_shifted_offset_s32(shifts, group_channel);
        const int32x4_t bias_terms = bias != nullptr
                                         ? vldrwq_gather_shifted_offset_s32(bias, group_channel)
                                         : vdupq_n_s32(0);
        const int32x4_t base = vmlaq_n_s32(bias_terms, sums[odd], input_offset);
        const int32x4_t multiplier = vldrwq_gather_shifted_offset_s32(multipliers, group_channel);
        const int32x4_t left = vmaxq_s32(shift, vdupq_n_s32(0));
        const int32x4_t right = vminq_s32(shift, vdupq_n_s32(0));
        /* The channels' terms in each turn's records (ChannelTerms' order). */
        uint32x4_t terms = vmlaq_n_u32(
            vdupq_n_u32(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(records + 2 * kVector))),
            group_channel, kRecordBytes);
        for (int32_t t = 0; t < 3; t++, terms = vaddq_n_u32(terms, kTurnBytes)) {
            vstrwq_scatter_base_s32(terms, 0, base);
            vstrwq_scatter_base_s32(terms, 4, left);
            vstrwq_scatter_base_s32(terms, 8, multiplier);
            vstrwq_scatter_base_s32(terms, 12, right);
        }
    }
}

/* The strips' rows no input column reaches (top and bottom padding, the same
 * for every column) to the zero point, once a layer. */
void pad_rows(uint8_t *strips, uint16x8_t strip_offsets, uint16x8_t zero_point,
              const ColumnLayout &l) {
    const auto pad = [&](int32_t from, int32_t to) {
        for (uint8_t *byte = strips + 3 * from; byte < strips + 3 * to; byte++) {
            vstrbq_scatter_offset_u16(byte, strip_offsets, zero_point);
        }
    };
    pad(0, l.top);
    pad(l.top + l.rows, l.height);
}

/* Where a padded input column's byte of the strips' rows goes: the scatter
 * offsets of the group's 8 strips, for a row and the row below it. */
struct StripRows {
    uint16x8_t row;
    uint16x8_t next_row;
};

/* Padded input column x of the group's 8 channels (from input, at the
 * group's first channel) into its byte of the strips' rows below the top
 * padding, two rows an iteration; the zero point (whose offset input is 0: it
 * adds nothing to the sums) where x is padding. */
__attribute__((always_inline)) inline void fill_column(uint8_t *strips, const int8_t *input,
                                                       int32_t x, const StripRows &strip_rows,
                                                       uint16x8_t zero_point, const ColumnLayout &l,
                                                       const DepthwiseShape &s) {
    uint8_t *row = strips + 3 * l.top + x % 3;
    const int32_t ix = x - s.pad_x;
    int32_t rows = l.rows;
    if (ix >= 0 && ix < s.in_width) {
        const auto *src = reinterpret_cast<const uint8_t *>(input + ix * s.channels);
        for (; rows > 1; rows -= 2) {
            const uint16x8_t upper = vldrbq_u16(src);
            const uint16x8_t lower = vldrbq_u16(src + l.row_bytes);
            vstrbq_scatter_offset_u16(row, strip_rows.row, upper);
            vstrbq_scatter_offset_u16(row, strip_rows.next_row, lower);
            src += 2 * l.row_bytes;
            row += 6;
        }
        if (rows != 0) {
            vstrbq_scatter_offset_u16(row, strip_rows.row, vldrbq_u16(src));
        }
    } else {
        for (; rows > 1; rows -= 2) {
            vstrbq_scatter_offset_u16(row, strip_rows.row, zero_point);
            vstrbq_scatter_offset_u16(row, strip_rows.next_row, zero_point);
            row += 6;
        }
        if (rows != 0) {
            vstrbq_scatter_offset_u16(row, strip_rows.row, zero_point);
        }
    }
}

} // namespace

namespace et_zephyr::native {

size_t depthwise_scratch_bytes(const DepthwiseShape &s) {
    /* The last group of 8 channels may overlap the one before. */
    if (!is_stride(s.stride_y, s.stride_x) || !is_padding(s.pad_y) || !is_padding(s.pad_x) ||
        s.channels < kGroup || s.channels % 4 != 0 || s.out_height < 1 ||
        s.in_height + 2 * s.pad_y < 3 || s.in_width + 2 * s.pad_x < 3 ||
        s.out_height != (s.in_height + 2 * s.pad_y - 3) / s.stride_y + 1 ||
        s.out_width != (s.in_width + 2 * s.pad_x - 3) / s.stride_x + 1) {
        return 0;
    }
    /* The strips are 16-bit scatter offsets apart. */
    const int32_t strip = strip_bytes(s);
    if (strip * (kGroup - 1) > UINT16_MAX) {
        return 0;
    }
    return kRecordsBytes + kGroup * static_cast<size_t>(strip);
}

/*
 * 8 channels at a time (the last 8 may overlap the group before:
 * their outputs are stored twice, the same bytes), the ring of input columns
 * moving by the stride across; every output column of the group's channels
 * through depthwise_column_mve.S.
 */
void depthwise_convolution(const DepthwiseConvolution &d) {
    const DepthwiseShape &s = d.shape;
    const int8_t *const in = d.input;
    const int8_t *const w = d.weights;
    const int32_t *const bias = d.bias;
    const int32_t input_offset = d.input_offset;
    uint8_t *const scratch = d.scratch;
    const int32_t channels = s.channels;
    const ColumnLayout layout = column_layout(s);
    const int32_t out_row_bytes = s.out_width * channels;
    const int32_t strip = strip_bytes(s);
    uint8_t *const strips = scratch + kRecordsBytes;
    const uint16x8_t strip_offsets = vmulq_n_u16(vidupq_n_u16(0, 1), static_cast<uint16_t>(strip));
    const StripRows strip_rows = {strip_offsets, vaddq_n_u16(strip_offsets, 3)};
    /* The input's zero point, whose offset input is 0. */
    const uint16x8_t zero_point = vdupq_n_u16(static_cast<uint8_t>(-input_offset));
    const auto column = s.stride_y == 1 ? et_zephyr_depthwise_stride1_column_mve
                                        : et_zephyr_depthwise_stride2_column_mve;
    /* A column: whole blocks of 4 outputs, then one over its last 4 outputs
     * where the height is not a multiple of 4, `back` rows up; under 4 high,
     * one block storing short_rows outputs. */
    const int32_t blocks = s.out_height / kRows;
    const int32_t back =
        blocks != 0 && s.out_height % kRows != 0 ? kRows - s.out_height % kRows : 0;
    const int32_t block_strip = 3 * s.stride_y * kRows;
    ColumnRun run;
    run.blocks = blocks;
    run.strip_back = 3 * s.stride_y * back;
    run.out_back = back * out_row_bytes;
    run.short_rows = s.out_height;
    run.strip_next = strip - blocks * block_strip;
    run.out_next = 1 - blocks * kRows * out_row_bytes;
    if (back != 0 || blocks == 0) {
        run.strip_next += run.strip_back - block_strip;
        run.out_next += run.out_back;
    }
    run.strip = strips;
    run.block_bytes = kRows * out_row_bytes;
    run.output_offset = d.output_offset;
    run.rows = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(out_row_bytes));
    run.range = {vdupq_n_s32(d.activation_min), vdupq_n_s32(d.activation_max)};
    for (int32_t i = 0; i < kRecordsBytes; i += kVector) {
        vstrbq_u8(scratch + i, vdupq_n_u8(0));
    }
    pad_rows(strips, strip_offsets, zero_point, layout);
    for (int32_t c = 0; c < channels; c += kGroup) {
        if (c + kGroup > channels) {
            c = channels - kGroup;
        }
        group_records(scratch, w + c, bias != nullptr ? bias + c : nullptr, d.multipliers + c,
                      d.shifts + c, channels, s.stride_y, input_offset);
        int32_t filled = 0;
        for (int32_t ox = 0; ox < s.out_width; ox++) {
            const int32_t x = ox * s.stride_x;
            for (; filled < x + 3; filled++) {
                fill_column(strips, in + c, filled, strip_rows, zero_point, layout, s);
            }
            run.records = scratch + kTurnBytes * (x % 3);
            run.records_end = run.records + kTurnBytes;
            run.out = d.out + ox * channels + c;
            column(&run);
        }
    }
}

} // namespace et_zephyr::native
