# SPDX-License-Identifier: Apache-2.0
#
# Included after Zephyr's boards/arm/mps2/board.cmake, which sets nothing for
# these variants.

if(CONFIG_BOARD_MPS2_AN386_QEMU OR CONFIG_BOARD_MPS2_AN500_QEMU)
  if(CONFIG_BOARD_MPS2_AN386_QEMU)
    set(QEMU_CPU_TYPE_${ARCH} cortex-m4)
    set(_et_zephyr_machine mps2-an386)
  else()
    set(QEMU_CPU_TYPE_${ARCH} cortex-m7)
    set(_et_zephyr_machine mps2-an500)
  endif()
  set(SUPPORTED_EMU_PLATFORMS qemu)
  set(QEMU_FLAGS_${ARCH}
    -cpu ${QEMU_CPU_TYPE_${ARCH}}
    -machine ${_et_zephyr_machine}
    -nographic
    -vga none
    )
endif()
