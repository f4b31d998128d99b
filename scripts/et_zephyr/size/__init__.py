# SPDX-License-Identifier: Apache-2.0
"""`et-size`: where a Zephyr firmware's flash and RAM go, by component."""
