# SPDX-License-Identifier: Apache-2.0
"""The host reference against CMSIS-NN's own C code, operator by operator.

With ET_ZEPHYR_CMSIS_NN_DIR naming a CMSIS-NN source tree (a west workspace's
modules/lib/cmsis-nn), CMSIS-NN is compiled for the host (its portable C paths)
with oracle/cmsis_nn_oracle.c, and every cortex_m::* operator the host reference
runs (ExecuTorch's Python or et_zephyr.reference's) is compared with it on random
and edge-case inputs, as ExecuTorch's kernels call it. CI has no CMSIS-NN sources:
there these tests are skipped and test_reference_ops.py's transcriptions stand in.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from et_zephyr import reference
from et_zephyr.passes.transpose_conv_rows import direct_kernel_misplaces_rows
from et_zephyr.reference import add_s16, conv_s16, gates_s16, linear_s16, lstm, pooling

CMSIS_NN = os.environ.get("ET_ZEPHYR_CMSIS_NN_DIR")
pytestmark = pytest.mark.skipif(
    not CMSIS_NN or not (Path(CMSIS_NN) / "Include" / "arm_nnfunctions.h").is_file(),
    reason="ET_ZEPHYR_CMSIS_NN_DIR does not name a CMSIS-NN source tree",
)
ops = torch.ops.cortex_m


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    root = Path(CMSIS_NN or "")
    sources = [
        str(path)
        for path in sorted((root / "Source").rglob("*.c"))
        if "f16" not in path.name and "f32" not in path.name and "Bindings" not in path.parts
    ]
    library = tmp_path_factory.mktemp("oracle") / "cmsis_nn_oracle.so"
    shim = Path(__file__).parent / "oracle" / "cmsis_nn_oracle.c"
    command = ["cc", "-O1", "-fwrapv", "-shared", "-fPIC", f"-I{root / 'Include'}", str(shim)]
    subprocess.run([*command, *sources, "-o", str(library)], check=True)
    return ctypes.CDLL(str(library))


def _ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def _call(function, *args) -> int:
    """Arrays as pointers (None as NULL), numbers as int32."""
    converted = [
        _ptr(a)
        if isinstance(a, np.ndarray)
        else ctypes.c_void_p(None)
        if a is None
        else ctypes.c_int32(int(a))
        for a in args
    ]
    return function(*converted)


def _int8(generator: np.random.Generator, *shape: int) -> np.ndarray:
    return generator.integers(-128, 128, size=shape, dtype=np.int8)


def _multipliers(generator: np.random.Generator, count: int) -> np.ndarray:
    values = generator.integers(1 << 30, (1 << 31) - 1, size=count, dtype=np.int64)
    values[: min(count, 2)] = [1 << 30, (1 << 31) - 1][: min(count, 2)]
    return values.astype(np.int32)


def _nchw(nhwc: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(nhwc.copy()).permute(0, 3, 1, 2)


def _nhwc_bytes(tensor: torch.Tensor) -> bytes:
    return tensor.permute(0, 2, 3, 1).contiguous().numpy().tobytes()


def test_requantize(oracle) -> None:
    generator = np.random.default_rng(1)
    values = np.concatenate(
        [
            generator.integers(-(1 << 31), 1 << 31, size=4000, dtype=np.int64),
            generator.integers(-(1 << 16), 1 << 16, size=4000, dtype=np.int64),
            [0, 1, -1, (1 << 31) - 1, -(1 << 31), 1 << 20, -(1 << 20)],
        ]
    ).astype(np.int32)
    for multiplier in _multipliers(generator, 6):
        for shift in (-31, -24, -17, -9, -1, 0, 1, 3, 7):
            expected = np.empty_like(values)
            _call(oracle.oracle_requantize, values, len(values), multiplier, shift, expected)
            actual = reference.fixed_point.requantize(
                torch.from_numpy(values), int(multiplier), shift
            )
            assert actual.to(torch.int32).numpy().tobytes() == expected.tobytes(), shift


@pytest.mark.parametrize(
    ("hw", "kernel", "stride", "padding"),
    [
        ((8, 8), (8, 8), (8, 8), (0, 0)),
        ((5, 25), (5, 25), (1, 1), (0, 0)),
        ((9, 7), (3, 3), (2, 2), (1, 1)),
        ((6, 6), (2, 3), (1, 2), (0, 1)),
    ],
)
def test_pools(oracle, hw, kernel, stride, padding) -> None:
    generator = np.random.default_rng(sum(hw))
    image = _int8(generator, 3, *hw, 16)
    oh = (hw[0] + 2 * padding[0] - kernel[0]) // stride[0] + 1
    ow = (hw[1] + 2 * padding[1] - kernel[1]) // stride[1] + 1
    geometry = (3, *hw, 16, *kernel, *stride, *padding, oh, ow)
    x = _nchw(image).contiguous(memory_format=torch.channels_last)
    with reference.installed("scalar"):
        expected = np.empty((3, oh, ow, 16), dtype=np.int8)
        assert _call(oracle.oracle_avgpool, image, *geometry, expected) == 0
        actual = ops.quantized_avg_pool2d(
            x,
            list(kernel),
            list(stride),
            list(padding),
            3,
            1 << 30,
            0,
            torch.empty(0, dtype=torch.int8),
        )
        assert _nhwc_bytes(actual) == expected.tobytes()
        if padding == (0, 0):
            for low, high in ((-128, 127), (-20, 90)):
                assert _call(oracle.oracle_maxpool, image, *geometry, low, high, expected) == 0
                actual = ops.quantized_max_pool2d(
                    x, list(kernel), list(stride), list(padding), [1, 1], False, 3, 3, low, high
                )
                assert _nhwc_bytes(actual) == expected.tobytes()


@pytest.mark.parametrize(
    ("hw", "kernel", "stride", "padding"),
    [
        ((8, 8), (8, 8), (8, 8), (0, 0)),
        ((1, 1), (1, 1), (1, 1), (0, 0)),
        ((9, 7), (3, 3), (2, 2), (1, 1)),
        ((13, 11), (3, 3), (1, 1), (1, 1)),
        ((6, 6), (2, 3), (1, 2), (0, 1)),
    ],
)
def test_pools_s16(oracle, hw, kernel, stride, padding) -> None:
    generator = np.random.default_rng(sum(hw) + 16)
    image = generator.integers(-32767, 32768, size=(3, *hw, 13), dtype=np.int16)
    image[0] = 32767  # the largest sums a window can have
    oh = (hw[0] + 2 * padding[0] - kernel[0]) // stride[0] + 1
    ow = (hw[1] + 2 * padding[1] - kernel[1]) // stride[1] + 1
    geometry = (3, *hw, 13, *kernel, *stride, *padding, oh, ow)
    x = _nchw(image).contiguous(memory_format=torch.channels_last)
    for bounds in ((-32767, 32767), (0, 20000)):
        for average, pool in ((1, pooling.avg_pool2d_s16), (0, pooling.max_pool2d_s16)):
            expected = np.empty((3, oh, ow, 13), dtype=np.int16)
            assert _call(oracle.oracle_pool_s16, image, *geometry, *bounds, average, expected) == 0
            actual = pool(x, list(kernel), list(stride), list(padding), *bounds)
            assert _nhwc_bytes(actual) == expected.tobytes(), (average, bounds)


@pytest.mark.parametrize("subtract", [False, True], ids=["add", "sub"])
@pytest.mark.parametrize(
    "scales", [(0.001, 0.001, 0.002), (0.0003, 0.002, 0.0021), (0.01, 0.0001, 0.004)]
)
def test_add_s16(oracle, scales, subtract: bool) -> None:
    """Additions, and subtractions (the second multiplier negated)."""
    generator = np.random.default_rng(int(scales[1] * 1e6))
    a = generator.integers(-32767, 32768, size=1001, dtype=np.int16)
    b = generator.integers(-32767, 32768, size=1001, dtype=np.int16)
    a[:3], b[:3] = [32767, -32767, 32767], [32767, -32767, -32767]
    params = add_s16.parameters(*scales, subtract=subtract)
    requantization = (
        params.input_multipliers[0],
        params.input_shifts[0],
        params.input_multipliers[1],
        params.input_shifts[1],
        params.output_multiplier,
        params.output_shift,
    )
    for bounds in ((-32767, 32767), (0, 32767)):
        expected = np.empty(1001, dtype=np.int16)
        assert _call(oracle.oracle_add_s16, a, b, 1001, *requantization, *bounds, expected) == 0
        actual = add_s16.add_s16(
            torch.from_numpy(a),
            torch.from_numpy(b),
            list(params.input_multipliers),
            list(params.input_shifts),
            params.output_multiplier,
            params.output_shift,
            *bounds,
        )
        np.testing.assert_array_equal(actual.numpy(), expected)


@pytest.mark.parametrize("input_scale", [0.005, 0.02, 0.0625, 0.1, 0.25, 1.0, 4.0])
def test_softmax(oracle, input_scale: float) -> None:
    from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import _compute_softmax_params

    mult, shift, diff_min = _compute_softmax_params(input_scale)
    generator = np.random.default_rng(int(input_scale * 1000))
    for row_size in (1, 3, 10, 12, 49, 64):
        rows = _int8(generator, 40, row_size)
        rows[0] = 127
        rows[1] = -128
        rows[2, 0] = 127
        expected = np.empty_like(rows)
        _call(oracle.oracle_softmax, rows, 40, row_size, mult, shift, diff_min, expected)
        with reference.installed("scalar"):
            actual = ops.softmax(torch.from_numpy(rows), -1, 0, -128, mult, shift, diff_min)
        assert actual.numpy().tobytes() == expected.tobytes(), row_size


def test_batch_matmul(oracle) -> None:
    generator = np.random.default_rng(5)
    for batch, rows, cols, inner in ((1, 4, 5, 16), (2, 16, 16, 32), (1, 2, 3, 2048)):
        lhs, rhs = _int8(generator, batch, rows, inner), _int8(generator, batch, cols, inner)
        for lhs_offset, rhs_offset, out_offset, shift in (
            (0, 0, 0, -8),
            (128, -127, -5, -20),
            (-3, 17, 100, -14),
        ):
            mult = int(_multipliers(generator, 3)[2])
            expected = np.empty((batch, rows, cols), dtype=np.int8)
            assert (
                _call(
                    oracle.oracle_batch_matmul,
                    lhs,
                    rhs,
                    batch,
                    rows,
                    cols,
                    inner,
                    lhs_offset,
                    rhs_offset,
                    out_offset,
                    mult,
                    shift,
                    expected,
                )
                == 0
            )
            with reference.installed("scalar"):
                actual = ops.quantized_batch_matmul(
                    torch.from_numpy(lhs),
                    lhs_offset,
                    torch.from_numpy(rhs),
                    rhs_offset,
                    out_offset,
                    mult,
                    shift,
                    torch.empty(0),
                )
            assert actual.numpy().tobytes() == expected.tobytes()


def test_add_and_mul(oracle) -> None:
    generator = np.random.default_rng(7)
    a, b = _int8(generator, 4096), _int8(generator, 4096)
    a[:4], b[:4] = [-128, 127, -128, 127], [-128, 127, 127, -128]
    for case in range(12):
        zp_a, zp_b, zp_out = (int(z) for z in generator.integers(-128, 128, size=3))
        m_a, m_b, m_out = (int(m) for m in _multipliers(generator, 3))
        s_a, s_b = (int(s) for s in generator.integers(-6, 0, size=2))
        s_out = int(generator.integers(-24, -16)) if case % 2 else -20
        low, high = (-128, 127) if case % 3 else (zp_out, 127)
        expected = np.empty_like(a)
        _call(
            oracle.oracle_add,
            a,
            b,
            len(a),
            -zp_a,
            m_a,
            s_a,
            -zp_b,
            m_b,
            s_b,
            20,
            zp_out,
            m_out,
            s_out,
            low,
            high,
            expected,
        )
        with reference.installed("scalar"):
            actual = ops.quantized_add(
                torch.from_numpy(a),
                zp_a,
                m_a,
                s_a,
                torch.from_numpy(b),
                zp_b,
                m_b,
                s_b,
                zp_out,
                m_out,
                s_out,
                low,
                high,
            )
        assert actual.numpy().tobytes() == expected.tobytes(), ("add", case)
        s_mul = int(generator.integers(-14, -6))
        _call(
            oracle.oracle_mul, a, b, len(a), -zp_a, -zp_b, zp_out, m_out, s_mul, -128, 127, expected
        )
        with reference.installed("scalar"):
            actual = ops.quantized_mul(
                torch.from_numpy(a), zp_a, torch.from_numpy(b), zp_b, zp_out, m_out, s_mul
            )
        assert actual.numpy().tobytes() == expected.tobytes(), ("mul", case)


def test_fully_connected(oracle) -> None:
    generator = np.random.default_rng(9)
    for batches, in_features, out_features in ((1, 64, 10), (3, 257, 33), (16, 32, 32)):
        x, w = _int8(generator, batches, in_features), _int8(generator, out_features, in_features)
        bias = generator.integers(-50000, 50000, size=out_features).astype(np.int32)
        for in_offset, filter_offset, out_offset, low in ((128, 0, -128, -128), (-7, 0, 3, 3)):
            mult, shift = int(_multipliers(generator, 1)[0]), int(generator.integers(-12, -6))
            expected = np.empty((batches, out_features), dtype=np.int8)
            assert (
                _call(
                    oracle.oracle_fully_connected,
                    x,
                    w,
                    bias,
                    batches,
                    in_features,
                    out_features,
                    in_offset,
                    filter_offset,
                    out_offset,
                    mult,
                    shift,
                    low,
                    127,
                    expected,
                )
                == 0
            )
            with reference.installed("scalar"):
                actual = ops.quantized_linear(
                    torch.from_numpy(x),
                    torch.from_numpy(w),
                    torch.from_numpy(bias),
                    None,
                    in_offset,
                    filter_offset,
                    out_offset,
                    [mult],
                    [shift],
                    127,
                    low,
                )
            assert actual.numpy().tobytes() == expected.tobytes()


CONV_SHAPES = [  # (h, w, c, oc, kh, kw, stride, padding, dilation)
    (10, 10, 3, 8, 3, 3, 1, 1, 1),
    (9, 9, 8, 16, 3, 3, 2, 1, 1),
    (8, 8, 16, 32, 1, 1, 1, 0, 1),
    (8, 8, 16, 32, 1, 1, 2, 0, 1),
    (49, 10, 1, 64, 10, 4, 2, 1, 1),
    (7, 7, 4, 4, 3, 3, 1, 2, 2),
]


@pytest.mark.parametrize("shape", CONV_SHAPES)
def test_convolution(oracle, shape) -> None:
    h, w, c, oc, kh, kw, stride, padding, dilation = shape
    generator = np.random.default_rng(h * w + oc)
    x, weights = _int8(generator, 2, h, w, c), _int8(generator, oc, kh, kw, c)
    bias = generator.integers(-20000, 20000, size=oc).astype(np.int32)
    mults = _multipliers(generator, oc)
    shifts = generator.integers(-11, -5, size=oc).astype(np.int32)
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    expected = np.empty((2, oh, ow, oc), dtype=np.int8)
    assert (
        _call(
            oracle.oracle_convolve,
            x,
            weights,
            bias,
            mults,
            shifts,
            2,
            h,
            w,
            c,
            oc,
            kh,
            kw,
            stride,
            stride,
            padding,
            padding,
            dilation,
            dilation,
            oh,
            ow,
            11,
            -4,
            -128,
            127,
            expected,
        )
        == 0
    )
    with reference.installed("scalar"):
        actual = ops.quantized_conv2d(
            _nchw(x).contiguous(memory_format=torch.channels_last),
            torch.from_numpy(weights),
            torch.from_numpy(bias),
            [stride] * 2,
            [padding] * 2,
            [dilation] * 2,
            11,
            -4,
            torch.from_numpy(mults),
            torch.from_numpy(shifts),
            -128,
            127,
            torch.empty(0),
        )
    assert _nhwc_bytes(actual) == expected.tobytes()


@pytest.mark.parametrize(
    "shape",
    [
        (10, 10, 8, 1, 3, 3, 1, 1),
        (9, 9, 16, 1, 3, 3, 2, 1),
        (6, 6, 4, 2, 3, 3, 1, 0),
        (25, 5, 64, 1, 3, 3, 1, 1),
    ],
)
def test_depthwise_convolution(oracle, shape) -> None:
    h, w, c, multiplier, kh, kw, stride, padding = shape
    oc = c * multiplier
    generator = np.random.default_rng(h + w + c)
    x, weights = _int8(generator, 2, h, w, c), _int8(generator, 1, kh, kw, oc)
    bias = generator.integers(-20000, 20000, size=oc).astype(np.int32)
    mults = _multipliers(generator, oc)
    shifts = generator.integers(-10, -5, size=oc).astype(np.int32)
    oh, ow = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    expected = np.empty((2, oh, ow, oc), dtype=np.int8)
    assert (
        _call(
            oracle.oracle_depthwise,
            x,
            weights,
            bias,
            mults,
            shifts,
            2,
            h,
            w,
            c,
            multiplier,
            kh,
            kw,
            stride,
            stride,
            padding,
            padding,
            1,
            1,
            oh,
            ow,
            128,
            -128,
            -128,
            127,
            expected,
        )
        == 0
    )
    with reference.installed("scalar"):
        actual = ops.quantized_depthwise_conv2d(
            _nchw(x).contiguous(memory_format=torch.channels_last),
            torch.from_numpy(weights),
            torch.from_numpy(bias),
            [stride] * 2,
            [padding] * 2,
            [1, 1],
            multiplier,
            128,
            -128,
            torch.from_numpy(mults),
            torch.from_numpy(shifts),
            -128,
            127,
            torch.empty(0),
        )
    assert _nhwc_bytes(actual) == expected.tobytes()


TRANSPOSE_SHAPES = [  # (h, w, c, oc, kh, kw, stride, padding, output_padding)
    (6, 7, 8, 8, 2, 2, 2, 0, 0),
    (6, 7, 8, 5, 3, 3, 2, 0, 0),
    (6, 7, 8, 5, 3, 3, 2, 1, 0),
    (6, 7, 8, 5, 3, 3, 2, 1, 1),
    (6, 7, 8, 5, 3, 3, 1, 1, 0),
    (6, 7, 8, 5, 5, 5, 2, 2, 0),
    (1, 20, 4, 6, 1, 4, 2, 0, 0),
    (5, 4, 24, 4, 3, 3, 2, 0, 0),
    (5, 4, 24, 4, 3, 3, 2, 1, 0),
    (5, 4, 24, 4, 3, 3, 2, 1, 1),
    (4, 4, 4, 4, 4, 4, 2, 1, 0),
    (4, 4, 3, 2, 3, 3, 3, 0, 0),
]


@pytest.mark.parametrize("shape", TRANSPOSE_SHAPES)
def test_transpose_convolution(oracle, shape) -> None:
    """CMSIS-NN's transpose convolution against the reference (PyTorch's ConvTranspose2d
    arithmetic). Where arm_transpose_conv_s8 misplaces rows (a top padding that is not a
    multiple of the stride, or a kernel shorter than the stride, off the reverse
    convolution's path) the reference refuses, and the layer et-export lowers instead
    (passes/transpose_conv_rows.py: no top padding, then a crop of rows) is one CMSIS-NN
    computes right."""
    h, w, c, oc, kh, kw, stride, padding, output_padding = shape
    if direct_kernel_misplaces_rows(c, [stride, stride], padding, kh):
        with pytest.raises(ValueError, match="misplaces rows"):
            _transpose_convolution(oracle, shape, (padding, padding))
        # (With output padding the layer stays in float; a kernel shorter than the stride
        # gets zero rows first, tests/python/test_breadth_passes.py.)
        if not output_padding and kh >= stride:
            _transpose_convolution(oracle, shape, (0, padding))
    else:
        _transpose_convolution(oracle, shape, (padding, padding))


def _transpose_convolution(oracle, shape, padding: tuple[int, int]) -> None:
    h, w, c, oc, kh, kw, stride, _, output_padding = shape
    generator = np.random.default_rng(h * w + oc + c)
    x, weights = _int8(generator, 1, h, w, c), _int8(generator, oc, kh, kw, c)
    bias = generator.integers(-2000, 2000, size=oc).astype(np.int32)
    mults = _multipliers(generator, oc)
    shifts = generator.integers(-11, -5, size=oc).astype(np.int32)
    oh = (h - 1) * stride - 2 * padding[0] + kh + output_padding
    ow = (w - 1) * stride - 2 * padding[1] + kw + output_padding
    with reference.installed("scalar"):
        actual = ops.quantized_transpose_conv2d(
            _nchw(x).contiguous(memory_format=torch.channels_last),
            torch.from_numpy(weights),
            torch.from_numpy(bias),
            [stride] * 2,
            list(padding),
            [output_padding] * 2,
            [1, 1],
            11,
            -4,
            torch.from_numpy(mults),
            torch.from_numpy(shifts),
            -128,
            127,
            torch.empty(0),
            torch.empty(0),
        )
    expected = np.zeros((1, oh, ow, oc), dtype=np.int8)
    geometry = (1, h, w, c, oc, kh, kw, stride, stride, *padding, output_padding, output_padding)
    assert (
        _call(
            oracle.oracle_transpose_conv,
            x,
            weights,
            bias,
            mults,
            shifts,
            *geometry,
            oh,
            ow,
            11,
            -4,
            -128,
            127,
            expected,
        )
        == 0
    )
    assert _nhwc_bytes(actual) == expected.tobytes()


@pytest.mark.parametrize("columns", [1, 7, 511, 512, 513, 1000])
@pytest.mark.parametrize("with_bias", [True, False])
def test_fully_connected_s16(oracle, columns, with_bias) -> None:
    generator = np.random.default_rng(columns)
    batches, rows = 3, 9
    # The ranges et-export's 16x8 quantizer gives (passes/quantizer_int16.py).
    inputs = generator.integers(-32767, 32768, size=(batches, columns), dtype=np.int16)
    inputs[0] = 32767
    weights = generator.integers(-127, 128, size=(rows, columns), dtype=np.int8)
    weights[0] = 127
    biases = generator.integers(-(1 << 40), 1 << 40, size=rows, dtype=np.int64)
    for multiplier, shift, bounds in [
        (1 << 30, -20, (-32767, 32767)),
        (0x7FFF8000, -25, (0, 32767)),
        ((1 << 31) - 1, -30, (-1000, 1000)),
        (1518500250, 3, (-32768, 32767)),
        (1 << 30, -48, (-32768, 32767)),
    ]:
        expected = np.zeros((batches, rows), dtype=np.int16)
        bias = biases if with_bias else None
        arguments = (inputs, weights, bias, batches, columns, rows, multiplier, shift, *bounds)
        assert _call(oracle.oracle_fully_connected_s16, *arguments, expected) == 0
        actual = linear_s16.fully_connected_s16(
            torch.from_numpy(inputs),
            torch.from_numpy(weights),
            torch.from_numpy(biases) if with_bias else None,
            multiplier,
            shift,
            *bounds,
        )
        np.testing.assert_array_equal(actual.numpy(), expected)


CONV_S16_SHAPES = [  # (h, w, c, oc or depth multiplier, kh, kw, stride, padding, dilation)
    (10, 10, 3, 8, 3, 3, 1, 1, 1),
    (9, 9, 8, 5, 3, 3, 2, 1, 1),
    (1, 1, 33, 7, 1, 1, 1, 0, 1),
    (49, 10, 1, 64, 10, 4, 2, 1, 1),
    (7, 7, 4, 3, 3, 3, 1, 2, 2),
    (6, 6, 64, 9, 3, 3, 1, 1, 1),
]


def _s16_case(generator: np.random.Generator, shape: tuple, depthwise: bool):
    """Inputs over the whole range 16x8 gives them (a corner at +32767), weights in
    [-127, 127], biases to 2^36, per-channel multipliers and shifts."""
    h, w, c, count, kh, kw, stride, padding, dilation = shape
    oc = c * count if depthwise else count
    x = generator.integers(-32767, 32768, size=(2, h, w, c), dtype=np.int16)
    x[0, : h // 2, : w // 2] = 32767
    weights = generator.integers(-127, 128, size=(1, kh, kw, oc) if depthwise else (oc, kh, kw, c))
    weights = weights.astype(np.int8)
    bias = generator.integers(-(1 << 36), 1 << 36, size=oc, dtype=np.int64)
    mults = _multipliers(generator, oc)
    shifts = generator.integers(-24, -12, size=oc).astype(np.int32)
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    geometry = (kh, kw, stride, stride, padding, padding, dilation, dilation, oh, ow)
    return x, weights, bias, mults, shifts, oc, geometry


@pytest.mark.parametrize("shape", CONV_S16_SHAPES)
@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("with_bias", [True, False])
def test_convolution_s16(oracle, shape, depthwise, with_bias) -> None:
    generator = np.random.default_rng(sum(shape) + depthwise)
    x, weights, bias, mults, shifts, oc, geometry = _s16_case(generator, shape, depthwise)
    bias_or_none = bias if with_bias else None
    h, w, c, count = shape[:4]
    kh, kw, stride, _, padding, _, dilation, _, oh, ow = geometry
    expected = np.empty((2, oh, ow, oc), dtype=np.int16)
    function = oracle.oracle_depthwise_s16 if depthwise else oracle.oracle_convolve_s16
    arguments = (x, weights, bias_or_none, mults, shifts, 2, h, w, c, count, *geometry)
    assert _call(function, *arguments, -32767, 30000, expected) == 0
    args = (
        torch.from_numpy(weights),
        torch.from_numpy(bias) if with_bias else None,
        [stride] * 2,
        [padding] * 2,
        [dilation] * 2,
    )
    nchw = _nchw(x).contiguous(memory_format=torch.channels_last)
    quantization = (torch.from_numpy(mults), torch.from_numpy(shifts), -32767, 30000)
    if depthwise:
        actual = conv_s16.depthwise_conv2d_s16(nchw, *args, count, *quantization)
    else:
        actual = conv_s16.conv2d_s16(nchw, *args, *quantization)
    assert _nhwc_bytes(actual) == expected.tobytes()


@pytest.mark.parametrize("left_shift", [-15, -3, -1, 0, 1, 5])
@pytest.mark.parametrize("kind", ["sigmoid", "tanh"])
def test_activation_s16(oracle, kind, left_shift) -> None:
    # Every int16 value: the table's ends, its saturation and both signs.
    values = np.arange(-32768, 32768, dtype=np.int16)
    expected = np.zeros_like(values)
    assert (
        _call(
            oracle.oracle_activation_s16, values, values.size, left_shift, kind == "tanh", expected
        )
        == 0
    )
    actual = gates_s16.activation_s16(torch.from_numpy(values), left_shift, kind)
    np.testing.assert_array_equal(actual.numpy(), expected)


LSTM_SHAPES = [
    # batch, steps, input size, hidden size, time major
    (1, 49, 10, 32, 0),
    (2, 7, 3, 5, 1),
    (3, 4, 17, 9, 0),
    (1, 1, 1, 1, 1),
    (2, 11, 33, 64, 1),
]


@pytest.mark.parametrize("shape", LSTM_SHAPES)
@pytest.mark.parametrize("saturating", [False, True], ids=["realistic", "saturating"])
@pytest.mark.parametrize("carried", [False, True], ids=["zero_state", "carried_state"])
def test_lstm(oracle, shape, saturating, carried) -> None:
    batch, steps, input_size, hidden, time_major = shape
    generator = np.random.default_rng(hash(shape) % 1000 + saturating)
    x = _int8(generator, *((steps, batch) if time_major else (batch, steps)), input_size)
    weights = torch.randn(4 * hidden, input_size) * (3 if saturating else 0.4)
    recurrent = torch.randn(4 * hidden, hidden) * (3 if saturating else 0.4)
    bias = torch.randn(4 * hidden)
    # A saturating layer's cell state grows past its calibrated range, and its gates past
    # Q3.12's.
    power = lstm.cell_scale_power(0.5 if saturating else 4.0)
    params = lstm.parameters(weights, recurrent, bias, 0.05, -3, 1 / 128, 5, power)
    expected = np.zeros(x.shape[:2] + (hidden,), dtype=np.int8)
    operands = [
        params.input_weights.numpy().copy(),
        params.hidden_weights.numpy().copy(),
        params.input_biases.numpy().copy(),
        params.hidden_biases.numpy().copy(),
        params.gate_scales.numpy().copy(),
        params.state_scales.numpy().copy(),
    ]
    geometry = (batch, steps, input_size, hidden, time_major)
    # A carried state (et-export --stateful): any h, and a cell state up to past the range.
    hidden_state = _int8(generator, batch, hidden) if carried else None
    cell_state = (
        generator.integers(-32768, 32768, size=(batch, hidden), dtype=np.int16) if carried else None
    )
    final_h = None if hidden_state is None else hidden_state.copy()
    final_c = None if cell_state is None else cell_state.copy()
    assert (
        _call(oracle.oracle_lstm, x, *geometry, *operands, 5, power, expected, final_h, final_c)
        == 0
    )
    actual, h, c = lstm.lstm(
        torch.from_numpy(x),
        params.input_weights,
        params.hidden_weights,
        params.input_biases,
        params.hidden_biases,
        params.gate_scales,
        params.state_scales,
        5,
        power,
        not time_major,
        None if hidden_state is None else torch.from_numpy(hidden_state),
        None if cell_state is None else torch.from_numpy(cell_state),
    )
    np.testing.assert_array_equal(actual.numpy(), expected)
    if carried:
        np.testing.assert_array_equal(h.numpy(), final_h)
        np.testing.assert_array_equal(c.numpy(), final_c)
    assert expected.size < 8 or len(np.unique(expected)) > 2  # the outputs move
