# SPDX-License-Identifier: Apache-2.0
"""Where every tensor lives: RAM needs, offset planning, outputs that may overlap their
inputs, the fast memory region, layout steps as views, shared constants."""
