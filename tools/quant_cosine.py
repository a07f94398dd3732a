#!/usr/bin/python3
"""Output cosine of `npuc quantize`'s QDQ model against float, per quantization option set (docs/calibration.md,
"Cross-layer equalization" and "Bias absorption").

    PYTHONPATH=build/python /usr/bin/python3 tools/quant_cosine.py MODEL.onnx INPUT.npy [--npuc build/bin/npuc]

Calibration: the input itself and 7 variants x / 2 + N(0, 0.5) (numpy seed 0, as tools/survey_int8.sh makes them);
evaluation: 8 other inputs x / 2 + N(0, 0.5) (seed 1). Prints the mean cosine of the first output for per-channel
weights, per-tensor weights, per tensor with --equalize relu6, and with --absorb-bias, --bias-correction or --adaround
too, and per channel with --bias-correction.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import npuc

VARIANTS = [("per channel", []), ("per tensor", ["--per-tensor"]),
            ("per tensor, --equalize relu6", ["--per-tensor", "--equalize", "relu6"]),
            ("per tensor, --equalize relu6 --absorb-bias", ["--per-tensor", "--equalize", "relu6", "--absorb-bias"]),
            ("per tensor, --equalize relu6 --bias-correction", ["--per-tensor", "--equalize", "relu6", "--bias-correction"]),
            ("per tensor, --equalize relu6 --adaround", ["--per-tensor", "--equalize", "relu6", "--adaround"]),
            ("per channel, --bias-correction", ["--bias-correction"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--npuc", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "npuc"))
    a = ap.parse_args()
    x = np.load(a.input).astype(np.float32)
    name = npuc.model_io(a.model)[0][0]["name"]
    work = tempfile.mkdtemp(prefix="npuc-cosine-")
    rng = np.random.default_rng(0)
    calib = os.path.join(work, "calib.npy")
    np.save(calib, np.concatenate([x] + [(x * 0.5 + rng.normal(0, 0.5, x.shape)).astype(np.float32) for _ in range(7)]))
    rng = np.random.default_rng(1)
    tests = [(x / 2 + rng.normal(0, np.sqrt(0.5), x.shape)).astype(np.float32) for _ in range(8)]

    def out(model, t):
        r = npuc.run_model(model, {name: t})
        return np.asarray(next(iter(r.values()))).ravel().astype(np.float64)

    ref = [out(a.model, t) for t in tests]
    for label, extra in VARIANTS:
        q = os.path.join(work, "q.onnx")
        r = subprocess.run([a.npuc, "quantize", a.model, "--calib", "%s=%s" % (name, calib), "-o", q] + extra,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("npuc quantize %s failed: %s" % (" ".join(extra), r.stderr.strip()))
        said = [line for line in r.stdout.splitlines() if "absorption" in line]
        cs = [float(np.dot(p, f) / (np.linalg.norm(p) * np.linalg.norm(f))) for p, f in zip(ref, (out(q, t) for t in tests))]
        print("%-44s %.5f%s" % (label, float(np.mean(cs)), ("  (" + said[0] + ")") if said else ""))


if __name__ == "__main__":
    main()
