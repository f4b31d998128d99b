# SPDX-License-Identifier: Apache-2.0
"""What the firmware links and where it goes: which kernel runs each operator, the
scratch each kernel needs, what a lowered program calls, and whether it fits a board's
memories."""
