/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "detector.h"

#include <stdbool.h>
#include <string.h>

#include <et_zephyr/et_zephyr.h>

#include "kws_stream_model.h"

static struct et_zephyr_model model;
static struct et_zephyr_mfcc_scratch scratch;

int detector_init(void) {
    return et_zephyr_init(&model, &kws_stream_config);
}

int detector_frame(const int16_t *samples, int32_t *coefficients, float *scores) {
    float features[ET_ZEPHYR_MFCC_COEFFICIENTS];
    int rc = et_zephyr_mfcc_frame(samples, &scratch, coefficients);

    if (rc == ET_ZEPHYR_OK) {
        for (int i = 0; i < ET_ZEPHYR_MFCC_COEFFICIENTS; i++) {
            /* Exact: |coefficient| < 2^24, divided by a power of two. */
            features[i] = (float)coefficients[i] / (1 << ET_ZEPHYR_MFCC_FEATURE_BITS);
        }
        rc = et_zephyr_set_input(&model, 0, features, sizeof(features));
    }
    if (rc == ET_ZEPHYR_OK) {
        rc = et_zephyr_run(&model);
    }
    struct et_zephyr_tensor_info out;

    if (rc == ET_ZEPHYR_OK) {
        rc = et_zephyr_output_info(&model, 0, &out);
    }
    if (rc == ET_ZEPHYR_OK && out.nbytes != LABEL_COUNT * sizeof(float)) {
        rc = ET_ZEPHYR_ERR_SIZE_MISMATCH;
    }
    if (rc == ET_ZEPHYR_OK) {
        memcpy(scores, out.data, out.nbytes);
    }
    return rc;
}

int detector_heard(struct detector_rule *rule, const float *scores) {
    int best = 0;

    for (int i = 1; i < LABEL_COUNT; i++) {
        if (scores[i] > scores[best]) {
            best = i;
        }
    }
    bool clear = true;

    for (int i = 0; i < LABEL_COUNT; i++) {
        if (i != best && scores[best] - scores[i] < (float)DETECTION_MARGIN) {
            clear = false;
        }
    }
    if (!clear) {
        rule->run = 0;
    } else {
        rule->run = best == rule->best_before ? rule->run + 1 : 1;
    }
    rule->best_before = best;
    if (rule->run != HOLD_FRAMES || best == LABEL_SILENCE || best == LABEL_UNKNOWN) {
        return -1;
    }
    return best;
}
