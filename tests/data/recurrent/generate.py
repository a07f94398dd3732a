#!/usr/bin/env python3
"""Recurrent layers the ONNX test data does not cover (bidirectional, stacked, batch-first, ReLU RNN, GRU's
linear_before_reset, initial states), as PyTorch exports them, with PyTorch's own outputs as the oracle.

Run once with Debian's python3-torch (scripts/install_deps.sh torch); the tests read the stored files:
    /usr/bin/python3 tests/data/recurrent/generate.py          (every case; `... generate.py stream` / `lstm2_bidir` only that one)
Each case writes NAME.onnx, NAME.in.npy (and NAME.h0.npy / NAME.c0.npy when the model takes initial states) and
NAME.out<k>.npy, one per model output in the model's order.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class Wrap(torch.nn.Module):
    def __init__(self, rnn, states):
        super().__init__()
        self.rnn, self.states = rnn, states

    def forward(self, x, *s):
        if not s:
            y, h = self.rnn(x)
        elif len(s) == 1:
            y, h = self.rnn(x, s[0])
        else:
            y, h = self.rnn(x, (s[0], s[1]))
        return (y,) + (tuple(h) if isinstance(h, tuple) else (h,))


def case(name, rnn, x_shape, states=0, seed=0):
    torch.manual_seed(seed)
    for p in rnn.parameters():
        torch.nn.init.uniform_(p, -0.5, 0.5)
    m = Wrap(rnn.eval(), states)
    x = torch.randn(*x_shape)
    layers = rnn.num_layers * (2 if rnn.bidirectional else 1)
    batch = x_shape[0] if rnn.batch_first else x_shape[1]
    s = [torch.randn(layers, batch, rnn.hidden_size) * 0.5 for _ in range(states)]
    with torch.no_grad():
        outs = m(x, *s)
    names_in = ["x", "h0", "c0"][: 1 + states]
    names_out = ["y", "h", "c"][: len(outs)]
    torch.onnx.export(m, (x, *s), os.path.join(HERE, name + ".onnx"), input_names=names_in, output_names=names_out,
                      opset_version=14)
    np.save(os.path.join(HERE, name + ".in.npy"), x.numpy())
    for n, t in zip(names_in[1:], s):
        np.save(os.path.join(HERE, "%s.%s.npy" % (name, n)), t.numpy())
    for k, o in enumerate(outs):
        np.save(os.path.join(HERE, "%s.out%d.npy" % (name, k)), o.numpy())


def main():
    case("lstm_bidir", torch.nn.LSTM(5, 4, bidirectional=True), (6, 2, 5), states=2, seed=1)
    case("lstm_stacked_batch_first", torch.nn.LSTM(3, 6, num_layers=2, batch_first=True), (2, 5, 3), seed=2)
    case("gru_bidir", torch.nn.GRU(4, 3, bidirectional=True), (5, 3, 4), states=1, seed=3)
    case("rnn_relu_bidir", torch.nn.RNN(4, 5, nonlinearity="relu", bidirectional=True, batch_first=True), (2, 7, 4), seed=4)
    stream()
    lstm2_bidir()


def lstm2_bidir():
    """lstm2_bidir: a 2-layer bidirectional LSTM with initial states (the model set's recurrent model; `...
    generate.py lstm2_bidir` writes only this case)."""
    case("lstm2_bidir", torch.nn.LSTM(6, 5, num_layers=2, bidirectional=True), (7, 2, 6), states=2, seed=6)


def stream():
    """lstm_stream: a 2-layer LSTM(6, 8) exported for one frame (sequence 1, batch 1) with its states as inputs and
    outputs, run frame after frame by the tests (each frame's h, c fed to the next). The oracle: PyTorch on the whole
    sequence of 12 frames from zero states (lstm_stream.frames.npy [12, 1, 1, 6] → .y.npy [12, 1, 1, 8], the final
    .h.npy / .c.npy [2, 1, 8])."""
    torch.manual_seed(5)
    rnn = torch.nn.LSTM(6, 8, num_layers=2)
    for p in rnn.parameters():
        torch.nn.init.uniform_(p, -0.5, 0.5)
    m = Wrap(rnn.eval(), 2)
    frames = torch.randn(12, 1, 1, 6)
    h0 = torch.zeros(2, 1, 8)
    torch.onnx.export(m, (frames[0], h0, h0), os.path.join(HERE, "lstm_stream.onnx"), input_names=["x", "h0", "c0"],
                      output_names=["y", "h", "c"], opset_version=14)
    with torch.no_grad():
        y, h, c = m(frames.reshape(12, 1, 6), h0, h0)
    np.save(os.path.join(HERE, "lstm_stream.frames.npy"), frames.numpy())
    np.save(os.path.join(HERE, "lstm_stream.y.npy"), y.reshape(12, 1, 1, 8).numpy())
    np.save(os.path.join(HERE, "lstm_stream.h.npy"), h.numpy())
    np.save(os.path.join(HERE, "lstm_stream.c.npy"), c.numpy())


if __name__ == "__main__":
    import sys
    {"stream": stream, "lstm2_bidir": lstm2_bidir}.get(sys.argv[1] if sys.argv[1:] else "", main)()
