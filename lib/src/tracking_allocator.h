/*
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef ET_ZEPHYR_TRACKING_ALLOCATOR_H_
#define ET_ZEPHYR_TRACKING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

#include <executorch/runtime/core/memory_allocator.h>

namespace et_zephyr {

/* A bump allocator that remembers the first request it could not serve, so
 * that an arena that is too small is reported with the size it needed. */
class TrackingAllocator final : public ::executorch::runtime::MemoryAllocator {
  public:
    TrackingAllocator(uint32_t size, uint8_t *base)
        : ::executorch::runtime::MemoryAllocator(size, base) {}

    void *allocate(size_t size, size_t alignment = kDefaultAlignment) override;

    void clear_failure() { failed_ = false; }
    bool failed() const { return failed_; }
    /* Least capacity that would have served the failed request. */
    size_t least_needed() const;
    size_t failed_request() const { return failed_request_; }

  private:
    bool failed_ = false;
    size_t used_at_failure_ = 0;
    size_t failed_request_ = 0;
    size_t failed_alignment_ = 1;
};

} // namespace et_zephyr

#endif /* ET_ZEPHYR_TRACKING_ALLOCATOR_H_ */
