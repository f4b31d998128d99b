/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Platform hooks of lib/: the platform-neutral code calls these; the Zephyr
 * port (platform_zephyr.cpp) and the host test harness implement them.
 */

#ifndef ET_ZEPHYR_PORT_H_
#define ET_ZEPHYR_PORT_H_

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum et_zephyr_log_level {
    ET_ZEPHYR_LOG_ERROR = 1,
    ET_ZEPHYR_LOG_WARNING = 2,
    ET_ZEPHYR_LOG_INFO = 3,
    ET_ZEPHYR_LOG_DEBUG = 4,
};

/** Free-running cycle (or tick) counter used to time et_zephyr_run(). */
uint64_t et_zephyr_port_cycles(void);

/** Emit one log line of lib/ (printf-style format, no trailing newline). */
void et_zephyr_port_vlog(int level, const char *fmt, va_list args);

#ifdef __cplusplus
}
#endif

#endif /* ET_ZEPHYR_PORT_H_ */
