/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * An int8 vector as the DSP extension's SMLAD takes it against weight words
 * split by SXTB16: for every 4 values x0 .. x3, the int16 pairs {x0, x2} and
 * {x1, x3}, each value plus the input offset (two SXTAB16 a word). A kernel
 * that multiplies the same input by many weight rows extends it once.
 */

#ifndef ET_ZEPHYR_KERNELS_INPUT_PAIRS_DSP_H_
#define ET_ZEPHYR_KERNELS_INPUT_PAIRS_DSP_H_

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

namespace et_zephyr::native {

/* The input offset in both halves of a word, as SXTAB16 adds it. */
inline uint32_t offset_pair(int32_t input_offset) {
    return (static_cast<uint32_t>(input_offset) & 0xFFFFU) * 0x10001U;
}

/* x[0 .. 4 * words - 1] as 2 * words pairs into pairs, a word's two pairs
 * stride words after the previous word's (2: packed; a kernel that interleaves
 * several inputs' pairs, more); where the next word's pairs go. */
inline int32_t *extend_input_pairs(const int8_t *x, int32_t words, uint32_t offset, int32_t *pairs,
                                   int32_t stride) {
    for (int32_t i = 0; i < words; i++, pairs += stride) {
        uint32_t raw;
        memcpy(&raw, x + 4 * i, sizeof(raw));
        pairs[0] = static_cast<int32_t>(__sxtab16(offset, raw));
        pairs[1] = static_cast<int32_t>(__sxtab16(offset, (raw >> 8) | (raw << 24)));
    }
    return pairs;
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_INPUT_PAIRS_DSP_H_ */
