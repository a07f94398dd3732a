"""The Python API takes every model format npuc imports (docs/frontends.md): model_file= / run_model / translate on
a TensorFlow Lite and a TensorFlow MobileNet-shaped test model, whose outputs equal their oracles' (Arm NN, OpenCV)."""
import os

import numpy as np
import pytest

import npuc

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
MODELS = [("tflite", "model.tflite"), ("tf", "model.pb")]


@pytest.mark.parametrize("fmt,name", MODELS)
def test_inference_and_translate_take_the_file(fmt, name, tmp_path):
    d = os.path.join(DATA, fmt, "mobilenet")
    model = os.path.join(d, name)
    x = np.load(os.path.join(d, "input_input.npy"))
    want = np.load(os.path.join(d, "output_prob.npy"))
    inputs, outputs = npuc.model_io(model)
    assert [i["shape"] for i in inputs] == [x.shape]  # the framework's own NHWC shape
    got = npuc.inference([x], ["input"], model_file=model)[0]
    assert got.shape == want.shape
    assert np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))) < 1e-5
    r = npuc.translate("m", model, target="generic", out=str(tmp_path))
    assert r.ok
    pkg = npuc.inference([x], ["input"], package=str(tmp_path / "m"))[0]
    assert pkg.tobytes() == got.tobytes()  # the generic package is the engine, bit for bit
