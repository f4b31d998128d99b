/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Validation of a method's memory plan before the runtime loads it: a program
 * that passes the flatbuffer verifier can still place tensors outside its
 * planned buffers, describe sizes that wrap in 32-bit arithmetic or give a
 * CMSIS-NN kernel less scratch than it writes. Each check returns its own
 * ::et_zephyr_status and logs one line naming the value.
 */

#ifndef ET_ZEPHYR_PLAN_VALIDATION_H_
#define ET_ZEPHYR_PLAN_VALIDATION_H_

#include <cstddef>

#include <et_zephyr/et_zephyr.h>

#include "pte_reader.h"

namespace et_zephyr {

/**
 * Check every tensor value of @p method: a known dtype, no negative dimension,
 * a byte size below 4 GiB, and, when planned, a memory id of one of the
 * @p num_buffers planned buffers (@p buffer_sizes, memory id 1 first) with the
 * tensor inside it. @p thorough (verification on, in a build with
 * ET_ENABLE_PROGRAM_VERIFICATION) also checks dim orders and the scratch
 * tensors of CMSIS-NN operators against CMSIS-NN's own requirement for the
 * operator's shape on this build's ISA tier.
 */
int validate_plan(const pte::MethodView &method, const size_t *buffer_sizes, size_t num_buffers,
                  bool thorough);

/** Check the method's inputs and outputs against what @p cfg says about them. */
int validate_io(const pte::MethodView &method, const et_zephyr_config &cfg);

} // namespace et_zephyr

#endif /* ET_ZEPHYR_PLAN_VALIDATION_H_ */
