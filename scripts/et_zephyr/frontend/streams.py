# SPDX-License-Identifier: Apache-2.0
"""Samples of a stateful model (`et-export --stateful`) as streams of hops.

A stateful program takes a hop of frames, the example inputs' length; its calibration and
held-out samples may be whole sequences, as the model was trained on, a whole number of
hops long along one dimension (the time): each is cut into hops fed in order, the state
carried from one to the next, so the quantization sees the states a stream reaches, not
only those of one hop from nothing.
"""

from __future__ import annotations

from ..errors import ExportError
from .loading import Inputs

# One sample's hops, in order.
Stream = list[Inputs]


def as_streams(samples: list[Inputs], example_inputs: Inputs, stateful: bool) -> list[Stream]:
    """Each sample as its hops (stateful), or as a stream of itself alone."""
    if not stateful:
        return [[sample] for sample in samples]
    return [hops(sample, example_inputs) for sample in samples]


def hops(sample: Inputs, example_inputs: Inputs) -> Stream:
    """The sample cut into pieces of the example inputs' shape along the one dimension
    where it is longer (each input along the same one)."""
    dim = _time_dim(sample, example_inputs)
    if dim is None:
        return [tuple(sample)]
    count = sample[0].shape[dim] // example_inputs[0].shape[dim]
    length = example_inputs[0].shape[dim]
    return [
        tuple(t.narrow(dim, k * length, length).contiguous() for t in sample) for k in range(count)
    ]


def _time_dim(sample: Inputs, example_inputs: Inputs) -> int | None:
    expected = [tuple(t.shape) for t in example_inputs]
    got = [tuple(t.shape) for t in sample]
    if got == expected:
        return None
    dims = {
        d
        for shape, hop in zip(got, expected)
        if len(shape) == len(hop)
        for d, (size, hop_size) in enumerate(zip(shape, hop))
        if size != hop_size
    }
    dim = dims.pop() if len(dims) == 1 else None
    if (
        dim is None
        or len(got) != len(expected)
        or any(len(s) != len(h) for s, h in zip(got, expected))
        or any(s[dim] % h[dim] for s, h in zip(got, expected))
        or len({s[dim] // h[dim] for s, h in zip(got, expected)}) != 1
    ):
        raise ExportError(
            f"a sample has shapes {got}: with --stateful, expected {expected} or a whole "
            "number of them along one dimension (the time)"
        )
    return dim


def concatenated(streams: list[Stream]) -> Stream:
    """All hops of all streams, one after the other: one stream."""
    return [hop for stream in streams for hop in stream]
