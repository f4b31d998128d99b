/*
 * SPDX-License-Identifier: Apache-2.0
 */

/*
 * The upstream Cortex-M kernels (backends/cortex_m/ops/op_*.cpp) that
 * et-zephyr's own kernels hand a call to when its shape is not theirs. The
 * upstream sources have no header; the registration calls them by these names.
 */

#ifndef ET_ZEPHYR_KERNELS_UPSTREAM_KERNELS_H_
#define ET_ZEPHYR_KERNELS_UPSTREAM_KERNELS_H_

#include <stdint.h>

#include <optional>

#include <executorch/runtime/core/exec_aten/exec_aten.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>
#include <executorch/runtime/platform/log.h>

namespace et_zephyr::native {

/* Whether a kernel hands the calls it does not take to the upstream kernel.
 * The build defines ET_ZEPHYR_UPSTREAM_FALLBACK=0 for a kernel that takes
 * every call of the model's (et-export checks each against the kernel's
 * conditions: the manifest's target.kernels_without_fallback); the upstream
 * kernel and the CMSIS-NN functions under it are then not linked, and a call
 * the kernel does not take fails with Error::NotSupported. */
#ifndef ET_ZEPHYR_UPSTREAM_FALLBACK
#define ET_ZEPHYR_UPSTREAM_FALLBACK 1
#endif
inline constexpr bool kUpstreamFallback = ET_ZEPHYR_UPSTREAM_FALLBACK != 0;

/* Fails a call the kernel does not take, where it has no upstream kernel. */
inline void fail_without_fallback(torch::executor::KernelRuntimeContext &context,
                                  const char *kernel) {
    ET_LOG(Error,
           "%s: call outside the kernel's shapes, built without its upstream fallback "
           "(CONFIG_ET_ZEPHYR_KERNEL_FALLBACKS=y keeps it)",
           kernel);
    context.fail(executorch::runtime::Error::NotSupported);
}

} // namespace et_zephyr::native

namespace cortex_m::native {

using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

/* op_quantized_add.cpp */
Tensor &quantized_add_out(KernelRuntimeContext &, const Tensor &, int64_t, int64_t, int64_t,
                          const Tensor &, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                          int64_t, int64_t, Tensor &);

/* op_quantized_conv2d.cpp */
Tensor &quantized_conv2d_out(KernelRuntimeContext &, const Tensor &, const Tensor &,
                             const std::optional<Tensor> &, ArrayRef<int64_t>, ArrayRef<int64_t>,
                             ArrayRef<int64_t>, int64_t, int64_t, const Tensor &, const Tensor &,
                             int64_t, int64_t, const Tensor &, Tensor &);

/* op_quantized_depthwise_conv2d.cpp */
Tensor &quantized_depthwise_conv2d_out(KernelRuntimeContext &, const Tensor &, const Tensor &,
                                       const std::optional<Tensor> &, ArrayRef<int64_t>,
                                       ArrayRef<int64_t>, ArrayRef<int64_t>, int64_t, int64_t,
                                       int64_t, const Tensor &, const Tensor &, int64_t, int64_t,
                                       const Tensor &, Tensor &);

/* op_quantized_linear.cpp */
Tensor &quantized_linear_out(KernelRuntimeContext &, const Tensor &, const Tensor &,
                             const std::optional<Tensor> &, const std::optional<Tensor> &, int64_t,
                             int64_t, int64_t, ArrayRef<int64_t>, ArrayRef<int64_t>, int64_t,
                             int64_t, Tensor &);

/* op_softmax.cpp */
Tensor &softmax_out(KernelRuntimeContext &, const Tensor &, int64_t, int64_t, int64_t, int64_t,
                    int64_t, int64_t, Tensor &);

} // namespace cortex_m::native

#endif /* ET_ZEPHYR_KERNELS_UPSTREAM_KERNELS_H_ */
