#!/usr/bin/python3
"""The Kneron guide's inference flow with npuc: user pre-processing -> npuc.inference (in place of
kneron_inference) -> user post-processing -> a picture with boxes.

The model is npuc's digits CNN (8x8 gray digits in, 10 class scores out), used as a sliding-window detector on a
"camera picture" of three digits:
  1. the picture: three test digits pasted on a dark 24x40 canvas, saved as PNG (scene.png);
  2. pre-processing, in numpy and again in C through ctypes (preprocess.c; both give the same arrays): every 8x8
     window at stride 2 as the model input [1, 1, 8, 8] float32 in [0, 1];
  3. npuc.inference([window], ["input"], package=...) for each window, on the simulated device (drpai, fp16);
  4. post-processing: softmax, windows holding a whole digit with a confident class, non-maximum suppression -> boxes
     (x, y, w, h, score, class), the format of the guide's display function;
  5. npuc.utils.draw_boxes on the picture scaled x8 -> boxes.png.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/kneron_flow.py [--out DIR] [--package PKG]
"""
import argparse
import ctypes
import os
import subprocess
import sys

import numpy as np

import npuc
from npuc import utils

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
DIGITS = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")

# (test-set index, x, y): the digits pasted on the canvas.
PLACED = [(0, 2, 4), (5, 16, 12), (9, 30, 6)]


def make_scene(path):
    x = np.load(os.path.join(SRC, "models", "digits", "test_x.npy"))
    y = np.load(os.path.join(SRC, "models", "digits", "test_y.npy"))
    canvas = np.zeros((24, 40), np.uint8)
    truth = []
    for idx, cx, cy in PLACED:
        canvas[cy:cy + 8, cx:cx + 8] = np.rint(x[idx, 0] * 255).astype(np.uint8)
        truth.append((cx, cy, int(y[idx])))
    from PIL import Image
    Image.fromarray(canvas).save(path)
    return truth


def windows(height, width, stride=2):
    return [(wx, wy) for wy in range(0, height - 7, stride) for wx in range(0, width - 7, stride)]


def preprocess(gray):
    """numpy: each window / 255 as [1, 1, 8, 8] float32."""
    h, w = gray.shape
    return [(gray[wy:wy + 8, wx:wx + 8].astype(np.float32) / np.float32(255)).reshape(1, 1, 8, 8) for wx, wy in windows(h, w)]


def load_c_preprocess(build_dir):
    lib_path = os.path.join(build_dir, "libpreprocess.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib_path, os.path.join(HERE, "preprocess.c")], check=True)
    lib = ctypes.CDLL(lib_path)
    lib.preprocess_window.argtypes = [ctypes.POINTER(ctypes.c_uint8), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_float)]
    lib.preprocess_window.restype = ctypes.c_int
    return lib


def preprocess_c(lib, gray):
    """The same through the C function."""
    gray = np.ascontiguousarray(gray, dtype=np.uint8)
    h, w = gray.shape
    res = []
    for wx, wy in windows(h, w):
        out = np.empty((1, 1, 8, 8), np.float32)
        rc = lib.preprocess_window(gray.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), h, w, wx, wy,
                                   out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        if rc != 0:
            raise RuntimeError("preprocess_window failed at (%d, %d)" % (wx, wy))
        res.append(out)
    return res


def postprocess(logits, gray, positions, min_ink=6.0, min_centred=0.97, min_score=0.9, iou=0.1):
    """Softmax per window; windows holding one digit whole (enough ink, and nearly all the ink of the 12x12 region
    around them) whose best class is confident; greedy non-maximum suppression. Returns boxes
    (x, y, w, h, score, class), best first."""
    ink = gray.astype(np.float64) / 255
    h, w = gray.shape
    cands = []
    for (wx, wy), z in zip(positions, logits):
        inside = ink[wy:wy + 8, wx:wx + 8].sum()
        around = ink[max(0, wy - 2):min(h, wy + 10), max(0, wx - 2):min(w, wx + 10)].sum()
        if inside < min_ink or inside < min_centred * around:
            continue
        p = np.exp(z.reshape(-1) - z.max())
        p /= p.sum()
        c = int(np.argmax(p))
        if p[c] >= min_score:
            cands.append((wx, wy, 8, 8, float(p[c]), c))
    cands.sort(key=lambda b: -b[4])
    kept = []
    for b in cands:
        def overlap(a):
            ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
            iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
            inter = ix * iy
            return inter / float(a[2] * a[3] + b[2] * b[3] - inter)
        if all(overlap(a) <= iou for a in kept):
            kept.append(b)
    return kept


def run(out_dir, package=None):
    os.makedirs(out_dir, exist_ok=True)
    if package is None:
        r = npuc.translate("digits", DIGITS, target="drpai", out=os.path.join(out_dir, "output"))
        package = str(r.dir)
    truth = make_scene(os.path.join(out_dir, "scene.png"))
    from PIL import Image
    gray = np.asarray(Image.open(os.path.join(out_dir, "scene.png")))
    pre = preprocess(gray)
    pre_c = preprocess_c(load_c_preprocess(out_dir), gray)
    assert all(np.array_equal(a, b) for a, b in zip(pre, pre_c)), "numpy and C pre-processing differ"
    # npuc.inference in place of kneron_inference: a list of inputs in ONNX shape and their names -> the outputs.
    logits = [npuc.inference([x], ["input"], package=package)[0] for x in pre]
    boxes = postprocess(logits, gray, windows(*gray.shape))
    big = np.kron(gray, np.ones((8, 8), np.uint8))
    utils.draw_boxes(np.stack([big] * 3, axis=-1), [(x * 8, y * 8, w * 8, h * 8, s, c) for x, y, w, h, s, c in boxes],
                     os.path.join(out_dir, "boxes.png"))
    return boxes, truth


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="kneron_flow_out")
    ap.add_argument("--package", help="an npuc package of the digits model (default: translated for drpai into OUT)")
    a = ap.parse_args()
    boxes, truth = run(a.out, a.package)
    for b in boxes:
        print("box x=%d y=%d w=%d h=%d score=%.3f class=%d" % b)
    print("placed:", ", ".join("%d at (%d, %d)" % (c, x, y) for x, y, c in truth))
    print("wrote %s and %s" % (os.path.join(a.out, "scene.png"), os.path.join(a.out, "boxes.png")))


if __name__ == "__main__":
    sys.exit(main())
