#!/usr/bin/env python3
"""Control flow as PyTorch exports it (ONNX If and Loop), with PyTorch's own outputs as the oracle.

Run once with Debian's python3-torch; the tests read the stored files:
    /usr/bin/python3 tests/data/control_flow/generate.py
Each case writes NAME.onnx, NAME.in<k>.npy (one per model input) and NAME.out<k>.npy (one per model output).
  if_data:    torch.jit.script'ed, an `if` on the data (x.sum() > 0): an If with a computed condition;
  if_data_else: the same model, an input that takes the other branch.
  loop_data:  torch.jit.script'ed, a `for` loop over a trip count taken from the input's shape and a `while` loop on
              the data: Loops with carried values.
  if_const:   torch.jit.script'ed, a shape check (x.shape[1] == 4): an If whose condition folds to a constant once the
              input shape is fixed: inlined at import, the model translates for packages.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class IfData(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        if bool(y.sum() > 0):
            z = torch.relu(y) * 2.0
        else:
            z = torch.sigmoid(y) - x.mean()
        return z


class LoopData(torch.nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x)
        for i in range(x.shape[0]):
            acc = acc * 0.5 + x[i] * float(i + 1)
        y = acc
        n = 0
        while bool(y.abs().max() > 1.0):
            y = y * 0.5
            n += 1
        return acc, y, torch.tensor(n)


@torch.jit.script
def _check(x: torch.Tensor) -> torch.Tensor:
    if x.shape[1] == 4:
        return x * 2.0 + 1.0
    else:
        return x - 1.0


class IfConst(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return torch.relu(_check(self.conv(x)))


def save(name, m, inputs, scripted, fold=True):
    m = m.eval()
    with torch.no_grad():
        outs = m(*inputs)
    if not isinstance(outs, tuple):
        outs = (outs,)
    model = torch.jit.script(m) if scripted else m
    names_in = ["x%d" % k for k in range(len(inputs))]
    names_out = ["y%d" % k for k in range(len(outs))]
    torch.onnx.export(model, tuple(inputs), os.path.join(HERE, name + ".onnx"), input_names=names_in,
                      output_names=names_out, opset_version=14,
                      do_constant_folding=fold, dynamic_axes=None if fold else {"x0": {0: "n", 2: "h", 3: "w"}})
    if not fold:  # exported with dynamic dims so the check stays in the graph; the stored model declares this input's
        import onnx  # shape, so that the condition folds at import
        mp = onnx.load(os.path.join(HERE, name + ".onnx"))
        for vi, t in zip(mp.graph.input, inputs):
            for d, n in zip(vi.type.tensor_type.shape.dim, t.shape):
                d.Clear()
                d.dim_value = n
        onnx.save(mp, os.path.join(HERE, name + ".onnx"))
    for k, t in enumerate(inputs):
        np.save(os.path.join(HERE, "%s.in%d.npy" % (name, k)), t.numpy())
    for k, o in enumerate(outs):
        np.save(os.path.join(HERE, "%s.out%d.npy" % (name, k)), o.numpy())


def main():
    torch.manual_seed(0)
    m = IfData()
    x = torch.randn(1, 3, 5, 5)
    save("if_data", m, [x], True)
    with torch.no_grad():
        taken = [bool(m.conv(t).sum() > 0) for t in (x, -x)]
    assert taken[0] != taken[1], "the two inputs must take different branches"
    save("if_data_else", m, [-x], True)
    save("loop_data", LoopData(), [torch.randn(3, 2, 4) * 2.0], True)
    torch.manual_seed(1)
    save("if_const", IfConst(), [torch.randn(1, 3, 6, 6)], True, fold=False)


if __name__ == "__main__":
    main()
