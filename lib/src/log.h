/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * lib/'s log lines, shared by its parts: one printf-style line per failure,
 * through the platform hook; compiled out (strings and all) with
 * ET_ZEPHYR_LOG_DISABLED.
 */

#ifndef ET_ZEPHYR_LOG_H_
#define ET_ZEPHYR_LOG_H_

#include <cstddef>

#include "et_zephyr_port.h"

namespace et_zephyr {

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void emit(int level, const char *fmt, ...);

/* Logging compiled out: keep the arguments "used", drop the strings. */
template <typename... Args> inline void discard(const Args &...) {}

constexpr size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

} // namespace et_zephyr

#if defined(ET_ZEPHYR_LOG_DISABLED)
#define ETZ_ERR(fmt, ...) ::et_zephyr::discard(__VA_ARGS__)
#define ETZ_INF(fmt, ...) ::et_zephyr::discard(__VA_ARGS__)
#else
#define ETZ_ERR(...) ::et_zephyr::emit(ET_ZEPHYR_LOG_ERROR, __VA_ARGS__)
#define ETZ_INF(...) ::et_zephyr::emit(ET_ZEPHYR_LOG_INFO, __VA_ARGS__)
#endif

#endif /* ET_ZEPHYR_LOG_H_ */
