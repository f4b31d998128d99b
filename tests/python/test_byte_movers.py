# SPDX-License-Identifier: Apache-2.0
"""et-zephyr's byte-moving kernels (lib/src/kernels/slice.cpp, channel_shuffle.cpp, the
int16 pad pad_s16.cpp and, where CMSIS-NN's sources are at hand, concatenate.cpp), its
bilinear resize
(resize_bilinear.cpp, against reference/resize.py's integer arithmetic) and, with
CMSIS-NN, its clipped average pool (avg_pool2d_clipped.cpp, against
reference/pooling.py's), built with g++
against the executorch wheel and run on ExecuTorch tensors in every dim order a program
gives them:
the default, channels-last, 3-D and odd orders, and the tie-broken orders of tensors
with dimensions of size 1 (their strides tie, so a program may order them either way).
Every output byte must be the torch operator's (reference/own_ops.py, the host reference), and
tensors laid out differently must be refused, not misread."""

from __future__ import annotations

import itertools
import os
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import executorch
import torch
from conftest import REPO, need_tools
from et_zephyr.reference import own_ops, pooling, resize
from executorch.exir.tensor import dim_order_from_stride, stride_from_dim_order

DRIVER = Path(__file__).parent / "byte_movers" / "byte_movers_cases.cpp"
KERNELS = REPO / "lib/src/kernels"
SLICE, SHUFFLE, CONCATENATE, BILINEAR, AVG_POOL, PAD_S16 = 0, 1, 2, 3, 4, 5
CMSIS_NN = os.environ.get("ET_ZEPHYR_CMSIS_NN_DIR")


def _build(out: Path) -> Path:
    need_tools("g++")
    wheel = Path(executorch.__path__[0])
    include = wheel / "include"
    (portable,) = (wheel / "extension/pybindings").glob("_portable_lib*.so")
    import sysconfig

    libdir = sysconfig.get_config_var("LIBDIR")
    sources = [
        DRIVER,
        *(
            KERNELS / f"{name}.cpp"
            for name in ("slice", "channel_shuffle", "resize_bilinear", "pad_s16")
        ),
    ]
    flags = []
    if CMSIS_NN:
        sources += [KERNELS / "concatenate.cpp", KERNELS / "avg_pool2d_clipped.cpp"]
        sources += [
            Path(CMSIS_NN) / "Source" / name
            for name in (
                "ConcatenationFunctions/arm_concatenation_s8_y.c",
                "PoolingFunctions/arm_avgpool_s8.c",
                "PoolingFunctions/arm_avgpool_get_buffer_sizes_s8.c",
            )
        ]
        flags += ["-DWITH_CMSIS_NN", f"-I{CMSIS_NN}/Include"]
    binary = out / "byte_movers"
    runpath = _runpath(portable)
    subprocess.run(
        ["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror",
         f"-isystem{include}", f"-isystem{include}/executorch/runtime/core/portable_type/c10",
         "-DC10_USING_CUSTOM_GENERATED_MACROS", f"-I{KERNELS}", *flags,
         # Positional: they apply to the libraries after them. ExecuTorch's runtime is in
         # another of the wheel's libraries, which the portable one names.
         "-Wl,--copy-dt-needed-entries", "-Wl,--allow-shlib-undefined",
         f"-Wl,-rpath-link,{runpath}", f"-Wl,-rpath,{portable.parent}:{libdir}:{runpath}",
         *map(str, sources), str(portable), *_wheel_dependencies(portable, wheel),
         f"-L{libdir}",
         f"-lpython3.{sys.version_info.minor}", "-o", str(binary)],
        check=True,
    )  # fmt: skip
    return binary


def _runpath(library: Path) -> str:
    """The library's RUNPATH, $ORIGIN expanded: where its own dependencies (ExecuTorch's
    runtime, in another of the wheel's libraries) are found."""
    need_tools("readelf")
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True)
    found = re.search(r"Library runpath: \[(.*)\]", dynamic.stdout)
    return found.group(1).replace("$ORIGIN", str(library.parent)) if found else ""


def _wheel_dependencies(library: Path, wheel: Path) -> list[str]:
    """The wheel's own libraries this one needs (found on its RUNPATH), by path."""
    dynamic = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dynamic.stdout)
    found = []
    for directory in _runpath(library).split(":"):
        for name in needed:
            path = Path(directory).resolve() / name
            if path.is_file() and path.is_relative_to(wheel):
                found.append(str(path))
    return found


def _in_order(values: torch.Tensor, order: tuple[int, ...]) -> list[int]:
    """The tensor's bytes as a buffer in this dim order holds them."""
    return values.permute(order).contiguous().flatten().tolist()


def _tensor_words(values: torch.Tensor, order: tuple[int, ...]) -> list[int]:
    return [values.dim(), *values.shape, *order, *_in_order(values, order)]


def _program_order(shape: list[int], order: tuple[int, ...]) -> tuple[int, ...]:
    """The dim order a program records for a tensor laid out in `order` (ties between
    dimensions of size 1 broken as ExecuTorch breaks them)."""
    return tuple(int(d) for d in dim_order_from_stride(stride_from_dim_order(shape, list(order))))


class Cases:
    def __init__(self) -> None:
        self.words: list[int] = []
        self.expected: list[tuple[bool, list[int]]] = []
        self.kinds: list[int] = []
        self.widths: list[int] = []

    def add(
        self,
        kind: int,
        inputs: list[tuple[torch.Tensor, tuple[int, ...]]],
        output: torch.Tensor,
        order: tuple[int, ...],
        arguments: list[int],
        refused: bool = False,
    ) -> None:
        self.kinds.append(kind)
        self.words += [kind, len(inputs)]
        for values, input_order in inputs:
            self.words += _tensor_words(values, input_order)
        self.words += _tensor_words(torch.zeros_like(output), order) + arguments
        self.expected.append((refused, _in_order(output, order)))
        self.widths.append(output.element_size())


def _orders(rank: int) -> list[tuple[int, ...]]:
    default = tuple(range(rank))
    last = (0, *range(2, rank), 1)
    odd = tuple(reversed(default))
    return list(dict.fromkeys([default, last, odd]))


def _cases() -> Cases:
    rng = random.Random(7)
    generator = torch.Generator().manual_seed(7)
    cases = Cases()
    for rank, _ in itertools.product((3, 4), range(30)):
        shape = [rng.choice([1, 1, 2, 3, 5, 7, 9]) for _ in range(rank)]
        values = torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator)
        for order in _orders(rank):
            dim = rng.randrange(rank)
            start = rng.randrange(shape[dim])
            end = rng.randrange(start + 1, shape[dim] + 1)
            step = rng.choice([1, 1, 2, 3])
            cut = own_ops._slice(values, dim, start, end, step)
            out_order = _program_order(list(cut.shape), order)
            in_order = _program_order(shape, order)
            cases.add(SLICE, [(values, in_order)], cut, out_order, [dim, start, end, step])
            if sum(s > 1 for s in cut.shape) >= 2 and out_order != tuple(range(rank)):
                # The output laid out otherwise: refused.
                other = tuple(range(rank)) if order != tuple(range(rank)) else _orders(rank)[1]
                if [d for d in other if cut.shape[d] > 1] != [
                    d for d in out_order if cut.shape[d] > 1
                ]:
                    cases.add(
                        SLICE, [(values, in_order)], cut, other, [dim, start, end, step], True
                    )
    for channels, groups, order in itertools.product((4, 6, 12), (2, 3), _orders(4)):
        if channels % groups:
            continue
        shape = [1, channels, rng.choice([1, 3]), rng.choice([1, 4])]
        values = torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator)
        shuffled = own_ops._channel_shuffle(values, groups)
        program = _program_order(shape, order)
        cases.add(SHUFFLE, [(values, program)], shuffled, program, [groups])
    cases.add(SHUFFLE, [(values, program)], shuffled, program, [5], refused=True)
    for (height, width), scale, corners, order in itertools.product(
        [(1, 1), (2, 3), (7, 5), (9, 11)], [2.0, 0.5, 1.7, 3.0], [False, True], _orders(4)
    ):
        out_h, out_w = int(height * scale), int(width * scale)
        if out_h < 1 or out_w < 1:
            continue
        shape = [2, 3, height, width]
        values = torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator)
        taps = [
            resize.bilinear_taps(n, m, corners, None if corners else scale)
            for n, m in ((height, out_h), (width, out_w))
        ]
        resized = resize.resize_bilinear(values, *taps)
        arguments = [word for tap in taps for word in [tap.shape[0], *tap.flatten().tolist()]]
        program = _program_order(shape, order)
        out_order = _program_order(list(resized.shape), order)
        cases.add(BILINEAR, [(values, program)], resized, out_order, arguments)
    # A tap outside the input: refused.
    rows = taps[0].shape[0]
    outside = [rows, *([99, 0, 0] * rows), *arguments[1 + 3 * rows :]]
    cases.add(BILINEAR, [(values, program)], resized, out_order, outside, refused=True)
    _pad_cases(cases, rng, generator)
    if CMSIS_NN:
        for order, dim in itertools.product(_orders(4), range(4)):
            pieces = []
            for size in (1, 3, 2):
                shape = [2, 3, 4, 5]
                shape[dim] = size
                pieces.append(torch.randint(-128, 128, shape, dtype=torch.int8))
            joined = torch.cat(pieces, dim)
            inputs = [(p, _program_order(list(p.shape), order)) for p in pieces]
            out_order = _program_order(list(joined.shape), order)
            cases.add(CONCATENATE, inputs, joined, out_order, [dim])
        _avg_pool_cases(cases, generator)
    return cases


def _pad_cases(cases: Cases, rng: random.Random, generator: torch.Generator) -> None:
    """int16 maps and sequences padded on every side in every dim order (a 16x8
    convolution's asymmetric padding), from a 1x1 map up; an output of the wrong size is
    refused."""
    for rank, _ in itertools.product((2, 3, 4), range(12)):
        shape = [rng.choice([1, 1, 2, 3, 5, 16]) for _ in range(rank)]
        values = torch.randint(-32768, 32768, shape, dtype=torch.int16, generator=generator)
        pre = [rng.choice([0, 0, 1, 2, 5]) for _ in range(rank)]
        post = [rng.choice([0, 0, 1, 3]) for _ in range(rank)]
        fill = rng.choice([0, -32768, 32767, 7])
        padded = own_ops._pad_s16(values, pre, post, fill)
        for order in _orders(rank):
            program = _program_order(shape, order)
            out_order = _program_order(list(padded.shape), order)
            cases.add(PAD_S16, [(values, program)], padded, out_order, [*pre, *post, fill])
    short = padded[..., :-1] if padded.shape[-1] > 1 else padded[..., :0]
    cases.add(PAD_S16, [(values, program)], short, out_order, [*pre, *post, fill], refused=True)
    # The output in another order than the input: refused.
    values = torch.randint(-32768, 32768, [2, 3, 4, 5], dtype=torch.int16, generator=generator)
    padded = own_ops._pad_s16(values, [0, 0, 1, 1], [0, 0, 2, 0], 0)
    arguments = [0, 0, 1, 1, 0, 0, 2, 0, 0]
    cases.add(PAD_S16, [(values, (0, 1, 2, 3))], padded, (0, 2, 3, 1), arguments, refused=True)


def _avg_pool_cases(cases: Cases, generator: torch.Generator) -> None:
    """PyTorch's ceil-mode average pools (the sizes its output formula gives) on maps
    from 1x1 up, and a window starting past the input, which is refused."""
    channels_last = (0, 2, 3, 1)
    for (height, width), kernel, stride, pad in itertools.product(
        [(1, 1), (2, 3), (5, 5), (7, 4), (16, 9)], [(1, 1), (2, 2), (3, 3), (3, 2)],
        [(1, 1), (2, 2), (3, 2)], [(0, 0), (1, 1), (1, 0)],
    ):  # fmt: skip
        too_wide = height + 2 * pad[0] < kernel[0] or width + 2 * pad[1] < kernel[1]
        if pad[0] * 2 > kernel[0] or pad[1] * 2 > kernel[1] or too_wide:
            continue
        shape = [2, 5, height, width]
        values = torch.randint(-128, 128, shape, dtype=torch.int8, generator=generator)
        size = torch.nn.functional.avg_pool2d(
            values.float(), kernel, stride, pad, ceil_mode=True
        ).shape[2:]
        pooled = pooling.avg_pool2d_clipped(values, kernel, stride, pad, list(size), values)
        program = _program_order(shape, channels_last)
        out_order = _program_order(list(pooled.shape), channels_last)
        arguments = [*kernel, *stride, *pad, *size, 4 * shape[1]]
        cases.add(AVG_POOL, [(values, program)], pooled, out_order, arguments)
    beyond = [*kernel, *stride, *pad, size[0] + 2, size[1], 4 * shape[1]]
    wider = torch.zeros(2, 5, size[0] + 2, size[1], dtype=torch.int8)
    cases.add(AVG_POOL, [(values, program)], wider, out_order, beyond, refused=True)


def test_the_kernels_move_the_bytes_torch_does_in_every_dim_order(tmp_path: Path) -> None:
    binary = _build(tmp_path)
    cases = _cases()
    (tmp_path / "cases.bin").write_bytes(struct.pack(f"<{len(cases.words)}q", *cases.words))
    subprocess.run([str(binary), str(tmp_path / "cases.bin"), str(tmp_path / "out.bin")],
                   check=True)  # fmt: skip
    results = (tmp_path / "out.bin").read_bytes()
    offset = 0
    for index, ((refused, expected), width) in enumerate(zip(cases.expected, cases.widths)):
        status = results[offset]
        size = len(expected) * width
        code = f"<{len(expected)}{'h' if width == 2 else 'b'}"
        got = list(struct.unpack(code, results[offset + 1 : offset + 1 + size]))
        offset += 1 + size
        assert status == refused, index
        if not refused:
            assert got == expected, index
    assert offset == len(results)
    assert sum(refused for refused, _ in cases.expected) >= 2
    # concatenate.cpp and avg_pool2d_clipped.cpp are built and run where CMSIS-NN's
    # sources are (ET_ZEPHYR_CMSIS_NN_DIR).
    assert (CONCATENATE in cases.kinds) == bool(CMSIS_NN)
    assert (AVG_POOL in cases.kinds) == bool(CMSIS_NN)
