/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Listens to the board's digital microphone (the devicetree's dmic_dev, Zephyr's DMIC
 * API): 16 kHz, 16-bit mono blocks of 20 ms, each completing a 30 ms frame with the
 * last 10 ms of the one before, and prints every keyword heard, for ever.
 */

#include <string.h>

#include <zephyr/audio/dmic.h>
#include <zephyr/device.h>
#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include <et_zephyr/et_zephyr.h>

#include "detector.h"

#define BLOCK_SAMPLES ET_ZEPHYR_MFCC_FRAME_STEP
#define BLOCK_BYTES (BLOCK_SAMPLES * sizeof(int16_t))
/* Blocks the driver may fill while one is being processed. */
#define BLOCK_COUNT 4
#define READ_TIMEOUT_MS 1000

K_MEM_SLAB_DEFINE_STATIC(blocks, BLOCK_BYTES, BLOCK_COUNT, 4);

/* The last 30 ms of sound: the frame. */
static int16_t window[ET_ZEPHYR_MFCC_FRAME_LENGTH];

static int start(const struct device *dmic) {
    static struct pcm_stream_cfg stream = {
        .pcm_rate = ET_ZEPHYR_MFCC_SAMPLE_RATE,
        .pcm_width = 16,
        .block_size = BLOCK_BYTES,
        .mem_slab = &blocks,
    };
    struct dmic_cfg cfg = {
        /* PDM clocks most MEMS microphones take. */
        .io = {.min_pdm_clk_freq = 1000000,
               .max_pdm_clk_freq = 3500000,
               .min_pdm_clk_dc = 40,
               .max_pdm_clk_dc = 60},
        .streams = &stream,
        .channel = {.req_num_streams = 1, .req_num_chan = 1},
    };

    cfg.channel.req_chan_map_lo = dmic_build_channel_map(0, 0, PDM_CHAN_LEFT);
    int rc = dmic_configure(dmic, &cfg);

    return rc == 0 ? dmic_trigger(dmic, DMIC_TRIGGER_START) : rc;
}

int main(void) {
    const struct device *const dmic = DEVICE_DT_GET(DT_NODELABEL(dmic_dev));

    if (!device_is_ready(dmic)) {
        printk("%s is not ready\n", dmic->name);
        return 0;
    }
    int rc = detector_init();

    if (rc != ET_ZEPHYR_OK) {
        printk("et_zephyr_init: %s\n", et_zephyr_status_str(rc));
        return 0;
    }
    rc = start(dmic);
    if (rc != 0) {
        printk("the microphone did not start: %d\n", rc);
        return 0;
    }
    printk("listening\n");

    struct detector_rule rule = {.best_before = -1, .run = 0};
    int32_t coefficients[ET_ZEPHYR_MFCC_COEFFICIENTS];
    float scores[LABEL_COUNT];

    for (;;) {
        void *block;
        size_t size;

        rc = dmic_read(dmic, 0, &block, &size, READ_TIMEOUT_MS);
        if (rc != 0 || size != BLOCK_BYTES) {
            printk("dmic_read: %d (%u bytes)\n", rc, (unsigned int)size);
            break;
        }
        memmove(window, &window[BLOCK_SAMPLES],
                (ET_ZEPHYR_MFCC_FRAME_LENGTH - BLOCK_SAMPLES) * sizeof(int16_t));
        memcpy(&window[ET_ZEPHYR_MFCC_FRAME_LENGTH - BLOCK_SAMPLES], block, BLOCK_BYTES);
        k_mem_slab_free(&blocks, block);

        rc = detector_frame(window, coefficients, scores);
        if (rc != ET_ZEPHYR_OK) {
            printk("detector: %s\n", et_zephyr_status_str(rc));
            break;
        }
        const int keyword = detector_heard(&rule, scores);

        if (keyword >= 0) {
            printk("heard \"%s\"\n", label_names[keyword]);
        }
    }
    dmic_trigger(dmic, DMIC_TRIGGER_STOP);
    return 0;
}
