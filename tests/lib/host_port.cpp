/*
 * SPDX-License-Identifier: Apache-2.0
 */

/* Host implementation of lib/'s port hooks: a steady clock and a log that
 * tests can inspect. */

#include "host_port.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "et_zephyr_port.h"

namespace {
std::string g_log;
} // namespace

extern "C" uint64_t et_zephyr_port_cycles(void) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

extern "C" void et_zephyr_port_vlog(int level, const char *fmt, va_list args) {
    char line[512];
    std::vsnprintf(line, sizeof(line), fmt, args);
    static const char kLevels[] = "?EWID";
    const char tag = (level >= 1 && level <= 4) ? kLevels[level] : '?';
    std::fprintf(stderr, "[et_zephyr %c] %s\n", tag, line);
    g_log += line;
    g_log += '\n';
}

extern "C" void host_log_clear(void) {
    g_log.clear();
}

extern "C" int host_log_contains(const char *text) {
    return g_log.find(text) != std::string::npos ? 1 : 0;
}

extern "C" const char *host_log_text(void) {
    return g_log.c_str();
}
