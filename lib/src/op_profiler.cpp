/*
 * SPDX-License-Identifier: Apache-2.0
 */

#if defined(ET_ZEPHYR_PROFILING)

#include "op_profiler.h"

#include <cstring>

#include "et_zephyr_port.h"

namespace et_zephyr {

void OpProfiler::reset() {
    for (size_t i = 0; i < n_; ++i) {
        stats_[i].calls = 0;
        stats_[i].cycles = 0;
    }
}

et::EventTracerEntry OpProfiler::start_profiling(const char *name, et::ChainID chain_id,
                                                 et::DebugHandle debug_handle) {
    et::EventTracerEntry entry{};
    entry.event_id = slot(name);
    entry.chain_id = chain_id;
    entry.debug_handle = debug_handle;
    entry.start_time = et_zephyr_port_cycles();
    return entry;
}

void OpProfiler::end_profiling(et::EventTracerEntry entry) {
    if (entry.event_id >= 0 && static_cast<size_t>(entry.event_id) < n_) {
        stats_[entry.event_id].calls++;
        stats_[entry.event_id].cycles += et_zephyr_port_cycles() - entry.start_time;
    }
}

int64_t OpProfiler::slot(const char *name) {
    if (name == nullptr) {
        return -1;
    }
    static const char kPrefix[] = "native_call_";
    if (std::strncmp(name, kPrefix, sizeof(kPrefix) - 1) == 0) {
        name += sizeof(kPrefix) - 1;
    } else if (std::strstr(name, "::") == nullptr || std::strchr(name, '.') == nullptr) {
        return -1;
    }
    for (size_t i = 0; i < n_; ++i) {
        if (stats_[i].op == name || std::strcmp(stats_[i].op, name) == 0) {
            return static_cast<int64_t>(i);
        }
    }
    if (n_ == kMaxOps) {
        return -1;
    }
    stats_[n_] = et_zephyr_op_profile{name, 0, 0};
    return static_cast<int64_t>(n_++);
}

} // namespace et_zephyr

#endif /* ET_ZEPHYR_PROFILING */
