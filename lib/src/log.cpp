/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "log.h"

#include <cstdarg>

namespace et_zephyr {

void emit(int level, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    et_zephyr_port_vlog(level, fmt, args);
    va_end(args);
}

} // namespace et_zephyr
