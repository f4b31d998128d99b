# SPDX-License-Identifier: Apache-2.0
"""What an export starts from: the user's model, its calibration data, constant inputs,
the `--io` mode and the Cortex-M target."""
