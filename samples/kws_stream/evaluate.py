# SPDX-License-Identifier: Apache-2.0
"""How well the detector hears keywords in a long stream: hits and false alarms.

    python samples/kws_stream/evaluate.py [--split test] [--export build/et/kws_stream]

Every clip of the split (637 test clips: voices never heard in training), augmented as
the split is, one after another in a seeded order as one stream of 16-bit PCM; the
device's MFCCs (et_zephyr.audio.mfcc); the trained model run over the whole stream with
its state carried (float, or with --export the program on the host reference, INT8 as
the device computes it); detections.py's rule. A keyword clip is a hit when its keyword
is heard between its start and 0.2 s after its end; any other detection is a false
alarm. Prints hits, misses and false alarms per minute of sound.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from et_zephyr.audio import mfcc

sys.path.append(str(Path(__file__).resolve().parents[1] / "kws"))

import dataset  # noqa: E402
from augment import augment  # noqa: E402
from detections import NOT_KEYWORDS, detect  # noqa: E402
from gen_stream import host_scores  # noqa: E402
from model import LABELS, WEIGHTS, KeywordLstm  # noqa: E402
from train import pcm  # noqa: E402

FRAMES_PER_CLIP = mfcc.SAMPLE_RATE // mfcc.FRAME_STEP  # 50: a clip every second
LATE_FRAMES = 10  # a keyword may be heard up to 0.2 s after its clip ends


def stream_of(split: str) -> tuple[np.ndarray, np.ndarray]:
    """The split's clips, augmented as evaluation_features does, shuffled: PCM, labels."""
    clips = dataset.load(dataset.CACHE_DIR, dataset.CLIPS_PER_CLASS, dataset.SEED)[split]
    rng = np.random.default_rng(dataset.SEED + dataset.EVALUATION_SEEDS[split])
    audio = augment(clips.clean, rng)
    order = rng.permutation(len(clips.labels))
    return pcm(audio[order]).reshape(-1), clips.labels[order]


def float_scores(features: np.ndarray) -> np.ndarray:
    model = KeywordLstm()
    model.load_state_dict(torch.load(WEIGHTS, weights_only=True))
    with torch.no_grad():
        out, _ = model.lstm(torch.from_numpy(features)[np.newaxis])
        return model.head(out[0]).numpy()


def score(found: list[tuple[int, int]], labels: np.ndarray) -> tuple[int, int, int]:
    """Hits, keyword clips and false alarms."""
    hits, matched = 0, set()
    for index, label in enumerate(labels):
        if label in NOT_KEYWORDS:
            continue
        start, end = index * FRAMES_PER_CLIP, (index + 1) * FRAMES_PER_CLIP + LATE_FRAMES
        for number, (frame, heard) in enumerate(found):
            if start <= frame < end and heard == label and number not in matched:
                hits += 1
                matched.add(number)
                break
    keywords = sum(label not in NOT_KEYWORDS for label in labels)
    return hits, keywords, len(found) - len(matched)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("validation", "test"))
    parser.add_argument("--export", type=Path, help="et-export --stateful's folder: run INT8")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    sound, labels = stream_of(args.split)
    features = mfcc.features(sound)
    scores = host_scores(args.export, features) if args.export else float_scores(features)
    hits, keywords, false_alarms = score(detect(scores), labels)
    minutes = len(sound) / mfcc.SAMPLE_RATE / 60
    kind = f"INT8 ({args.export})" if args.export else "float"
    print(f"{args.split} stream, {len(labels)} clips ({minutes:.1f} min), {kind}: "
          f"{hits} of {keywords} keywords heard ({hits / keywords:.1%}), "
          f"{false_alarms} false alarms ({false_alarms / minutes:.1f} a minute)")  # fmt: skip
    heard = np.bincount([c for _, c in detect(scores)], minlength=len(LABELS))
    print("detections by class: " + ", ".join(f"{LABELS[c]} {n}" for c, n in enumerate(heard) if n))


if __name__ == "__main__":
    main()
