# SPDX-License-Identifier: Apache-2.0
"""A PyTorch recurrent model as the TensorFlow Lite model its TFLite Micro peer runs.

    python3 benchmarks/peers/keras_recurrent.py tests/models/recurrent.py:lstm_kws lstm_kws.tflite

For side_by_side.py's --pair: the factory's model (an nn.LSTM layer over frames and a
linear on the last step, as tests/models/recurrent.py's RecurrentKws) rebuilt in Keras
with the same weights (PyTorch's gates i, f, g, o are Keras's i, f, c, o; Keras adds the
two biases as one), converted to a fully INT8 TensorFlow Lite model, calibrated on the
factory's samples: one UNIDIRECTIONAL_SEQUENCE_LSTM (INT8 activations, INT16 cell state,
CMSIS-NN's arm_lstm_unidirectional_s8 in TFLite Micro) and a FULLY_CONNECTED.

Needs TensorFlow and PyTorch in one environment; neither TensorFlow nor the model it
writes is part of et-zephyr.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf  # before torch: the converter crashes with torch's libraries first
import torch
from torch import nn


def load_factory(spec: str):
    file, _, name = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location(Path(file).stem, file)
    if module_spec is None or module_spec.loader is None or not name:
        raise SystemExit(f"keras_recurrent.py: error: MODEL must be file.py:factory, got {spec}")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(Path(file).resolve().parent))
    module_spec.loader.exec_module(module)
    return getattr(module, name)()


def keras_model(model: nn.Module, frames: int, features: int) -> tf.keras.Model:
    lstm, head = model.recurrent, model.head
    if not isinstance(lstm, nn.LSTM) or lstm.num_layers != 1 or lstm.bidirectional:
        raise SystemExit("keras_recurrent.py: error: one unidirectional nn.LSTM layer only")
    inputs = tf.keras.Input((frames, features), batch_size=1)
    steps = tf.keras.layers.LSTM(lstm.hidden_size, unroll=False)(inputs)
    outputs = tf.keras.layers.Dense(head.out_features)(steps)
    keras = tf.keras.Model(inputs, outputs)
    weights = [
        lstm.weight_ih_l0.detach().numpy().T,
        lstm.weight_hh_l0.detach().numpy().T,
        (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().numpy(),
        head.weight.detach().numpy().T,
        head.bias.detach().numpy(),
    ]
    keras.set_weights(weights)
    return keras


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="file.py:factory, as et-export takes it")
    parser.add_argument("out", type=Path, help="the .tflite to write")
    args = parser.parse_args(argv)
    model, example, samples = load_factory(args.model)
    model.eval()
    frames, features = example[0].shape[1:]
    keras = keras_model(model, frames, features)
    with torch.no_grad():
        expected = model(example[0]).numpy()
    got = keras(example[0].numpy()).numpy()
    if not np.allclose(expected, got, atol=1e-4):
        raise SystemExit("keras_recurrent.py: error: the Keras model computes another function")

    def representative():
        for sample in samples:
            yield [sample[0].numpy().astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(keras)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    args.out.write_bytes(converter.convert())
    print(f"wrote {args.out} ({args.out.stat().st_size:,} B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
