# SPDX-License-Identifier: Apache-2.0
"""et_zephyr.reference: the host arithmetic of the operators whose device results
ExecuTorch's Python does not reproduce, at their rounding edges.

Each vectorised implementation is checked against a literal, one-element-at-a-time
transcription of the C code below (C's truncating division and 32-bit wrapping
spelled out), on the cases that tell roundings apart: exact midpoints, saturation,
negative and large shifts, extreme zero points. Where ExecuTorch's Python gives
another answer on such a case, the test says so: that is the fault the module fixes.
tests/python/test_reference_cmsis_nn.py checks the same functions against CMSIS-NN's
own C code where a CMSIS-NN source tree is at hand.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from et_zephyr import reference
from et_zephyr.reference import convolution, edges, fixed_point, matmul, pooling, softmax


def _wrap(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def _c_div(a: int, b: int) -> int:
    """C's integer division: truncation toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def _c_requantize(value: int, multiplier: int, shift: int) -> int:
    """arm_nn_requantize without CMSIS_NN_USE_SINGLE_ROUNDING, one int32 at a time."""
    value = _wrap(value * (1 << max(shift, 0)))
    high = _wrap((value * multiplier + (1 << 30)) >> 31)
    exponent = max(-shift, 0)
    mask = (1 << exponent) - 1
    remainder = high & mask
    result = high >> exponent
    threshold = (mask >> 1) + (1 if result < 0 else 0)
    return result + (1 if remainder > threshold else 0)


def _c_mul_sat(a: int, b: int) -> int:
    """arm_nn_doubling_high_mult."""
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    nudge = 1 - (1 << 30) if (a < 0) != (b < 0) else 1 << 30
    return _wrap(_c_div(nudge + a * b, 1 << 31))


REQUANTIZE_CASES = [
    (value, multiplier, shift)
    for value in (
        0,
        1,
        -1,
        3,
        -3,
        255,
        -256,
        1 << 20,
        -(1 << 20),
        123457,
        -123457,
        (1 << 31) - 1,
        -(1 << 31),
        1 << 24,
        -(1 << 24) - 1,
    )
    for multiplier in (1 << 30, (1 << 31) - 1, 1518500250, 1073741825)
    for shift in (-31, -20, -9, -8, -1, 0, 1, 4, 8)
]


def test_requantize_matches_the_c_code_at_its_edges() -> None:
    values, multipliers, shifts = (torch.tensor(column) for column in zip(*REQUANTIZE_CASES))
    actual = fixed_point.requantize(values, multipliers, shifts)
    expected = [_c_requantize(*case) for case in REQUANTIZE_CASES]
    assert actual.tolist() == expected


def test_requantize_rounds_twice_as_cmsis_nn_does() -> None:
    # The high multiply rounds midpoints up: value * 2^30 / 2^31 = +-2.5, +-1.5.
    halves = fixed_point.requantize(torch.tensor([5, -5, 3, -3]), 1 << 30, 0)
    assert halves.tolist() == [3, -2, 2, -1]
    # The rounding right shift takes them away from zero: 20 / 8 = +-2.5.
    shifted = fixed_point.requantize(torch.tensor([5 << 3, -(5 << 3)]), 1 << 30, -3)
    assert shifted.tolist() == [3, -3]


def test_requantize_wraps_its_left_shift_like_int32() -> None:
    # 2^28 << 4 overflows int32 in C: the product wraps to 0 before the multiply.
    assert fixed_point.requantize(torch.tensor([1 << 28]), 1 << 30, 4).item() == 0


def test_saturating_doubling_high_multiply() -> None:
    cases = [
        (-(1 << 31), -(1 << 31)),
        (-(1 << 31), (1 << 31) - 1),
        (3, -(1 << 30)),
        (-3, 1 << 30),
        (1 << 30, 1 << 30),
        (-7, 715827883),
        (7, 715827883),
    ]
    a, b = (torch.tensor(column) for column in zip(*cases))
    assert fixed_point.doubling_high_mult(a, b).tolist() == [_c_mul_sat(*c) for c in cases]


def _c_avgpool(x: np.ndarray, kernel, stride, padding) -> np.ndarray:
    """arm_avgpool_s8's reference C path on one NHWC image."""
    height, width, channels = x.shape
    out_h = (height + 2 * padding[0] - kernel[0]) // stride[0] + 1
    out_w = (width + 2 * padding[1] - kernel[1]) // stride[1] + 1
    out = np.zeros((out_h, out_w, channels), dtype=np.int8)
    for i_y in range(out_h):
        for i_x in range(out_w):
            for c in range(channels):
                total = count = 0
                for k_y in range(
                    i_y * stride[0] - padding[0], i_y * stride[0] - padding[0] + kernel[0]
                ):
                    for k_x in range(
                        i_x * stride[1] - padding[1], i_x * stride[1] - padding[1] + kernel[1]
                    ):
                        if 0 <= k_y < height and 0 <= k_x < width:
                            total += int(x[k_y, k_x, c])
                            count += 1
                half = count // 2
                mean = _c_div(total + half, count) if total > 0 else _c_div(total - half, count)
                out[i_y, i_x, c] = min(max(mean, -128), 127)
    return out


def _nhwc(array: np.ndarray) -> torch.Tensor:
    """An NHWC int8 image as the logical NCHW, channels_last tensor the operators take."""
    return torch.from_numpy(array).unsqueeze(0).permute(0, 3, 1, 2)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding"),
    [
        ((8, 8, 16), (8, 8), (8, 8), (0, 0)),  # global pool of 64: midpoints at 32 mod 64
        ((5, 25, 8), (5, 25), (1, 1), (0, 0)),  # KWS's 125-element pool
        ((7, 9, 3), (3, 3), (2, 2), (1, 1)),  # padded windows count fewer elements
        ((6, 6, 5), (2, 2), (2, 2), (0, 0)),
    ],
)
def test_average_pool_matches_the_c_code(shape, kernel, stride, padding) -> None:
    generator = np.random.default_rng(sum(shape))
    for _ in range(8):
        image = generator.integers(-128, 128, size=shape, dtype=np.int8)
        actual = pooling.avg_pool2d(_nhwc(image), kernel, stride, padding, 0, 0, 0, torch.empty(0))
        expected = _c_avgpool(image, kernel, stride, padding)
        assert actual.permute(0, 2, 3, 1)[0].numpy().tobytes() == expected.tobytes()


def _c_max_pool(x: np.ndarray, kernel, stride, padding, out_hw, low, high) -> np.ndarray:
    """arm_max_pool_s8 on one NHWC image: each window's positions inside the input
    (a channel vector at a time), then the clamp."""
    height, width, _ = x.shape
    out = np.zeros((*out_hw, x.shape[2]), dtype=np.int8)
    for i_y in range(out_hw[0]):
        base_y = i_y * stride[0] - padding[0]
        for i_x in range(out_hw[1]):
            base_x = i_x * stride[1] - padding[1]
            window = x[
                max(0, base_y) : min(height, base_y + kernel[0]),
                max(0, base_x) : min(width, base_x + kernel[1]),
            ]
            out[i_y, i_x] = window.reshape(-1, x.shape[2]).max(axis=0)
    return np.clip(out, low, high)


MAX_POOL_CASES = [  # (h, w, c), kernel, stride, padding
    ((1, 1, 3), (1, 1), (1, 1), (0, 0)),
    ((16, 16, 8), (2, 2), (2, 2), (0, 0)),  # 256 pixels: torch's int8 pool refuses it
    ((17, 23, 5), (3, 3), (2, 2), (1, 1)),
    ((9, 31, 7), (3, 2), (2, 3), (1, 0)),
    ((48, 48, 1), (48, 48), (48, 48), (0, 0)),
    ((256, 256, 3), (3, 3), (2, 2), (1, 1)),
    ((1, 200, 16), (1, 5), (1, 3), (0, 2)),  # a MaxPool1d as the 1-D family runs it
]


@pytest.mark.parametrize(("shape", "kernel", "stride", "padding"), MAX_POOL_CASES)
def test_max_pool_matches_the_c_code_at_any_size(shape, kernel, stride, padding) -> None:
    generator = np.random.default_rng(sum(shape))
    image = generator.integers(-128, 128, size=shape, dtype=np.int8)
    out_hw = tuple(
        (size + 2 * pad - k) // step + 1
        for size, pad, k, step in zip(shape[:2], padding, kernel, stride, strict=True)
    )
    for low, high in ((-128, 127), (-20, 90)):
        actual = pooling.max_pool2d(
            _nhwc(image), kernel, stride, padding, [1, 1], False, 3, 3, low, high
        )
        expected = _c_max_pool(image, kernel, stride, padding, out_hw, low, high)
        assert actual.permute(0, 2, 3, 1)[0].numpy().tobytes() == expected.tobytes()


def test_executorch_python_max_pool_refuses_what_the_device_runs() -> None:
    """The export-killing fault: torch's int8 max pool refuses 128 pixels and more."""
    from executorch.backends.cortex_m.ops import operators

    image = _nhwc(np.zeros((16, 16, 4), dtype=np.int8))
    args = ([2, 2], [2, 2], [0, 0], [1, 1], False, 0, 0, -128, 127)
    with pytest.raises(RuntimeError, match="input_depth"):
        operators.quantized_max_pool2d_impl(image, *args)
    assert tuple(pooling.max_pool2d(image, *args).shape) == (1, 4, 8, 8)


def test_max_pool_refuses_a_window_with_no_input() -> None:
    """arm_max_pool_s8 leaves such an output unwritten: the reference has no value for it."""
    image = _nhwc(np.zeros((4, 4, 2), dtype=np.int8))
    with pytest.raises(ValueError, match="padding"):
        pooling.max_pool2d(image, [2, 2], [5, 5], [2, 2], [1, 1], False, 0, 0, -128, 127)


def test_average_pool_rounds_the_raw_mean_half_away_from_zero() -> None:
    # Four windows of two whose sums are 3, -3, 1 and -1: means 1.5, -1.5, 0.5, -0.5.
    image = np.array([[[1], [2], [-1], [-2], [0], [1], [0], [-1]]], dtype=np.int8)
    result = pooling.avg_pool2d(_nhwc(image), (1, 2), (1, 2), (0, 0), 0, 0, 0, torch.empty(0))
    assert result.flatten().tolist() == [2, -2, 1, -1]


def test_executorch_python_average_pool_differs_at_a_midpoint() -> None:
    """The ResNet-8 fault: ExecuTorch's float average rounds around the zero point
    with ties to even; the device rounds the raw mean away from zero."""
    from executorch.backends.cortex_m.ops import operators

    image = _nhwc(np.array([[[-3], [-4]]], dtype=np.int8))  # mean -3.5
    args = ((1, 2), (1, 2), (0, 0), -5, 1 << 30, 0, torch.empty(0))
    assert pooling.avg_pool2d(image, *args).item() == -4
    # (-3 + 5 + -4 + 5) / 2 = 1.5 steps above the zero point -> 2 (even) -> -3.
    assert operators.quantized_avg_pool2d_impl(image, *args).item() == -3


def _f32(value: Fraction) -> Fraction:
    """A rational rounded to the nearest float32, ties to even (normal range)."""
    if value == 0:
        return Fraction(0)
    exponent = math.floor(math.log2(abs(value)))
    while abs(value) >= Fraction(2) ** (exponent + 1):
        exponent += 1
    while abs(value) < Fraction(2) ** exponent:
        exponent -= 1
    ulp = Fraction(2) ** (exponent - 23)
    return _round_even(value / ulp) * ulp


def _round_even(value: Fraction) -> int:
    floor = math.floor(value)
    rest = value - floor
    return floor + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2) else 0)


def _c_quantize(x: float, scale: float, zero_point: int, helium_lane: bool) -> int:
    """op_quantize_per_tensor.cpp on one element: the scalar loop, or a Helium block's
    vfmaq_f32(1.5 * 2^23, x, inv_scale) bit trick, then the int8 clamp."""
    inv_scale = _f32(Fraction(1) / _f32(Fraction(scale)))
    product = Fraction(float(np.float32(x))) * inv_scale
    if not helium_lane:
        value = zero_point + _round_even(_f32(product))
    else:
        fused = float(_f32(Fraction(12582912) + product))
        bits = int(np.array(fused, dtype=np.float32).view(np.int32))
        value = _wrap(bits - (0x4B400000 - zero_point))
        value = (value + (1 << 15)) % (1 << 16) - (1 << 15)  # vmovnbq_s32 to int16
    return min(max(value, -128), 127)


def _tie_after_float_rounding(scale: float) -> float:
    """An input whose exact product with 1/scale lies just below 3.5 but rounds to
    3.5 in float32: nearbyint then gives 4, the fused multiply-add 3."""
    inv_scale = np.float32(1) / np.float32(scale)
    x = np.float32(3.5) / inv_scale
    for _ in range(64):
        exact = Fraction(float(x)) * Fraction(float(inv_scale))
        if exact < Fraction(7, 2) and _f32(exact) == Fraction(7, 2):
            return float(x)
        x = np.nextafter(x, np.float32(0))
    raise AssertionError("no such input near 3.5 steps")


def test_quantize_rounds_as_the_kernel_does_per_lane() -> None:
    scale, zero_point = 0.1, -3
    generator = np.random.default_rng(0)
    edge = _tie_after_float_rounding(scale)
    values = np.concatenate(
        [
            np.array(
                [edge, -edge, 0.25, -0.25, 0.05, -0.05, 0.15, 1e6, -1e6, 419430.0 * 1.5],
                dtype=np.float32,
            ),
            (generator.standard_normal(30) * 8).astype(np.float32),
        ]
    )
    for helium in (False, True):
        for count in (16, 20, len(values)):
            chunk = torch.from_numpy(values[:count].copy())
            actual = edges.quantize_per_tensor(
                chunk, scale, zero_point, -128, 127, torch.int8, helium
            )
            block = count // 16 * 16 if helium else 0
            expected = [
                _c_quantize(float(x), scale, zero_point, k < block)
                for k, x in enumerate(values[:count])
            ]
            assert actual.tolist() == expected, (helium, count)


def test_helium_and_scalar_quantize_differ_on_a_float_rounded_midpoint() -> None:
    x = torch.full((16,), _tie_after_float_rounding(0.1))
    scalar = edges.quantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8, helium=False)
    helium = edges.quantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8, helium=True)
    assert set(scalar.tolist()) == {4} and set(helium.tolist()) == {3}


def test_quantize_follows_memory_order_for_the_helium_tail() -> None:
    # 1x2x3x3 channels_last: the tail is the last two elements in NHWC order.
    logical = torch.full((1, 2, 3, 3), _tie_after_float_rounding(0.1))
    x = logical.contiguous(memory_format=torch.channels_last)
    result = edges.quantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8, helium=True)
    nhwc = result.permute(0, 2, 3, 1).reshape(-1).tolist()
    assert nhwc == [3] * 16 + [4] * 2


def test_dequantize_is_one_float32_multiply() -> None:
    q = torch.arange(-128, 128, dtype=torch.int8)
    result = edges.dequantize_per_tensor(q, 0.0123, 7)
    expected = (np.arange(-128, 128) - 7).astype(np.float32) * np.float32(0.0123)
    assert result.numpy().tobytes() == expected.tobytes()


def _c_exp_on_negative(value: int) -> int:
    mask_bits = (1 << 24) - 1
    minus_quarter = (value & mask_bits) - (1 << 24)
    remainder = minus_quarter - value
    x = _wrap((minus_quarter << 5) + (1 << 28))
    x2 = _c_mul_sat(x, x)
    inner = _wrap(_c_div_pow2(_c_mul_sat(x2, x2), 2) + _c_mul_sat(x2, x))
    result = _wrap(
        1895147668
        + _c_mul_sat(
            1895147668, _wrap(x + _c_div_pow2(_wrap(_c_mul_sat(inner, 715827883) + x2), 1))
        )
    )
    for bit, factor in enumerate(
        (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242), start=24
    ):
        if remainder & (1 << bit):
            result = _c_mul_sat(result, factor)
    return (1 << 31) - 1 if value == 0 else result


def _c_div_pow2(dividend: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    result = dividend >> exponent
    threshold = (mask >> 1) + (1 if result < 0 else 0)
    return result + (1 if (dividend & mask) > threshold else 0)


def _c_mul_pow2(value: int, exponent: int) -> int:
    threshold = (1 << (31 - exponent)) - 1
    if value > threshold:
        return (1 << 31) - 1
    if value < -threshold:
        return -(1 << 31)
    return _wrap(value << exponent)


def _c_one_over_one_plus_x(value: int) -> int:
    total = value + (1 << 31) - 1
    half = _c_div(total + (1 if total >= 0 else -1), 2)
    x = _wrap(1515870810 + _c_mul_sat(half, -1010580540))
    for _ in range(3):
        x = _wrap(x + _c_mul_pow2(_c_mul_sat(x, _wrap((1 << 29) - _c_mul_sat(half, x))), 2))
    return _c_mul_pow2(x, 1)


def _c_softmax_row(row: list[int], mult: int, shift: int, diff_min: int) -> list[int]:
    """arm_nn_softmax_common_s8 for one int8 row."""
    largest = max(row)
    total = 0
    for value in row:
        diff = value - largest
        if diff >= diff_min:
            total += _c_div_pow2(_c_exp_on_negative(_c_mul_sat(diff * (1 << shift), mult)), 12)
    headroom = 32 - total.bit_length()
    scale = _c_one_over_one_plus_x(_wrap(_wrap(total << headroom) + (1 << 31)))
    out = []
    for value in row:
        diff = value - largest
        if diff < diff_min:
            out.append(-128)
            continue
        exp = _c_exp_on_negative(_c_mul_sat(diff * (1 << shift), mult))
        res = _c_div_pow2(_c_mul_sat(scale, exp), 12 - headroom + 23) - 128
        out.append(min(max(res, -128), 127))
    return out


def _softmax_params(input_scale: float) -> tuple[int, int, int]:
    from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import _compute_softmax_params

    return _compute_softmax_params(input_scale)


@pytest.mark.parametrize("input_scale", [0.02, 0.0625, 0.1, 0.25, 1.0])
def test_softmax_matches_the_c_code(input_scale: float) -> None:
    mult, shift, diff_min = _softmax_params(input_scale)
    generator = np.random.default_rng(int(input_scale * 1000))
    rows = generator.integers(-128, 128, size=(24, 12)).tolist()
    rows += [[5] * 12, [-128] * 11 + [127], [127] * 12, list(range(-128, 128, 22))]
    actual = softmax.softmax(
        torch.tensor(rows, dtype=torch.int8), -1, 0, -128, mult, shift, diff_min
    )
    assert actual.tolist() == [_c_softmax_row(row, mult, shift, diff_min) for row in rows]
    # And it is a softmax: within 2 output steps of the float one.
    probabilities = torch.softmax(torch.tensor(rows, dtype=torch.float64) * input_scale, dim=-1)
    assert ((actual.double() + 128) / 256 - probabilities).abs().max() <= 2 / 256


def test_batch_matmul_is_exact_where_float32_is_not() -> None:
    generator = torch.Generator().manual_seed(3)
    lhs = torch.randint(100, 128, (1, 2, 2048), dtype=torch.int8, generator=generator)
    rhs = torch.randint(100, 128, (1, 3, 2048), dtype=torch.int8, generator=generator)
    multiplier, shift = 1 << 30, -18
    actual = matmul.batch_matmul(lhs, 5, rhs, 7, -2, multiplier, shift, torch.empty(0))
    sums = (lhs.long() + 5) @ (rhs.long() + 7).transpose(1, 2)  # ~ 3e7: past float32's 2^24
    expected = [
        [
            [min(max(_c_requantize(int(s), multiplier, shift) - 2, -128), 127) for s in row]
            for row in batch
        ]
        for batch in sums.tolist()
    ]
    assert actual.tolist() == expected


def test_the_reference_replaces_executorchs_python_inside_the_block() -> None:
    image = _nhwc(np.array([[[-3], [-4]]], dtype=np.int8))
    args = ([1, 2], [1, 2], [0, 0], -5, 1 << 30, 0, torch.empty(0))
    assert torch.ops.cortex_m.quantized_avg_pool2d(image, *args).item() == -3  # ExecuTorch's
    with reference.installed("scalar"):
        assert torch.ops.cortex_m.quantized_avg_pool2d(image, *args).item() == -4
        x = torch.full((16,), _tie_after_float_rounding(0.1))
        quantized = torch.ops.cortex_m.quantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8)
        assert set(quantized.tolist()) == {4}
    with reference.installed("mve"):
        quantized = torch.ops.cortex_m.quantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8)
        assert set(quantized.tolist()) == {3}
    assert torch.ops.cortex_m.quantized_avg_pool2d(image, *args).item() == -3  # back again


def _c_transpose_conv(x, weights, bias, stride, padding, out_hw, offsets, mults, shifts):
    """arm_transpose_conv_s8 on one NHWC image: every input pixel's (x + input_offset) *
    weight products scattered into an int32 buffer that starts at the bias, then the
    outputs `padding` below and right of its corner requantized (int32 wrapping kept)."""
    height, width, _ = x.shape
    out_channels, kernel_h, kernel_w, _ = weights.shape
    input_offset, output_offset = offsets
    full = np.zeros(
        ((height - 1) * stride[0] + kernel_h, (width - 1) * stride[1] + kernel_w, out_channels),
        dtype=np.int64,
    )
    full += bias
    shifted = x.astype(np.int64) + input_offset
    w = weights.astype(np.int64)
    for i_y in range(height):
        for i_x in range(width):
            products = np.einsum("ohwi,i->hwo", w, shifted[i_y, i_x])
            y0, x0 = i_y * stride[0], i_x * stride[1]
            full[y0 : y0 + kernel_h, x0 : x0 + kernel_w] += products
    out = np.zeros((*out_hw, out_channels), dtype=np.int8)
    for o_y in range(out_hw[0]):
        for o_x in range(out_hw[1]):
            for c in range(out_channels):
                y, xx = o_y + padding[0], o_x + padding[1]
                total = int(full[y, xx, c]) if y < full.shape[0] and xx < full.shape[1] else 0
                value = _c_requantize(_wrap(total), int(mults[c]), int(shifts[c]))
                out[o_y, o_x, c] = min(max(value + output_offset, -128), 127)
    return out


TRANSPOSE_CASES = [  # (h, w, c), out channels, kernel, stride, padding, output padding
    ((6, 7, 8), 8, (2, 2), (2, 2), (0, 0), (0, 0)),
    ((6, 7, 24), 5, (3, 3), (2, 2), (1, 1), (0, 0)),  # the reverse convolution's path
    ((6, 7, 8), 5, (3, 3), (2, 2), (2, 1), (0, 0)),  # top padding a multiple of the stride
    ((5, 4, 24), 4, (3, 3), (2, 2), (0, 0), (0, 0)),
    ((1, 20, 4), 6, (1, 4), (1, 2), (0, 1), (0, 0)),
    ((4, 4, 3), 2, (3, 3), (3, 3), (0, 0), (0, 0)),
    ((5, 5, 20), 3, (3, 3), (2, 2), (1, 1), (1, 1)),
    ((3, 3, 200), 2, (3, 3), (1, 1), (0, 0), (0, 0)),  # sums far past float32's 2^24
]


@pytest.mark.parametrize(
    ("shape", "out_channels", "kernel", "stride", "padding", "output_padding"), TRANSPOSE_CASES
)
def test_transpose_convolution_matches_the_c_code(
    shape, out_channels, kernel, stride, padding, output_padding
) -> None:
    generator = np.random.default_rng(sum(shape) + out_channels)
    high = shape[2] == 200
    if high:  # every sum near its largest: (127 + 127) * 127 * 1800 ~ 5.8e7
        x = np.full(shape, 127, dtype=np.int8)
        weights = np.full((out_channels, *kernel, shape[2]), 127, dtype=np.int8)
    else:
        x = generator.integers(-128, 128, size=shape, dtype=np.int8)
        weights = generator.integers(
            -127, 128, size=(out_channels, *kernel, shape[2]), dtype=np.int8
        )
    bias = generator.integers(-5000, 5000, size=out_channels).astype(np.int32)
    mults = generator.integers(1 << 30, (1 << 31) - 1, size=out_channels).astype(np.int32)
    shifts = generator.integers(-24 if high else -10, -6, size=out_channels).astype(np.int32)
    offsets = (127, -3)
    out_hw = tuple(
        (size - 1) * step - 2 * pad + k + extra
        for size, step, pad, k, extra in zip(
            shape[:2], stride, padding, kernel, output_padding, strict=True
        )
    )
    actual = convolution.transpose_conv2d(
        _nhwc(x).contiguous(memory_format=torch.channels_last),
        torch.from_numpy(weights),
        torch.from_numpy(bias),
        list(stride),
        list(padding),
        list(output_padding),
        [1, 1],
        *offsets,
        torch.from_numpy(mults),
        torch.from_numpy(shifts),
        -128,
        127,
        torch.empty(0),
        torch.empty(0),
    )
    expected = _c_transpose_conv(x, weights, bias, stride, padding, out_hw, offsets, mults, shifts)
    assert actual.permute(0, 2, 3, 1)[0].numpy().tobytes() == expected.tobytes()


def test_transpose_convolution_refuses_what_cmsis_nn_misplaces() -> None:
    """arm_transpose_conv_s8 (16 input channels or fewer, or a stride above 2) puts its
    rows one place off for a top padding that is not a multiple of the stride."""
    x = torch.zeros(1, 8, 4, 4, dtype=torch.int8)
    weights = torch.zeros(2, 3, 3, 8, dtype=torch.int8)
    terms = (torch.full((2,), 1 << 30, dtype=torch.int32), torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="top padding of 1 and a kernel height of 3 at stride 2"):
        convolution.transpose_conv2d(
            x,
            weights,
            None,
            [2, 2],
            [1, 1],
            [0, 0],
            [1, 1],
            0,
            0,
            *terms,
            -128,
            127,
            torch.empty(0),
            torch.empty(0),
        )
