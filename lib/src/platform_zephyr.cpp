/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Zephyr port of lib/: the ExecuTorch platform layer (PAL) and the et-zephyr
 * port hooks. Time comes from the DWT cycle counter (CONFIG_ET_ZEPHYR_CYCLES_DWT)
 * or else the kernel's hardware cycle counter, logs go to Zephyr's logging
 * subsystem, abort is k_panic(), and the PAL allocator refuses every request
 * (there is no heap: memory comes from static arenas).
 */

#include <stdarg.h>
#include <stdint.h>

#include <zephyr/kernel.h>
#include <zephyr/logging/log.h>
#include <zephyr/sys/printk.h>
#include <zephyr/sys/time_units.h>
#include <zephyr/toolchain.h>

#include <executorch/runtime/platform/platform.h>

#include "et_zephyr_port.h"

LOG_MODULE_REGISTER(et_zephyr, CONFIG_ET_ZEPHYR_LOG_LEVEL);

#ifndef CONFIG_ET_ZEPHYR_LOG_LINE_MAX
#define CONFIG_ET_ZEPHYR_LOG_LINE_MAX 160
#endif

#if defined(CONFIG_ET_ZEPHYR_CYCLES_DWT)
#include <zephyr/init.h>

#include <cmsis_core.h>

static bool dwt_cycles;

/* Start the DWT cycle counter; without one (NOCYCCNT) the system timer is used. */
static int dwt_cycle_counter_start(void) {
    DCB->DEMCR |= DCB_DEMCR_TRCENA_Msk;
#if defined(CONFIG_CPU_CORTEX_M7)
    DWT->LAR = 0xC5ACCE55; /* The M7's DWT is write-locked out of reset. */
#endif
    if ((DWT->CTRL & DWT_CTRL_NOCYCCNT_Msk) == 0) {
        DWT->CYCCNT = 0;
        DWT->CTRL |= DWT_CTRL_CYCCNTENA_Msk;
        dwt_cycles = true;
    }
    return 0;
}

SYS_INIT(dwt_cycle_counter_start, APPLICATION, 0);
#endif

/* Extend a free-running 32-bit counter; good for intervals shorter than a wrap. */
static uint64_t extend_counter(uint32_t now) {
    static uint32_t last;
    static uint64_t high;
    if (now < last) {
        high += (uint64_t)1 << 32;
    }
    last = now;
    return high | now;
}

extern "C" uint64_t et_zephyr_port_cycles(void) {
#if defined(CONFIG_ET_ZEPHYR_CYCLES_DWT)
    if (dwt_cycles) {
        return extend_counter(DWT->CYCCNT);
    }
#endif
#if defined(CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER)
    return k_cycle_get_64();
#else
    return extend_counter(k_cycle_get_32());
#endif
}

extern "C" void et_zephyr_port_vlog(int level, const char *fmt, va_list args) {
    char line[CONFIG_ET_ZEPHYR_LOG_LINE_MAX];
    vsnprintk(line, sizeof(line), fmt, args);
    switch (level) {
    case ET_ZEPHYR_LOG_ERROR:
        LOG_ERR("%s", line);
        break;
    case ET_ZEPHYR_LOG_WARNING:
        LOG_WRN("%s", line);
        break;
    case ET_ZEPHYR_LOG_INFO:
        LOG_INF("%s", line);
        break;
    default:
        LOG_DBG("%s", line);
        break;
    }
}

/* ExecuTorch PAL. */

void et_pal_init(void) {}

ET_NORETURN void et_pal_abort(void) {
    LOG_ERR("ExecuTorch runtime aborted");
    k_panic();
    CODE_UNREACHABLE;
}

et_timestamp_t et_pal_current_ticks(void) {
    return et_zephyr_port_cycles();
}

et_tick_ratio_t et_pal_ticks_to_ns_multiplier(void) {
    /* With SysTick as the system timer (Cortex-M's usual one) this rate is
     * the CPU clock, which the DWT counter also ticks at. */
    return {NSEC_PER_SEC, (uint64_t)sys_clock_hw_cycles_per_sec()};
}

void et_pal_emit_log_message(et_timestamp_t timestamp, et_pal_log_level_t level,
                             const char *filename, const char *function, size_t line,
                             const char *message, size_t length) {
    ARG_UNUSED(timestamp);
    ARG_UNUSED(function);
    ARG_UNUSED(length);
    switch (level) {
    case kError:
    case kFatal:
        LOG_ERR("[executorch %s:%u] %s", filename, (unsigned int)line, message);
        break;
    case kInfo:
        LOG_INF("[executorch %s:%u] %s", filename, (unsigned int)line, message);
        break;
    default:
        LOG_DBG("[executorch %s:%u] %s", filename, (unsigned int)line, message);
        break;
    }
}

void *et_pal_allocate(size_t size) {
    ARG_UNUSED(size);
    return nullptr;
}

void et_pal_free(void *ptr) {
    ARG_UNUSED(ptr);
}

#if defined(CONFIG_ET_ZEPHYR_NO_HEAP)
/*
 * No et-zephyr or ExecuTorch object is ever heap allocated, but the deleting
 * destructors of ExecuTorch's classes with virtual destructors reference
 * operator delete, which would link libstdc++'s and with it free() and an
 * allocator. These definitions replace it; reaching one is a bug.
 */
void operator delete(void *ptr) noexcept {
    ARG_UNUSED(ptr);
    k_panic();
    CODE_UNREACHABLE;
}

void operator delete(void *ptr, size_t size) noexcept {
    ARG_UNUSED(ptr);
    ARG_UNUSED(size);
    k_panic();
    CODE_UNREACHABLE;
}
#endif
