/*
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef ET_ZEPHYR_TESTS_C_API_SMOKE_H_
#define ET_ZEPHYR_TESTS_C_API_SMOKE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int c_api_smoke(const void *pte, size_t pte_size);

#ifdef __cplusplus
}
#endif

#endif /* ET_ZEPHYR_TESTS_C_API_SMOKE_H_ */
