/*
 * SPDX-License-Identifier: Apache-2.0
 */

// MFCCs in fixed point (et_zephyr/mfcc.h); scripts/et_zephyr/audio/mfcc.py is the same
// arithmetic, which training and the host reference use. Every intermediate value is
// an integer whose bounds the comments give, so no step saturates or overflows.

#include "et_zephyr/mfcc.h"

#include <cstddef>
#include <cstdint>

#include "mfcc_tables.h"

namespace {

constexpr int kComplexLength = ET_ZEPHYR_MFCC_FFT_LENGTH / 2;
constexpr int kBins = ET_ZEPHYR_MFCC_FFT_LENGTH / 2 + 1;
constexpr int kMelBins = ET_ZEPHYR_MFCC_MEL_BINS;
constexpr int kFractionBits = ET_ZEPHYR_MFCC_FRACTION_BITS;
constexpr int64_t kRound15 = int64_t{1} << 14;
constexpr int kInvalidArgument = 1; // ET_ZEPHYR_ERR_INVALID_ARGUMENT

// (a c + b s) in Q15, rounded: a twiddle product's real part (b c - a s the imaginary).
inline int32_t rotate(int32_t a, int32_t b, int64_t c, int64_t s) {
    return static_cast<int32_t>((a * c + b * s + kRound15) >> 15);
}

// The Hann-windowed frame, zero-padded to 512 real samples, as 256 complex values
// z[m] = x[2m] + j x[2m+1] in bit-reversed order: |value| < 2^15.
void window_into(const int16_t *samples, int32_t *re, int32_t *im) {
    for (int m = 0; m < kComplexLength; m++) {
        re[m] = 0;
        im[m] = 0;
    }
    for (int n = 0; n < ET_ZEPHYR_MFCC_FRAME_LENGTH; n++) {
        const int64_t product = int64_t{samples[n]} * et_zephyr_mfcc_window[n];
        const auto value = static_cast<int32_t>((product + kRound15) >> 15);
        const int m = et_zephyr_mfcc_bit_reversal[n >> 1];
        ((n & 1) != 0 ? im : re)[m] = value;
    }
}

// 256-point radix-2 decimation in time with Q15 twiddles c - j s, unscaled: 8 stages
// grow |value| from 2^15 to below 2^24, so int32 data and int64 products suffice.
void transform(int32_t *re, int32_t *im) {
    for (int half = 1; half < kComplexLength; half *= 2) {
        const int step = kComplexLength / half; // in the 512-point twiddle table
        for (int start = 0; start < kComplexLength; start += 2 * half) {
            for (int k = 0; k < half; k++) {
                const int64_t c = et_zephyr_mfcc_twiddle_cos[k * step];
                const int64_t s = et_zephyr_mfcc_twiddle_sin[k * step];
                const int i = start + k;
                const int j = i + half;
                const int32_t t_re = rotate(re[j], im[j], c, s);
                const int32_t t_im = rotate(im[j], -re[j], c, s);
                re[j] = re[i] - t_re;
                im[j] = im[i] - t_im;
                re[i] += t_re;
                im[i] += t_im;
            }
        }
    }
}

// Bin k of the real frame from Z[k] and Z[256 - k], doubled (|2 X| < 2^26), its power
// (< 2^51) kept as >> 17 (< 2^34, |X|^2 >> 15) through the Q15 triangles: each bin weighs
// into at most two adjacent filters, so a filter's sum stays below 2^57; >> 15 gives
// < 2^42.
void mel_energies(const int32_t *re, const int32_t *im, int64_t *mel) {
    for (int m = 0; m < kMelBins; m++) {
        mel[m] = 0;
    }
    for (int k = 0; k < kBins; k++) {
        const int first = et_zephyr_mfcc_mel_first[k];
        if (first >= kMelBins) {
            continue;
        }
        const int a = k % kComplexLength;
        const int b = (kComplexLength - k) % kComplexLength;
        const int64_t c = et_zephyr_mfcc_twiddle_cos[k];
        const int64_t s = et_zephyr_mfcc_twiddle_sin[k];
        const int32_t p = im[a] + im[b];
        const int32_t q = re[b] - re[a];
        const int64_t twice_re = re[a] + re[b] + rotate(p, q, c, s);
        const int64_t twice_im = im[a] - im[b] + rotate(q, -p, c, s);
        const int64_t power = (twice_re * twice_re + twice_im * twice_im) >> 17;
        mel[first] += power * et_zephyr_mfcc_mel_weights[k][0];
        if (first + 1 < kMelBins) {
            mel[first + 1] += power * et_zephyr_mfcc_mel_weights[k][1];
        }
    }
    for (int m = 0; m < kMelBins; m++) {
        mel[m] >>= 15;
    }
}

// log2(value) in Q10 for value >= 1: the leading bit's position and a table of the
// fraction of the 8 bits after it.
int32_t log2_q10(uint64_t value) {
    const int msb = 63 - __builtin_clzll(value);
    constexpr int kTableBits = ET_ZEPHYR_MFCC_LOG2_TABLE_BITS;
    const uint64_t top =
        msb >= kTableBits ? value >> (msb - kTableBits) : value << (kTableBits - msb);
    return (msb << kFractionBits) + et_zephyr_mfcc_log2_fractions[top & ((1u << kTableBits) - 1)];
}

} // namespace

extern "C" int et_zephyr_mfcc_frame(const int16_t *samples, struct et_zephyr_mfcc_scratch *scratch,
                                    int32_t *coefficients) {
    if (samples == nullptr || scratch == nullptr || coefficients == nullptr) {
        return kInvalidArgument;
    }
    window_into(samples, scratch->re, scratch->im);
    transform(scratch->re, scratch->im);

    int64_t mel[kMelBins];
    mel_energies(scratch->re, scratch->im, mel);
    int32_t logs[kMelBins]; // < 43 << 10
    for (int m = 0; m < kMelBins; m++) {
        logs[m] = log2_q10(static_cast<uint64_t>(mel[m]) + 1);
    }
    // |sum| < 40 * 2^16 * 2^15: int64.
    for (int k = 0; k < ET_ZEPHYR_MFCC_COEFFICIENTS; k++) {
        int64_t sum = 0;
        for (int m = 0; m < kMelBins; m++) {
            sum += int64_t{logs[m]} * et_zephyr_mfcc_dct[k][m];
        }
        coefficients[k] = static_cast<int32_t>((sum + kRound15) >> 15);
    }
    return 0;
}
