/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "tracking_allocator.h"

#include "log.h"

namespace et_zephyr {

void *TrackingAllocator::allocate(size_t size, size_t alignment) {
    void *p = ::executorch::runtime::MemoryAllocator::allocate(size, alignment);
    if (p == nullptr && !failed_) {
        failed_ = true;
        used_at_failure_ = used_size();
        failed_request_ = size;
        failed_alignment_ = alignment;
    }
    return p;
}

size_t TrackingAllocator::least_needed() const {
    return round_up(used_at_failure_, failed_alignment_) + failed_request_;
}

} // namespace et_zephyr
