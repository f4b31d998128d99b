# SPDX-License-Identifier: Apache-2.0
"""Graph passes on the captured ATen graph, before quantization: each rewrites a form
of the model the Cortex-M quantizer does not match into one it does, one pass a module."""
