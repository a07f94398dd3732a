#!/usr/bin/env python3
"""numpy reference of resize_area_model.onnx (Conv -> Relu -> com.example.ResizeArea -> Conv), in float64, from the
model's own initializers and attributes: the oracle the example's npuc outputs are compared with.

    reference.py MODEL.onnx INPUT.npy OUTPUT.npy TOLERANCE [OUTPUT.npy TOLERANCE ...]

Each output (npuc run, or a simulated package's) must be within TOLERANCE of the reference, relative to the
reference's largest magnitude. Prints the error of each; exits 1 when one is over.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def conv2d(x, w, b, pads, strides):
    """NCHW convolution, groups 1, dilation 1 (what the model uses)."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + oh * strides[0]:strides[0], kx:kx + ow * strides[1]:strides[1]]
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, ky, kx])
    return y + b.reshape(1, -1, 1, 1)


def spans(n_in, n_out, align_corners):
    """For each output index: (first input index, weights), TensorFlow's area resize."""
    scale = (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else n_in / n_out
    out = []
    for o in range(n_out):
        start, end = o * scale, min((o + 1) * scale, n_in)
        first = int(np.floor(start))
        weights = []
        r = first
        while r < end and r < n_in:
            weights.append(min(end, r + 1) - max(start, r))
            r += 1
        out.append((first, np.array(weights)))
    return out, scale


def resize_area(x, size, align_corners):
    n, c, h, w = x.shape
    rows, sy = spans(h, size[0], align_corners)
    cols, sx = spans(w, size[1], align_corners)
    y = np.zeros((n, c, size[0], size[1]))
    for oy, (fy, wy) in enumerate(rows):
        for ox, (fx, wx) in enumerate(cols):
            area = x[:, :, fy:fy + len(wy), fx:fx + len(wx)]
            y[:, :, oy, ox] = np.einsum("nchw,h,w->nc", area, wy, wx) / (sy * sx)
    return y


def reference(model, x):
    inits = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    vals = {model.graph.input[0].name: x.astype(np.float64)}
    for node in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in node.attribute}
        ins = [vals[i] if i in vals else inits[i] for i in node.input]
        if node.op_type == "Conv":
            k = ins[1].shape[2]
            y = conv2d(ins[0], ins[1], ins[2], list(a.get("pads", [0] * 4)), list(a.get("strides", [1, 1])))
            assert k == ins[1].shape[3]
        elif node.op_type == "Relu":
            y = np.maximum(ins[0], 0)
        elif node.op_type == "ResizeArea" and node.domain == "com.example":
            y = resize_area(ins[0], list(a["size"]), bool(a.get("align_corners", 0)))
        else:
            raise SystemExit(f"reference.py: no reference for {node.domain}.{node.op_type}")
        vals[node.output[0]] = y
    return vals[model.graph.output[0].name]


def main():
    if len(sys.argv) < 5 or len(sys.argv) % 2 == 0:
        raise SystemExit(__doc__)
    model = onnx.load(sys.argv[1])
    ref = reference(model, np.load(sys.argv[2]))
    scale = np.abs(ref).max()
    ok = True
    for path, tol in zip(sys.argv[3::2], sys.argv[4::2]):
        got = np.load(path).astype(np.float64)
        if got.shape != ref.shape:
            print(f"{path}: shape {got.shape}, the reference is {ref.shape}")
            ok = False
            continue
        err = np.abs(got - ref).max() / scale
        good = err <= float(tol)
        ok &= good
        print(f"{path}: max |npuc - numpy| / max |numpy| = {err:.3g} ({'within' if good else 'OVER'} {tol})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
