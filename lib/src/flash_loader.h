/*
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef ET_ZEPHYR_FLASH_LOADER_H_
#define ET_ZEPHYR_FLASH_LOADER_H_

#include <cstddef>
#include <cstdint>

#include <executorch/runtime/core/data_loader.h>

namespace et_zephyr {

/* Serves the .pte in place (from flash): loads are views, never copies. */
class FlashLoader final : public ::executorch::runtime::DataLoader {
  public:
    FlashLoader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    ::executorch::runtime::Result<::executorch::runtime::FreeableBuffer>
    load(size_t offset, size_t size, const SegmentInfo &segment_info) const override;

    ::executorch::runtime::Result<size_t> size() const override { return size_; }

  private:
    const uint8_t *data_;
    size_t size_;
};

} // namespace et_zephyr

#endif /* ET_ZEPHYR_FLASH_LOADER_H_ */
