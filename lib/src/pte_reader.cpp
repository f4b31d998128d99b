/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "pte_reader.h"

#include <cstring>

namespace et_zephyr {
namespace pte {
namespace {

// Field slots in schema/program.fbs (a union would take two slots; none of
// these tables has one before the fields read here).
constexpr unsigned kProgramExecutionPlan = 1;
constexpr unsigned kPlanName = 0;
constexpr unsigned kPlanOperators = 6;
constexpr unsigned kOperatorName = 0;
constexpr unsigned kOperatorOverload = 1;

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

    // Position of field @p slot of the table at @p table, 0 if absent/malformed.
    size_t field(size_t table, unsigned slot) const {
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
        uint16_t tbl_size = 0;
        if (!u16(vt, &vt_size) || !u16(vt + 2, &tbl_size) || !readable(vt, vt_size) ||
            !readable(table, tbl_size)) {
            return 0;
        }
        const size_t entry = 4 + 2 * static_cast<size_t>(slot);
        uint16_t off = 0;
        if (entry + 2 > vt_size || !u16(vt + entry, &off) || off == 0 || off + 4u > tbl_size) {
            return 0;
        }
        return table + off;
    }

    // Table/vector/string referenced by field @p slot of @p table.
    size_t field_ref(size_t table, unsigned slot) const {
        const size_t pos = field(table, slot);
        return pos == 0 ? 0 : follow(pos);
    }

    // Length of the vector at @p vec whose elements are 4-byte offsets; -1 if malformed.
    long vector_len(size_t vec) const {
        uint32_t len = 0;
        if (vec == 0 || !u32(vec, &len) || !readable(vec + 4, static_cast<size_t>(len) * 4)) {
            return -1;
        }
        return static_cast<long>(len);
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
