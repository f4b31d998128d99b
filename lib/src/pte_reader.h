/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * A bounds-checked reader for the few fields of an ExecuTorch program
 * flatbuffer (schema/program.fbs) that lib/ reports on: method names and the
 * operators a method calls. It reads the buffer in place and never trusts an
 * offset it has not checked, so it is safe on truncated or corrupt data.
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

/** A method (execution plan) of a program. */
class MethodView {
  public:
    MethodView() = default;
    bool valid() const { return buf_ != nullptr; }
    /** Number of entries in the method's operator table, or -1 if malformed. */
    long num_operators() const;
    /** Operator @p index; false if out of range or malformed. */
    bool operator_at(size_t index, OperatorName *out) const;

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
