/*
 * SPDX-License-Identifier: Apache-2.0
 */

#include "flash_loader.h"

#include "log.h"

namespace et_zephyr {

namespace et = ::executorch::runtime;

et::Result<et::FreeableBuffer> FlashLoader::load(size_t offset, size_t size,
                                                 const SegmentInfo & /*segment_info*/) const {
    if (offset > size_ || size > size_ - offset) {
        ETZ_ERR("pte: read of %lu bytes at offset %lu is beyond its %lu bytes (truncated?)",
                static_cast<unsigned long>(size), static_cast<unsigned long>(offset),
                static_cast<unsigned long>(size_));
        return et::Error::InvalidProgram;
    }
    return et::FreeableBuffer(data_ + offset, size, nullptr);
}

} // namespace et_zephyr
