# SPDX-License-Identifier: Apache-2.0
"""et-zephyr: PyTorch models to Cortex-M firmware through ExecuTorch."""

__version__ = "0.1.0"
