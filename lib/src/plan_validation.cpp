/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "plan_validation.h"

#include <cstdint>
#include <cstring>

#include "log.h"

/* CMSIS-NN's scratch sizes depend on its ISA tier: in a Zephyr build the
 * module's Kconfig choice (which can hold CMSIS-NN below the core), elsewhere
 * what the compiler targets, as CMSIS-NN itself decides. */
#if defined(CONFIG_ET_ZEPHYR_ISA_MVE) ||                                                           \
    (!defined(CONFIG_ET_ZEPHYR_ISA) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1))
#define ETZ_ISA_MVE 1
#elif defined(CONFIG_ET_ZEPHYR_ISA_DSP) ||                                                         \
    (!defined(CONFIG_ET_ZEPHYR_ISA) && defined(__ARM_FEATURE_DSP))
#define ETZ_ISA_DSP 1
#endif

/* Beyond the bounds checks, validation comes with the runtime's verifier (ExecuTorch's own
 * switch, CONFIG_ET_ZEPHYR_VERIFY_PROGRAM): a build without it keeps only the cheap part. */
#ifndef ET_ENABLE_PROGRAM_VERIFICATION
#define ET_ENABLE_PROGRAM_VERIFICATION 1
#endif

namespace et_zephyr {
namespace {

/* Bytes per element of ExecuTorch's ScalarType codes 0..29; 0 for unknown codes. */
size_t element_size(int32_t scalar_type) {
    static const uint8_t kSizes[] = {1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4,
                                     2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1,  1, 2, 4, 8};
    return scalar_type >= 0 && static_cast<size_t>(scalar_type) < sizeof(kSizes)
               ? kSizes[scalar_type]
               : 0;
}

/* Byte size of @p t from its shape and dtype; false (and logged) when there is
 * none below 4 GiB. On a 32-bit core the runtime's own size arithmetic would
 * wrap, and a wrapped size passes its bounds check. */
bool tensor_nbytes(const pte::MethodView &m, size_t value, const pte::TensorView &t,
                   uint64_t *nbytes) {
    const size_t elsize = element_size(t.scalar_type);
    if (elsize == 0) {
        ETZ_ERR("plan: value %lu is a tensor of unknown dtype %ld",
                static_cast<unsigned long>(value), static_cast<long>(t.scalar_type));
        return false;
    }
    uint64_t bytes = elsize;
    for (size_t d = 0; d < t.rank; ++d) {
        int32_t size = 0;
        if (!m.tensor_size(t, d, &size) || size < 0) {
            ETZ_ERR("plan: value %lu: dimension %lu of its shape is negative or unreadable",
                    static_cast<unsigned long>(value), static_cast<unsigned long>(d));
            return false;
        }
        bytes *= static_cast<uint64_t>(size);
        if (bytes > UINT32_MAX) {
            ETZ_ERR("plan: value %lu: its shape (rank %lu) and dtype %ld make more than 4 GiB "
                    "(dimension %lu is %ld)",
                    static_cast<unsigned long>(value), static_cast<unsigned long>(t.rank),
                    static_cast<long>(t.scalar_type), static_cast<unsigned long>(d),
                    static_cast<long>(size));
            return false;
        }
    }
    *nbytes = bytes;
    return true;
}

#if ET_ENABLE_PROGRAM_VERIFICATION
/* Dim order: a permutation of the dimensions, one entry per dimension. */
bool dim_order_valid(const pte::MethodView &m, const pte::TensorView &t) {
    if (t.dim_order_len != t.rank || t.rank > 32) {
        return false;
    }
    uint32_t seen = 0;
    for (size_t d = 0; d < t.rank; ++d) {
        uint8_t v = 0;
        if (!m.tensor_dim_order(t, d, &v) || v >= t.rank || (seen & (1u << v)) != 0) {
            return false;
        }
        seen |= 1u << v;
    }
    return true;
}

/* CMSIS-NN's cmsis_nn_dims and the parameters its *_get_buffer_size read. */
struct Dims {
    int32_t n, h, w, c;
};
struct ConvParams {
    int32_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

/* Ported from CMSIS-NN's arm_convolve_get_buffer_sizes_s8.c (GCC build). */
int64_t convolve_s8_buffer(const Dims &in, const Dims &filter) {
    const int64_t cols = static_cast<int64_t>(in.c) * filter.w * filter.h;
#if defined(ETZ_ISA_MVE)
    return 4 * ((cols + 15) / 16) * 16;
#else
    const int64_t aligned = cols % 4 != 0 ? cols + 4 - cols % 4 : cols;
    return 2 * aligned * 2;
#endif
}

int64_t convolve_1_x_n_buffer(const ConvParams &p, const Dims &in, const Dims &filter,
                              const Dims &out) {
#if defined(ETZ_ISA_MVE)
    auto max32 = [](int32_t a, int32_t b) { return a > b ? a : b; };
    const int32_t total_pad = (out.w - 1) * p.stride_w + filter.w - in.w;
    const int32_t asym_pad = total_pad % 2;
    const int32_t right_pad_num =
        p.pad_w + asym_pad != 0 ? max32(1, (p.pad_w + asym_pad + p.stride_w - 1) / p.stride_w) : 0;
    const int32_t left_pad_num =
        p.pad_w != 0 ? max32(1, (p.pad_w + p.stride_w - 1) / p.stride_w) : 0;
    const int32_t no_pad_num = max32(out.w - (right_pad_num + left_pad_num), 0);
    if (right_pad_num + no_pad_num + left_pad_num != out.w) {
        return convolve_s8_buffer(in, filter);
    }
    const int64_t pad_left = static_cast<int64_t>(p.pad_w) * in.c;
    const int64_t pad_right = asym_pad ? static_cast<int64_t>(right_pad_num) * in.c : pad_left;
    const int64_t left = static_cast<int64_t>(filter.w) * in.c;
    const int64_t right = left - in.c;
    return left + pad_left > right + pad_right ? left + pad_left : right + pad_right;
#else
    (void)p;
    (void)out;
    return convolve_s8_buffer(in, filter);
#endif
}

/* arm_convolve_wrapper_s8_get_buffer_size: 1x1 kernels need none (GCC build). */
int64_t convolve_wrapper_buffer(const ConvParams &p, const Dims &in, const Dims &filter,
                                const Dims &out) {
    if (p.pad_w == 0 && p.pad_h == 0 && filter.w == 1 && filter.h == 1 && p.dil_w == 1 &&
        p.dil_h == 1 && in.c == filter.c) {
        return 0;
    }
    if (in.h == 1 && p.dil_w == 1 && filter.h == 1 && (p.stride_w * in.c) % 4 == 0 &&
        in.c == filter.c) {
        return convolve_1_x_n_buffer(p, in, filter, out);
    }
    return convolve_s8_buffer(in, filter);
}

/* arm_depthwise_conv_wrapper_s8_get_buffer_size (filter: 1 x h x w x c_out). */
int64_t depthwise_wrapper_buffer(const ConvParams &p, const Dims &in, const Dims &filter,
                                 const Dims &out) {
#if defined(ETZ_ISA_MVE)
    // CMSIS-NN runs a one-channel depthwise as a convolution (threshold 1 with GCC).
    if (in.c == 1 && out.c > 1) {
        const Dims conv_filter{filter.c, filter.h, filter.w, filter.n};
        return convolve_wrapper_buffer(p, in, conv_filter, out) +
               static_cast<int64_t>(filter.c) * filter.h * filter.w * filter.n;
    }
#endif
    if (in.c != out.c || in.n != 1 || p.dil_w != 1 || p.dil_h != 1) {
        return 0;
    }
#if defined(ETZ_ISA_MVE)
    return 4 * 124 * static_cast<int64_t>(filter.w) * filter.h; // CH_IN_BLOCK_MVE
#elif defined(ETZ_ISA_DSP)
    if (filter.w == 3 && filter.h == 3 && p.pad_h <= 1 && p.pad_w <= 1) {
        return 0;
    }
    return static_cast<int64_t>(in.c) * filter.w * filter.h * 2;
#else
    (void)filter;
    return 0;
#endif
}

/* arm_avgpool_s8_get_buffer_size. */
int64_t avgpool_buffer(const Dims &in) {
#if defined(ETZ_ISA_DSP)
    return static_cast<int64_t>(in.c) * 4;
#else
    (void)in;
    return 0;
#endif
}

/* A 4-d tensor argument's NCHW sizes as NHWC dims (the op wrappers read them so). */
bool nchw_dims(const pte::MethodView &m, int32_t value, Dims *out) {
    pte::TensorView t{};
    int32_t s[4] = {};
    if (value < 0 || !m.tensor(static_cast<size_t>(value), &t) || t.rank != 4) {
        return false;
    }
    for (size_t d = 0; d < 4; ++d) {
        if (!m.tensor_size(t, d, &s[d])) {
            return false;
        }
    }
    *out = Dims{s[0], s[2], s[3], s[1]};
    return true;
}

/* An int[2] argument: an IntList's items are the indices of Int values. */
bool pair(const pte::MethodView &m, int32_t value, int32_t *first, int32_t *second) {
    int64_t item[2] = {};
    for (size_t k = 0; k < 2; ++k) {
        int64_t index = 0;
        if (value < 0 || !m.int_list_at(static_cast<size_t>(value), k, &index) || index < 0 ||
            index > INT32_MAX || !m.int_value(static_cast<size_t>(index), &item[k]) ||
            item[k] < 0 || item[k] > INT32_MAX) {
            return false;
        }
    }
    *first = static_cast<int32_t>(item[0]);
    *second = static_cast<int32_t>(item[1]);
    return true;
}

/* The CMSIS-NN operators with a scratch argument: where it and the shapes are. */
struct ScratchOp {
    const char *name;
    size_t scratch_arg;
    size_t out_arg;
};
constexpr ScratchOp kScratchOps[] = {
    {"cortex_m::quantized_conv2d", 12, 13},
    {"cortex_m::quantized_depthwise_conv2d", 13, 14},
    {"cortex_m::quantized_avg_pool2d", 7, 8},
};

/* Scratch CMSIS-NN needs for @p call of @p op; -1 if its arguments are unreadable. */
int64_t scratch_needed(const pte::MethodView &m, const pte::KernelCallView &call, size_t op) {
    int32_t arg[6] = {};
    for (size_t k = 0; k < 6; ++k) {
        if (!m.kernel_arg(call, k, &arg[k])) {
            return -1;
        }
    }
    int32_t out_value = -1;
    Dims in{}, filter{}, out{};
    if (!m.kernel_arg(call, kScratchOps[op].out_arg, &out_value) || !nchw_dims(m, arg[0], &in) ||
        !nchw_dims(m, out_value, &out)) {
        return -1;
    }
    if (op == 2) {
        return avgpool_buffer(in);
    }
    pte::TensorView w{};
    int32_t ws[4] = {};
    if (arg[1] < 0 || !m.tensor(static_cast<size_t>(arg[1]), &w) || w.rank != 4) {
        return -1;
    }
    for (size_t d = 0; d < 4; ++d) {
        if (!m.tensor_size(w, d, &ws[d])) {
            return -1;
        }
    }
    ConvParams p{};
    if (!pair(m, arg[3], &p.stride_h, &p.stride_w) || !pair(m, arg[4], &p.pad_h, &p.pad_w) ||
        !pair(m, arg[5], &p.dil_h, &p.dil_w)) {
        return -1;
    }
    if (op == 0) {
        filter = Dims{ws[0], ws[1], ws[2], ws[3]}; // OHWI
        return convolve_wrapper_buffer(p, in, filter, out);
    }
    filter = Dims{1, ws[1], ws[2], out.c}; // IHWO
    return depthwise_wrapper_buffer(p, in, filter, out);
}

int check_scratch(const pte::MethodView &m) {
    const long chains = m.num_chains();
    for (long c = 0; c < chains; ++c) {
        const long n = m.num_instructions(static_cast<size_t>(c));
        for (long i = 0; i < n; ++i) {
            pte::KernelCallView call{};
            pte::OperatorName name{};
            if (!m.kernel_call(static_cast<size_t>(c), static_cast<size_t>(i), &call) ||
                call.op_index < 0 || !m.operator_at(static_cast<size_t>(call.op_index), &name)) {
                continue;
            }
            for (size_t op = 0; op < sizeof(kScratchOps) / sizeof(kScratchOps[0]); ++op) {
                if (std::strcmp(name.name, kScratchOps[op].name) != 0) {
                    continue;
                }
                int32_t scratch = -1;
                pte::TensorView t{};
                uint64_t have = 0;
                const int64_t need = scratch_needed(m, call, op);
                if (need < 0 || !m.kernel_arg(call, kScratchOps[op].scratch_arg, &scratch) ||
                    scratch < 0 || !m.tensor(static_cast<size_t>(scratch), &t) ||
                    !tensor_nbytes(m, static_cast<size_t>(scratch), t, &have)) {
                    ETZ_ERR("plan: instruction %ld (%s): arguments are not the operator's",
                            static_cast<long>(i), name.name);
                    return ET_ZEPHYR_ERR_INVALID_PROGRAM;
                }
                if (have < static_cast<uint64_t>(need)) {
                    ETZ_ERR("plan: value %ld, scratch of instruction %ld (%s): %lu bytes, "
                            "CMSIS-NN needs %lu for its shape",
                            static_cast<long>(scratch), static_cast<long>(i), name.name,
                            static_cast<unsigned long>(have), static_cast<unsigned long>(need));
                    return ET_ZEPHYR_ERR_SCRATCH_TOO_SMALL;
                }
            }
        }
    }
    return ET_ZEPHYR_OK;
}

#endif /* ET_ENABLE_PROGRAM_VERIFICATION */

/* One side (inputs or outputs) against the config's count and dtypes. */
int check_io(const pte::MethodView &m, bool inputs, const int32_t *dtypes, size_t num_dtypes,
             size_t num_quant, size_t num_states) {
    const char *what = inputs ? "input" : "output";
    const long n = inputs ? m.num_inputs() : m.num_outputs();
    if (n < 0) {
        ETZ_ERR("plan: the method's %s list is malformed", what);
        return ET_ZEPHYR_ERR_INVALID_PROGRAM;
    }
    if (static_cast<size_t>(n) < num_states) {
        ETZ_ERR("plan: the method has %ld %s(s), fewer than the config's %lu states", n, what,
                static_cast<unsigned long>(num_states));
        return ET_ZEPHYR_ERR_IO_MISMATCH;
    }
    /* A stateful program's states are its last inputs and outputs; the config describes
     * the others. */
    const size_t count = static_cast<size_t>(n) - num_states;
    if ((dtypes != nullptr && count != num_dtypes) || (num_quant != 0 && count != num_quant)) {
        ETZ_ERR("plan: the method has %lu %s(s)%s, the config describes %lu",
                static_cast<unsigned long>(count), what,
                num_states > 0 ? " besides its states" : "",
                static_cast<unsigned long>(dtypes != nullptr && count != num_dtypes ? num_dtypes
                                                                                    : num_quant));
        return ET_ZEPHYR_ERR_IO_MISMATCH;
    }
    for (size_t i = 0; dtypes != nullptr && i < count; ++i) {
        int32_t value = -1;
        pte::TensorView t{};
        const bool ok = inputs ? m.input(i, &value) : m.output(i, &value);
        if (!ok || value < 0 || !m.tensor(static_cast<size_t>(value), &t)) {
            ETZ_ERR("plan: %s %lu (value %ld) is not a tensor", what, static_cast<unsigned long>(i),
                    static_cast<long>(value));
            return ET_ZEPHYR_ERR_IO_MISMATCH;
        }
        if (t.scalar_type != dtypes[i]) {
            ETZ_ERR("plan: %s %lu (value %ld) has dtype %ld, the config says %ld", what,
                    static_cast<unsigned long>(i), static_cast<long>(value),
                    static_cast<long>(t.scalar_type), static_cast<long>(dtypes[i]));
            return ET_ZEPHYR_ERR_IO_MISMATCH;
        }
    }
    return ET_ZEPHYR_OK;
}

} // namespace

int validate_plan(const pte::MethodView &m, const size_t *buffer_sizes, size_t num_buffers,
                  bool thorough) {
    const long n = m.num_values();
    if (n < 0) {
        ETZ_ERR("plan: the method's value table is malformed");
        return ET_ZEPHYR_ERR_INVALID_PROGRAM;
    }
    /* ExecuTorch 1.4.1's Method::init loses an instruction's operator error (index out of
     * range, no name, name of 100 characters or more) when a later instruction resolves:
     * its delayed error is overwritten and the kernel slot stays unset, to be called at
     * run. Check every kernel call's operator here (tests/fuzz/regressions). */
    const long num_ops = m.num_operators();
    for (long c = 0; c < m.num_chains(); ++c) {
        for (long i = 0; i < m.num_instructions(static_cast<size_t>(c)); ++i) {
            pte::KernelCallView call{};
            if (!m.kernel_call(static_cast<size_t>(c), static_cast<size_t>(i), &call)) {
                continue;
            }
            pte::OperatorName op{};
            char name[101];
            if (call.op_index < 0 || call.op_index >= num_ops ||
                !m.operator_at(static_cast<size_t>(call.op_index), &op) ||
                std::strlen(pte::format_operator(op, name, sizeof(name))) >= 100) {
                ETZ_ERR("plan: chain %ld instruction %ld calls operator %ld, which the method "
                        "lacks or does not name (of %ld)",
                        c, i, static_cast<long>(call.op_index), num_ops);
                return ET_ZEPHYR_ERR_INVALID_PROGRAM;
            }
        }
    }
    /* The runtime aborts (ET_CHECK) on an input or output whose value index is outside
     * the value table when it is accessed: refuse such a method here. */
    for (int io = 0; io < 2; ++io) {
        const long count = io == 0 ? m.num_inputs() : m.num_outputs();
        for (long k = 0; k < count; ++k) {
            int32_t value = -1;
            const bool ok = io == 0 ? m.input(static_cast<size_t>(k), &value)
                                    : m.output(static_cast<size_t>(k), &value);
            if (!ok || value < 0 || value >= n) {
                ETZ_ERR("plan: %s %ld is value %ld; the method has %ld values",
                        io == 0 ? "input" : "output", k, static_cast<long>(value), n);
                return ET_ZEPHYR_ERR_INVALID_PROGRAM;
            }
        }
    }
    for (size_t v = 0; v < static_cast<size_t>(n); ++v) {
        pte::TensorView t{};
        uint64_t nbytes = 0;
        if (!m.tensor(v, &t)) {
            continue;
        }
        if (!tensor_nbytes(m, v, t, &nbytes)) {
            return ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE;
        }
#if ET_ENABLE_PROGRAM_VERIFICATION
        if (thorough && !dim_order_valid(m, t)) {
            ETZ_ERR("plan: value %lu: its dim order is not a permutation of its %lu dimensions",
                    static_cast<unsigned long>(v), static_cast<unsigned long>(t.rank));
            return ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE;
        }
#endif
        if (!t.planned) {
            continue;
        }
        if (t.memory_id == 0 || t.memory_id > num_buffers) {
            ETZ_ERR("plan: value %lu (%lu bytes) is in memory id %lu; the method plans buffers "
                    "1..%lu",
                    static_cast<unsigned long>(v), static_cast<unsigned long>(nbytes),
                    static_cast<unsigned long>(t.memory_id),
                    static_cast<unsigned long>(num_buffers));
            return ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS;
        }
        const uint64_t size = buffer_sizes[t.memory_id - 1];
        if (t.offset > size || nbytes > size - t.offset) {
            ETZ_ERR("plan: value %lu, memory id %lu, offset %lu%s, %lu bytes: past the end of "
                    "its planned buffer of %lu bytes",
                    static_cast<unsigned long>(v), static_cast<unsigned long>(t.memory_id),
                    static_cast<unsigned long>(t.offset > UINT32_MAX ? UINT32_MAX : t.offset),
                    t.offset > UINT32_MAX ? "+" : "", static_cast<unsigned long>(nbytes),
                    static_cast<unsigned long>(size));
            return ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS;
        }
    }
#if ET_ENABLE_PROGRAM_VERIFICATION
    return thorough ? check_scratch(m) : ET_ZEPHYR_OK;
#else
    (void)thorough;
    return ET_ZEPHYR_OK;
#endif
}

int validate_io(const pte::MethodView &m, const et_zephyr_config &cfg) {
    const size_t num_states = cfg.states != nullptr ? cfg.num_states : 0;
    const int rc = check_io(m, true, cfg.input_dtypes, cfg.num_input_dtypes,
                            cfg.input_quant != nullptr ? cfg.num_input_quant : 0, num_states);
    return rc != ET_ZEPHYR_OK
               ? rc
               : check_io(m, false, cfg.output_dtypes, cfg.num_output_dtypes,
                          cfg.output_quant != nullptr ? cfg.num_output_quant : 0, num_states);
}

} // namespace et_zephyr
