# SPDX-License-Identifier: Apache-2.0
"""Instructions per frame of the fixed-point MFCC front end (lib/src/audio/mfcc.cpp).

Builds tests/python/mfcc/mfcc_frames.cpp (the front end's test program, semihosted,
picolibc) for each core, runs it on QEMU with the repository's instruction counter
over the first FRAMES frames of samples/kws_stream/stream.npz (the sound the streaming
sample listens to: a spoken "yes" with background noise), and prints one row a core:
instructions per frame (mean, least, most), with whether every frame's coefficients
equal et_zephyr.audio.mfcc's. Code size: `arm-none-eabi-size` of mfcc.o for the core.

    python3 benchmarks/front_end.py [--frames 49]

Needs arm-none-eabi-g++ with picolibc, qemu-system-arm and cmake (scripts/setup).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from et_zephyr.audio import mfcc  # noqa: E402
from et_zephyr.common.table import format_table  # noqa: E402
from et_zephyr.size.counting import count_instructions  # noqa: E402
from et_zephyr.size.plugin import build_plugin  # noqa: E402
from et_zephyr.size.qemu import QemuCommand  # noqa: E402
from et_zephyr.size.window import call_window  # noqa: E402

PROGRAM = REPO / "tests/python/mfcc/mfcc_frames.cpp"
FRONT_END = REPO / "lib/src/audio/mfcc.cpp"
STREAM = REPO / "samples/kws_stream/stream.npz"
CORES = (("cortex-m55", "mps3-an547"), ("cortex-m4", "mps2-an386"), ("cortex-m3", "mps2-an385"))
RAM = 0x80000


def build(elf: Path, cpu: str) -> None:
    """The test program as test_mfcc.py builds it (code at 0, RAM at 0x20000000)."""
    subprocess.run(
        ["arm-none-eabi-g++", "-mthumb", f"-mcpu={cpu}", "-O2", "-std=c++17", "-fno-exceptions",
         "-fno-rtti", "--specs=picolibcpp.specs", "--oslib=semihost",
         f"-I{REPO / 'lib/include'}", f"-I{REPO / 'lib/src/audio'}",
         "-Wl,--defsym=__flash=0x0", f"-Wl,--defsym=__flash_size={RAM:#x}",
         "-Wl,--defsym=__ram=0x20000000", f"-Wl,--defsym=__ram_size={RAM:#x}",
         str(PROGRAM), str(FRONT_END), "-o", str(elf)],
        check=True,
    )  # fmt: skip


def code_size(cpu: str, out_dir: Path) -> int:
    """Bytes of code and tables of mfcc.cpp compiled for the core (text + data)."""
    obj = out_dir / f"mfcc-{cpu}.o"
    subprocess.run(
        ["arm-none-eabi-g++", "-mthumb", f"-mcpu={cpu}", "-O2", "-std=c++17", "-fno-exceptions",
         "-fno-rtti", f"-I{REPO / 'lib/include'}", "-c", str(FRONT_END), "-o", str(obj)],
        check=True,
    )  # fmt: skip
    fields = (
        subprocess.run(["arm-none-eabi-size", str(obj)], capture_output=True, text=True, check=True)
        .stdout.splitlines()[1]
        .split()
    )
    return int(fields[0]) + int(fields[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=49, help="frames counted (default: 49)")
    args = parser.parse_args(argv)
    with np.load(STREAM) as data:
        frames = mfcc.frames_of(data["pcm"])[: args.frames]
    expected = mfcc.frame_coefficients(frames)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plugin = build_plugin(work / "plugin")
        for cpu, machine in CORES:
            run_dir = work / cpu
            run_dir.mkdir()
            (run_dir / "cases.bin").write_bytes(frames.astype("<i2").tobytes())
            elf = run_dir / "mfcc_frames.elf"
            build(elf, cpu)
            command = QemuCommand(
                ["qemu-system-arm", "-machine", machine, "-cpu", cpu, "-display", "none",
                 "-monitor", "none", "-serial", "null",
                 "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                run_dir,
            )  # fmt: skip
            window = call_window(elf, "et_zephyr_mfcc_frame", "compute_frame")
            count = count_instructions(
                command, plugin, window, run_dir / "frames.hist", windows=len(frames), until="done"
            )
            device = np.frombuffer((run_dir / "results.bin").read_bytes(), "<i4")
            records = device[: len(frames) * 11].reshape(-1, 11)[:, 1:]
            same = len(records) == len(frames) and np.array_equal(records, expected)
            per_frame = np.array(count.windows)
            rows.append([
                f"{cpu} ({machine})", f"{per_frame.mean():,.0f}",
                f"{per_frame.min():,} to {per_frame.max():,}", f"{code_size(cpu, work):,}",
                "yes" if same else "NO",
            ])  # fmt: skip
    print(f"MFCC front end, {len(frames)} frames of {STREAM.relative_to(REPO)}:")
    header = ["core", "instructions a frame", "range", "code + tables (B)", "= host"]
    print("\n".join(format_table([header, *rows])))


if __name__ == "__main__":
    main()
