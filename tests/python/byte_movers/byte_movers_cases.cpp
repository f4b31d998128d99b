/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Host driver for et-zephyr's byte-moving kernels (lib/src/kernels/slice.cpp,
 * channel_shuffle.cpp and, with -DWITH_CMSIS_NN, concatenate.cpp), its bilinear
 * resize (resize_bilinear.cpp) and, with -DWITH_CMSIS_NN, its clipped average pool
 * (avg_pool2d_clipped.cpp), and the int16 pad (pad_s16.cpp) on ExecuTorch tensors in any dim
 * order. Reads cases from a file of int64 words, writes each case's status (0: ran, 1: refused)
 * and output bytes, in memory order, to another:
 *
 *   case:   kind (0 slice, 1 channel_shuffle, 2 concatenate, 3 resize_bilinear,
 *           4 avg_pool2d_clipped, 5 pad_s16), inputs, then per input a tensor, then the
 *           output's tensor, then kind's arguments (for resize_bilinear: the row and column
 *           taps, each a count of output indices and then 3 words per index; for
 *           avg_pool2d_clipped: kernel, stride, padding and output size, two words each,
 *           then the scratch's bytes; for pad_s16: the pads before and after each
 *           dimension, then the value)
 *   tensor: rank, sizes[rank], dim_order[rank], then numel elements (one word each; int16
 *           for pad_s16, int8 otherwise)
 *
 * tests/python/test_byte_movers.py builds it with g++ against the executorch wheel.
 */

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>

using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::ScalarType;
using torch::executor::Tensor;
using TensorImpl = executorch::runtime::etensor::TensorImpl;

namespace et_zephyr::native {
Tensor &slice_out(KernelRuntimeContext &, const Tensor &, int64_t, int64_t, int64_t, int64_t,
                  Tensor &);
Tensor &channel_shuffle_out(KernelRuntimeContext &, const Tensor &, int64_t, Tensor &);
Tensor &resize_bilinear_out(KernelRuntimeContext &, const Tensor &, const Tensor &, const Tensor &,
                            Tensor &);
Tensor &pad_s16_out(KernelRuntimeContext &, const Tensor &, ArrayRef<int64_t>, ArrayRef<int64_t>,
                    int64_t, Tensor &);
#ifdef WITH_CMSIS_NN
Tensor &concatenate_out(KernelRuntimeContext &, ArrayRef<Tensor>, int64_t, Tensor &);
Tensor &avg_pool2d_clipped_out(KernelRuntimeContext &, const Tensor &, ArrayRef<int64_t>,
                               ArrayRef<int64_t>, ArrayRef<int64_t>, ArrayRef<int64_t>,
                               const Tensor &, Tensor &);
#endif
} // namespace et_zephyr::native

namespace {

struct Words {
    std::vector<int64_t> words;
    size_t next = 0;
    int64_t take() { return words.at(next++); }
};

/* A tensor and the storage its impl points at. */
struct Owned {
    std::vector<TensorImpl::SizesType> sizes;
    std::vector<TensorImpl::DimOrderType> dim_order;
    std::vector<TensorImpl::StridesType> strides;
    std::vector<int8_t> bytes;
    TensorImpl *impl = nullptr;
};

void read_tensor(Words &in, Owned &t, ScalarType type) {
    const auto rank = static_cast<size_t>(in.take());
    t.sizes.resize(rank);
    t.dim_order.resize(rank);
    t.strides.resize(rank);
    size_t numel = 1;
    for (auto &s : t.sizes) {
        s = static_cast<TensorImpl::SizesType>(in.take());
        numel *= static_cast<size_t>(s);
    }
    for (auto &d : t.dim_order) {
        d = static_cast<TensorImpl::DimOrderType>(in.take());
    }
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
        t.strides[t.dim_order[i]] = static_cast<TensorImpl::StridesType>(stride);
        stride *= t.sizes[t.dim_order[i]];
    }
    const size_t width = type == ScalarType::Short ? sizeof(int16_t) : sizeof(int8_t);
    t.bytes.resize(numel * width);
    for (size_t i = 0; i < numel; ++i) {
        const auto value = static_cast<int16_t>(in.take());
        std::memcpy(t.bytes.data() + i * width, &value, width); // little-endian
    }
    t.impl = new TensorImpl(type, static_cast<ssize_t>(rank), t.sizes.data(), t.bytes.data(),
                            t.dim_order.data(), t.strides.data());
}

/* int32 taps [count, 3] for resize_bilinear. */
struct Taps {
    std::vector<TensorImpl::SizesType> sizes;
    std::vector<TensorImpl::DimOrderType> dim_order{0, 1};
    std::vector<TensorImpl::StridesType> strides{3, 1};
    std::vector<int32_t> words;
    TensorImpl *impl = nullptr;
};

void read_taps(Words &in, Taps &t) {
    const auto count = static_cast<TensorImpl::SizesType>(in.take());
    t.sizes = {count, 3};
    t.words.resize(static_cast<size_t>(count) * 3);
    for (auto &w : t.words) {
        w = static_cast<int32_t>(in.take());
    }
    t.impl = new TensorImpl(ScalarType::Int, 2, t.sizes.data(), t.words.data(), t.dim_order.data(),
                            t.strides.data());
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s CASES OUTPUTS\n", argv[0]);
        return 2;
    }
    Words in;
    FILE *cases = std::fopen(argv[1], "rb");
    int64_t word = 0;
    while (cases != nullptr && std::fread(&word, sizeof word, 1, cases) == 1) {
        in.words.push_back(word);
    }
    if (cases != nullptr) {
        std::fclose(cases);
    }
    FILE *out = std::fopen(argv[2], "wb");
    if (out == nullptr) {
        return 2;
    }
    while (in.next < in.words.size()) {
        const int64_t kind = in.take();
        const auto count = static_cast<size_t>(in.take());
        const ScalarType type = kind == 5 ? ScalarType::Short : ScalarType::Char;
        std::vector<Owned> inputs(count);
        for (auto &t : inputs) {
            read_tensor(in, t, type);
        }
        Owned output;
        read_tensor(in, output, type);
        Tensor result(output.impl);
        KernelRuntimeContext context;
        if (kind == 0) {
            const int64_t dim = in.take(), start = in.take(), end = in.take(), step = in.take();
            et_zephyr::native::slice_out(context, Tensor(inputs[0].impl), dim, start, end, step,
                                         result);
        } else if (kind == 1) {
            et_zephyr::native::channel_shuffle_out(context, Tensor(inputs[0].impl), in.take(),
                                                   result);
        } else if (kind == 3) {
            Taps rows;
            Taps columns;
            read_taps(in, rows);
            read_taps(in, columns);
            et_zephyr::native::resize_bilinear_out(context, Tensor(inputs[0].impl),
                                                   Tensor(rows.impl), Tensor(columns.impl), result);
            delete rows.impl;
            delete columns.impl;
        } else if (kind == 5) {
            const auto rank = static_cast<size_t>(inputs[0].sizes.size());
            std::vector<int64_t> pads(2 * rank);
            for (auto &p : pads) {
                p = in.take();
            }
            et_zephyr::native::pad_s16_out(
                context, Tensor(inputs[0].impl), ArrayRef<int64_t>(pads.data(), rank),
                ArrayRef<int64_t>(pads.data() + rank, rank), in.take(), result);
        } else if (kind == 4) {
#ifdef WITH_CMSIS_NN
            int64_t pairs[8];
            for (auto &p : pairs) {
                p = in.take();
            }
            std::vector<uint8_t> scratch_bytes(static_cast<size_t>(in.take()));
            int32_t scratch_size = static_cast<int32_t>(scratch_bytes.size());
            uint8_t dim_order = 0;
            int32_t stride = 1;
            TensorImpl scratch(ScalarType::Byte, 1, &scratch_size, scratch_bytes.data(), &dim_order,
                               &stride);
            et_zephyr::native::avg_pool2d_clipped_out(
                context, Tensor(inputs[0].impl), ArrayRef<int64_t>(pairs, 2),
                ArrayRef<int64_t>(pairs + 2, 2), ArrayRef<int64_t>(pairs + 4, 2),
                ArrayRef<int64_t>(pairs + 6, 2), Tensor(&scratch), result);
#else
            return 3;
#endif
        } else {
            const int64_t dim = in.take();
#ifdef WITH_CMSIS_NN
            std::vector<Tensor> tensors;
            for (auto &t : inputs) {
                tensors.emplace_back(t.impl);
            }
            et_zephyr::native::concatenate_out(context, ArrayRef<Tensor>(tensors.data(), count),
                                               dim, result);
#else
            (void)dim;
            return 3;
#endif
        }
        const uint8_t refused = context.failure_state() != executorch::runtime::Error::Ok;
        std::fwrite(&refused, 1, 1, out);
        std::fwrite(output.bytes.data(), 1, output.bytes.size(), out);
        for (auto &t : inputs) {
            delete t.impl;
        }
        delete output.impl;
    }
    std::fclose(out);
    return 0;
}
