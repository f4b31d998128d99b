/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * lib/'s one reader of the .pte besides the runtime: a bounds-checked reader
 * of the ExecuTorch program flatbuffer (schema/program.fbs) for what lib/
 * reports on and validates before the runtime loads a method: method names,
 * the operators and kernel calls, the values (tensors with their memory plan,
 * ints and int lists), inputs and outputs. It reads the buffer in place and
 * never trusts an offset it has not checked, so it is safe on truncated or
 * corrupt data. ExecuTorch's generated accessors (program_generated.h) would
 * do the reading, but the executorch wheel the host tests build against ships
 * neither them nor flatbuffers' headers.
 */

#ifndef ET_ZEPHYR_PTE_READER_H_
#define ET_ZEPHYR_PTE_READER_H_

#include <cstddef>
#include <cstdint>

namespace et_zephyr {
namespace pte {

/** An operator of a method: "name" and "overload" (NUL-terminated, inside the buffer). */
struct OperatorName {
    const char *name;
    const char *overload;
};

/** A tensor value: its dtype, shape and where the memory plan puts it. */
struct TensorView {
    /** ExecuTorch ScalarType code. */
    int32_t scalar_type;
    /** Entries of the sizes and dim order vectors. */
    size_t rank;
    size_t dim_order_len;
    /** True when the tensor has allocation info (memory id >= 1, offset in that buffer). */
    bool planned;
    uint32_t memory_id;
    uint64_t offset;
    /* Positions of the sizes and dim order vectors in the buffer. */
    size_t sizes_pos;
    size_t dim_order_pos;
};

/** A kernel call: operator table index and argument value indices. */
struct KernelCallView {
    int32_t op_index;
    size_t num_args;
    size_t args_pos;
};

/** A method (execution plan) of a program. Counts are -1 when malformed. */
class MethodView {
  public:
    MethodView() = default;
    bool valid() const { return buf_ != nullptr; }
    /** Number of entries in the method's operator table, or -1 if malformed. */
    long num_operators() const;
    /** Operator @p index; false if out of range or malformed. */
    bool operator_at(size_t index, OperatorName *out) const;

    long num_values() const;
    /** Value @p index as a tensor; false if it is not a (readable) tensor. */
    bool tensor(size_t index, TensorView *out) const;
    /** Dimension @p d of @p t; false if malformed. */
    bool tensor_size(const TensorView &t, size_t d, int32_t *out) const;
    /** Dim order entry @p d of @p t; false if malformed. */
    bool tensor_dim_order(const TensorView &t, size_t d, uint8_t *out) const;
    /** Value @p index as an Int; false if it is not one. */
    bool int_value(size_t index, int64_t *out) const;
    /** Item @p k (a value index) of value @p index as an IntList; false if it is not one or
     * too short. */
    bool int_list_at(size_t index, size_t k, int64_t *out) const;

    /** Planned buffer sizes (non_const_buffer_sizes; entry 0 is memory id 0, unplanned). */
    long num_buffer_sizes() const;
    bool buffer_size(size_t i, int64_t *out) const;

    /** Method inputs and outputs: value indices. */
    long num_inputs() const;
    bool input(size_t i, int32_t *value_index) const;
    long num_outputs() const;
    bool output(size_t i, int32_t *value_index) const;

    /** Chains and their instructions; kernel_call() is false for other instructions. */
    long num_chains() const;
    long num_instructions(size_t chain) const;
    bool kernel_call(size_t chain, size_t instruction, KernelCallView *out) const;
    bool kernel_arg(const KernelCallView &call, size_t k, int32_t *value_index) const;

  private:
    friend class ProgramView;
    MethodView(const uint8_t *buf, size_t size, size_t table)
        : buf_(buf), size_(size), table_(table) {}
    const uint8_t *buf_ = nullptr;
    size_t size_ = 0;
    size_t table_ = 0;
};

/** The root of a program. */
class ProgramView {
  public:
    /** @p size is the number of readable bytes at @p buf. */
    ProgramView(const void *buf, size_t size);
    /** True if the buffer carries the "ET12" identifier and a readable root table. */
    bool valid() const { return root_ != 0; }
    /** Number of methods, or -1 if malformed. */
    long num_methods() const;
    /** Name of method @p index (NUL-terminated) or nullptr. */
    const char *method_name(size_t index) const;
    /** The method called @p name; invalid view if absent or malformed. */
    MethodView method(const char *name) const;

  private:
    const uint8_t *buf_;
    size_t size_;
    size_t root_ = 0;
};

/**
 * Write "name.overload" (or "name" when the overload is empty) into @p out,
 * truncating to @p out_size - 1 characters. Returns @p out.
 */
char *format_operator(const OperatorName &op, char *out, size_t out_size);

} // namespace pte
} // namespace et_zephyr

#endif /* ET_ZEPHYR_PTE_READER_H_ */
