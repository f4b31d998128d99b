/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Platform-neutral implementation of the et-zephyr C API on top of the
 * ExecuTorch runtime. No exceptions, no RTTI, no heap: every object lives in
 * the caller's et_zephyr_model storage or in the caller's arenas.
 */

#include <et_zephyr/et_zephyr.h>

#include <cstdarg>
#include <cstring>
#include <new>
#include <utility>

#include <executorch/runtime/core/data_loader.h>
#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/kernel/operator_registry.h>
#include <executorch/runtime/platform/runtime.h>

#include "et_zephyr_port.h"
#include "pte_reader.h"

namespace {

namespace et = ::executorch::runtime;
namespace aten = ::executorch::aten;

constexpr uint32_t kMagic = 0x45545a50; // "ETZP"
constexpr const char *kDefaultMethod = "forward";
constexpr size_t kOpNameMax = 128;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void emit(int level, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    et_zephyr_port_vlog(level, fmt, args);
    va_end(args);
}

#define ETZ_ERR(...) emit(ET_ZEPHYR_LOG_ERROR, __VA_ARGS__)
#define ETZ_INF(...) emit(ET_ZEPHYR_LOG_INFO, __VA_ARGS__)

constexpr size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

/* Serves the .pte in place (from flash): loads are views, never copies. */
class FlashLoader final : public et::DataLoader {
  public:
    FlashLoader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    et::Result<et::FreeableBuffer> load(size_t offset, size_t size,
                                        const SegmentInfo & /*segment_info*/) const override {
        if (offset > size_ || size > size_ - offset) {
            ETZ_ERR("pte: read of %lu bytes at offset %lu is beyond its %lu bytes (truncated?)",
                    static_cast<unsigned long>(size), static_cast<unsigned long>(offset),
                    static_cast<unsigned long>(size_));
            return et::Error::InvalidProgram;
        }
        return et::FreeableBuffer(data_ + offset, size, nullptr);
    }

    et::Result<size_t> size() const override { return size_; }

  private:
    const uint8_t *data_;
    size_t size_;
};

/* A bump allocator that remembers the first request it could not serve. */
class TrackingAllocator final : public et::MemoryAllocator {
  public:
    TrackingAllocator(uint32_t size, uint8_t *base) : et::MemoryAllocator(size, base) {}

    void *allocate(size_t size, size_t alignment = kDefaultAlignment) override {
        void *p = et::MemoryAllocator::allocate(size, alignment);
        if (p == nullptr && !failed_) {
            failed_ = true;
            used_at_failure_ = used_size();
            failed_request_ = size;
            failed_alignment_ = alignment;
        }
        return p;
    }

    void clear_failure() { failed_ = false; }
    bool failed() const { return failed_; }
    /* Least capacity that would have served the failed request. */
    size_t least_needed() const {
        return round_up(used_at_failure_, failed_alignment_) + failed_request_;
    }
    size_t failed_request() const { return failed_request_; }

  private:
    bool failed_ = false;
    size_t used_at_failure_ = 0;
    size_t failed_request_ = 0;
    size_t failed_alignment_ = 1;
};

/* Storage for an object constructed later (no default constructor, no heap). */
template <typename T> class Slot {
  public:
    template <typename... Args> T *emplace(Args &&...args) {
        ptr_ = new (storage_) T(std::forward<Args>(args)...);
        return ptr_;
    }
    void destroy() {
        if (ptr_ != nullptr) {
            ptr_->~T();
            ptr_ = nullptr;
        }
    }
    T *get() const { return ptr_; }

  private:
    alignas(T) unsigned char storage_[sizeof(T)];
    T *ptr_ = nullptr;
};

struct Model {
    uint32_t magic;
    uint32_t num_inputs;
    uint32_t num_outputs;
    uint32_t inputs_set;
    uint64_t last_cycles;
    const et_zephyr_quant *input_quant;
    size_t num_input_quant;
    const et_zephyr_quant *output_quant;
    size_t num_output_quant;
    Slot<FlashLoader> loader;
    Slot<et::Program> program;
    Slot<TrackingAllocator> method_alloc;
    Slot<TrackingAllocator> temp_alloc;
    et::Span<uint8_t> planned_spans[ET_ZEPHYR_MAX_PLANNED_BUFFERS];
    Slot<et::HierarchicalAllocator> planned;
    Slot<et::MemoryManager> memory;
    Slot<et::Method> method;

    void destroy() {
        method.destroy();
        memory.destroy();
        planned.destroy();
        temp_alloc.destroy();
        method_alloc.destroy();
        program.destroy();
        loader.destroy();
        magic = 0;
    }
};

static_assert(sizeof(Model) <= sizeof(et_zephyr_model),
              "increase ET_ZEPHYR_MODEL_STORAGE_WORDS in et_zephyr.h");
static_assert(alignof(Model) <= alignof(et_zephyr_model), "et_zephyr_model is under-aligned");

Model *as_model(et_zephyr_model *m) {
    return reinterpret_cast<Model *>(m);
}

const Model *ready(const et_zephyr_model *m) {
    const Model *model = reinterpret_cast<const Model *>(m);
    if (model == nullptr || model->magic != kMagic || model->method.get() == nullptr) {
        return nullptr;
    }
    return model;
}

void runtime_init_once() {
    static bool done = false;
    if (!done) {
        et::runtime_init();
        done = true;
    }
}

unsigned err_code(et::Error e) {
    return static_cast<unsigned>(e);
}

/* Load the program header and flatbuffer; map failures to a status. */
int load_program(FlashLoader *loader, bool verify, Slot<et::Program> *out) {
    et::Result<et::Program> program =
        et::Program::load(loader, verify ? et::Program::Verification::InternalConsistency
                                         : et::Program::Verification::Minimal);
    if (!program.ok()) {
        ETZ_ERR("pte: the runtime rejected the program (error 0x%x): truncated, corrupt or "
                "not an ExecuTorch program",
                err_code(program.error()));
        return ET_ZEPHYR_ERR_INVALID_PROGRAM;
    }
    out->emplace(std::move(program.get()));
    return ET_ZEPHYR_OK;
}

int check_pte(const void *pte, size_t pte_size) {
    if (pte == nullptr || pte_size == 0) {
        ETZ_ERR("pte: no program given");
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    if (reinterpret_cast<uintptr_t>(pte) % ET_ZEPHYR_ALIGNMENT != 0) {
        ETZ_ERR("pte: program at %p must be aligned to %d bytes", pte, ET_ZEPHYR_ALIGNMENT);
        return ET_ZEPHYR_ERR_PTE_ALIGNMENT;
    }
    et_zephyr::pte::ProgramView view(pte, pte_size);
    if (!view.valid()) {
        ETZ_ERR("pte: %lu bytes without a readable ExecuTorch program (identifier \"ET12\" and "
                "root table): truncated, corrupt or not a .pte",
                static_cast<unsigned long>(pte_size));
        return ET_ZEPHYR_ERR_INVALID_PROGRAM;
    }
    return ET_ZEPHYR_OK;
}

void log_methods(const void *pte, size_t pte_size, const char *wanted) {
    et_zephyr::pte::ProgramView view(pte, pte_size);
    const long n = view.num_methods();
    ETZ_ERR("pte: no method \"%s\"; the program has %ld method(s)", wanted, n < 0 ? 0 : n);
    for (long i = 0; i < n; ++i) {
        const char *name = view.method_name(static_cast<size_t>(i));
        ETZ_ERR("pte:   method \"%s\"", name != nullptr ? name : "?");
    }
}

int read_requirements(const et::Program &program, const void *pte, size_t pte_size,
                      const char *method_name, et_zephyr_requirements *req) {
    et::Result<et::MethodMeta> meta = program.method_meta(method_name);
    if (!meta.ok()) {
        log_methods(pte, pte_size, method_name);
        return ET_ZEPHYR_ERR_METHOD_NOT_FOUND;
    }
    std::memset(req, 0, sizeof(*req));
    const size_t n = meta->num_memory_planned_buffers();
    req->num_planned_buffers = n;
    req->num_inputs = meta->num_inputs();
    req->num_outputs = meta->num_outputs();
    for (size_t i = 0; i < n; ++i) {
        et::Result<int64_t> size = meta->memory_planned_buffer_size(i);
        if (!size.ok() || size.get() < 0) {
            ETZ_ERR("pte: planned buffer %lu of \"%s\" has no valid size",
                    static_cast<unsigned long>(i + 1), method_name);
            return ET_ZEPHYR_ERR_INVALID_PROGRAM;
        }
        const size_t bytes = static_cast<size_t>(size.get());
        if (i < ET_ZEPHYR_MAX_PLANNED_BUFFERS) {
            req->planned_buffer_size[i] = bytes;
        }
        req->planned_arena_size += round_up(bytes, ET_ZEPHYR_ALIGNMENT);
    }
    if (n > ET_ZEPHYR_MAX_PLANNED_BUFFERS) {
        ETZ_ERR("pte: method \"%s\" uses %lu planned buffers; this build supports %d "
                "(define ET_ZEPHYR_MAX_PLANNED_BUFFERS)",
                method_name, static_cast<unsigned long>(n), ET_ZEPHYR_MAX_PLANNED_BUFFERS);
        return ET_ZEPHYR_ERR_TOO_MANY_PLANNED_BUFFERS;
    }
    return ET_ZEPHYR_OK;
}

/* After OperatorMissing: name every operator the registry cannot serve. */
void log_missing_operators(const void *pte, size_t pte_size, const char *method_name) {
    et_zephyr::pte::ProgramView view(pte, pte_size);
    et_zephyr::pte::MethodView method = view.method(method_name);
    const long n = method.num_operators();
    size_t missing = 0;
    for (long i = 0; i < n; ++i) {
        et_zephyr::pte::OperatorName op{};
        char name[kOpNameMax];
        if (!method.operator_at(static_cast<size_t>(i), &op)) {
            continue;
        }
        et_zephyr::pte::format_operator(op, name, sizeof(name));
        if (!et::registry_has_op_function(name)) {
            ETZ_ERR("operator missing: no kernel registered for \"%s\" (add it to the model's "
                    ".ops.yaml and rebuild the kernel registration)",
                    name);
            ++missing;
        }
    }
    if (missing == 0) {
        ETZ_ERR("operator missing: an operator has no kernel for the dtypes this program uses "
                "(see the runtime's \"Missing operator\" line)");
    }
}

/* Fill @p info from a shape; quantization comes from the config. */
int fill_info(aten::ScalarType dtype, size_t rank, const aten::SizesType *sizes, size_t nbytes,
              void *data, const et_zephyr_quant *quant, size_t num_quant, size_t index,
              const char *what, et_zephyr_tensor_info *info) {
    if (rank > ET_ZEPHYR_MAX_DIMS) {
        ETZ_ERR("%s %lu has %lu dimensions; at most %d are supported", what,
                static_cast<unsigned long>(index), static_cast<unsigned long>(rank),
                ET_ZEPHYR_MAX_DIMS);
        return ET_ZEPHYR_ERR_UNSUPPORTED;
    }
    std::memset(info, 0, sizeof(*info));
    info->dtype = static_cast<int32_t>(dtype);
    info->rank = static_cast<uint32_t>(rank);
    size_t numel = 1;
    for (size_t d = 0; d < rank; ++d) {
        info->shape[d] = static_cast<int32_t>(sizes[d]);
        numel *= static_cast<size_t>(sizes[d]);
    }
    info->numel = numel;
    info->nbytes = nbytes;
    info->data = data;
    if (quant != nullptr && index < num_quant) {
        info->quantized = true;
        info->scale = quant[index].scale;
        info->zero_point = quant[index].zero_point;
    }
    return ET_ZEPHYR_OK;
}

/* The method's description of input @p index (a tensor), or an error status. */
int input_meta(const Model *m, size_t index, et::TensorInfo *out) {
    const et::MethodMeta meta = m->method.get()->method_meta();
    et::Result<et::Tag> tag = meta.input_tag(index);
    if (!tag.ok() || tag.get() != et::Tag::Tensor) {
        ETZ_ERR("input %lu is not a tensor", static_cast<unsigned long>(index));
        return ET_ZEPHYR_ERR_UNSUPPORTED;
    }
    et::Result<et::TensorInfo> info = meta.input_tensor_meta(index);
    if (!info.ok()) {
        ETZ_ERR("input %lu: no tensor metadata (runtime error 0x%x)",
                static_cast<unsigned long>(index), err_code(info.error()));
        return ET_ZEPHYR_ERR_RUNTIME;
    }
    new (out) et::TensorInfo(info.get());
    return ET_ZEPHYR_OK;
}

} // namespace

extern "C" {

const char *et_zephyr_status_str(int status) {
    switch (status) {
    case ET_ZEPHYR_OK:
        return "ET_ZEPHYR_OK";
    case ET_ZEPHYR_ERR_INVALID_ARGUMENT:
        return "ET_ZEPHYR_ERR_INVALID_ARGUMENT";
    case ET_ZEPHYR_ERR_NOT_INITIALIZED:
        return "ET_ZEPHYR_ERR_NOT_INITIALIZED";
    case ET_ZEPHYR_ERR_PTE_ALIGNMENT:
        return "ET_ZEPHYR_ERR_PTE_ALIGNMENT";
    case ET_ZEPHYR_ERR_INVALID_PROGRAM:
        return "ET_ZEPHYR_ERR_INVALID_PROGRAM";
    case ET_ZEPHYR_ERR_METHOD_NOT_FOUND:
        return "ET_ZEPHYR_ERR_METHOD_NOT_FOUND";
    case ET_ZEPHYR_ERR_TOO_MANY_PLANNED_BUFFERS:
        return "ET_ZEPHYR_ERR_TOO_MANY_PLANNED_BUFFERS";
    case ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL:
        return "ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL";
    case ET_ZEPHYR_ERR_METHOD_ARENA_TOO_SMALL:
        return "ET_ZEPHYR_ERR_METHOD_ARENA_TOO_SMALL";
    case ET_ZEPHYR_ERR_TEMP_ARENA_TOO_SMALL:
        return "ET_ZEPHYR_ERR_TEMP_ARENA_TOO_SMALL";
    case ET_ZEPHYR_ERR_OPERATOR_MISSING:
        return "ET_ZEPHYR_ERR_OPERATOR_MISSING";
    case ET_ZEPHYR_ERR_UNSUPPORTED:
        return "ET_ZEPHYR_ERR_UNSUPPORTED";
    case ET_ZEPHYR_ERR_SIZE_MISMATCH:
        return "ET_ZEPHYR_ERR_SIZE_MISMATCH";
    case ET_ZEPHYR_ERR_SHAPE_MISMATCH:
        return "ET_ZEPHYR_ERR_SHAPE_MISMATCH";
    case ET_ZEPHYR_ERR_DTYPE_MISMATCH:
        return "ET_ZEPHYR_ERR_DTYPE_MISMATCH";
    case ET_ZEPHYR_ERR_INPUT_NOT_SET:
        return "ET_ZEPHYR_ERR_INPUT_NOT_SET";
    case ET_ZEPHYR_ERR_EXECUTION:
        return "ET_ZEPHYR_ERR_EXECUTION";
    case ET_ZEPHYR_ERR_RUNTIME:
        return "ET_ZEPHYR_ERR_RUNTIME";
    default:
        return "ET_ZEPHYR_ERR_UNKNOWN";
    }
}

int et_zephyr_get_requirements(const void *pte, size_t pte_size, const char *method_name,
                               struct et_zephyr_requirements *req) {
    if (req == nullptr) {
        ETZ_ERR("requirements: no output structure given");
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    int rc = check_pte(pte, pte_size);
    if (rc != ET_ZEPHYR_OK) {
        return rc;
    }
    runtime_init_once();
    FlashLoader loader(static_cast<const uint8_t *>(pte), pte_size);
    Slot<et::Program> program;
    rc = load_program(&loader, false, &program);
    if (rc == ET_ZEPHYR_OK) {
        rc = read_requirements(*program.get(), pte, pte_size,
                               method_name != nullptr ? method_name : kDefaultMethod, req);
    }
    program.destroy();
    return rc;
}

int et_zephyr_init(struct et_zephyr_model *handle, const struct et_zephyr_config *cfg) {
    if (handle == nullptr || cfg == nullptr) {
        ETZ_ERR("init: model and config are required");
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    Model *m = as_model(handle);
    if (m->magic == kMagic) {
        m->destroy();
    }
    std::memset(static_cast<void *>(handle), 0, sizeof(*handle));
    m = new (handle) Model();

    const char *method_name = cfg->method_name != nullptr ? cfg->method_name : kDefaultMethod;
    int rc = check_pte(cfg->pte, cfg->pte_size);
    if (rc != ET_ZEPHYR_OK) {
        return rc;
    }
    if ((cfg->planned_arena == nullptr && cfg->planned_arena_size != 0) ||
        (cfg->method_arena == nullptr && cfg->method_arena_size != 0) ||
        (cfg->temp_arena == nullptr && cfg->temp_arena_size != 0) ||
        cfg->method_arena_size > UINT32_MAX || cfg->temp_arena_size > UINT32_MAX) {
        ETZ_ERR("init: an arena has a size but no address, or is larger than 4 GiB");
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    runtime_init_once();

    m->magic = kMagic; // destroy() may run from here on
    m->loader.emplace(static_cast<const uint8_t *>(cfg->pte), cfg->pte_size);
    rc = load_program(m->loader.get(), cfg->verify, &m->program);
    et_zephyr_requirements req{};
    if (rc == ET_ZEPHYR_OK) {
        rc = read_requirements(*m->program.get(), cfg->pte, cfg->pte_size, method_name, &req);
    }
    if (rc != ET_ZEPHYR_OK) {
        m->destroy();
        return rc;
    }
    if (req.num_inputs > 32) {
        ETZ_ERR("init: method \"%s\" has %lu inputs; at most 32 are supported", method_name,
                static_cast<unsigned long>(req.num_inputs));
        m->destroy();
        return ET_ZEPHYR_ERR_UNSUPPORTED;
    }

    /* Planned memory: one 16-byte aligned buffer per memory id, in order. */
    uint8_t *base = cfg->planned_arena;
    size_t padding = 0;
    if (base != nullptr) {
        padding = (ET_ZEPHYR_ALIGNMENT - reinterpret_cast<uintptr_t>(base) % ET_ZEPHYR_ALIGNMENT) %
                  ET_ZEPHYR_ALIGNMENT;
    }
    if (req.planned_arena_size + padding > cfg->planned_arena_size) {
        ETZ_ERR("init: planned arena too small: %lu bytes given, %lu bytes needed for %lu "
                "planned buffer(s) of \"%s\" (set CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE=%lu)",
                static_cast<unsigned long>(cfg->planned_arena_size),
                static_cast<unsigned long>(req.planned_arena_size + padding),
                static_cast<unsigned long>(req.num_planned_buffers), method_name,
                static_cast<unsigned long>(req.planned_arena_size + padding));
        m->destroy();
        return ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL;
    }
    uint8_t *cursor = base + padding;
    for (size_t i = 0; i < req.num_planned_buffers; ++i) {
        m->planned_spans[i] = et::Span<uint8_t>(cursor, req.planned_buffer_size[i]);
        cursor += round_up(req.planned_buffer_size[i], ET_ZEPHYR_ALIGNMENT);
    }
    m->planned.emplace(et::Span<et::Span<uint8_t>>(m->planned_spans, req.num_planned_buffers));
    m->method_alloc.emplace(static_cast<uint32_t>(cfg->method_arena_size), cfg->method_arena);
    m->temp_alloc.emplace(static_cast<uint32_t>(cfg->temp_arena_size), cfg->temp_arena);
    m->memory.emplace(m->method_alloc.get(), m->planned.get(), m->temp_alloc.get());

    et::Result<et::Method> method = m->program.get()->load_method(method_name, m->memory.get());
    if (!method.ok()) {
        const et::Error e = method.error();
        if (e == et::Error::MemoryAllocationFailed && m->method_alloc.get()->failed()) {
            ETZ_ERR("init: method arena too small: %lu bytes given, at least %lu bytes needed "
                    "(a %lu-byte allocation failed; the Kconfig fragment from et-export has the "
                    "exact CONFIG_ET_ZEPHYR_METHOD_ARENA_SIZE)",
                    static_cast<unsigned long>(cfg->method_arena_size),
                    static_cast<unsigned long>(m->method_alloc.get()->least_needed()),
                    static_cast<unsigned long>(m->method_alloc.get()->failed_request()));
            rc = ET_ZEPHYR_ERR_METHOD_ARENA_TOO_SMALL;
        } else if (e == et::Error::MemoryAllocationFailed && m->temp_alloc.get()->failed()) {
            ETZ_ERR("init: temp arena too small: %lu bytes given, at least %lu bytes needed",
                    static_cast<unsigned long>(cfg->temp_arena_size),
                    static_cast<unsigned long>(m->temp_alloc.get()->least_needed()));
            rc = ET_ZEPHYR_ERR_TEMP_ARENA_TOO_SMALL;
        } else if (e == et::Error::OperatorMissing) {
            log_missing_operators(cfg->pte, cfg->pte_size, method_name);
            rc = ET_ZEPHYR_ERR_OPERATOR_MISSING;
        } else if (e == et::Error::InvalidProgram) {
            ETZ_ERR("init: method \"%s\" is malformed (error 0x%x): corrupt .pte", method_name,
                    err_code(e));
            rc = ET_ZEPHYR_ERR_INVALID_PROGRAM;
        } else {
            ETZ_ERR("init: loading method \"%s\" failed with runtime error 0x%x", method_name,
                    err_code(e));
            rc = ET_ZEPHYR_ERR_RUNTIME;
        }
        m->destroy();
        return rc;
    }
    m->method.emplace(std::move(method.get()));
    m->num_inputs = static_cast<uint32_t>(req.num_inputs);
    m->num_outputs = static_cast<uint32_t>(req.num_outputs);
    m->input_quant = cfg->input_quant;
    m->num_input_quant = cfg->input_quant != nullptr ? cfg->num_input_quant : 0;
    m->output_quant = cfg->output_quant;
    m->num_output_quant = cfg->output_quant != nullptr ? cfg->num_output_quant : 0;
    ETZ_INF("loaded \"%s\": %lu input(s), %lu output(s); planned %lu B, method arena %lu of "
            "%lu B used",
            method_name, static_cast<unsigned long>(req.num_inputs),
            static_cast<unsigned long>(req.num_outputs),
            static_cast<unsigned long>(req.planned_arena_size),
            static_cast<unsigned long>(m->method_alloc.get()->used_size()),
            static_cast<unsigned long>(cfg->method_arena_size));
    return ET_ZEPHYR_OK;
}

void et_zephyr_deinit(struct et_zephyr_model *handle) {
    if (handle != nullptr && as_model(handle)->magic == kMagic) {
        as_model(handle)->destroy();
    }
}

size_t et_zephyr_num_inputs(const struct et_zephyr_model *handle) {
    const Model *m = ready(handle);
    return m != nullptr ? m->num_inputs : 0;
}

size_t et_zephyr_num_outputs(const struct et_zephyr_model *handle) {
    const Model *m = ready(handle);
    return m != nullptr ? m->num_outputs : 0;
}

int et_zephyr_input_info(const struct et_zephyr_model *handle, size_t index,
                         struct et_zephyr_tensor_info *info) {
    const Model *m = ready(handle);
    if (m == nullptr) {
        ETZ_ERR("input_info: model not initialized");
        return ET_ZEPHYR_ERR_NOT_INITIALIZED;
    }
    if (info == nullptr || index >= m->num_inputs) {
        ETZ_ERR("input_info: input %lu does not exist (%lu inputs)",
                static_cast<unsigned long>(index), static_cast<unsigned long>(m->num_inputs));
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    alignas(et::TensorInfo) unsigned char storage[sizeof(et::TensorInfo)];
    et::TensorInfo *meta = reinterpret_cast<et::TensorInfo *>(storage);
    const int rc = input_meta(m, index, meta);
    if (rc != ET_ZEPHYR_OK) {
        return rc;
    }
    return fill_info(meta->scalar_type(), meta->sizes().size(), meta->sizes().data(),
                     meta->nbytes(), nullptr, m->input_quant, m->num_input_quant, index, "input",
                     info);
}

int et_zephyr_output_info(const struct et_zephyr_model *handle, size_t index,
                          struct et_zephyr_tensor_info *info) {
    const Model *m = ready(handle);
    if (m == nullptr) {
        ETZ_ERR("output_info: model not initialized");
        return ET_ZEPHYR_ERR_NOT_INITIALIZED;
    }
    if (info == nullptr || index >= m->num_outputs) {
        ETZ_ERR("output_info: output %lu does not exist (%lu outputs)",
                static_cast<unsigned long>(index), static_cast<unsigned long>(m->num_outputs));
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    const et::EValue &value = m->method.get()->get_output(index);
    if (!value.isTensor()) {
        ETZ_ERR("output %lu is not a tensor", static_cast<unsigned long>(index));
        return ET_ZEPHYR_ERR_UNSUPPORTED;
    }
    const aten::Tensor &t = value.toTensor();
    return fill_info(t.scalar_type(), static_cast<size_t>(t.dim()), t.sizes().data(), t.nbytes(),
                     t.mutable_data_ptr(), m->output_quant, m->num_output_quant, index, "output",
                     info);
}

int et_zephyr_set_input_tensor(struct et_zephyr_model *handle, size_t index, int32_t dtype,
                               const int32_t *shape, size_t rank, const void *data, size_t nbytes) {
    et_zephyr_tensor_info info;
    int rc = et_zephyr_input_info(handle, index, &info);
    if (rc != ET_ZEPHYR_OK) {
        return rc;
    }
    if (dtype != info.dtype) {
        ETZ_ERR("set_input: input %lu has dtype %ld, %ld given", static_cast<unsigned long>(index),
                static_cast<long>(info.dtype), static_cast<long>(dtype));
        return ET_ZEPHYR_ERR_DTYPE_MISMATCH;
    }
    bool same = rank == info.rank && (rank == 0 || shape != nullptr);
    for (size_t d = 0; same && d < rank; ++d) {
        same = shape[d] == info.shape[d];
    }
    if (!same) {
        char want[64];
        size_t n = 0;
        for (size_t d = 0; d < info.rank && n + 12 < sizeof(want); ++d) {
            unsigned long v = static_cast<unsigned long>(info.shape[d]);
            char digits[12];
            size_t k = 0;
            do {
                digits[k++] = static_cast<char>('0' + v % 10);
                v /= 10;
            } while (v != 0);
            if (d != 0) {
                want[n++] = 'x';
            }
            while (k != 0) {
                want[n++] = digits[--k];
            }
        }
        want[n] = 0;
        ETZ_ERR("set_input: input %lu has shape [%s] (rank %lu); a rank-%lu shape that differs "
                "was given",
                static_cast<unsigned long>(index), want, static_cast<unsigned long>(info.rank),
                static_cast<unsigned long>(rank));
        return ET_ZEPHYR_ERR_SHAPE_MISMATCH;
    }
    return et_zephyr_set_input(handle, index, data, nbytes);
}

int et_zephyr_set_input(struct et_zephyr_model *handle, size_t index, const void *data,
                        size_t nbytes) {
    Model *m = as_model(handle);
    if (ready(handle) == nullptr) {
        ETZ_ERR("set_input: model not initialized");
        return ET_ZEPHYR_ERR_NOT_INITIALIZED;
    }
    if (index >= m->num_inputs || data == nullptr) {
        ETZ_ERR("set_input: input %lu does not exist (%lu inputs) or no data given",
                static_cast<unsigned long>(index), static_cast<unsigned long>(m->num_inputs));
        return ET_ZEPHYR_ERR_INVALID_ARGUMENT;
    }
    et::Method *method = m->method.get();
    alignas(et::TensorInfo) unsigned char storage[sizeof(et::TensorInfo)];
    et::TensorInfo *meta = reinterpret_cast<et::TensorInfo *>(storage);
    const int rc = input_meta(m, index, meta);
    if (rc != ET_ZEPHYR_OK) {
        return rc;
    }
    if (nbytes != meta->nbytes()) {
        ETZ_ERR("set_input: input %lu takes %lu bytes, %lu given",
                static_cast<unsigned long>(index), static_cast<unsigned long>(meta->nbytes()),
                static_cast<unsigned long>(nbytes));
        return ET_ZEPHYR_ERR_SIZE_MISMATCH;
    }
    const size_t rank = meta->sizes().size();
    if (rank > ET_ZEPHYR_MAX_DIMS || meta->dim_order().size() != rank) {
        ETZ_ERR("set_input: input %lu has an unsupported rank %lu",
                static_cast<unsigned long>(index), static_cast<unsigned long>(rank));
        return ET_ZEPHYR_ERR_UNSUPPORTED;
    }
    /* A tensor viewing the caller's data with the input's own shape and dim
     * order (contiguous strides): the runtime copies it into the planned
     * input buffer, or shares it when the input is not memory planned. */
    aten::SizesType sizes[ET_ZEPHYR_MAX_DIMS] = {};
    aten::DimOrderType dim_order[ET_ZEPHYR_MAX_DIMS] = {};
    aten::StridesType strides[ET_ZEPHYR_MAX_DIMS] = {};
    for (size_t d = 0; d < rank; ++d) {
        sizes[d] = meta->sizes()[d];
        dim_order[d] = meta->dim_order()[d];
    }
    aten::StridesType stride = 1;
    for (size_t k = rank; k-- > 0;) {
        const size_t d = dim_order[k];
        if (d >= rank) {
            ETZ_ERR("set_input: input %lu has a malformed dim order",
                    static_cast<unsigned long>(index));
            return ET_ZEPHYR_ERR_INVALID_PROGRAM;
        }
        strides[d] = stride;
        stride *= sizes[d];
    }
    aten::TensorImpl src_impl(meta->scalar_type(), static_cast<ssize_t>(rank), sizes,
                              const_cast<void *>(data), dim_order, strides);
    aten::Tensor src(&src_impl);
    const et::Error e = method->set_input(et::EValue(src), index);
    if (e != et::Error::Ok) {
        ETZ_ERR("set_input: the runtime refused input %lu (error 0x%x)",
                static_cast<unsigned long>(index), err_code(e));
        return ET_ZEPHYR_ERR_RUNTIME;
    }
    m->inputs_set |= 1u << index;
    return ET_ZEPHYR_OK;
}

int et_zephyr_run(struct et_zephyr_model *handle) {
    Model *m = as_model(handle);
    if (ready(handle) == nullptr) {
        ETZ_ERR("run: model not initialized");
        return ET_ZEPHYR_ERR_NOT_INITIALIZED;
    }
    const uint32_t all = m->num_inputs >= 32 ? 0xffffffffu : ((1u << m->num_inputs) - 1u);
    if ((m->inputs_set & all) != all) {
        for (uint32_t i = 0; i < m->num_inputs; ++i) {
            if ((m->inputs_set & (1u << i)) == 0) {
                ETZ_ERR("run: input %lu not set since the last run (planned memory reuses "
                        "input buffers: set every input before every run)",
                        static_cast<unsigned long>(i));
                break;
            }
        }
        return ET_ZEPHYR_ERR_INPUT_NOT_SET;
    }
    m->inputs_set = 0;
    TrackingAllocator *temp = m->temp_alloc.get();
    temp->clear_failure();
    const uint64_t start = et_zephyr_port_cycles();
    const et::Error e = m->method.get()->execute();
    const uint64_t end = et_zephyr_port_cycles();
    if (e != et::Error::Ok) {
        if (temp->failed()) {
            ETZ_ERR("run: temp arena too small: %lu bytes given, a kernel needs at least %lu "
                    "(set CONFIG_ET_ZEPHYR_TEMP_ARENA_SIZE)",
                    static_cast<unsigned long>(temp->size()),
                    static_cast<unsigned long>(temp->least_needed()));
            return ET_ZEPHYR_ERR_TEMP_ARENA_TOO_SMALL;
        }
        ETZ_ERR("run: execution failed (runtime error 0x%x)", err_code(e));
        return ET_ZEPHYR_ERR_EXECUTION;
    }
    m->last_cycles = end - start;
    return ET_ZEPHYR_OK;
}

uint64_t et_zephyr_last_run_cycles(const struct et_zephyr_model *handle) {
    const Model *m = ready(handle);
    return m != nullptr ? m->last_cycles : 0;
}

size_t et_zephyr_method_arena_used(const struct et_zephyr_model *handle) {
    const Model *m = ready(handle);
    return m != nullptr ? m->method_alloc.get()->used_size() : 0;
}

} // extern "C"
