/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * A convolution's input patches as rows of a matrix (im2col), for et-zephyr's
 * Helium convolution kernel (conv_mve.cpp): row p holds output pixel p's
 * window (kernel height x width x input channels, channels-last), padded
 * positions set to -input_offset, whose term in the sum is zero.
 */

#ifndef ET_ZEPHYR_KERNELS_CONV_PATCHES_MVE_H_
#define ET_ZEPHYR_KERNELS_CONV_PATCHES_MVE_H_

#include <stdint.h>

namespace et_zephyr::native {

struct Patches {
    const int8_t *input; /* in_height x in_width x in_channels */
    int32_t in_height;
    int32_t in_width;
    int32_t in_channels;
    int32_t kernel_height;
    int32_t kernel_width;
    int32_t stride_y;
    int32_t stride_x;
    int32_t pad_y;
    int32_t pad_x;
    int32_t out_width;
    int8_t pad_value;   /* -input_offset */
    int32_t row_stride; /* bytes between rows, at least a patch */
};

/* The patches of output pixels first .. first + count - 1 (row-major) into
 * rows; the bytes of each row past its patch are left as they are. */
void gather_patches(const Patches &p, int32_t first, int32_t count, int8_t *rows);

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_CONV_PATCHES_MVE_H_ */
