/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The keyword detector: 480 samples of 16 kHz PCM (a frame every 320) through the MFCC
 * front end and one run of the stateful LSTM program, and the rule that turns its
 * scores into detections (detections.py is the same rule on the host).
 */

#ifndef KWS_STREAM_DETECTOR_H_
#define KWS_STREAM_DETECTOR_H_

#include <stdint.h>

#include <et_zephyr/mfcc.h>

#include "labels.h"

/* Consecutive frames with the same best class; the last one heard. */
struct detector_rule {
    int best_before;
    int run;
};

/* et_zephyr_init() of the program; 0 or an et_zephyr_status. */
int detector_init(void);

/*
 * One frame: its MFCCs (ET_ZEPHYR_MFCC_COEFFICIENTS, Q10) and the program's scores
 * (LABEL_COUNT floats) after a run that continues from the last one's state.
 * Returns 0 or an et_zephyr_status.
 */
int detector_frame(const int16_t *samples, int32_t *coefficients, float *scores);

/*
 * The class heard at this frame, or -1: a keyword that has been the best-scoring class
 * (the first of equal maxima) by at least DETECTION_MARGIN over every other for
 * HOLD_FRAMES frames running, once until another class is best. Silence and unknown
 * speech are never heard.
 */
int detector_heard(struct detector_rule *rule, const float *scores);

#endif /* KWS_STREAM_DETECTOR_H_ */
