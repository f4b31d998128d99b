/*
 * SPDX-License-Identifier: Apache-2.0
 */

/**
 * @file
 * @brief et-zephyr: run an ExecuTorch program (.pte) from flash in static memory.
 *
 * The C API of the et-zephyr module. It is callable from C and C++; the
 * implementation is C++17 built without exceptions, RTTI or heap.
 *
 * Typical use with the Zephyr module: `et_zephyr_add_model(app PTE kws.pte)` in
 * CMakeLists.txt generates `kws_model.h` with a ready configuration (the .pte in
 * flash, static arenas sized from et-export's kws.conf):
 *
 * @code
 * #include "kws_model.h"
 *
 * static struct et_zephyr_model model;
 *
 * if (et_zephyr_init(&model, &kws_config) != ET_ZEPHYR_OK) { ... }
 * for (;;) {
 *         et_zephyr_set_input(&model, 0, features, sizeof(features));
 *         et_zephyr_run(&model);
 *         struct et_zephyr_tensor_info out;
 *         et_zephyr_output_info(&model, 0, &out);  // out.data, out.shape, out.scale
 * }
 * @endcode
 *
 * A stateful program (`et-export --stateful`: a recurrent or causal convolutional model
 * fed a stream a hop of frames at a time) is used the same way: each et_zephyr_run()
 * continues from the state the last one left, which the runtime keeps in the
 * configuration's ::et_zephyr_state buffers; et_zephyr_reset_state() starts a new stream.
 *
 * Without the generated configuration, fill a struct et_zephyr_config with the
 * .pte (16-byte aligned) and arenas; et_zephyr_get_requirements() gives the
 * planned arena size before initialization.
 *
 * Every function returning `int` returns ::ET_ZEPHYR_OK (0) or a value of
 * ::et_zephyr_status. Every failure also emits one log line saying what was
 * wrong and, where it is known, what was needed (for instance the arena size
 * the model requires).
 */

#ifndef ET_ZEPHYR_ET_ZEPHYR_H_
#define ET_ZEPHYR_ET_ZEPHYR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Highest tensor rank the info structures can describe. */
#define ET_ZEPHYR_MAX_DIMS 8

#ifndef ET_ZEPHYR_MAX_PLANNED_BUFFERS
/** Most memory-planned buffers (memory ids >= 1) a method may use. */
#define ET_ZEPHYR_MAX_PLANNED_BUFFERS 4
#endif

/** Alignment of every planned buffer carved from the planned arena, and of the .pte. */
#define ET_ZEPHYR_ALIGNMENT 16

/** Size, in pointer-sized words, of the opaque model storage. */
#ifndef ET_ZEPHYR_MODEL_STORAGE_WORDS
#define ET_ZEPHYR_MODEL_STORAGE_WORDS 144
#endif

/** Status codes. */
enum et_zephyr_status {
    ET_ZEPHYR_OK = 0,
    /** A NULL pointer, an out-of-range index or an inconsistent argument. */
    ET_ZEPHYR_ERR_INVALID_ARGUMENT = 1,
    /** The model was not initialized (or its initialization failed). */
    ET_ZEPHYR_ERR_NOT_INITIALIZED = 2,
    /** The .pte is not aligned to ::ET_ZEPHYR_ALIGNMENT bytes. */
    ET_ZEPHYR_ERR_PTE_ALIGNMENT = 3,
    /** The .pte is truncated, corrupt or not an ExecuTorch program. */
    ET_ZEPHYR_ERR_INVALID_PROGRAM = 4,
    /** The program has no method of the requested name. */
    ET_ZEPHYR_ERR_METHOD_NOT_FOUND = 5,
    /** The method uses more planned buffers than ::ET_ZEPHYR_MAX_PLANNED_BUFFERS. */
    ET_ZEPHYR_ERR_TOO_MANY_PLANNED_BUFFERS = 6,
    /** The planned-memory arena is smaller than the method's planned buffers. */
    ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL = 7,
    /** The method allocator arena ran out while loading the method. */
    ET_ZEPHYR_ERR_METHOD_ARENA_TOO_SMALL = 8,
    /** A kernel asked the temp arena for more than it holds. */
    ET_ZEPHYR_ERR_TEMP_ARENA_TOO_SMALL = 9,
    /** The program calls an operator no kernel is registered for. */
    ET_ZEPHYR_ERR_OPERATOR_MISSING = 10,
    /** An input or output is not a tensor, or an input is not memory planned. */
    ET_ZEPHYR_ERR_UNSUPPORTED = 11,
    /** The data given for an input has the wrong byte size. */
    ET_ZEPHYR_ERR_SIZE_MISMATCH = 12,
    /** The shape given for an input differs from the method's. */
    ET_ZEPHYR_ERR_SHAPE_MISMATCH = 13,
    /** The dtype given for an input differs from the method's. */
    ET_ZEPHYR_ERR_DTYPE_MISMATCH = 14,
    /** An input was not set since the previous run (planned memory reuses it). */
    ET_ZEPHYR_ERR_INPUT_NOT_SET = 15,
    /** The method failed while executing. */
    ET_ZEPHYR_ERR_EXECUTION = 16,
    /** Any other ExecuTorch runtime error (its code is logged). */
    ET_ZEPHYR_ERR_RUNTIME = 17,
    /** A memory-planned tensor lies (partly) past the end of its planned buffer, or names a
     * memory id the method plans no buffer for (checked at init, verification on or off). */
    ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS = 18,
    /** A tensor's shape and dtype give no valid byte size: unknown dtype, negative dimension,
     * 4 GiB or more (where 32-bit size arithmetic wraps) or, with verification, a dim order
     * that is not a permutation of its dimensions. */
    ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE = 19,
    /** With verification: a CMSIS-NN operator's scratch tensor is smaller than CMSIS-NN's
     * `*_get_buffer_size` for the operator's shapes on this build's ISA tier. */
    ET_ZEPHYR_ERR_SCRATCH_TOO_SMALL = 20,
    /** The method's number of inputs or outputs, or their dtypes, differ from the config's
     * (::et_zephyr_config input/output dtypes, or the number of quantization entries), or
     * a state's input or output differs from its ::et_zephyr_state. */
    ET_ZEPHYR_ERR_IO_MISMATCH = 21,
};

/** Element types; the values are ExecuTorch's ScalarType codes. */
enum et_zephyr_dtype {
    ET_ZEPHYR_DTYPE_UINT8 = 0,
    ET_ZEPHYR_DTYPE_INT8 = 1,
    ET_ZEPHYR_DTYPE_INT16 = 2,
    ET_ZEPHYR_DTYPE_INT32 = 3,
    ET_ZEPHYR_DTYPE_INT64 = 4,
    ET_ZEPHYR_DTYPE_FLOAT16 = 5,
    ET_ZEPHYR_DTYPE_FLOAT32 = 6,
    ET_ZEPHYR_DTYPE_FLOAT64 = 7,
    ET_ZEPHYR_DTYPE_BOOL = 11,
};

/** Quantization parameters of one input or output (from the et-export manifest). */
struct et_zephyr_quant {
    float scale;
    int32_t zero_point;
};

/**
 * One carried state of a stateful program (`et-export --stateful`): where it lives
 * between runs. A run starts from it and leaves the state it ends in there, so that runs
 * continue one stream; et_zephyr_reset_state() starts the stream anew. State k is the
 * method's input (num_inputs + k) and output (num_outputs + k), counted after those
 * et_zephyr_num_inputs() and et_zephyr_num_outputs() give, which the application never
 * sets or reads itself. The generated configuration has one per state, from the manifest.
 */
struct et_zephyr_state {
    /** The state's bytes; the application's memory, kept as long as the model. */
    void *buffer;
    /** Its size: the state input's and output's. */
    size_t nbytes;
    /** Every element's value after a reset: the state of a run from nothing (an int8
     * hidden state's or past frames' zero point, 0 for an int16 cell state). */
    int32_t reset_value;
};

/** Everything et_zephyr_init() needs. Unused members must be zero. */
struct et_zephyr_config {
    /** The program, aligned to ::ET_ZEPHYR_ALIGNMENT; it is executed in place, never copied. */
    const void *pte;
    size_t pte_size;
    /** Method to load; NULL means "forward". */
    const char *method_name;
    /** Arena for the planned buffers, carved per memory id (each rounded up to 16 bytes).
     * Unused when @ref num_planned_buffers is not zero. */
    uint8_t *planned_arena;
    size_t planned_arena_size;
    /** Optional: the application's own buffer for each memory id (index 0 = memory id 1), each
     * aligned to ::ET_ZEPHYR_ALIGNMENT and in the memory region it chose, e.g. the hot
     * activations of `et-export --fast-arena` in DTCM and the rest in SRAM. When given, their
     * number must be the method's number of planned buffers. */
    uint8_t *const *planned_buffers;
    const size_t *planned_buffer_sizes;
    size_t num_planned_buffers;
    /** Arena for the method's runtime structures (values, tensors, kernel table). */
    uint8_t *method_arena;
    size_t method_arena_size;
    /** Arena for kernels' temporary allocations, reset after each kernel; may be NULL/0. */
    uint8_t *temp_arena;
    size_t temp_arena_size;
    /** Run the flatbuffer verifier on the program (needs the runtime built with verification). */
    bool verify;
    /** Optional quantization parameters reported by the info functions (index = input/output).
     * When given, their number must be the method's number of inputs (outputs). */
    const struct et_zephyr_quant *input_quant;
    size_t num_input_quant;
    const struct et_zephyr_quant *output_quant;
    size_t num_output_quant;
    /** Optional ::et_zephyr_dtype of each input (output) the application was built for; when
     * given, the method must have exactly these inputs (outputs). */
    const int32_t *input_dtypes;
    size_t num_input_dtypes;
    const int32_t *output_dtypes;
    size_t num_output_dtypes;
    /** A stateful program's carried states (::et_zephyr_state), reset at init. */
    const struct et_zephyr_state *states;
    size_t num_states;
};

/** Shape, type and location of one input or output tensor. */
struct et_zephyr_tensor_info {
    /** An ::et_zephyr_dtype value (other ScalarType codes are passed through). */
    int32_t dtype;
    /** Number of dimensions used in @ref shape. */
    uint32_t rank;
    int32_t shape[ET_ZEPHYR_MAX_DIMS];
    /** Number of elements and bytes. */
    size_t numel;
    size_t nbytes;
    /** Output data (inside the planned arena, valid after a run); NULL for inputs: use
     * et_zephyr_set_input(). */
    void *data;
    /** True when @ref scale and @ref zero_point come from the config. */
    bool quantized;
    float scale;
    int32_t zero_point;
};

/** Memory a program's method needs, known before initialization. */
struct et_zephyr_requirements {
    /** Number of planned buffers (memory ids >= 1). */
    size_t num_planned_buffers;
    /** Size of each planned buffer. */
    size_t planned_buffer_size[ET_ZEPHYR_MAX_PLANNED_BUFFERS];
    /** Planned arena size needed: the buffers, each rounded up to ::ET_ZEPHYR_ALIGNMENT. */
    size_t planned_arena_size;
    size_t num_inputs;
    size_t num_outputs;
};

/**
 * A loaded model. Treat as opaque; allocate statically (or on a stack that
 * outlives its use). The arenas and the .pte given to et_zephyr_init() must
 * outlive it too.
 */
struct et_zephyr_model {
    union {
        void *words[ET_ZEPHYR_MODEL_STORAGE_WORDS];
        uint64_t align_u64;
        long double align_ld;
    } opaque;
};

/** Cycles spent in one operator (CONFIG_ET_ZEPHYR_PROFILING). */
struct et_zephyr_op_profile {
    /** Operator name, e.g. "cortex_m::quantized_conv2d.out". */
    const char *op;
    /** Kernel calls and their cycles, summed over the runs since init or the last reset. */
    uint32_t calls;
    uint64_t cycles;
};

/** Name of a status code, e.g. "ET_ZEPHYR_ERR_OPERATOR_MISSING". */
const char *et_zephyr_status_str(int status);

/**
 * Read the memory a method of a program needs, without loading it.
 *
 * @param pte Program, aligned to ::ET_ZEPHYR_ALIGNMENT.
 * @param pte_size Its size in bytes.
 * @param method_name Method name; NULL means "forward".
 * @param req Filled on success.
 * @return ::ET_ZEPHYR_OK or an error status.
 */
int et_zephyr_get_requirements(const void *pte, size_t pte_size, const char *method_name,
                               struct et_zephyr_requirements *req);

/**
 * Initialize the ExecuTorch runtime (once) and load a method of a program.
 *
 * Carves the planned arena into one buffer per memory id, validates the memory
 * plan against those buffers (every planned tensor inside its buffer, a valid
 * byte size for every tensor's shape and dtype; with @ref et_zephyr_config.verify
 * also dim orders and CMSIS-NN scratch sizes) and the inputs and outputs
 * against the config, builds the method's structures in the method arena and
 * resolves every operator against the registered kernels. On failure @p model
 * stays uninitialized and the log says what was needed (the planned arena
 * size, the least method arena size, the name of an operator without kernel)
 * or names the offending value: its index, memory id, offset and size, and
 * what its buffer holds.
 *
 * @return ::ET_ZEPHYR_OK or an error status.
 */
int et_zephyr_init(struct et_zephyr_model *model, const struct et_zephyr_config *config);

/** Release a model (no memory is freed: the arenas belong to the caller). */
void et_zephyr_deinit(struct et_zephyr_model *model);

/** Number of inputs of the loaded method the application sets (0 if not initialized):
 * a stateful program's states are not counted. */
size_t et_zephyr_num_inputs(const struct et_zephyr_model *model);

/** Number of outputs of the loaded method the application reads (0 if not initialized):
 * a stateful program's states are not counted. */
size_t et_zephyr_num_outputs(const struct et_zephyr_model *model);

/** Describe input @p index. */
int et_zephyr_input_info(const struct et_zephyr_model *model, size_t index,
                         struct et_zephyr_tensor_info *info);

/** Describe output @p index; its data is valid after et_zephyr_run(). */
int et_zephyr_output_info(const struct et_zephyr_model *model, size_t index,
                          struct et_zephyr_tensor_info *info);

/**
 * Copy @p nbytes of @p data into input @p index.
 *
 * Every input must be set before every run: planned memory reuses the input
 * buffers for intermediate values.
 *
 * @retval ET_ZEPHYR_ERR_SIZE_MISMATCH @p nbytes differs from the input's size.
 */
int et_zephyr_set_input(struct et_zephyr_model *model, size_t index, const void *data,
                        size_t nbytes);

/**
 * Like et_zephyr_set_input(), and first check the dtype and shape the caller
 * believes the input has.
 *
 * @retval ET_ZEPHYR_ERR_DTYPE_MISMATCH @p dtype differs.
 * @retval ET_ZEPHYR_ERR_SHAPE_MISMATCH @p rank or @p shape differ.
 */
int et_zephyr_set_input_tensor(struct et_zephyr_model *model, size_t index, int32_t dtype,
                               const int32_t *shape, size_t rank, const void *data, size_t nbytes);

/**
 * The memory of input @p index itself, to fill in place instead of copying.
 *
 * The buffer is the input's planned memory, laid out in the program's dim order
 * (as et_zephyr_set_input() expects its data); it counts as set for the next run.
 * Fill it after the previous run's outputs are read: planned memory reuses input
 * buffers for intermediate values.
 *
 * @param data Set to the buffer on success.
 * @param nbytes Set to its size on success (may be NULL).
 * @retval ET_ZEPHYR_ERR_UNSUPPORTED the input is not a memory-planned tensor.
 */
int et_zephyr_input_buffer(struct et_zephyr_model *model, size_t index, void **data,
                           size_t *nbytes);

/**
 * Quantize @p count floats to INT8: `zero_point + round(x * (1.0f / scale))`, the float32
 * product rounded to nearest even, saturated to [-128, 127]; NaN gives @p zero_point.
 *
 * For programs exported with `et-export --io int8`, whose inputs are the INT8 tensors
 * themselves (scale and zero point in the manifest, the generated configuration and
 * et_zephyr_input_info()). The same arithmetic on every core, and the host reference's
 * (`et_zephyr.reference.edges.quantize_int8`), so test vectors hold for quantized data.
 */
void et_zephyr_quantize_int8(const float *src, int8_t *dst, size_t count, float scale,
                             int32_t zero_point);

/** Dequantize @p count INT8 values: `(float)(q - zero_point) * scale`, one float32 rounding. */
void et_zephyr_dequantize_int8(const int8_t *src, float *dst, size_t count, float scale,
                               int32_t zero_point);

/**
 * Quantize @p count floats to INT16 as et_zephyr_quantize_int8() does, saturated to
 * [-32767, 32767], the range of `et-export --activations int16`'s activations: for
 * programs exported with `--io int16`, whose inputs are a 16x8 program's INT16 tensors
 * (`et_zephyr.reference.edges.quantize_int16`).
 */
void et_zephyr_quantize_int16(const float *src, int16_t *dst, size_t count, float scale,
                              int32_t zero_point);

/** Dequantize @p count INT16 values: `(float)(q - zero_point) * scale`, one float32 rounding. */
void et_zephyr_dequantize_int16(const int16_t *src, float *dst, size_t count, float scale,
                                int32_t zero_point);

/**
 * Set input @p index from @p count floats: an INT8 input (`--io int8`) is quantized with
 * et_zephyr_quantize_int8() straight into its planned buffer (no other copy), an INT16 one
 * (`--io int16`) with et_zephyr_quantize_int16(), a float32 input is copied. @p data is
 * laid out as for et_zephyr_set_input(): the program's dim order.
 *
 * @retval ET_ZEPHYR_ERR_SIZE_MISMATCH @p count differs from the input's element count.
 * @retval ET_ZEPHYR_ERR_DTYPE_MISMATCH the input is neither float32 nor INT8 or INT16 with
 *         known quantization.
 */
int et_zephyr_set_input_float(struct et_zephyr_model *model, size_t index, const float *data,
                              size_t count);

/**
 * Copy output @p index, after a run, as @p count floats: an INT8 output is dequantized
 * with et_zephyr_dequantize_int8(), an INT16 one with et_zephyr_dequantize_int16(), a
 * float32 output copied.
 *
 * @retval ET_ZEPHYR_ERR_SIZE_MISMATCH @p count differs from the output's element count.
 * @retval ET_ZEPHYR_ERR_DTYPE_MISMATCH the output is neither float32 nor INT8 or INT16 with
 *         known quantization.
 */
int et_zephyr_output_float(const struct et_zephyr_model *model, size_t index, float *dst,
                           size_t count);

/**
 * Execute the method once. A stateful program starts from its states
 * (::et_zephyr_config.states) and, after a successful run, leaves its final states
 * there for the next run; a failed run leaves them as they were.
 *
 * @retval ET_ZEPHYR_ERR_INPUT_NOT_SET an input was not set since the last run.
 * @retval ET_ZEPHYR_ERR_EXECUTION a kernel failed.
 */
int et_zephyr_run(struct et_zephyr_model *model);

/**
 * Start a stateful program's stream anew: every state back to its reset value, as at
 * init; the next run computes what a run of a fresh model would. Nothing to do for a
 * program without states.
 */
int et_zephyr_reset_state(struct et_zephyr_model *model);

/** Cycles (platform ticks) the last successful et_zephyr_run() took. */
uint64_t et_zephyr_last_run_cycles(const struct et_zephyr_model *model);

/** Bytes of the method arena used by the loaded method. */
size_t et_zephyr_method_arena_used(const struct et_zephyr_model *model);

/**
 * Per-operator cycles collected by the ExecuTorch event tracer.
 *
 * Writes up to @p max entries (one per operator, in order of first call) to
 * @p out and their number to @p count. Needs the runtime built with
 * CONFIG_ET_ZEPHYR_PROFILING; one model is profiled at a time.
 *
 * @retval ET_ZEPHYR_ERR_UNSUPPORTED built without profiling.
 */
int et_zephyr_get_op_profile(const struct et_zephyr_model *model, struct et_zephyr_op_profile *out,
                             size_t max, size_t *count);

/** Zero the per-operator counters. */
void et_zephyr_op_profile_reset(struct et_zephyr_model *model);

#ifdef __cplusplus
}
#endif

#endif /* ET_ZEPHYR_ET_ZEPHYR_H_ */
