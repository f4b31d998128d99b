/*
 * SPDX-License-Identifier: Apache-2.0
 */

/* Port hooks of lib/ for the fuzz and soak harnesses: a steady clock and a
 * log that formats every message (so its arguments are exercised under the
 * sanitizers) but prints nothing unless ET_ZEPHYR_FUZZ_LOG is set. */

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include "et_zephyr_port.h"

namespace {
bool verbose() {
    static const bool on = std::getenv("ET_ZEPHYR_FUZZ_LOG") != nullptr;
    return on;
}
} // namespace

extern "C" uint64_t et_zephyr_port_cycles(void) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

extern "C" void et_zephyr_port_vlog(int level, const char *fmt, va_list args) {
    char line[512];
    std::vsnprintf(line, sizeof(line), fmt, args);
    if (verbose()) {
        std::fprintf(stderr, "[et_zephyr %d] %s\n", level, line);
    }
}

namespace {
/* The runtime's own log (ExecuTorch's PAL): replaced in the wheel's runtime so
 * that millions of rejected programs do not each print a line. */
void runtime_log(et_timestamp_t /*timestamp*/, et_pal_log_level_t level, const char *filename,
                 const char * /*function*/, size_t line, const char *message, size_t length) {
    if (verbose()) {
        std::fprintf(stderr, "[executorch %c] %s:%lu %.*s\n", static_cast<char>(level), filename,
                     static_cast<unsigned long>(line), static_cast<int>(length), message);
    }
}

} // namespace

extern "C" void et_zephyr_fuzz_quiet_runtime(void) {
    /* The wheel registers its own PAL when the runtime initializes: initialize
     * it first (lib/ does so again, harmlessly), then replace the log. */
    executorch::runtime::runtime_init();
    executorch::runtime::register_pal(executorch::runtime::PalImpl::create(runtime_log, __FILE__));
}
