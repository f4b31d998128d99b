/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * Host tests of lib/ against the ExecuTorch runtime and portable kernels of
 * the executorch wheel.
 *
 * Usage: et_zephyr_tests FIXTURE_DIR TEST_NAME   (ctest runs one test per name)
 */

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <et_zephyr/et_zephyr.h>

#include "c_api_smoke.h"
#include "host_port.h"
#include "pte_reader.h"

namespace {

int g_failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        const int rc_ = (expr);                                                                    \
        if (rc_ != (want)) {                                                                       \
            std::fprintf(stderr, "%s:%d: %s returned %s, want %s\n", __FILE__, __LINE__, #expr,    \
                         et_zephyr_status_str(rc_), et_zephyr_status_str(want));                   \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

#define CHECK_LOG(text)                                                                            \
    do {                                                                                           \
        if (!host_log_contains(text)) {                                                            \
            std::fprintf(stderr, "%s:%d: log lacks \"%s\"; log was:\n%s\n", __FILE__, __LINE__,    \
                         text, host_log_text());                                                   \
            ++g_failures;                                                                          \
        }                                                                                          \
    } while (0)

/* A file's bytes at a 16-byte aligned address (plus room to misalign it). */
class Blob {
  public:
    explicit Blob(const std::string &path) {
        std::ifstream f(path, std::ios::binary);
        bytes_.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        if (bytes_.empty()) {
            std::fprintf(stderr, "cannot read %s\n", path.c_str());
            std::exit(2);
        }
        storage_.resize(bytes_.size() + 64);
        place(0);
    }
    /* Copy the bytes to 16-byte alignment + @p misalign. */
    void place(size_t misalign) {
        uintptr_t p = reinterpret_cast<uintptr_t>(storage_.data());
        p = (p + 15) / 16 * 16 + misalign;
        data_ = reinterpret_cast<uint8_t *>(p);
        std::memcpy(data_, bytes_.data(), bytes_.size());
    }
    uint8_t *data() { return data_; }
    size_t size() const { return bytes_.size(); }

  private:
    std::vector<char> bytes_;
    std::vector<uint8_t> storage_;
    uint8_t *data_ = nullptr;
};

alignas(16) uint8_t g_planned[4096];
alignas(16) uint8_t g_method[16384];
alignas(16) uint8_t g_temp[1024];
et_zephyr_model g_model;

et_zephyr_config config_for(Blob &pte) {
    et_zephyr_config cfg{};
    cfg.pte = pte.data();
    cfg.pte_size = pte.size();
    cfg.planned_arena = g_planned;
    cfg.planned_arena_size = sizeof(g_planned);
    cfg.method_arena = g_method;
    cfg.method_arena_size = sizeof(g_method);
    cfg.temp_arena = g_temp;
    cfg.temp_arena_size = sizeof(g_temp);
    return cfg;
}

float affine_relu(float x) {
    const float y = x * 2.0f + 1.0f;
    return y > 0.0f ? y : 0.0f;
}

void test_init_run(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_requirements req{};
    CHECK_RC(et_zephyr_get_requirements(pte.data(), pte.size(), nullptr, &req), ET_ZEPHYR_OK);
    CHECK(req.num_planned_buffers == 1);
    CHECK(req.planned_buffer_size[0] == 64);
    CHECK(req.planned_arena_size == 64);
    CHECK(req.num_inputs == 1 && req.num_outputs == 1);

    et_zephyr_config cfg = config_for(pte);
    const et_zephyr_quant in_q = {0.5f, -3};
    cfg.input_quant = &in_q;
    cfg.num_input_quant = 1;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    CHECK(et_zephyr_num_inputs(&g_model) == 1);
    CHECK(et_zephyr_num_outputs(&g_model) == 1);
    CHECK(et_zephyr_method_arena_used(&g_model) > 0);

    et_zephyr_tensor_info in{};
    CHECK_RC(et_zephyr_input_info(&g_model, 0, &in), ET_ZEPHYR_OK);
    CHECK(in.dtype == ET_ZEPHYR_DTYPE_FLOAT32);
    CHECK(in.rank == 2 && in.shape[0] == 2 && in.shape[1] == 3);
    CHECK(in.numel == 6 && in.nbytes == 24);
    CHECK(in.quantized && in.scale == 0.5f && in.zero_point == -3);
    CHECK(in.data == nullptr);
    CHECK_RC(et_zephyr_input_info(&g_model, 1, &in), ET_ZEPHYR_ERR_INVALID_ARGUMENT);

    for (int round = 0; round < 3; ++round) {
        float x[6];
        for (int i = 0; i < 6; ++i) {
            x[i] = static_cast<float>(i - 3 + round) * 0.75f;
        }
        CHECK_RC(et_zephyr_set_input(&g_model, 0, x, sizeof(x)), ET_ZEPHYR_OK);
        CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
        et_zephyr_tensor_info out{};
        CHECK_RC(et_zephyr_output_info(&g_model, 0, &out), ET_ZEPHYR_OK);
        CHECK(out.dtype == ET_ZEPHYR_DTYPE_FLOAT32 && out.rank == 2 && out.numel == 6);
        CHECK(!out.quantized);
        CHECK(out.data >= static_cast<void *>(g_planned) &&
              out.data < static_cast<void *>(g_planned + sizeof(g_planned)));
        const float *y = static_cast<const float *>(out.data);
        for (int i = 0; i < 6; ++i) {
            CHECK(y[i] == affine_relu(x[i]));
        }
    }
    CHECK(et_zephyr_last_run_cycles(&g_model) > 0);

    /* Inputs must be set again before every run. */
    host_log_clear();
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
    CHECK_LOG("input 0 not set since the last run");

    /* Host builds have no per-operator profiling: say so. */
    et_zephyr_op_profile prof[4];
    size_t nprof = 99;
    host_log_clear();
    CHECK_RC(et_zephyr_get_op_profile(&g_model, prof, 4, &nprof), ET_ZEPHYR_ERR_UNSUPPORTED);
    CHECK(nprof == 0);
    CHECK_LOG("CONFIG_ET_ZEPHYR_PROFILING");

    et_zephyr_deinit(&g_model);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_NOT_INITIALIZED);
    CHECK(et_zephyr_num_inputs(&g_model) == 0);
}

void test_c_api(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    CHECK(c_api_smoke(pte.data(), pte.size()) == 0);
}

void test_wrong_input(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    float x[6] = {};
    const int32_t good[2] = {2, 3};
    const int32_t transposed[2] = {3, 2};
    const int32_t flat[1] = {6};

    host_log_clear();
    CHECK_RC(et_zephyr_set_input_tensor(&g_model, 0, ET_ZEPHYR_DTYPE_FLOAT32, transposed, 2, x,
                                        sizeof(x)),
             ET_ZEPHYR_ERR_SHAPE_MISMATCH);
    CHECK_LOG("has shape [2x3]");
    CHECK_RC(
        et_zephyr_set_input_tensor(&g_model, 0, ET_ZEPHYR_DTYPE_FLOAT32, flat, 1, x, sizeof(x)),
        ET_ZEPHYR_ERR_SHAPE_MISMATCH);
    CHECK_RC(et_zephyr_set_input_tensor(&g_model, 0, ET_ZEPHYR_DTYPE_INT8, good, 2, x, sizeof(x)),
             ET_ZEPHYR_ERR_DTYPE_MISMATCH);
    host_log_clear();
    CHECK_RC(et_zephyr_set_input(&g_model, 0, x, sizeof(x) - 4), ET_ZEPHYR_ERR_SIZE_MISMATCH);
    CHECK_LOG("takes 24 bytes, 20 given");
    CHECK_RC(et_zephyr_set_input(&g_model, 1, x, sizeof(x)), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    CHECK_RC(et_zephyr_set_input(&g_model, 0, nullptr, sizeof(x)), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    /* None of the refused inputs counts as set. */
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
    CHECK_RC(
        et_zephyr_set_input_tensor(&g_model, 0, ET_ZEPHYR_DTYPE_FLOAT32, good, 2, x, sizeof(x)),
        ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
    et_zephyr_deinit(&g_model);
}

void test_input_buffer(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    void *buffer = nullptr;
    size_t nbytes = 0;
    CHECK_RC(et_zephyr_input_buffer(&g_model, 0, &buffer, &nbytes), ET_ZEPHYR_ERR_NOT_INITIALIZED);
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_input_buffer(&g_model, 1, &buffer, &nbytes), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    CHECK_RC(et_zephyr_input_buffer(&g_model, 0, nullptr, &nbytes), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    /* The input's own planned memory, filled in place: the same result as a copy. */
    for (int round = 0; round < 2; ++round) {
        CHECK_RC(et_zephyr_input_buffer(&g_model, 0, &buffer, &nbytes), ET_ZEPHYR_OK);
        CHECK(nbytes == 24);
        CHECK(buffer >= static_cast<void *>(g_planned) &&
              buffer < static_cast<void *>(g_planned + sizeof(g_planned)));
        float *x = static_cast<float *>(buffer);
        float expected[6];
        for (int i = 0; i < 6; ++i) {
            x[i] = static_cast<float>(2 * i - 5 - round) * 0.625f;
            expected[i] = affine_relu(x[i]);
        }
        CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
        et_zephyr_tensor_info out{};
        CHECK_RC(et_zephyr_output_info(&g_model, 0, &out), ET_ZEPHYR_OK);
        const float *y = static_cast<const float *>(out.data);
        for (int i = 0; i < 6; ++i) {
            CHECK(y[i] == expected[i]);
        }
    }
    /* Taking the buffer counts as setting the input for one run only. */
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
    et_zephyr_deinit(&g_model);
}

void test_planned_arena_too_small(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    cfg.planned_arena_size = 48;
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
    CHECK_LOG("48 bytes given, 64 bytes needed");
    CHECK_LOG("CONFIG_ET_ZEPHYR_PLANNED_ARENA_SIZE=64");
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_NOT_INITIALIZED);

    /* A misaligned arena needs the padding on top. */
    cfg.planned_arena = g_planned + 4;
    cfg.planned_arena_size = 64;
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
    CHECK_LOG("76 bytes needed");
    cfg.planned_arena_size = 76;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    et_zephyr_deinit(&g_model);

    cfg.planned_arena = nullptr;
    cfg.planned_arena_size = 0;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
}

void test_method_arena_too_small(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    /* The exact need, as an integrator would find it: the smallest arena that loads. */
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    const size_t used = et_zephyr_method_arena_used(&g_model);
    et_zephyr_deinit(&g_model);
    cfg.method_arena_size = used;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    et_zephyr_deinit(&g_model);

    for (size_t size : {size_t{0}, size_t{64}, used / 2, used - 1}) {
        cfg.method_arena = size != 0 ? g_method : nullptr;
        cfg.method_arena_size = size;
        host_log_clear();
        CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_METHOD_ARENA_TOO_SMALL);
        char want[64];
        std::snprintf(want, sizeof(want), "method arena too small: %zu bytes given", size);
        CHECK_LOG(want);
        /* The reported least size is a true lower bound and above what was given. */
        const char *at = std::strstr(host_log_text(), "at least ");
        CHECK(at != nullptr);
        if (at != nullptr) {
            const size_t least = std::strtoul(at + 9, nullptr, 10);
            CHECK(least > size && least <= used);
        }
    }
}

void test_invalid_program(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    const size_t full = pte.size();

    /* Truncation anywhere. */
    for (size_t cut : {size_t{1}, size_t{7}, size_t{8}, size_t{16}, size_t{31}, size_t{64},
                       full / 2, full - 16, full - 1}) {
        cfg.pte_size = cut;
        host_log_clear();
        CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_INVALID_PROGRAM);
        CHECK(std::strlen(host_log_text()) > 0);
        et_zephyr_requirements req{};
        CHECK_RC(et_zephyr_get_requirements(pte.data(), cut, nullptr, &req),
                 ET_ZEPHYR_ERR_INVALID_PROGRAM);
    }
    cfg.pte_size = 0;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    cfg.pte_size = full;

    /* Not a program at all. */
    std::vector<uint8_t> text(full + 16);
    uint8_t *aligned =
        reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(text.data()) + 15) / 16 * 16);
    std::memset(aligned, 'x', full);
    cfg.pte = aligned;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_INVALID_PROGRAM);

    /* Wrong identifier. */
    cfg.pte = pte.data();
    pte.data()[4] = 'X';
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_INVALID_PROGRAM);
    CHECK_LOG("ET12");
    pte.place(0);

    /* Root offset pointing outside the file. */
    pte.data()[0] = 0xf0;
    pte.data()[1] = 0xff;
    pte.data()[2] = 0xff;
    pte.data()[3] = 0x7f;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_INVALID_PROGRAM);
    pte.place(0);

    /* Misaligned program. */
    pte.place(4);
    cfg.pte = pte.data();
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_PTE_ALIGNMENT);
    CHECK_LOG("must be aligned to 16 bytes");
    pte.place(0);
    cfg.pte = pte.data();

    /* Unknown method: the log lists the ones there are. */
    cfg.method_name = "backward";
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_METHOD_NOT_FOUND);
    CHECK_LOG("no method \"backward\"");
    CHECK_LOG("method \"forward\"");
    cfg.method_name = nullptr;

    /* The intact program still loads after all that. */
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    et_zephyr_deinit(&g_model);
}

void test_corrupt_bytes(const std::string &dir) {
    /* Every byte of the flatbuffer overwritten in turn, with verification on:
     * each init returns a status (usually an error) and never crashes. */
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    cfg.verify = true;
    size_t refused = 0;
    for (size_t i = 0; i < pte.size(); ++i) {
        pte.place(0);
        pte.data()[i] ^= 0xa5;
        const int rc = et_zephyr_init(&g_model, &cfg);
        if (rc != ET_ZEPHYR_OK) {
            ++refused;
        }
        et_zephyr_deinit(&g_model);
    }
    std::fprintf(stderr, "corrupt_bytes: %zu of %zu corruptions refused\n", refused, pte.size());
    CHECK(refused > pte.size() / 4);
}

void test_missing_operator(const std::string &dir) {
    Blob pte(dir + "/missing_op.pte");
    et_zephyr_config cfg = config_for(pte);
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_OPERATOR_MISSING);
    CHECK_LOG("no kernel registered for \"etz_test::frobnicate.out\"");
    /* aten::add.out is registered: only the missing one is named. */
    CHECK(!host_log_contains("\"aten::add.out\""));
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_NOT_INITIALIZED);
}

void test_pte_reader(const std::string &dir) {
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr::pte::ProgramView view(pte.data(), pte.size());
    CHECK(view.valid());
    CHECK(view.num_methods() == 1);
    CHECK(view.method_name(0) != nullptr && std::strcmp(view.method_name(0), "forward") == 0);
    CHECK(view.method_name(1) == nullptr);
    CHECK(!view.method("backward").valid());
    et_zephyr::pte::MethodView method = view.method("forward");
    CHECK(method.valid());
    CHECK(method.num_operators() == 3);
    const char *want[] = {"aten::mul.out", "aten::add.out", "aten::relu.out"};
    for (size_t i = 0; i < 3; ++i) {
        et_zephyr::pte::OperatorName op{};
        char name[64];
        CHECK(method.operator_at(i, &op));
        CHECK(std::strcmp(et_zephyr::pte::format_operator(op, name, sizeof(name)), want[i]) == 0);
    }
    et_zephyr::pte::OperatorName op{};
    CHECK(!method.operator_at(3, &op));
    char small[6];
    op.name = "aten::mul";
    op.overload = "out";
    CHECK(std::strcmp(et_zephyr::pte::format_operator(op, small, sizeof(small)), "aten:") == 0);

    /* Every prefix is either unreadable or yields in-bounds answers. */
    for (size_t cut = 0; cut < pte.size(); ++cut) {
        et_zephyr::pte::ProgramView v(pte.data(), cut);
        et_zephyr::pte::MethodView mv = v.method("forward");
        const long n = mv.num_operators();
        for (long i = 0; i < n; ++i) {
            et_zephyr::pte::OperatorName o{};
            if (mv.operator_at(static_cast<size_t>(i), &o)) {
                CHECK(reinterpret_cast<const uint8_t *>(o.name) >= pte.data() &&
                      reinterpret_cast<const uint8_t *>(o.name) < pte.data() + cut);
            }
        }
    }
}

/* A hostile program passes the flatbuffer verifier: the plan validation must refuse it,
 * with verification on and off, and name the value in one log line. */
void expect_refused(const std::string &path, bool verify, int want, const char *log) {
    Blob pte(path);
    et_zephyr_config cfg = config_for(pte);
    cfg.verify = verify;
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), want);
    CHECK_LOG(log);
    CHECK(et_zephyr_num_inputs(&g_model) == 0);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_NOT_INITIALIZED);
}

void test_hostile_offset(const std::string &dir) {
    /* The tensor ends 16 bytes past its 64-byte buffer (value, memory id, offset, size). */
    for (bool verify : {false, true}) {
        expect_refused(dir + "/hostile_offset.pte", verify, ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS,
                       "memory id 1, offset 56, 24 bytes: past the end of its planned buffer of "
                       "64 bytes");
    }
    CHECK(std::strcmp(et_zephyr_status_str(ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS),
                      "ET_ZEPHYR_ERR_PLAN_OUT_OF_BOUNDS") == 0);
}

void test_hostile_size(const std::string &dir) {
    for (bool verify : {false, true}) {
        expect_refused(dir + "/hostile_size.pte", verify, ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE,
                       "make more than 4 GiB");
    }
    CHECK(std::strcmp(et_zephyr_status_str(ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE),
                      "ET_ZEPHYR_ERR_PLAN_TENSOR_SIZE") == 0);
}

void test_hostile_io(const std::string &dir) {
    const int32_t float32[] = {ET_ZEPHYR_DTYPE_FLOAT32};
    const int32_t two[] = {ET_ZEPHYR_DTYPE_FLOAT32, ET_ZEPHYR_DTYPE_FLOAT32};
    const et_zephyr_quant q[2] = {{0.5f, 0}, {0.5f, 0}};
    {
        /* The config's dtypes: the genuine program matches, the int8-input one does not. */
        Blob good(dir + "/affine_relu.pte");
        et_zephyr_config cfg = config_for(good);
        cfg.input_dtypes = float32;
        cfg.num_input_dtypes = 1;
        cfg.output_dtypes = float32;
        cfg.num_output_dtypes = 1;
        CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
        et_zephyr_deinit(&g_model);

        Blob bad(dir + "/hostile_io_dtype.pte");
        cfg.pte = bad.data();
        host_log_clear();
        CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_IO_MISMATCH);
        CHECK_LOG("input 0 (value 2) has dtype 1, the config says 6");

        /* Counts: two inputs described, or two quantization entries, for one input. */
        cfg.pte = good.data();
        cfg.input_dtypes = two;
        cfg.num_input_dtypes = 2;
        host_log_clear();
        CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_IO_MISMATCH);
        CHECK_LOG("the method has 1 input(s), the config describes 2");
        cfg.input_dtypes = nullptr;
        cfg.num_input_dtypes = 0;
        cfg.output_quant = q;
        cfg.num_output_quant = 2;
        CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_IO_MISMATCH);
    }
    CHECK(std::strcmp(et_zephyr_status_str(ET_ZEPHYR_ERR_IO_MISMATCH),
                      "ET_ZEPHYR_ERR_IO_MISMATCH") == 0);
}

void test_hostile_scratch(const std::string &dir) {
    /* CMSIS-NN's scalar arm_convolve_s8 needs 2 * 20 * sizeof(int16_t) = 80 bytes for a 3x3
     * kernel over 2 channels; the hostile program plans 40. The host registers no
     * cortex_m kernels: the genuine program passes validation and stops there. */
    Blob good(dir + "/conv.pte");
    et_zephyr_config cfg = config_for(good);
    cfg.verify = true;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_OPERATOR_MISSING);
    expect_refused(dir + "/hostile_scratch.pte", true, ET_ZEPHYR_ERR_SCRATCH_TOO_SMALL,
                   "value 11, scratch of instruction 1 (cortex_m::quantized_conv2d): 40 bytes, "
                   "CMSIS-NN needs 80");
    /* Without verification only the bounds are checked. */
    Blob bad(dir + "/hostile_scratch.pte");
    cfg = config_for(bad);
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_OPERATOR_MISSING);
    CHECK(std::strcmp(et_zephyr_status_str(ET_ZEPHYR_ERR_SCRATCH_TOO_SMALL),
                      "ET_ZEPHYR_ERR_SCRATCH_TOO_SMALL") == 0);
}

float affine_chain(float x) {
    const float y = affine_relu(x);
    return (y * 3.0f - 2.0f) + y;
}

void test_planned_buffers(const std::string &dir) {
    /* Planned in two memory ids (et-export --fast-arena): each gets its own buffer. */
    Blob pte(dir + "/two_buffers.pte");
    et_zephyr_requirements req{};
    CHECK_RC(et_zephyr_get_requirements(pte.data(), pte.size(), nullptr, &req), ET_ZEPHYR_OK);
    CHECK(req.num_planned_buffers == 2);
    CHECK(req.planned_buffer_size[0] > 0 && req.planned_buffer_size[0] <= 40);
    CHECK(req.planned_buffer_size[1] > 0);

    alignas(16) static uint8_t fast[64];
    alignas(16) static uint8_t rest[256];
    uint8_t *const buffers[] = {fast, rest};
    size_t sizes[] = {req.planned_buffer_size[0], sizeof(rest)};
    et_zephyr_config cfg = config_for(pte);
    cfg.planned_arena = nullptr;
    cfg.planned_arena_size = 0;
    cfg.planned_buffers = buffers;
    cfg.planned_buffer_sizes = sizes;
    cfg.num_planned_buffers = 2;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    float x[6] = {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.5f};
    CHECK_RC(et_zephyr_set_input(&g_model, 0, x, sizeof(x)), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
    et_zephyr_tensor_info out{};
    CHECK_RC(et_zephyr_output_info(&g_model, 0, &out), ET_ZEPHYR_OK);
    const float *y = static_cast<const float *>(out.data);
    const uint8_t *where = static_cast<const uint8_t *>(out.data);
    CHECK((where >= fast && where < fast + sizeof(fast)) ||
          (where >= rest && where < rest + sizeof(rest)));
    for (int i = 0; i < 6; ++i) {
        CHECK(y[i] == affine_chain(x[i]));
    }
    et_zephyr_deinit(&g_model);

    /* The same program carved from one arena computes the same. */
    et_zephyr_config carved = config_for(pte);
    CHECK_RC(et_zephyr_init(&g_model, &carved), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_set_input(&g_model, 0, x, sizeof(x)), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_output_info(&g_model, 0, &out), ET_ZEPHYR_OK);
    for (int i = 0; i < 6; ++i) {
        CHECK(static_cast<const float *>(out.data)[i] == affine_chain(x[i]));
    }
    et_zephyr_deinit(&g_model);

    /* Refused: a buffer too small (named by memory id), the wrong count, misalignment. */
    host_log_clear();
    sizes[1] = req.planned_buffer_size[1] - 1;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
    CHECK_LOG("planned buffer of memory id 2 too small");
    sizes[1] = sizeof(rest);
    cfg.num_planned_buffers = 1;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_PLANNED_ARENA_TOO_SMALL);
    CHECK_LOG("1 planned buffer(s) given");
    cfg.num_planned_buffers = 2;
    uint8_t *const misaligned[] = {fast, rest + 4};
    cfg.planned_buffers = misaligned;
    sizes[1] = sizeof(rest) - 4;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
}

void test_float_io_helpers(const std::string &dir) {
    /* A float32 program: set_input_float copies, output_float copies back. */
    Blob pte(dir + "/affine_relu.pte");
    et_zephyr_config cfg = config_for(pte);
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    const float x[6] = {-1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 2.0f};
    CHECK_RC(et_zephyr_set_input_float(&g_model, 0, x, 5), ET_ZEPHYR_ERR_SIZE_MISMATCH);
    CHECK_RC(et_zephyr_set_input_float(&g_model, 0, x, 6), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
    float y[6] = {};
    CHECK_RC(et_zephyr_output_float(&g_model, 0, y, 7), ET_ZEPHYR_ERR_SIZE_MISMATCH);
    CHECK_RC(et_zephyr_output_float(&g_model, 0, y, 6), ET_ZEPHYR_OK);
    for (int i = 0; i < 6; ++i) {
        CHECK(y[i] == affine_relu(x[i]));
    }
    CHECK_RC(et_zephyr_output_float(&g_model, 1, y, 6), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    et_zephyr_deinit(&g_model);

    /* The element-wise conversions: ties to even around the zero point, saturation. */
    const float values[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 1000.0f, -1000.0f};
    int8_t q[7];
    et_zephyr_quantize_int8(values, q, 7, 1.0f, 3);
    const int8_t want[] = {3, 5, 5, 3, 1, 127, -128};
    CHECK(std::memcmp(q, want, sizeof(want)) == 0);
    float back[7];
    et_zephyr_dequantize_int8(q, back, 7, 0.5f, 3);
    CHECK(back[0] == 0.0f && back[1] == 1.0f && back[5] == 62.0f && back[6] == -65.5f);

    /* INT16 (--io int16): the 16x8 range [-32767, 32767], -32768 never written. */
    const float wide[] = {0.5f, 1.5f, -2.5f, 40000.0f, -40000.0f, 1e30f, -1e30f};
    int16_t q16[7];
    et_zephyr_quantize_int16(wide, q16, 7, 1.0f, 0);
    const int16_t want16[] = {0, 2, -2, 32767, -32767, 32767, -32767};
    CHECK(std::memcmp(q16, want16, sizeof(want16)) == 0);
    float back16[7];
    et_zephyr_dequantize_int16(q16, back16, 7, 0.25f, 0);
    CHECK(back16[1] == 0.5f && back16[3] == 8191.75f && back16[4] == -8191.75f);
}

struct Test {
    const char *name;
    void (*fn)(const std::string &);
};

/* A stateful program (accumulator.pte: output 0 = output 1 = x + state): the runtime
 * starts from the reset state, carries output 1 into input 1 from run to run, hides both
 * from the application and starts anew on et_zephyr_reset_state(). */
void test_states(const std::string &dir) {
    Blob pte(dir + "/accumulator.pte");
    alignas(4) int16_t state[4] = {};
    et_zephyr_state states[1] = {{state, sizeof(state), -7}};
    et_zephyr_config cfg = config_for(pte);
    const int32_t in_types[] = {ET_ZEPHYR_DTYPE_INT16};
    cfg.input_dtypes = in_types;
    cfg.num_input_dtypes = 1;
    cfg.states = states;
    cfg.num_states = 1;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    CHECK(et_zephyr_num_inputs(&g_model) == 1 && et_zephyr_num_outputs(&g_model) == 1);
    CHECK(state[0] == -7 && state[3] == -7);
    et_zephyr_tensor_info info{};
    CHECK_RC(et_zephyr_input_info(&g_model, 1, &info), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    CHECK_RC(et_zephyr_output_info(&g_model, 1, &info), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    const int16_t x[4] = {1, 2, 3, 400};
    CHECK_RC(et_zephyr_set_input(&g_model, 1, x, sizeof(x)), ET_ZEPHYR_ERR_INVALID_ARGUMENT);
    for (int run = 1; run <= 3; ++run) {
        CHECK_RC(et_zephyr_set_input(&g_model, 0, x, sizeof(x)), ET_ZEPHYR_OK);
        CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
        CHECK_RC(et_zephyr_output_info(&g_model, 0, &info), ET_ZEPHYR_OK);
        const int16_t *y = static_cast<const int16_t *>(info.data);
        for (int i = 0; i < 4; ++i) {
            CHECK(y[i] == -7 + run * x[i]);
            CHECK(state[i] == y[i]);
        }
    }
    CHECK_RC(et_zephyr_reset_state(&g_model), ET_ZEPHYR_OK);
    CHECK(state[0] == -7 && state[3] == -7);
    CHECK_RC(et_zephyr_set_input(&g_model, 0, x, sizeof(x)), ET_ZEPHYR_OK);
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_OK);
    CHECK(state[3] == -7 + 400);
    /* A failed run leaves the state as it was. */
    CHECK_RC(et_zephyr_run(&g_model), ET_ZEPHYR_ERR_INPUT_NOT_SET);
    CHECK(state[3] == -7 + 400);
    et_zephyr_deinit(&g_model);
    CHECK_RC(et_zephyr_reset_state(&g_model), ET_ZEPHYR_ERR_NOT_INITIALIZED);

    /* A state buffer of the wrong size, none, or more states than the method has. */
    states[0].nbytes = 6;
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_IO_MISMATCH);
    CHECK_LOG("state 0 (input 1, output 1) takes an int8 or int16 buffer of 8 bytes");
    states[0] = {nullptr, sizeof(state), 0};
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_IO_MISMATCH);
    CHECK_LOG("no buffer");
    et_zephyr_state three[3] = {{state, 8, 0}, {state, 8, 0}, {state, 8, 0}};
    cfg.states = three;
    cfg.num_states = 3;
    cfg.input_dtypes = nullptr;
    cfg.num_input_dtypes = 0;
    host_log_clear();
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_ERR_IO_MISMATCH);
    CHECK_LOG("fewer than the config's 3 states");
    /* Without states the program's own two inputs are the application's. */
    cfg.states = nullptr;
    cfg.num_states = 0;
    CHECK_RC(et_zephyr_init(&g_model, &cfg), ET_ZEPHYR_OK);
    CHECK(et_zephyr_num_inputs(&g_model) == 2 && et_zephyr_num_outputs(&g_model) == 2);
    et_zephyr_deinit(&g_model);
}

const Test kTests[] = {
    {"init_run", test_init_run},
    {"c_api", test_c_api},
    {"wrong_input", test_wrong_input},
    {"input_buffer", test_input_buffer},
    {"planned_arena_too_small", test_planned_arena_too_small},
    {"method_arena_too_small", test_method_arena_too_small},
    {"invalid_program", test_invalid_program},
    {"corrupt_bytes", test_corrupt_bytes},
    {"missing_operator", test_missing_operator},
    {"pte_reader", test_pte_reader},
    {"hostile_offset", test_hostile_offset},
    {"hostile_size", test_hostile_size},
    {"hostile_io", test_hostile_io},
    {"hostile_scratch", test_hostile_scratch},
    {"planned_buffers", test_planned_buffers},
    {"float_io_helpers", test_float_io_helpers},
    {"states", test_states},
};

} // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s FIXTURE_DIR TEST_NAME|all\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    bool ran = false;
    for (const Test &t : kTests) {
        if (std::strcmp(argv[2], "all") == 0 || std::strcmp(argv[2], t.name) == 0) {
            std::fprintf(stderr, "=== %s\n", t.name);
            t.fn(dir);
            ran = true;
        }
    }
    if (!ran) {
        std::fprintf(stderr, "no test named %s\n", argv[2]);
        return 2;
    }
    std::fprintf(stderr, "%s: %d failure(s)\n", argv[2], g_failures);
    return g_failures == 0 ? 0 : 1;
}
