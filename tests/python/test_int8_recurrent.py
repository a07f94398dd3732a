"""LSTM and GRU in int8-affine packages (docs/numerics.md, "Recurrent layers in int8"): x as int8 codes, W and R int8 per
row, the state in int8 at 1/127 for its product, each gate's products integer sums scaled once. Checked against numpy:
the same definition written from the documentation (the x codes read from the package's quantize layer), so a
package computing anything else — float products, another rounding of the state, a missed scale — shows. Run by ctest
(`python_tests`) with PYTHONPATH=build/python."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc

RNG = np.random.default_rng(23)


def sigmoid(v):
    return (1.0 / (1.0 + np.exp(-v.astype(np.float64)))).astype(np.float32)


def int8_rows(w):
    """Symmetric int8 per row of [dirs, rows, k]: scale max |row| / 127, codes rounded half away from zero."""
    m = np.abs(w).max(axis=2, keepdims=True).astype(np.float64)
    scale = np.where(m > 0, m / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.sign(w / scale) * np.floor(np.abs(w.astype(np.float64) / scale) + 0.5), -127, 127).astype(np.int8)
    return q, scale[:, :, 0]


def state_codes(h):
    return np.clip(np.rint(h.astype(np.float32) * np.float32(127)), -127, 127).astype(np.int32)


def reference(cell, xq, zx, sx, w, r, b, hidden, dirs):
    """The int8 form over x codes [seq, batch, input] (no initial state, every sequence full): Y [seq, dirs, batch, hidden]."""
    wq, ws = int8_rows(w)
    rq, rs = int8_rows(r)
    seq, batch, _ = xq.shape
    gates = 4 if cell == "LSTM" else 3
    y = np.zeros((seq, dirs, batch, hidden), np.float32)
    for d in range(dirs):
        mx = (np.float32(sx) * ws[d]).astype(np.float32)             # per row: sx · w_scale
        mh = (np.float32(1.0 / 127.0) * rs[d]).astype(np.float32)     # per row: (1/127) · r_scale
        wb, rb = b[d, :gates * hidden], b[d, gates * hidden:]
        for n in range(batch):
            h = np.zeros(hidden, np.float32)
            c = np.zeros(hidden, np.float32)
            steps = range(seq) if d == 0 else range(seq - 1, -1, -1)
            for t in steps:
                xw = ((xq[t, n].astype(np.int32) - zx) @ wq[d].astype(np.int32).T).astype(np.float32) * mx
                hr = (state_codes(h) @ rq[d].astype(np.int32).T).astype(np.float32) * mh
                if cell == "LSTM":
                    v = ((xw + hr) + wb) + rb
                    i, o, f, g = (v[k * hidden:(k + 1) * hidden] for k in range(4))
                    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
                    h = sigmoid(o) * np.tanh(c)
                else:  # GRU, linear_before_reset 0: the reset-gated state's codes for the candidate's product
                    v = ((xw + hr) + wb) + rb
                    z, rr = sigmoid(v[:hidden]), sigmoid(v[hidden:2 * hidden])
                    hr2 = (state_codes(rr * h) @ rq[d, 2 * hidden:].astype(np.int32).T).astype(np.float32) * mh[2 * hidden:]
                    hh = np.tanh(((xw[2 * hidden:] + hr2) + wb[2 * hidden:]) + rb[2 * hidden:])
                    h = (1 - z) * hh + z * h
                y[t, d, n] = h
    return y


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_the_int8_form_is_its_documented_definition(tmp_path, cell):
    seq, batch, inp, hidden, dirs = 7, 2, 6, 5, 2
    gates = 4 if cell == "LSTM" else 3
    w = (RNG.standard_normal((dirs, gates * hidden, inp)) * 0.5).astype(np.float32)
    r = (RNG.standard_normal((dirs, gates * hidden, hidden)) * 0.5).astype(np.float32)
    b = (RNG.standard_normal((dirs, 2 * gates * hidden)) * 0.2).astype(np.float32)
    node = helper.make_node(cell, ["x", "W", "R", "B"], ["y"], direction="bidirectional", hidden_size=hidden)
    graph = helper.make_graph([node], "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, dirs, batch, hidden])],
                              [numpy_helper.from_array(v, n) for v, n in ((w, "W"), (r, "R"), (b, "B"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    path = str(tmp_path / "rnn.onnx")
    onnx.save(model, path)
    calib = RNG.standard_normal((8 * seq, batch, inp)).astype(np.float32)
    res = npuc.translate("q", path, target="generic-int8", out=str(tmp_path), calib={"x": calib})
    assert res.ok
    rt = npuc.Runtime(str(res.dir), threads=2)
    assert any(layer["kind"] == "recurrent" for layer in rt.layers)
    x = RNG.standard_normal((seq, batch, inp)).astype(np.float32)
    seen = {}
    out = rt.run({"x": x}, callback=lambda layer, v: seen.setdefault(layer["seq"], (layer, v)))["y"]
    quant = seen[0][0]  # the input's quantize layer: its codes, scale and zero point
    assert quant["kind"] == "quantize" and seen[0][1].dtype == np.int8
    layer, got = next(seen[k] for k in sorted(seen) if seen[k][0]["kind"] == "recurrent")  # its float Y (then quantized)
    assert got.dtype == np.float32 and got.shape == (seq, dirs, batch, hidden)
    want = reference(cell, seen[0][1], quant["zero_point"], quant["scale"], w, r, b, hidden, dirs)
    # (numpy's exp / tanh differ from npuc's in the last bits: the integer products make no other difference)
    assert np.abs(got - want).max() <= 2e-6, np.abs(got - want).max()
    assert np.array_equal(out, npuc.Runtime(str(res.dir), exact=True).run({"x": x})["y"])  # fast == --exact
