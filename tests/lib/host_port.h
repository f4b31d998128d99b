/*
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef ET_ZEPHYR_TESTS_HOST_PORT_H_
#define ET_ZEPHYR_TESTS_HOST_PORT_H_

#ifdef __cplusplus
extern "C" {
#endif

/** Forget the log lines captured so far. */
void host_log_clear(void);
/** 1 if a log line captured since the last clear contains @p text. */
int host_log_contains(const char *text);
/** Everything captured since the last clear. */
const char *host_log_text(void);

#ifdef __cplusplus
}
#endif

#endif /* ET_ZEPHYR_TESTS_HOST_PORT_H_ */
