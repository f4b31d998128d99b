/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Listens to the stream embedded from stream.npz, 20 ms a frame, and compares every
 * frame's MFCCs and scores and the detections with the host reference's (stream.h,
 * gen_stream.py); ends with "ET_DONE PASS: N of N frames match the host reference" or
 * FAIL.
 */

#include <stdbool.h>
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include <et_zephyr/et_zephyr.h>

#include "detector.h"
#include "stream.h"

/* The frame's MFCCs and scores, and whether they are the host's (a line says if not). */
static bool listen(int frame, float *scores) {
    int32_t coefficients[ET_ZEPHYR_MFCC_COEFFICIENTS];
    const int rc =
        detector_frame(&stream_pcm[frame * ET_ZEPHYR_MFCC_FRAME_STEP], coefficients, scores);

    if (rc != ET_ZEPHYR_OK) {
        printk("frame %d: %s\n", frame, et_zephyr_status_str(rc));
        return false;
    }
    if (memcmp(coefficients, stream_mfcc[frame], sizeof(coefficients)) != 0) {
        printk("frame %d: the MFCCs differ from the host's\n", frame);
        return false;
    }
    if (memcmp(scores, stream_scores[frame], sizeof(stream_scores[frame])) != 0) {
        printk("frame %d: the scores differ from the host's\n", frame);
        return false;
    }
    return true;
}

int main(void) {
    const int rc = detector_init();

    if (rc != ET_ZEPHYR_OK) {
        printk("ET_DONE FAIL: et_zephyr_init: %s\n", et_zephyr_status_str(rc));
        return 0;
    }
    printk("listening to %d s of sound: %d frames of 20 ms; clips:", STREAM_CLIPS, STREAM_FRAMES);
    for (int c = 0; c < STREAM_CLIPS; c++) {
        printk(" %s", label_names[stream_clip_labels[c]]);
    }
    printk("\n");

    struct detector_rule rule = {.best_before = -1, .run = 0};
    float scores[LABEL_COUNT];
    int matching = 0;
    int heard = 0;
    bool detections_match = true;

    for (int frame = 0; frame < STREAM_FRAMES; frame++) {
        if (!listen(frame, scores)) {
            continue;
        }
        matching++;
        const int keyword = detector_heard(&rule, scores);

        if (keyword < 0) {
            continue;
        }
        const uint32_t ms = (uint32_t)frame * 20U;

        printk("heard \"%s\" at %u.%02u s\n", label_names[keyword], ms / 1000U, (ms % 1000U) / 10U);
        if (heard >= STREAM_DETECTIONS || stream_detections[heard][0] != frame ||
            stream_detections[heard][1] != keyword) {
            detections_match = false;
        }
        heard++;
    }
    detections_match = detections_match && heard == STREAM_DETECTIONS;
    printk("%d detections, %s the host's\n", heard, detections_match ? "as" : "NOT as");
    printk("ET_DONE %s: %d of %d frames match the host reference\n",
           matching == STREAM_FRAMES && detections_match ? "PASS" : "FAIL", matching,
           STREAM_FRAMES);
    return 0;
}
