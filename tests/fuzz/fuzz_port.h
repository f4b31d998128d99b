/*
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef ET_ZEPHYR_TESTS_FUZZ_PORT_H_
#define ET_ZEPHYR_TESTS_FUZZ_PORT_H_

#ifdef __cplusplus
extern "C" {
#endif

/** Initialize the runtime and silence its log (ET_ZEPHYR_FUZZ_LOG=1 shows it). */
void et_zephyr_fuzz_quiet_runtime(void);

#ifdef __cplusplus
}
#endif

#endif /* ET_ZEPHYR_TESTS_FUZZ_PORT_H_ */
