# SPDX-License-Identifier: Apache-2.0
"""C sources for a fake firmware, at the paths real components come from.

Each component gets a known number of bytes, so the test can check that
et-size puts exactly those bytes where they belong.
"""

MODEL_BYTES = 4096
ARENA_BYTES = 3072
# A second planned buffer in another memory region (et-export --fast-arena).
SRAM_ARENA_BYTES = 2048
STACK_BYTES = 1024
REGISTRY_BYTES = 48 * 4
APP_DATA_BYTES = 64 * 4

SOURCES = {
    "app/src/main.c": f"""
        #include <stdint.h>
        extern const uint8_t kws_pte[];
        extern int et_runtime_execute(const uint8_t *program);
        extern int arm_convolve_s8(int);
        extern int cortex_m_quantized_conv2d_out(int);
        extern int cortex_m_quantized_linear_out(int);
        extern int et_register_kernels(void);
        extern uint8_t *et_arenas(void);
        extern uint8_t *stack_base(void);
        int app_table[{APP_DATA_BYTES // 4}] = {{1, 2, 3}};
        __attribute__((used, section(".vectors"))) void reset(void)
        {{
            app_table[1] = et_runtime_execute(kws_pte) + arm_convolve_s8(1) +
                cortex_m_quantized_conv2d_out(2) + cortex_m_quantized_linear_out(3) +
                et_register_kernels() +
                et_arenas()[0] + stack_base()[0];
            for (;;) {{ }}
        }}
    """,
    "build/kws_pte.S": f"""
        .section .rodata.et_zephyr_model,"a"
        .balign 16
        .global kws_pte
    kws_pte:
        .space {MODEL_BYTES}, 0x5a
    """,
    "build/kws_model.c": f"""
        #include <stdint.h>
        static uint8_t kws_planned1_arena[{ARENA_BYTES}] __attribute__((aligned(16)));
        static uint8_t kws_planned2_arena[{SRAM_ARENA_BYTES}] __attribute__((aligned(16), used))
            __attribute__((section("SRAM.kws_planned2_arena")));
        uint8_t *et_arenas(void) {{
            kws_planned2_arena[0] = kws_planned1_arena[1];
            return kws_planned1_arena;
        }}
    """,
    "executorch/runtime/executor/method.cpp": """
        #include <stdint.h>
        extern "C" int et_runtime_execute(const uint8_t *program)
        {
            int sum = 0;
            for (int i = 0; i < 64; ++i) { sum += program[i] * (i + 1); }
            return sum;
        }
    """,
    "executorch/runtime/kernel/operator_registry.cpp": f"""
        int kernel_registry[{REGISTRY_BYTES // 4}];
        extern "C" int et_register_kernels(void)
        {{
            volatile int *slots = kernel_registry;
            slots[3] = 7;
            return slots[3];
        }}
    """,
    "cmsis-nn/Source/ConvolutionFunctions/arm_convolve_s8.c": """
        int arm_convolve_s8(int x) { return x * 3 + 1; }
    """,
    "executorch/backends/cortex_m/ops/op_quantized_conv2d.cpp": """
        extern "C" int arm_convolve_s8(int);
        extern "C" int cortex_m_quantized_conv2d_out(int x) { return arm_convolve_s8(x) + 2; }
    """,
    # Zephyr links a module's object library into the application's archive:
    # the mangled namespace in the section name still says what this is.
    "app/op_quantized_linear.cpp": """
        namespace cortex_m {
        __attribute__((noinline)) int quantized_linear_out(int x) { return x * 5 - 3; }
        }
        extern "C" int cortex_m_quantized_linear_out(int x)
        {
            return cortex_m::quantized_linear_out(x);
        }
    """,
    "zephyr/kernel/init.c": f"""
        #include <stdint.h>
        __attribute__((section(".noinit.init.c.0")))
        uint8_t z_main_stack[{STACK_BYTES}];
        uint8_t *stack_base(void) {{ return z_main_stack; }}
    """,
}
