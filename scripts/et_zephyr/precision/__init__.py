# SPDX-License-Identifier: Apache-2.0
"""`--precision auto`: which layers to quantize 16x8 (search.py), judged on fake-quantized
trials (trials.py) and on the programs lowered from them."""
