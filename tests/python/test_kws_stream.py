# SPDX-License-Identifier: Apache-2.0
"""The streaming keyword sample (samples/kws_stream): its detection rule, and that the
stream gen_stream.py runs on the host is the reference et-export computes.

The firmware compares its MFCCs, scores and detections with the header gen_stream.py
writes at build time; those must be what et-export's host reference says the program
computes, one frame a run with the LSTM's state carried, or the firmware's "PASS"
would compare the device with the wrong host.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from conftest import REPO
from et_zephyr import api
from et_zephyr.artifacts import write_outputs
from et_zephyr.audio import mfcc

SAMPLE = REPO / "samples/kws_stream"
# Of the 12 shipped test clips; benchmarks/RESULTS.md has the float accuracy on the whole
# test split and the detector's hits and false alarms on it as a stream.
MIN_CORRECT_TEST_CLIPS = 6


def _module(name: str) -> ModuleType:
    if str(SAMPLE) not in sys.path:
        sys.path.insert(0, str(SAMPLE))  # its modules import model.py by name
    spec = importlib.util.spec_from_file_location(f"kws_stream_{name}", SAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


detections = _module("detections")
gen_stream = _module("gen_stream")
model = _module("model")
YES, SILENCE = model.LABELS.index("yes"), model.LABELS.index("_silence_")


def _scores(best: list[int], margin: float = 5.0) -> np.ndarray:
    scores = np.zeros((len(best), len(model.LABELS)), dtype=np.float32)
    scores[np.arange(len(best)), best] = margin
    return scores


def test_a_keyword_is_heard_once_after_five_clear_frames_as_best() -> None:
    hold = detections.HOLD_FRAMES
    assert detections.detect(_scores([YES] * (hold - 1) + [SILENCE] * 9)) == []
    assert detections.detect(_scores([SILENCE] + [YES] * 20)) == [(hold, YES)]
    twice = [YES] * hold + [SILENCE] + [YES] * hold
    assert detections.detect(_scores(twice)) == [(hold - 1, YES), (2 * hold, YES)]
    assert detections.detect(_scores([SILENCE] * 20)) == []


def test_a_keyword_must_lead_every_other_class_by_the_margin() -> None:
    hold = detections.HOLD_FRAMES
    assert detections.detect(_scores([YES] * hold, margin=detections.MARGIN)) == [(hold - 1, YES)]
    below = np.nextafter(np.float32(detections.MARGIN), np.float32(0))
    assert detections.detect(_scores([YES] * hold, margin=float(below))) == []
    # A frame without a clear lead restarts the count.
    scores = _scores([YES] * (2 * hold))
    scores[hold - 1, SILENCE] = 4.0
    assert detections.detect(scores) == [(2 * hold - 1, YES)]


def test_equal_best_scores_are_no_clear_lead() -> None:
    scores = np.zeros((2 * detections.HOLD_FRAMES, len(model.LABELS)), dtype=np.float32)
    scores[:, [YES, 0]] = 5.0  # "down" is class 0
    assert detections.detect(scores) == []


def test_shipped_weights_classify_the_shipped_test_clips() -> None:
    """train.py's test_clips.npz: one held-out clip a class, after 0.5 s of another."""
    net, (hop,), calibration = model.kws_stream()
    assert hop.shape == (1, 1, mfcc.COEFFICIENTS) and len(calibration) == 16
    with np.load(model.WEIGHTS.with_name("test_clips.npz")) as clips:
        features, labels = clips["features"], clips["labels"]
    with torch.no_grad():
        predicted = net(torch.from_numpy(features)).argmax(dim=1).numpy()
    assert (predicted == labels).sum() >= MIN_CORRECT_TEST_CLIPS, predicted


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kws_stream")
    options = api.ExportOptions(target="cortex-m4", name="kws_stream", stateful=True, vectors=60)
    write_outputs(api.export(f"{SAMPLE / 'model.py'}:kws_stream", options), out)
    return out


def test_the_streamed_host_run_is_et_exports_reference(export: Path) -> None:
    """gen_stream.host_scores (the .pte on the host emulator, one frame a run from reset
    states) gives et-export's reference outputs for its stored test vectors, which are
    one stream from reset states too: 60 frames, more than a clip's 49."""
    with np.load(export / "kws_stream.vectors.npz") as vectors:
        frames = vectors["input_0"].reshape(-1, mfcc.COEFFICIENTS)
        expected = vectors["output_0_bytes"]
    assert len(frames) == 60
    scores = gen_stream.host_scores(export, frames)
    assert scores.astype("<f4").view(np.uint8).reshape(len(frames), -1).tobytes() == (
        expected.tobytes()
    )


def test_the_headers_hold_the_labels_and_what_the_host_hears(export: Path, tmp_path: Path) -> None:
    labels_h, stream_h = tmp_path / "labels.h", tmp_path / "stream.h"
    gen_stream.main(["--export", str(export), "--labels", str(labels_h),
                     "--stream", str(model.STREAM), "--out", str(stream_h)])  # fmt: skip
    labels_text = labels_h.read_text()
    assert f"#define LABEL_SILENCE {SILENCE}" in labels_text
    assert f"#define HOLD_FRAMES {detections.HOLD_FRAMES}" in labels_text
    assert '"down", "go", "left"' in labels_text
    text = stream_h.read_text()
    with np.load(model.STREAM) as data:
        pcm, labels = data["pcm"], data["labels"]
    frames = 1 + (len(pcm) - mfcc.FRAME_LENGTH) // mfcc.FRAME_STEP
    assert f"#define STREAM_FRAMES {frames}" in text
    assert f"#define STREAM_CLIPS {len(labels)}" in text
    first = ", ".join(str(v) for v in mfcc.coefficients(pcm[: mfcc.FRAME_LENGTH])[0])
    assert f"stream_mfcc[{frames}][{mfcc.COEFFICIENTS}] = {{\n{{{first}}}," in text


def test_the_int8_program_follows_the_float_model_through_the_stream(export: Path) -> None:
    """Over the six seconds of stream.npz, one frame a run with the state carried 299
    times, the program's best class on the host reference is the float model's on at
    least 90 % of the frames (state carried wrongly, or lost, would part them)."""
    with np.load(model.STREAM) as data:
        features = mfcc.features(data["pcm"])
    int8 = gen_stream.host_scores(export, features)
    net, _, _ = model.kws_stream()
    with torch.no_grad():
        out, _ = net.lstm(torch.from_numpy(features)[np.newaxis])
        float_scores = net.head(out[0]).numpy()
    agreement = np.mean(int8.argmax(axis=1) == float_scores.argmax(axis=1))
    assert agreement >= 0.9, agreement
