# SPDX-License-Identifier: Apache-2.0
#
# Included by Zephyr before Kconfig runs (module.yml: module_ext_root).
#
# Debian's arm-none-eabi-gcc (ZEPHYR_TOOLCHAIN_VARIANT=gnuarmemb) ships
# picolibc, but Zephyr's gnuarmemb toolchain file only announces newlib,
# whose missing retargetable locking breaks C++ builds. Announce picolibc
# when its specs file is there, so that it becomes the default C library.
# (zephyr/Kconfig enables thread-local storage for this toolchain: picolibc's
# errno needs it.)

if(NOT DEFINED TOOLCHAIN_HAS_PICOLIBC)
  set(_et_zephyr_variant "${ZEPHYR_TOOLCHAIN_VARIANT}")
  if(NOT _et_zephyr_variant)
    set(_et_zephyr_variant "$ENV{ZEPHYR_TOOLCHAIN_VARIANT}")
  endif()
  set(_et_zephyr_gnuarmemb "${GNUARMEMB_TOOLCHAIN_PATH}")
  if(NOT _et_zephyr_gnuarmemb)
    set(_et_zephyr_gnuarmemb "$ENV{GNUARMEMB_TOOLCHAIN_PATH}")
  endif()
  if(_et_zephyr_variant STREQUAL "gnuarmemb"
     AND EXISTS "${_et_zephyr_gnuarmemb}/lib/picolibc/arm-none-eabi/picolibc.specs")
    set(TOOLCHAIN_HAS_PICOLIBC ON CACHE BOOL "True if toolchain supports picolibc")
    message(STATUS "et-zephyr: ${_et_zephyr_gnuarmemb} has picolibc: TOOLCHAIN_HAS_PICOLIBC=ON")
  endif()
endif()
