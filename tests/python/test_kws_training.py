# SPDX-License-Identifier: Apache-2.0
"""The KWS sample's training pipeline: MFCC features, corpus splits and the shipped model."""

import shutil
import sys

import numpy as np
import pytest
import torch
from conftest import REPO

sys.path.insert(0, str(REPO / "samples/kws"))

from corpus import ACCENTS, SPLIT_VARIANTS, plan  # noqa: E402
from features import LOWER_HZ, MEL_BINS, SAMPLE_RATE, UPPER_HZ, log_mel, mfcc  # noqa: E402
from model import CALIBRATION, DSCNN, INPUT_SHAPE, LABELS, TEST_CLIPS, WEIGHTS, kws  # noqa: E402

# Of the 12 shipped test clips (one per class, held-out voices); the float model
# gets 12 right (see train.py's output), a wrong feature or weight file about 1.
MIN_CORRECT_TEST_CLIPS = 10


def tone(hertz: float) -> np.ndarray:
    return 0.5 * np.sin(2 * np.pi * hertz * np.arange(SAMPLE_RATE) / SAMPLE_RATE)


def mel(hertz: float) -> float:
    return 1127.0 * np.log1p(hertz / 700.0)


def test_mfcc_shape_type_and_determinism() -> None:
    features = mfcc(tone(1000.0))
    assert features.shape == (49, 10)
    assert features.dtype == np.float32
    assert np.isfinite(features).all()
    assert np.array_equal(features, mfcc(tone(1000.0)))


def test_mfcc_batch_equals_clip_by_clip() -> None:
    clips = np.stack([tone(440.0), tone(2500.0)])
    assert np.array_equal(mfcc(clips), np.stack([mfcc(clip) for clip in clips]))


@pytest.mark.parametrize("hertz", [300.0, 1000.0, 3000.0])
def test_a_tone_lands_in_the_mel_bin_centred_on_it(hertz: float) -> None:
    centres = np.linspace(mel(LOWER_HZ), mel(UPPER_HZ), MEL_BINS + 2)[1:-1]
    expected = int(np.argmin(np.abs(centres - mel(hertz))))
    spectrogram = log_mel(tone(hertz))
    assert (spectrogram.argmax(axis=1) == expected).all()
    # Bins far from the tone get only the Hann window's sidelobes: > 60 dB below.
    far = np.abs(np.arange(MEL_BINS) - expected) > 5
    assert (spectrogram[:, expected, None] - spectrogram[:, far]).min() > np.log(1e3)


def test_silence_gives_tf_scaled_dct_of_a_constant() -> None:
    # log(0 + 1e-6) in every mel bin; TF's MFCC DCT scales every coefficient by
    # sqrt(2/N), so coefficient 0 is sqrt(2/40) * 40 * log(1e-6), the rest zero.
    features = mfcc(np.zeros(SAMPLE_RATE))
    assert np.allclose(features[:, 0], np.sqrt(2.0 * MEL_BINS) * np.log(1e-6))
    assert np.allclose(features[:, 1:], 0.0, atol=1e-4)


def test_mfcc_rejects_clips_that_are_not_one_second() -> None:
    with pytest.raises(ValueError, match="16000 samples"):
        mfcc(np.zeros(8000))


def test_splits_share_no_voice_and_cover_every_class_and_accent() -> None:
    groups = list(SPLIT_VARIANTS.values())
    assert sum(len(group) for group in groups) == len({v for group in groups for v in group})
    specs = plan(clips_per_class=100, seed=0)
    for split in SPLIT_VARIANTS:
        in_split = [spec for spec in specs if spec.split == split]
        assert {spec.label for spec in in_split} == set(LABELS)
        assert {spec.accent for spec in in_split} == set(ACCENTS)


@pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                    reason="needs espeak-ng and sox")  # fmt: skip
def test_espeak_ng_speaks_a_keyword_in_under_a_second() -> None:
    from speech import synthesize

    spec = plan(clips_per_class=1, seed=0)[LABELS.index("yes")]
    audio = synthesize(spec)
    assert 0.1 * SAMPLE_RATE < audio.size < SAMPLE_RATE
    assert np.array_equal(audio, synthesize(spec))


def classify(features: np.ndarray) -> np.ndarray:
    """The shipped weights' predictions."""
    model = DSCNN()
    model.load_state_dict(torch.load(WEIGHTS, weights_only=True))
    with torch.no_grad():
        return model.eval()(torch.from_numpy(features)).argmax(dim=1).numpy()


def test_shipped_weights_classify_the_shipped_test_clips() -> None:
    with np.load(TEST_CLIPS) as clips:
        features, labels = clips["features"], clips["labels"]
    assert features.shape == (len(LABELS), *INPUT_SHAPE[1:])
    assert sorted(labels.tolist()) == list(range(len(LABELS)))
    assert (classify(features) == labels).sum() >= MIN_CORRECT_TEST_CLIPS


def test_calibration_is_training_features_of_every_class_and_feeds_the_factory() -> None:
    from shipping import CALIBRATION_SAMPLES

    with np.load(CALIBRATION) as data:
        features = data["features"]
    assert features.dtype == np.float32
    assert features.shape == (CALIBRATION_SAMPLES, *INPUT_SHAPE[1:])
    assert np.isfinite(features).all()
    # The first 12 are one training clip of each class: real speech features in the
    # model's layout, so the trained model puts them in (nearly) 12 different classes.
    assert len(set(classify(features[: len(LABELS)]).tolist())) >= len(LABELS) - 2
    _, example_inputs, calibration = kws()
    assert len(calibration) == CALIBRATION_SAMPLES
    assert torch.equal(example_inputs[0], torch.from_numpy(features[:1]))


def test_qat_fine_tuning_ships_a_state_that_et_export_lowers_as_trained(
    tmp_path, monkeypatch
) -> None:
    """train.py --qat: fine_tune_qat's state saved, reloaded by the kws_qat factory and
    exported INT8 with the input range it learned, not a recalibrated one."""
    import model as kws_model
    from dataset import Split, features
    from et_zephyr.api import ExportOptions, export
    from et_zephyr.errors import ExportError
    from et_zephyr.frontend.io_mode import parse_io
    from et_zephyr.frontend.loading import ModelBundle
    from shipping import fine_tune_qat

    rng = np.random.default_rng(0)
    clips = (0.1 * rng.standard_normal((24, SAMPLE_RATE))).astype(np.float32)
    train = Split(clips, np.arange(24) % len(LABELS))
    validation = (features(clips[:12], rng), train.labels[:12])
    torch.manual_seed(0)
    example = (torch.from_numpy(validation[0][:1]).clone(),)
    qat_model = fine_tune_qat(DSCNN(), train, validation, 1, 0, example)
    learned_scale = float(qat_model.activation_post_process_0.scale)
    monkeypatch.setattr(kws_model, "QAT_STATE", tmp_path / "kws_qat.pt")
    torch.save(qat_model.state_dict(), kws_model.QAT_STATE)

    options = ExportOptions(target="cortex-m4", name="kws_qat", io=parse_io("int8"))
    artifacts = export(ModelBundle(*kws_model.kws_qat()), options)
    assert artifacts.manifest["inputs"][0]["scale"] == pytest.approx(learned_scale)
    assert artifacts.manifest["macs"]["cmsis_nn"] == artifacts.manifest["macs"]["total"]
    with pytest.raises(ExportError, match="--activations int16 does not apply to a model"):
        export(ModelBundle(*kws_model.kws_qat()), ExportOptions(activations="int16"))
