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

namespace cortex_m::native {

using torch::executor::ArrayRef;
using torch::executor::KernelRuntimeContext;
using torch::executor::Tensor;

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
