/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Repeated init + run of one program under the sanitizers.
 *
 * Usage: pte_soak PTE RUNS [EXPECTED_INIT_STATUS]
 *
 * RUNS times: et_zephyr_init, every input filled (the same bytes each time),
 * et_zephyr_run, every output read, et_zephyr_deinit. Every init must return
 * EXPECTED_INIT_STATUS (default ET_ZEPHYR_OK, e.g. ET_ZEPHYR_ERR_OPERATOR_MISSING
 * for a Cortex-M program on a host without its kernels); when it is OK every
 * run must succeed and give the same outputs as the first. Prints
 * "pte_soak: N inits, M runs, outputs identical" and exits 0 on success.
 */

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <et_zephyr/et_zephyr.h>

#include "fuzz_port.h"

namespace {

alignas(16) uint8_t g_planned[64 * 1024];
alignas(16) uint8_t g_method[32 * 1024];
alignas(16) uint8_t g_temp[16 * 1024];
et_zephyr_model g_model;

int status_code(const char *name) {
    for (int s = 0; s <= ET_ZEPHYR_ERR_RUNTIME; ++s) {
        if (std::strcmp(et_zephyr_status_str(s), name) == 0) {
            return s;
        }
    }
    std::fprintf(stderr, "pte_soak: unknown status %s\n", name);
    std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
    et_zephyr_fuzz_quiet_runtime();
    if (argc < 3) {
        std::fprintf(stderr, "usage: pte_soak PTE RUNS [EXPECTED_INIT_STATUS]\n");
        return 2;
    }
    std::ifstream f(argv[1], std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
    if (bytes.empty()) {
        std::fprintf(stderr, "pte_soak: cannot read %s\n", argv[1]);
        return 2;
    }
    const long runs = std::strtol(argv[2], nullptr, 10);
    const int expected = argc > 3 ? status_code(argv[3]) : ET_ZEPHYR_OK;
    void *pte = nullptr;
    if (posix_memalign(&pte, ET_ZEPHYR_ALIGNMENT, bytes.size()) != 0) {
        return 2;
    }
    std::memcpy(pte, bytes.data(), bytes.size());

    et_zephyr_config cfg{};
    cfg.pte = pte;
    cfg.pte_size = bytes.size();
    cfg.planned_arena = g_planned;
    cfg.planned_arena_size = sizeof(g_planned);
    cfg.method_arena = g_method;
    cfg.method_arena_size = sizeof(g_method);
    cfg.temp_arena = g_temp;
    cfg.temp_arena_size = sizeof(g_temp);

    std::vector<std::vector<uint8_t>> first;
    long inits = 0;
    long done = 0;
    for (long r = 0; r < runs; ++r) {
        const int rc = et_zephyr_init(&g_model, &cfg);
        if (rc != expected) {
            std::fprintf(stderr, "pte_soak: init %ld returned %s, want %s\n", r,
                         et_zephyr_status_str(rc), et_zephyr_status_str(expected));
            return 1;
        }
        ++inits;
        if (rc != ET_ZEPHYR_OK) {
            continue;
        }
        for (size_t i = 0; i < et_zephyr_num_inputs(&g_model); ++i) {
            void *buf = nullptr;
            size_t n = 0;
            if (et_zephyr_input_buffer(&g_model, i, &buf, &n) != ET_ZEPHYR_OK) {
                std::fprintf(stderr, "pte_soak: input %zu has no buffer\n", i);
                return 1;
            }
            auto *p = static_cast<uint8_t *>(buf);
            for (size_t k = 0; k < n; ++k) {
                /* Small values: valid for float and integer inputs alike. */
                p[k] = static_cast<uint8_t>((k * 7 + i) % 61);
            }
        }
        const int run_rc = et_zephyr_run(&g_model);
        if (run_rc != ET_ZEPHYR_OK) {
            std::fprintf(stderr, "pte_soak: run %ld returned %s\n", r,
                         et_zephyr_status_str(run_rc));
            return 1;
        }
        for (size_t o = 0; o < et_zephyr_num_outputs(&g_model); ++o) {
            et_zephyr_tensor_info info{};
            if (et_zephyr_output_info(&g_model, o, &info) != ET_ZEPHYR_OK) {
                return 1;
            }
            const auto *d = static_cast<const uint8_t *>(info.data);
            std::vector<uint8_t> out(d, d + info.nbytes);
            if (r == 0) {
                first.push_back(out);
            } else if (o >= first.size() || out != first[o]) {
                std::fprintf(stderr, "pte_soak: output %zu of run %ld differs from run 0\n", o, r);
                return 1;
            }
        }
        ++done;
        et_zephyr_deinit(&g_model);
    }
    std::printf("pte_soak: %ld inits (%s), %ld runs, outputs identical\n", inits,
                et_zephyr_status_str(expected), done);
    std::free(pte);
    return 0;
}
