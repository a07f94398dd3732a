#!/usr/bin/python3
"""Exports torchvision's classification and segmentation models and runs npuc on each: inspect, check and translate
for generic and drpai, and run on the reference engine (compared with torch's own output). Every command must end
with success or a clear error (exit status 1 or 2); an internal error (3), a signal or a timeout is a failure.

    /usr/bin/python3 tools/survey_torchvision.py [--npuc build/bin/npuc] [--out /tmp/npuc_tv] [NAME ...]

Seeded random weights (weights=None: nothing is downloaded), batch 1, opset 17. Prints one line per model and
command and a summary; exits 1 when any command crashed, timed out or gave an internal error, or when `run` differs
from torch by more than 1e-3 relative. Needs Debian's python3-torch, python3-torchvision, python3-onnx and numpy;
not part of `make test` (the exports take minutes and ~3 GB).
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

CLASSIFICATION = ["alexnet", "vgg11", "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "squeezenet1_0",
                  "squeezenet1_1", "densenet121", "inception_v3", "googlenet", "shufflenet_v2_x1_0", "mobilenet_v2",
                  "mobilenet_v3_small", "mobilenet_v3_large", "mnasnet0_5", "efficientnet_b0", "regnet_x_400mf",
                  "regnet_y_400mf", "convnext_tiny", "vit_b_16", "swin_t", "maxvit_t"]
SEGMENTATION = ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]


def export(name, out):
    """NAME.onnx, NAME_in.npy, NAME_torch.npy in `out`; returns None or why the export failed."""
    import torch
    import torchvision.models as tvm
    import torchvision.models.segmentation as tvs
    torch.manual_seed(0)
    size = 299 if name == "inception_v3" else 224
    if name in SEGMENTATION:
        class Out(torch.nn.Module):  # segmentation models return a dict
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]
        model = Out(getattr(tvs, name)(weights=None, weights_backbone=None))
    elif not hasattr(tvm, name):
        return "not in this torchvision"
    elif name in ("inception_v3", "googlenet"):
        model = getattr(tvm, name)(weights=None, aux_logits=False, init_weights=True)
    else:
        model = getattr(tvm, name)(weights=None)
    model.eval()
    x = np.random.RandomState(0).standard_normal((1, 3, size, size)).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x))
    np.save(os.path.join(out, name + "_in.npy"), x)
    np.save(os.path.join(out, name + "_torch.npy"), y.numpy().astype(np.float32))
    path = os.path.join(out, name + ".onnx")
    try:
        with torch.no_grad():
            torch.onnx.export(model, torch.from_numpy(x), path, opset_version=17, input_names=["input"],
                              output_names=["output"], do_constant_folding=False)
    except Exception:
        # torch 1.13 exports vit's fused attention only when autograd is on (the unfused path).
        torch.onnx.export(model, torch.from_numpy(x), path, opset_version=17, input_names=["input"],
                          output_names=["output"], do_constant_folding=False)
    return None


def classify(rc, err):
    if rc is None:
        return "TIMEOUT"
    if rc < 0 or rc >= 128:
        return "CRASH"
    if rc == 3:
        return "INTERNAL"
    if rc == 0:
        return "ok"
    if rc == 1:  # check / translate found unsupported nodes: the report's count and its first rule
        count = next((line.strip() for line in err.splitlines() if " problem" in line or "not supported by" in line), "")
        rules = sorted({line.strip()[len("rule: "):] for line in err.splitlines() if line.strip().startswith("rule: ")})
        return f"reported: {count[-60:]} (rules: {', '.join(rules)[:100]})"
    first = next((line for line in err.splitlines() if "error:" in line), err.strip()[:160])
    return "refused: " + first.replace("npuc: error: ", "")[:160]


def npuc_cmd(args, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return None, "timeout", time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npuc", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "npuc"))
    ap.add_argument("--out", default="/tmp/npuc_tv")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = a.names or CLASSIFICATION + SEGMENTATION
    failures = 0
    for name in names:
        model = os.path.join(a.out, name + ".onnx")
        if not os.path.exists(model):
            why = export(name, a.out)
            if why:
                print(f"{name:32s} export: {why}")
                continue
        cmds = {"inspect": [a.npuc, "inspect", model]}
        for t in ("generic", "drpai"):
            cmds["check " + t] = [a.npuc, "check", model, "--target", t, "--no-report"]
            cmds["translate " + t] = [a.npuc, "translate", name, "-onnx", model, "--target", t,
                                      "--out", os.path.join(a.out, "pkg_" + t)]
        run_dir = os.path.join(a.out, "run_" + name)
        cmds["run"] = [a.npuc, "run", model, "--input", "input=" + os.path.join(a.out, name + "_in.npy"),
                       "--output-dir", run_dir]
        for what, args in cmds.items():
            rc, err, secs = npuc_cmd(args, a.timeout)
            verdict = classify(rc, err)
            if what == "run" and rc == 0:
                got = np.load(os.path.join(run_dir, "output.npy")).astype(np.float64).ravel()
                want = np.load(os.path.join(a.out, name + "_torch.npy")).astype(np.float64).ravel()
                rel = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
                verdict = f"ok (max rel err {rel:.1e} vs torch)" if rel <= 1e-3 else f"WRONG (max rel err {rel:.1e})"
            bad = verdict.split()[0] in ("TIMEOUT", "CRASH", "INTERNAL", "WRONG")
            failures += bad
            warn = " [warning: " + err.split("warning")[1].strip()[:80] + "]" if "rounds; stopping" in err else ""
            print(f"{name:32s} {what:18s} {secs:7.1f} s  {verdict}{warn}", flush=True)
    print(f"{failures} command(s) crashed, timed out, failed internally or computed a wrong output")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
