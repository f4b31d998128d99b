# SPDX-License-Identifier: Apache-2.0
"""Graph passes, one a module: on the captured ATen graph before quantization (forms the
Cortex-M quantizer does not match rewritten into ones it does), the quantizer itself,
ExecuTorch's Cortex-M pass list, and the edge-dialect passes after it that put int8
operators on et-zephyr's kernels. `fx_nodes` and `int8_rewrites` are what they share."""
