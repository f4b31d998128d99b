/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * A tensor seen in its memory order around one dimension: the module's byte-moving
 * kernels (concatenate.cpp, slice.cpp) take tensors in any dim order they share,
 * and a join or a cut along a dimension is, in memory, `outer` runs of
 * size(dim) x `inner` bytes.
 */

#ifndef ET_ZEPHYR_KERNELS_DIM_ORDER_BLOCKS_H_
#define ET_ZEPHYR_KERNELS_DIM_ORDER_BLOCKS_H_

#include <stdint.h>

#include <executorch/runtime/core/exec_aten/exec_aten.h>

namespace et_zephyr::native {

struct Blocks {
    /* Product of the sizes of the dimensions laid out before `dim`. */
    int64_t outer = 1;
    /* Product of the sizes of the dimensions laid out after it. */
    int64_t inner = 1;
};

inline Blocks blocks(const torch::executor::Tensor &tensor, int64_t dim) {
    Blocks result;
    bool after = false;
    for (size_t i = 0; i < tensor.dim_order().size(); ++i) {
        const auto d = static_cast<int64_t>(tensor.dim_order()[i]);
        if (d == dim) {
            after = true;
        } else if (after) {
            result.inner *= tensor.size(d);
        } else {
            result.outer *= tensor.size(d);
        }
    }
    return result;
}

/* Whether two tensors of one rank lay their bytes out alike: the dimensions larger
 * than 1 in both come in the same order in their dim orders (one of size 1 can sit
 * anywhere, and a program's dim orders place such dimensions as their strides tie). */
inline bool same_layout(const torch::executor::Tensor &a, const torch::executor::Tensor &b) {
    const size_t rank = a.dim_order().size();
    auto large = [&](size_t d) { return a.size(d) > 1 && b.size(d) > 1; };
    size_t i = 0;
    size_t j = 0;
    for (;;) {
        while (i < rank && !large(a.dim_order()[i])) {
            ++i;
        }
        while (j < rank && !large(b.dim_order()[j])) {
            ++j;
        }
        if (i == rank || j == rank) {
            return i == rank && j == rank;
        }
        if (a.dim_order()[i++] != b.dim_order()[j++]) {
            return false;
        }
    }
}

/* Whether `input` fits `out` along `dim`: int8 both, the same rank and layout, the
 * same sizes in every other dimension. */
inline bool fits_along(const torch::executor::Tensor &input, const torch::executor::Tensor &out,
                       int64_t dim) {
    if (input.scalar_type() != torch::executor::ScalarType::Char ||
        out.scalar_type() != torch::executor::ScalarType::Char || input.dim() != out.dim() ||
        dim < 0 || dim >= out.dim() || !same_layout(input, out)) {
        return false;
    }
    for (ssize_t d = 0; d < out.dim(); ++d) {
        if (d != dim && input.size(d) != out.size(d)) {
            return false;
        }
    }
    return true;
}

} // namespace et_zephyr::native

#endif /* ET_ZEPHYR_KERNELS_DIM_ORDER_BLOCKS_H_ */
