# SPDX-License-Identifier: Apache-2.0
"""Audio features computed on the device (lib/src/audio/) and their integer twin here."""
