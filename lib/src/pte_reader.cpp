/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "pte_reader.h"

#include <cstring>

namespace et_zephyr {
namespace pte {
namespace {

// Field slots in schema/program.fbs (a union takes two: its type, then its value).
constexpr unsigned kProgramExecutionPlan = 1;
constexpr unsigned kPlanName = 0;
constexpr unsigned kPlanValues = 2;
constexpr unsigned kPlanInputs = 3;
constexpr unsigned kPlanOutputs = 4;
constexpr unsigned kPlanChains = 5;
constexpr unsigned kPlanOperators = 6;
constexpr unsigned kPlanBufferSizes = 8;
constexpr unsigned kOperatorName = 0;
constexpr unsigned kOperatorOverload = 1;
constexpr unsigned kEValueType = 0;
constexpr unsigned kEValueVal = 1;
constexpr unsigned kTensorScalarType = 0;
constexpr unsigned kTensorSizes = 2;
constexpr unsigned kTensorDimOrder = 3;
constexpr unsigned kTensorAllocation = 6;
constexpr unsigned kAllocMemoryId = 0;
constexpr unsigned kAllocOffsetLow = 1;
constexpr unsigned kAllocOffsetHigh = 2;
constexpr unsigned kIntVal = 0;
constexpr unsigned kIntListItems = 0;
constexpr unsigned kChainInstructions = 2;
constexpr unsigned kInstructionType = 0;
constexpr unsigned kInstructionArgs = 1;
constexpr unsigned kKernelCallOp = 0;
constexpr unsigned kKernelCallArgs = 1;
// Union members (KernelTypes, InstructionArguments); 0 is NONE.
constexpr uint8_t kTypeInt = 2;
constexpr uint8_t kTypeTensor = 5;
constexpr uint8_t kTypeIntList = 7;
constexpr uint8_t kInstructionKernelCall = 1;

// Offsets are byte positions from the start of the buffer; 0 means "absent"
// (position 0 holds the root offset, so no table, vector or string is there).
class Reader {
  public:
    Reader(const uint8_t *buf, size_t size) : buf_(buf), size_(size) {}

    bool readable(size_t pos, size_t len) const {
        return buf_ != nullptr && pos <= size_ && len <= size_ - pos;
    }

    bool u16(size_t pos, uint16_t *v) const {
        if (!readable(pos, 2)) {
            return false;
        }
        *v = static_cast<uint16_t>(buf_[pos] | (buf_[pos + 1] << 8));
        return true;
    }

    bool u32(size_t pos, uint32_t *v) const {
        if (!readable(pos, 4)) {
            return false;
        }
        *v = static_cast<uint32_t>(buf_[pos]) | (static_cast<uint32_t>(buf_[pos + 1]) << 8) |
             (static_cast<uint32_t>(buf_[pos + 2]) << 16) |
             (static_cast<uint32_t>(buf_[pos + 3]) << 24);
        return true;
    }

    // Position of the object an unsigned offset stored at @p pos points to.
    size_t follow(size_t pos) const {
        uint32_t off = 0;
        if (!u32(pos, &off) || off == 0 || !readable(pos, static_cast<size_t>(off))) {
            return 0;
        }
        return pos + off;
    }

    bool u64(size_t pos, uint64_t *v) const {
        uint32_t lo = 0;
        uint32_t hi = 0;
        if (!u32(pos, &lo) || !u32(pos + 4, &hi)) {
            return false;
        }
        *v = static_cast<uint64_t>(hi) << 32 | lo;
        return true;
    }

    // Position of field @p slot (@p width bytes) of the table at @p table, 0 if
    // absent/malformed.
    size_t field(size_t table, unsigned slot, size_t width = 4) const {
        uint32_t raw = 0;
        if (table == 0 || !u32(table, &raw)) {
            return 0;
        }
        // The vtable lives at table - soffset (signed).
        const int64_t vtable = static_cast<int64_t>(table) - static_cast<int32_t>(raw);
        if (vtable < 0 || static_cast<uint64_t>(vtable) >= size_) {
            return 0;
        }
        const size_t vt = static_cast<size_t>(vtable);
        uint16_t vt_size = 0;
        if (!u16(vt, &vt_size) || !readable(vt, vt_size)) {
            return 0;
        }
        // As the runtime's flatbuffers reads a field: any vtable offset whose bytes are in
        // the buffer, even past the table's declared size (the verifier allows it), so a
        // field the runtime sees is never taken as absent here (tests/fuzz/regressions).
        const size_t entry = 4 + 2 * static_cast<size_t>(slot);
        uint16_t off = 0;
        if (entry + 2 > vt_size || !u16(vt + entry, &off) || off == 0 ||
            !readable(table + off, width)) {
            return 0;
        }
        return table + off;
    }

    // Table/vector/string referenced by field @p slot of @p table.
    size_t field_ref(size_t table, unsigned slot) const {
        const size_t pos = field(table, slot);
        return pos == 0 ? 0 : follow(pos);
    }

    // Scalar fields: the schema's default (0) when absent.
    uint8_t field_u8(size_t table, unsigned slot) const {
        const size_t pos = field(table, slot, 1);
        return pos == 0 ? 0 : buf_[pos];
    }
    uint32_t field_u32(size_t table, unsigned slot) const {
        uint32_t v = 0;
        const size_t pos = field(table, slot);
        return pos != 0 && u32(pos, &v) ? v : 0;
    }

    // Length of the vector at @p vec of @p width-byte elements; -1 if malformed.
    long vector_len(size_t vec, size_t width = 4) const {
        uint32_t len = 0;
        if (vec == 0 || !u32(vec, &len) || len > size_ / width ||
            !readable(vec + 4, static_cast<size_t>(len) * width)) {
            return -1;
        }
        return static_cast<long>(len);
    }

    // Element @p index of a vector of 4-byte ints; false if out of range.
    bool vector_i32(size_t vec, size_t index, int32_t *out) const {
        const long len = vector_len(vec);
        uint32_t v = 0;
        if (len < 0 || index >= static_cast<size_t>(len) || !u32(vec + 4 + 4 * index, &v)) {
            return false;
        }
        *out = static_cast<int32_t>(v);
        return true;
    }

    size_t vector_table(size_t vec, size_t index) const {
        const long len = vector_len(vec);
        if (len < 0 || index >= static_cast<size_t>(len)) {
            return 0;
        }
        return follow(vec + 4 + 4 * index);
    }

    // NUL-terminated characters of the string at @p str, or nullptr.
    const char *string(size_t str) const {
        uint32_t len = 0;
        if (str == 0 || !u32(str, &len) || !readable(str + 4, static_cast<size_t>(len) + 1) ||
            buf_[str + 4 + len] != 0) {
            return nullptr;
        }
        return reinterpret_cast<const char *>(buf_ + str + 4);
    }

  private:
    const uint8_t *buf_;
    size_t size_;
};

} // namespace

ProgramView::ProgramView(const void *buf, size_t size)
    : buf_(static_cast<const uint8_t *>(buf)), size_(size) {
    Reader r(buf_, size_);
    // Root offset, then the 4-character file identifier.
    if (!r.readable(0, 8) || std::memcmp(buf_ + 4, "ET12", 4) != 0) {
        return;
    }
    const size_t root = r.follow(0);
    if (root < 8 || r.field(root, kProgramExecutionPlan) == 0) {
        return;
    }
    root_ = root;
}

long ProgramView::num_methods() const {
    if (!valid()) {
        return -1;
    }
    Reader r(buf_, size_);
    return r.vector_len(r.field_ref(root_, kProgramExecutionPlan));
}

const char *ProgramView::method_name(size_t index) const {
    if (!valid()) {
        return nullptr;
    }
    Reader r(buf_, size_);
    const size_t plan = r.vector_table(r.field_ref(root_, kProgramExecutionPlan), index);
    return r.string(r.field_ref(plan, kPlanName));
}

MethodView ProgramView::method(const char *name) const {
    const long n = num_methods();
    if (name == nullptr) {
        return MethodView();
    }
    Reader r(buf_, size_);
    const size_t plans = r.field_ref(root_, kProgramExecutionPlan);
    for (long i = 0; i < n; ++i) {
        const size_t plan = r.vector_table(plans, static_cast<size_t>(i));
        const char *plan_name = r.string(r.field_ref(plan, kPlanName));
        if (plan_name != nullptr && std::strcmp(plan_name, name) == 0) {
            return MethodView(buf_, size_, plan);
        }
    }
    return MethodView();
}

long MethodView::num_operators() const {
    if (!valid()) {
        return -1;
    }
    Reader r(buf_, size_);
    const size_t ops = r.field_ref(table_, kPlanOperators);
    // A method without kernel calls may omit the table.
    return ops == 0 ? 0 : r.vector_len(ops);
}

bool MethodView::operator_at(size_t index, OperatorName *out) const {
    if (!valid() || out == nullptr) {
        return false;
    }
    Reader r(buf_, size_);
    const size_t op = r.vector_table(r.field_ref(table_, kPlanOperators), index);
    const char *name = r.string(r.field_ref(op, kOperatorName));
    if (name == nullptr) {
        return false;
    }
    const char *overload = r.string(r.field_ref(op, kOperatorOverload));
    out->name = name;
    out->overload = overload != nullptr ? overload : "";
    return true;
}

long MethodView::num_values() const {
    Reader r(buf_, size_);
    return valid() ? r.vector_len(r.field_ref(table_, kPlanValues)) : -1;
}

// The value table of @p index if it holds union member @p type, else 0.
static size_t value_of_type(const Reader &r, size_t plan, size_t index, uint8_t type) {
    const size_t value = r.vector_table(r.field_ref(plan, kPlanValues), index);
    if (value == 0 || r.field_u8(value, kEValueType) != type) {
        return 0;
    }
    return r.field_ref(value, kEValueVal);
}

bool MethodView::tensor(size_t index, TensorView *out) const {
    if (!valid() || out == nullptr) {
        return false;
    }
    Reader r(buf_, size_);
    const size_t t = value_of_type(r, table_, index, kTypeTensor);
    if (t == 0) {
        return false;
    }
    const size_t sizes = r.field_ref(t, kTensorSizes);
    const size_t dim_order = r.field_ref(t, kTensorDimOrder);
    const long rank = sizes == 0 ? 0 : r.vector_len(sizes);
    const long order_len = dim_order == 0 ? 0 : r.vector_len(dim_order, 1);
    if (rank < 0 || order_len < 0) {
        return false;
    }
    *out = TensorView{};
    out->scalar_type = static_cast<int8_t>(r.field_u8(t, kTensorScalarType));
    out->rank = static_cast<size_t>(rank);
    out->dim_order_len = static_cast<size_t>(order_len);
    out->sizes_pos = sizes;
    out->dim_order_pos = dim_order;
    const size_t alloc = r.field_ref(t, kTensorAllocation);
    if (alloc != 0) {
        out->planned = true;
        out->memory_id = r.field_u32(alloc, kAllocMemoryId);
        out->offset = static_cast<uint64_t>(r.field_u32(alloc, kAllocOffsetHigh)) << 32 |
                      r.field_u32(alloc, kAllocOffsetLow);
    }
    return true;
}

bool MethodView::tensor_size(const TensorView &t, size_t d, int32_t *out) const {
    return valid() && d < t.rank && Reader(buf_, size_).vector_i32(t.sizes_pos, d, out);
}

bool MethodView::tensor_dim_order(const TensorView &t, size_t d, uint8_t *out) const {
    if (!valid() || d >= t.dim_order_len ||
        !Reader(buf_, size_).readable(t.dim_order_pos + 4, d + 1)) {
        return false;
    }
    *out = buf_[t.dim_order_pos + 4 + d];
    return true;
}

bool MethodView::int_value(size_t index, int64_t *out) const {
    if (!valid()) {
        return false;
    }
    Reader r(buf_, size_);
    const size_t v = value_of_type(r, table_, index, kTypeInt);
    uint64_t raw = 0;
    const size_t pos = v == 0 ? 0 : r.field(v, kIntVal, 8);
    if (v == 0 || (pos != 0 && !r.u64(pos, &raw))) {
        return false;
    }
    *out = static_cast<int64_t>(raw);
    return true;
}

bool MethodView::int_list_at(size_t index, size_t k, int64_t *out) const {
    if (!valid()) {
        return false;
    }
    Reader r(buf_, size_);
    const size_t list = r.field_ref(value_of_type(r, table_, index, kTypeIntList), kIntListItems);
    const long len = list == 0 ? -1 : r.vector_len(list, 8);
    uint64_t raw = 0;
    if (len < 0 || k >= static_cast<size_t>(len) || !r.u64(list + 4 + 8 * k, &raw)) {
        return false;
    }
    *out = static_cast<int64_t>(raw);
    return true;
}

long MethodView::num_buffer_sizes() const {
    Reader r(buf_, size_);
    const size_t v = valid() ? r.field_ref(table_, kPlanBufferSizes) : 0;
    return v == 0 ? (valid() ? 0 : -1) : r.vector_len(v, 8);
}

bool MethodView::buffer_size(size_t i, int64_t *out) const {
    Reader r(buf_, size_);
    const size_t v = valid() ? r.field_ref(table_, kPlanBufferSizes) : 0;
    const long n = v == 0 ? -1 : r.vector_len(v, 8);
    uint64_t raw = 0;
    if (n < 0 || i >= static_cast<size_t>(n) || !r.u64(v + 4 + 8 * i, &raw)) {
        return false;
    }
    *out = static_cast<int64_t>(raw);
    return true;
}

long MethodView::num_inputs() const {
    Reader r(buf_, size_);
    const size_t v = valid() ? r.field_ref(table_, kPlanInputs) : 0;
    return v == 0 ? (valid() ? 0 : -1) : r.vector_len(v);
}

bool MethodView::input(size_t i, int32_t *value_index) const {
    Reader r(buf_, size_);
    return valid() && r.vector_i32(r.field_ref(table_, kPlanInputs), i, value_index);
}

long MethodView::num_outputs() const {
    Reader r(buf_, size_);
    const size_t v = valid() ? r.field_ref(table_, kPlanOutputs) : 0;
    return v == 0 ? (valid() ? 0 : -1) : r.vector_len(v);
}

bool MethodView::output(size_t i, int32_t *value_index) const {
    Reader r(buf_, size_);
    return valid() && r.vector_i32(r.field_ref(table_, kPlanOutputs), i, value_index);
}

long MethodView::num_chains() const {
    Reader r(buf_, size_);
    const size_t v = valid() ? r.field_ref(table_, kPlanChains) : 0;
    return v == 0 ? (valid() ? 0 : -1) : r.vector_len(v);
}

long MethodView::num_instructions(size_t chain) const {
    if (!valid()) {
        return -1;
    }
    Reader r(buf_, size_);
    const size_t c = r.vector_table(r.field_ref(table_, kPlanChains), chain);
    const size_t v = c == 0 ? 0 : r.field_ref(c, kChainInstructions);
    return c == 0 ? -1 : (v == 0 ? 0 : r.vector_len(v));
}

bool MethodView::kernel_call(size_t chain, size_t instruction, KernelCallView *out) const {
    if (!valid() || out == nullptr) {
        return false;
    }
    Reader r(buf_, size_);
    const size_t c = r.vector_table(r.field_ref(table_, kPlanChains), chain);
    const size_t instr =
        c == 0 ? 0 : r.vector_table(r.field_ref(c, kChainInstructions), instruction);
    if (instr == 0 || r.field_u8(instr, kInstructionType) != kInstructionKernelCall) {
        return false;
    }
    const size_t call = r.field_ref(instr, kInstructionArgs);
    const size_t args = call == 0 ? 0 : r.field_ref(call, kKernelCallArgs);
    const long n = args == 0 ? 0 : r.vector_len(args);
    if (call == 0 || n < 0) {
        return false;
    }
    out->op_index = static_cast<int32_t>(r.field_u32(call, kKernelCallOp));
    out->num_args = static_cast<size_t>(n);
    out->args_pos = args;
    return true;
}

bool MethodView::kernel_arg(const KernelCallView &call, size_t k, int32_t *value_index) const {
    return valid() && k < call.num_args &&
           Reader(buf_, size_).vector_i32(call.args_pos, k, value_index);
}

char *format_operator(const OperatorName &op, char *out, size_t out_size) {
    if (out == nullptr || out_size == 0) {
        return out;
    }
    size_t n = 0;
    auto append = [&](const char *s) {
        for (; s != nullptr && *s != 0 && n + 1 < out_size; ++s) {
            out[n++] = *s;
        }
    };
    append(op.name);
    if (op.overload != nullptr && op.overload[0] != 0) {
        append(".");
        append(op.overload);
    }
    out[n] = 0;
    return out;
}

} // namespace pte
} // namespace et_zephyr
