# SPDX-License-Identifier: Apache-2.0
"""A sample's outputs equal et-export's host reference, byte for byte (kws, hello, tests/models).

Reads the "ET_OUTPUT <input> <output> <hex>" lines the sample prints (or, built
with CONFIG_APP_PRINT_OUTPUT_CRCS, "ET_CRC <input> <output> <size> <crc32>") and
compares each with output_<output>_bytes[<input>] of the NAME.vectors.npz that
et-export wrote into the build folder for this very build (same program, same
inputs). Output 0 is the model's result; outputs 1.. are the intermediate
activations exposed with --expose-activations.
"""

from __future__ import annotations

import logging
import re
import zlib
from pathlib import Path

import numpy as np
from twister_harness import DeviceAdapter

OUTPUT_LINE = re.compile(r"ET_OUTPUT (\d+) (\d+) ([0-9a-f]*)\s*$")
CRC_LINE = re.compile(r"ET_CRC (\d+) (\d+) (\d+) ([0-9a-f]{8})\s*$")
logger = logging.getLogger(__name__)


def build_dir(dut: DeviceAdapter) -> Path:
    config = dut.device_config
    return Path(getattr(config, "app_build_dir", None) or config.build_dir)


def reference(build: Path) -> dict[tuple[int, int], bytes]:
    """Expected bytes by (input, output) from the only vectors file of the build."""
    found = sorted(build.glob("et/*/*.vectors.npz"))
    assert len(found) == 1, f"expected one et/*/*.vectors.npz in {build}, found {found}"
    expected = {}
    with np.load(found[0]) as data:
        for name in data.files:
            match = re.fullmatch(r"output_(\d+)_bytes", name)
            if match:
                for index, row in enumerate(data[name]):
                    expected[(index, int(match.group(1)))] = row.tobytes()
    return expected


def test_outputs_bit_exact(dut: DeviceAdapter) -> None:
    lines = dut.readlines_until(regex=r"ET_DONE", print_output=False)
    for line in lines:
        if not line.startswith(("ET_OUTPUT", "ET_CRC")):
            logger.info(line)
    assert "ET_DONE PASS" in lines[-1], lines[-1]

    expected = reference(build_dir(dut))
    seen: dict[tuple[int, int], bytes] = {}
    crcs: dict[tuple[int, int], tuple[int, int]] = {}
    for line in lines:
        match = OUTPUT_LINE.match(line.strip())
        crc = CRC_LINE.match(line.strip())
        if match:
            key = (int(match.group(1)), int(match.group(2)))
            assert key not in seen, f"output {key} printed twice"
            seen[key] = bytes.fromhex(match.group(3))
        elif crc:
            key = (int(crc.group(1)), int(crc.group(2)))
            assert key not in crcs, f"output {key} printed twice"
            crcs[key] = (int(crc.group(3)), int(crc.group(4), 16))
    assert not (seen and crcs), "the device printed both bytes and CRCs"
    if crcs:
        assert sorted(crcs) == sorted(expected), "the device printed other outputs than expected"
        for key, (size, device_crc) in crcs.items():
            host = expected[key]
            assert (size, device_crc) == (len(host), zlib.crc32(host)), (
                f"input {key[0]} output {key[1]}: {size} bytes with CRC-32 {device_crc:08x}, "
                f"the host reference {len(host)} bytes with {zlib.crc32(host):08x}"
            )
        logger.info("%d outputs bit-exact (CRC-32) with the host reference", len(crcs))
        return
    assert sorted(seen) == sorted(expected), "the device printed other outputs than expected"
    for key, device in seen.items():
        host = expected[key]
        assert len(device) == len(host), f"input {key[0]} output {key[1]}: size differs"
        differ = [i for i, (a, b) in enumerate(zip(device, host)) if a != b]
        assert not differ, (
            f"input {key[0]} output {key[1]}: {len(differ)} of {len(host)} bytes differ "
            f"from the host reference, first at byte {differ[0]}"
        )
    logger.info("%d outputs bit-exact with the host reference", len(seen))
