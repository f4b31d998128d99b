/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Ends a semihosted test program under QEMU: returning from main() would leave
 * picolibc's crt0 spinning, and QEMU running. A no-op on the host.
 */

#ifndef ET_ZEPHYR_TESTS_SEMIHOSTING_EXIT_H_
#define ET_ZEPHYR_TESTS_SEMIHOSTING_EXIT_H_

#include <stdint.h>

inline void semihosting_exit() {
#if defined(__arm__)
    register uint32_t reason __asm__("r0") = 0x18;    /* SYS_EXIT */
    register uint32_t status __asm__("r1") = 0x20026; /* ADP_Stopped_ApplicationExit */
    __asm__ volatile("bkpt 0xab" : : "r"(reason), "r"(status));
#endif
}

#endif /* ET_ZEPHYR_TESTS_SEMIHOSTING_EXIT_H_ */
