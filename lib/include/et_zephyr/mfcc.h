/*
 * SPDX-License-Identifier: Apache-2.0
 */

/**
 * @file
 * @brief et-zephyr audio front end: MFCCs of 16 kHz PCM in fixed point.
 *
 * A keyword model fed from a microphone takes features computed on the device. This
 * front end computes them in integers only, so the device, the host reference and the
 * training pipeline get the same values: `et_zephyr.audio.mfcc` (Python) is the same
 * arithmetic, step by step. Per frame of ::ET_ZEPHYR_MFCC_FRAME_LENGTH samples (30 ms),
 * frames ::ET_ZEPHYR_MFCC_FRAME_STEP samples (20 ms) apart:
 * Hann window, 512-point FFT, power, 40 mel filters (20 to 4,000 Hz), log2, DCT-II to
 * ::ET_ZEPHYR_MFCC_COEFFICIENTS coefficients in Q10 (log2 units of power).
 *
 * @code
 * static struct et_zephyr_mfcc_scratch scratch;
 * int32_t mfcc[ET_ZEPHYR_MFCC_COEFFICIENTS];
 * float features[ET_ZEPHYR_MFCC_COEFFICIENTS];
 *
 * et_zephyr_mfcc_frame(&pcm[frame * ET_ZEPHYR_MFCC_FRAME_STEP], &scratch, mfcc);
 * for (int i = 0; i < ET_ZEPHYR_MFCC_COEFFICIENTS; i++) {
 *         features[i] = (float)mfcc[i] / (1 << ET_ZEPHYR_MFCC_FEATURE_BITS);  // exact
 * }
 * @endcode
 */

#ifndef ET_ZEPHYR_MFCC_H_
#define ET_ZEPHYR_MFCC_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Sampling rate the filters are laid out for, in Hz. */
#define ET_ZEPHYR_MFCC_SAMPLE_RATE 16000
/** Samples in one frame (30 ms). */
#define ET_ZEPHYR_MFCC_FRAME_LENGTH 480
/** Samples from one frame's start to the next's (20 ms): 16,000 samples give 49 frames. */
#define ET_ZEPHYR_MFCC_FRAME_STEP 320
/** Points of the FFT (the frame zero-padded). */
#define ET_ZEPHYR_MFCC_FFT_LENGTH 512
/** Coefficients per frame. */
#define ET_ZEPHYR_MFCC_COEFFICIENTS 10
/** Fraction bits of the coefficients: a coefficient is value / 2^10. */
#define ET_ZEPHYR_MFCC_FRACTION_BITS 10

/** A model's float input is the coefficients / 2^12, as et_zephyr.audio.mfcc.features()
 * gives them in training: about the scale of MLPerf Tiny's float MFCCs. */
#define ET_ZEPHYR_MFCC_FEATURE_BITS 12

/** Working memory of one et_zephyr_mfcc_frame() call (2 KiB: the real frame's FFT as a
 * complex one of half the length); no state is kept in it. */
struct et_zephyr_mfcc_scratch {
    int32_t re[ET_ZEPHYR_MFCC_FFT_LENGTH / 2];
    int32_t im[ET_ZEPHYR_MFCC_FFT_LENGTH / 2];
};

/**
 * @brief Compute one frame's MFCCs.
 *
 * @param samples      ::ET_ZEPHYR_MFCC_FRAME_LENGTH int16 samples at 16 kHz.
 * @param scratch      Working memory, overwritten.
 * @param coefficients Out: ::ET_ZEPHYR_MFCC_COEFFICIENTS values in Q10.
 * @return 0, or ET_ZEPHYR_ERR_INVALID_ARGUMENT (1) if a pointer is NULL.
 */
int et_zephyr_mfcc_frame(const int16_t *samples, struct et_zephyr_mfcc_scratch *scratch,
                         int32_t *coefficients);

#ifdef __cplusplus
}
#endif

#endif /* ET_ZEPHYR_MFCC_H_ */
