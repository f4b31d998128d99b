#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Host CI of lib/: configure and build tests/lib with CMake, run its ctest
# suite (unit tests against the executorch wheel, and compile-only builds of
# lib/ for cortex-m0plus/m4/m33/m55 with arm-none-eabi-gcc), and check that
# lib/ and tests/lib are clang-format clean.
#
# Usage: tests/lib/run_host_tests.sh [BUILD_DIR]   (default: build/tests-lib)
# Needs: cmake >= 3.20, a C/C++ compiler, python3 with torch + executorch,
#        gcc-arm-none-eabi + picolibc, clang-format.
# Set ET_ZEPHYR_SKIP_CROSS=1 or ET_ZEPHYR_SKIP_FORMAT=1 to skip those parts.
# Exit status: 0 when everything passed.

set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${root}/build/tests-lib}"

if [[ "${ET_ZEPHYR_SKIP_CROSS:-0}" != 1 ]] && ! command -v arm-none-eabi-g++ >/dev/null; then
    echo "run_host_tests: arm-none-eabi-g++ not found (install gcc-arm-none-eabi" \
        "libstdc++-arm-none-eabi-picolibc, or set ET_ZEPHYR_SKIP_CROSS=1)" >&2
    exit 1
fi

generator=()
if command -v ninja >/dev/null; then
    generator=(-G Ninja)
fi
if [[ -f "${build}/CMakeCache.txt" ]]; then
    generator=()
fi

cmake -S "${root}/tests/lib" -B "${build}" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug
cmake --build "${build}"

exclude=()
if [[ "${ET_ZEPHYR_SKIP_CROSS:-0}" == 1 ]]; then
    exclude=(-E '^cross\.')
fi
ctest --test-dir "${build}" --output-on-failure "${exclude[@]}"

if [[ "${ET_ZEPHYR_SKIP_FORMAT:-0}" != 1 ]]; then
    cd "${root}"
    mapfile -t sources < <(find lib tests/lib -name '*.[ch]' -o -name '*.cpp' -o -name '*.hpp' | sort)
    clang-format --dry-run --Werror "${sources[@]}"
    echo "run_host_tests: clang-format clean (${#sources[@]} files)"
fi
echo "run_host_tests: all passed"
