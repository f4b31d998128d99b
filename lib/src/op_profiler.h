/*
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef ET_ZEPHYR_OP_PROFILER_H_
#define ET_ZEPHYR_OP_PROFILER_H_

#if defined(ET_ZEPHYR_PROFILING)

#include <cstddef>
#include <cstdint>

#include <et_zephyr/et_zephyr.h>
#include <executorch/runtime/core/event_tracer.h>

namespace et_zephyr {

namespace et = ::executorch::runtime;
namespace aten = ::executorch::aten;

/*
 * Event tracer that sums cycles per operator. Operator scopes are named after
 * the operator ("ns::op.overload", et-zephyr's registration) or
 * "native_call_op.overload" (ExecuTorch's codegen); the runtime's own events
 * (method, instruction) are ignored.
 */
class OpProfiler final : public et::EventTracer {
  public:
    static constexpr size_t kMaxOps = 32;

    void reset();
    size_t size() const { return n_; }
    const et_zephyr_op_profile &at(size_t i) const { return stats_[i]; }

    void create_event_block(const char * /*name*/) override {}
    et::EventTracerEntry start_profiling(const char *name, et::ChainID chain_id,
                                         et::DebugHandle debug_handle) override;
    void end_profiling(et::EventTracerEntry entry) override;
    et::EventTracerEntry start_profiling_delegate(const char * /*name*/,
                                                  et::DelegateDebugIntId /*index*/) override {
        et::EventTracerEntry entry{};
        entry.event_id = -1;
        return entry;
    }
    void end_profiling_delegate(et::EventTracerEntry /*entry*/, const void * /*metadata*/,
                                size_t /*metadata_len*/) override {}
    void log_profiling_delegate(const char * /*name*/, et::DelegateDebugIntId /*index*/,
                                et_timestamp_t /*start*/, et_timestamp_t /*end*/,
                                const void * /*metadata*/, size_t /*metadata_len*/) override {}
    void track_allocation(et::AllocatorID /*id*/, size_t /*size*/) override {}
    et::AllocatorID track_allocator(const char * /*name*/) override { return 0; }
    et::Result<bool> log_evalue(const et::EValue & /*evalue*/,
                                et::LoggedEValueType /*type*/) override {
        return false;
    }
    et::Result<bool> log_intermediate_output_delegate(const char *, et::DelegateDebugIntId,
                                                      const aten::Tensor &) override {
        return false;
    }
    et::Result<bool> log_intermediate_output_delegate(const char *, et::DelegateDebugIntId,
                                                      const et::ArrayRef<aten::Tensor>) override {
        return false;
    }
    et::Result<bool> log_intermediate_output_delegate(const char *, et::DelegateDebugIntId,
                                                      const int &) override {
        return false;
    }
    et::Result<bool> log_intermediate_output_delegate(const char *, et::DelegateDebugIntId,
                                                      const bool &) override {
        return false;
    }
    et::Result<bool> log_intermediate_output_delegate(const char *, et::DelegateDebugIntId,
                                                      const double &) override {
        return false;
    }
    void set_delegation_intermediate_output_filter(et::EventTracerFilterBase *) override {}

  private:
    int64_t slot(const char *name);

    et_zephyr_op_profile stats_[kMaxOps] = {};
    size_t n_ = 0;
};

} // namespace et_zephyr

#endif /* ET_ZEPHYR_PROFILING */

#endif /* ET_ZEPHYR_OP_PROFILER_H_ */
