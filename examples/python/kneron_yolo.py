#!/usr/bin/python3
"""The Kneron guide's YOLO example with npuc: a YOLO-style detector, user pre-processing (numpy, and C through ctypes),
npuc.inference in place of kneron_inference on a Kneron-style int8 (int8-radix) package, the model's YOLO
post-processing (grid decode, anchor, scores, non-maximum suppression), boxes drawn on the picture.

The model is models/fashion_yolo/fashion_yolo.onnx, trained by the project (models/fashion_yolo/train.py) to find
Fashion-MNIST items on synthetic 96x96 scenes (models/fashion_yolo/scenes.py). Steps:
  1. the package: npuc.translate for target kneron, calibrated on 64 scenes of the training split;
  2. a picture: a scene of the test split, saved as PNG (scene.png);
  3. pre-processing: pixels / 255 as the input [1, 1, 96, 96] float32 (numpy, and the same in C: preprocess.c);
  4. npuc.inference([x], ["image"], package=...) -> the head [1, 15, 12, 12];
  5. post-processing (models/fashion_yolo/yolo.py): boxes (x, y, w, h, score, class) -> npuc.utils.draw_boxes.
  Then the same over --scenes test scenes: precision and recall (IoU >= 0.5, class right) of the package and of the
  float model on the reference engine.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/kneron_yolo.py [--out DIR] [--scenes N]
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
MODEL_DIR = os.path.join(SRC, "models", "fashion_yolo")
MODEL = os.path.join(MODEL_DIR, "fashion_yolo.onnx")
sys.path.insert(0, MODEL_DIR)
import scenes  # noqa: E402
import yolo  # noqa: E402

CALIB_SCENES, CALIB_SEED = 64, 11
TEST_SEED = 7  # the scenes reference.json scores torch on


def preprocess(gray):
    return (gray.astype(np.float32) / np.float32(255)).reshape(1, 1, *gray.shape)


def preprocess_c(build_dir, gray):
    lib_path = os.path.join(build_dir, "libpreprocess.so")
    if not os.path.exists(lib_path):
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib_path, os.path.join(HERE, "preprocess.c")], check=True)
    lib = ctypes.CDLL(lib_path)
    lib.preprocess_image.argtypes = [ctypes.POINTER(ctypes.c_uint8), ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.preprocess_image.restype = ctypes.c_int
    gray = np.ascontiguousarray(gray, dtype=np.uint8)
    out = np.empty((1, 1) + gray.shape, np.float32)
    if lib.preprocess_image(gray.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), gray.size,
                            out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))) != 0:
        raise RuntimeError("preprocess_image failed")
    return out


def translate(out_dir):
    calib = np.concatenate([preprocess(c) for c, _ in scenes.scenes("train", CALIB_SCENES, CALIB_SEED)])
    r = npuc.translate("fashion_yolo", MODEL, target="kneron", calib={"image": calib}, out=os.path.join(out_dir, "output"))
    return str(r.dir)


def score(detector, test):
    tp = fp = fn = 0
    for canvas, truth in test:
        a, b, c = yolo.match(detector(preprocess(canvas)), truth)
        tp, fp, fn = tp + a, fp + b, fn + c
    return tp / max(1, tp + fp), tp / max(1, tp + fn)


def run(out_dir, n_scenes=100, package=None):
    os.makedirs(out_dir, exist_ok=True)
    package = package or translate(out_dir)
    test = scenes.scenes("t10k", n_scenes, TEST_SEED)
    canvas, truth = test[0]
    from PIL import Image
    Image.fromarray(canvas).save(os.path.join(out_dir, "scene.png"))
    gray = np.asarray(Image.open(os.path.join(out_dir, "scene.png")))
    x = preprocess(gray)
    assert np.array_equal(x, preprocess_c(out_dir, gray)), "numpy and C pre-processing differ"
    # npuc.inference in place of kneron_inference: inputs in ONNX shape and their names -> the outputs.
    head = npuc.inference([x], ["image"], package=package)[0]
    boxes = yolo.detect(head)
    big = np.kron(gray, np.ones((4, 4), np.uint8))
    utils.draw_boxes(np.stack([big] * 3, axis=-1), [(bx * 4, by * 4, w * 4, h * 4, s, c) for bx, by, w, h, s, c in boxes],
                     os.path.join(out_dir, "boxes.png"))
    package_pr = score(lambda x: yolo.detect(npuc.inference([x], ["image"], package=package)[0]), test)
    float_pr = score(lambda x: yolo.detect(npuc.run_model(MODEL, {"image": x})["head"]), test)
    return boxes, truth, package_pr, float_pr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="kneron_yolo_out")
    ap.add_argument("--scenes", type=int, default=100, help="test scenes to score (default 100)")
    ap.add_argument("--package", help="a kneron package of fashion_yolo.onnx (default: translated into OUT)")
    a = ap.parse_args()
    boxes, truth, (p, r), (fp, fr) = run(a.out, a.scenes, a.package)
    for b in boxes:
        print("box x=%.1f y=%.1f w=%.1f h=%.1f score=%.3f class=%d (%s)" % (*b, scenes.CLASSES[b[5]]))
    print("placed:", ", ".join("%s at (%d, %d) %dx%d" % (scenes.CLASSES[c], x, y, w, h) for x, y, w, h, c in truth))
    print("%d test scenes: kneron package precision %.3f recall %.3f; float model precision %.3f recall %.3f"
          % (a.scenes, p, r, fp, fr))
    print("wrote %s and %s" % (os.path.join(a.out, "scene.png"), os.path.join(a.out, "boxes.png")))


if __name__ == "__main__":
    sys.exit(main())
