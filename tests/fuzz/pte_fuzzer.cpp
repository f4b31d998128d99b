/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * libFuzzer target over lib/'s program loader and executor: the input is a
 * .pte. Each input is copied to an exactly-sized 16-byte aligned heap block
 * (so AddressSanitizer sees any read past its end), then
 * et_zephyr_get_requirements(), et_zephyr_init() with flatbuffer
 * verification on (the mode for programs that are not trusted), every input
 * described and filled, et_zephyr_run() and every output described. The
 * arenas are heap blocks of fixed size, poisoned around by ASan.
 *
 * Without verification the runtime reads the flatbuffer unchecked by design
 * (programs in a device's flash are trusted), so that mode is not fuzzed.
 */

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <et_zephyr/et_zephyr.h>

#include "fuzz_port.h"

namespace {

constexpr size_t kPlanned = 32 * 1024;
constexpr size_t kMethod = 16 * 1024;
constexpr size_t kTemp = 8 * 1024;

uint8_t *block(size_t size) {
    void *p = nullptr;
    if (posix_memalign(&p, ET_ZEPHYR_ALIGNMENT, size) != 0) {
        std::abort();
    }
    return static_cast<uint8_t *>(p);
}

struct Arenas {
    uint8_t *planned = block(kPlanned);
    uint8_t *method = block(kMethod);
    uint8_t *temp = block(kTemp);
};

/* Input bytes derived from the program bytes: the same program always runs
 * on the same data. */
void fill(uint8_t *dst, size_t n, const uint8_t *src, size_t src_n) {
    uint32_t x = 2166136261u;
    for (size_t i = 0; i < src_n && i < 64; ++i) {
        x = (x ^ src[i]) * 16777619u;
    }
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        dst[i] = static_cast<uint8_t>(x >> 16);
    }
}

void use_info(const et_zephyr_tensor_info &info) {
    /* Read every byte an output claims to have: ASan checks it is real memory. */
    if (info.data != nullptr) {
        volatile uint8_t sink = 0;
        const uint8_t *p = static_cast<const uint8_t *>(info.data);
        for (size_t i = 0; i < info.nbytes; ++i) {
            sink = sink ^ p[i];
        }
        (void)sink;
    }
    if (info.rank > ET_ZEPHYR_MAX_DIMS) {
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int * /*argc*/, char *** /*argv*/) {
    et_zephyr_fuzz_quiet_runtime();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static Arenas arenas;
    static et_zephyr_model model;
    if (size == 0) {
        return 0;
    }
    uint8_t *pte = block(size);
    std::memcpy(pte, data, size);

    et_zephyr_requirements req{};
    (void)et_zephyr_get_requirements(pte, size, nullptr, &req);

    et_zephyr_config cfg{};
    cfg.pte = pte;
    cfg.pte_size = size;
    cfg.planned_arena = arenas.planned;
    cfg.planned_arena_size = kPlanned;
    cfg.method_arena = arenas.method;
    cfg.method_arena_size = kMethod;
    cfg.temp_arena = arenas.temp;
    cfg.temp_arena_size = kTemp;
    cfg.verify = true;
    if (et_zephyr_init(&model, &cfg) == ET_ZEPHYR_OK) {
        const size_t n_in = et_zephyr_num_inputs(&model);
        for (size_t i = 0; i < n_in; ++i) {
            et_zephyr_tensor_info info{};
            if (et_zephyr_input_info(&model, i, &info) == ET_ZEPHYR_OK) {
                use_info(info);
            }
            void *buf = nullptr;
            size_t nbytes = 0;
            if (et_zephyr_input_buffer(&model, i, &buf, &nbytes) == ET_ZEPHYR_OK) {
                fill(static_cast<uint8_t *>(buf), nbytes, data, size);
            }
        }
        if (et_zephyr_run(&model) == ET_ZEPHYR_OK) {
            const size_t n_out = et_zephyr_num_outputs(&model);
            for (size_t i = 0; i < n_out; ++i) {
                et_zephyr_tensor_info info{};
                if (et_zephyr_output_info(&model, i, &info) == ET_ZEPHYR_OK) {
                    use_info(info);
                }
            }
        }
        (void)et_zephyr_method_arena_used(&model);
        et_zephyr_deinit(&model);
    }
    std::free(pte);
    return 0;
}
