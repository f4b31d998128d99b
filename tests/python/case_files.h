/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The files of a test program that reads its cases from cases.bin and writes
 * its results to results.bin in its working directory (the test's temporary
 * folder; under QEMU through semihosting).
 */

#ifndef ET_ZEPHYR_TESTS_CASE_FILES_H_
#define ET_ZEPHYR_TESTS_CASE_FILES_H_

#include <stddef.h>
#include <stdio.h>

/* cases.bin open for reading and results.bin for writing, or false (said on
 * the console). */
inline bool open_case_files(FILE **cases, FILE **results) {
    *cases = fopen("cases.bin", "rb");
    *results = fopen("results.bin", "wb");
    if (*cases == nullptr || *results == nullptr) {
        puts("cannot open cases.bin or results.bin");
        return false;
    }
    return true;
}

/* count values of T from file, or false at its end. */
template <typename T> bool read_values(FILE *file, T *values, size_t count) {
    return fread(values, sizeof(T), count, file) == count;
}

#endif /* ET_ZEPHYR_TESTS_CASE_FILES_H_ */
