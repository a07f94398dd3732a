#!/usr/bin/env python3
"""A keyword spotter whose log-mel front end is inside the model (issue 49: audio front-ends in packages): 1 s of
8 kHz audio → STFT (Hann window 256, hop 128) → power → mel filter bank (40 bands, 20–4000 Hz) → log → a small CNN →
12 keyword logits. PyTorch computes the reference: torch.stft for the spectrogram, the mel matrix of ONNX's
MelWeightMatrix definition (written here in numpy from the ONNX operator's text, independently of npuc), the CNN.

Debian's torch (1.13) cannot export STFT, so the CNN is exported by torch.onnx and the front end written with
onnx.helper before it: HannWindow, STFT, Mul + ReduceSum (the power), MelWeightMatrix, MatMul, Add, Log, Unsqueeze.

Run once with Debian's python3-torch (scripts/install_deps.sh torch); the tests read the stored files:
    /usr/bin/python3 tests/data/audio/generate.py
Writes kws.onnx, kws.in.npy (a chirp with noise) and kws.out0.npy (PyTorch's logits).
"""
import io
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RATE, SAMPLES, NFFT, HOP, MELS, LO_HZ, HI_HZ, CLASSES = 8000, 8000, 256, 128, 40, 20.0, 4000.0, 12


def mel_weight_matrix(bins, dft_length, rate, lo_hz, hi_hz):
    """ONNX MelWeightMatrix (opset 17): band edges at equal mel steps, mapped to DFT bins, triangles between them."""
    spec_bins = dft_length // 2 + 1
    mel = lambda hz: 2595.0 * np.log10(1.0 + hz / 700.0)
    lo, hi = mel(lo_hz), mel(hi_hz)
    step = (hi - lo) / (bins + 2)
    hz = 700.0 * (10.0 ** ((np.arange(bins + 2) * step + lo) / 2595.0) - 1.0)
    edge = np.floor((dft_length + 1) * hz / rate).astype(np.int64)
    w = np.zeros((spec_bins, bins), np.float32)
    for i in range(bins):
        l, c, r = edge[i], edge[i + 1], edge[i + 2]
        if c == l:
            w[c, i] = 1.0
        else:
            w[l:c + 1, i] = (np.arange(l, c + 1) - l) / (c - l)
        if r > c:
            w[c:r, i] = (r - np.arange(c, r)) / (r - c)
    return w


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
            torch.nn.Linear(32, CLASSES))

    def forward(self, logmel):
        return self.body(logmel)


def main():
    torch.manual_seed(7)
    rng = np.random.RandomState(7)
    cnn = Cnn()
    for m in cnn.modules():  # batch norms with statistics of their own (not the identity)
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    cnn.eval()
    t = np.arange(SAMPLES) / RATE
    audio = (0.5 * np.sin(2 * np.pi * (300 + 900 * t) * t) + 0.05 * rng.randn(SAMPLES)).astype(np.float32)[None]
    mel = mel_weight_matrix(MELS, NFFT, RATE, LO_HZ, HI_HZ)
    with torch.no_grad():
        x = torch.from_numpy(audio)
        spec = torch.stft(x.double(), n_fft=NFFT, hop_length=HOP, window=torch.hann_window(NFFT, periodic=True).double(),
                          center=False, return_complex=True)  # [1, bins, frames]
        power = (spec.real ** 2 + spec.imag ** 2).transpose(1, 2)
        logmel = torch.log(power @ torch.from_numpy(mel).double() + 1e-6).float().unsqueeze(1)
        logits = cnn(logmel)
    frames = logmel.shape[2]
    buf = io.BytesIO()
    torch.onnx.export(cnn, logmel, buf, opset_version=17, input_names=["logmel"], output_names=["logits"])
    body = onnx.load_from_string(buf.getvalue())
    c = lambda name, v: numpy_helper.from_array(np.array(v), name)
    front = [
        helper.make_node("Reshape", ["audio", "sig_shape"], ["signal"]),
        helper.make_node("HannWindow", ["nfft"], ["window"]),
        helper.make_node("STFT", ["signal", "hop", "window"], ["spec"]),
        helper.make_node("Mul", ["spec", "spec"], ["sq"]),
        helper.make_node("ReduceSum", ["sq", "last"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mels", "nfft", "rate", "lo", "hi"], ["melw"]),
        helper.make_node("MatMul", ["power", "melw"], ["melpow"]),
        helper.make_node("Add", ["melpow", "eps"], ["melpos"]),
        helper.make_node("Log", ["melpos"], ["lm"]),
        helper.make_node("Unsqueeze", ["lm", "chan"], ["logmel"]),
    ]
    inits = [c("sig_shape", np.array([1, SAMPLES, 1], np.int64)), c("nfft", np.int64(NFFT)), c("hop", np.int64(HOP)),
             c("last", np.array([-1], np.int64)), c("mels", np.int64(MELS)), c("rate", np.int64(RATE)),
             c("lo", np.float32(LO_HZ)), c("hi", np.float32(HI_HZ)), c("eps", np.float32(1e-6)),
             c("chan", np.array([1], np.int64))]
    g = body.graph
    graph = helper.make_graph(front + list(g.node), "kws",
                              [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, SAMPLES])],
                              list(g.output), inits + list(g.initializer))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="npuc-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)  # (not full_check: onnx 1.12's shape inference of STFT is wrong)
    onnx.save(model, os.path.join(HERE, "kws.onnx"))
    np.save(os.path.join(HERE, "kws.in.npy"), audio)
    np.save(os.path.join(HERE, "kws.out0.npy"), logits.numpy())
    print(f"kws: {SAMPLES} samples -> {frames} frames x {MELS} mels -> {CLASSES} logits")


if __name__ == "__main__":
    main()
