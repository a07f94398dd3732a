#!/usr/bin/python3
"""Exports torchvision's classification, segmentation and detection-backbone models and runs npuc on each: inspect,
check and translate for generic and drpai, run on the reference engine (compared with torch's own output), and
simulate every package that translates. Every command must end with success or a clear error (exit status 1 or 2);
an internal error (3), a signal or a timeout is a failure.

    /usr/bin/python3 tools/survey_torchvision.py [--npuc build/bin/npuc] [--out /tmp/npuc_tv] [--doc FILE] [NAME ...]
    make zoo          (the same, writing docs/zoo-torchvision.md)

Seeded random weights (weights=None: nothing is downloaded), batch 1, opset 17. The package checks (issue 23):
- generic (float32): the package simulated in --exact and fast mode at 1 and 2 threads; every output must equal the
  reference engine's bit for bit, in all four runs;
- drpai (float16): the four runs must agree bit for bit, and the output's cosine against the float engine must be
  >= 0.9999 or within 1.5x of the float16-storage floor (1 - cosine <= 1.5 (1 - floor)); the floor is the cosine of
  a float32 engine run that rounds the input and every layer output to float16 (tools/fp16_sensitivity.py outputs on
  the optimized model), the loss no package storing float16 activations avoids.
Prints one line per model and command and a summary; --doc writes the table (docs/zoo-torchvision.md). Exits 1 when
any command crashed, timed out or gave an internal error, when `run` differs from torch by more than 1e-3 relative,
or when a package check fails. Needs Debian's python3-torch, python3-torchvision, python3-onnx and numpy; not part
of `make test` (the exports take minutes and ~3 GB, the --exact runs of the large models minutes more).
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
SEGMENTATION = ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large",
                "deeplabv3_mobilenet_v3_large_argmax"]  # (_argmax: the class map, int64, as the model's output)
# Detection backbones: feature pyramids (lateral 1x1 convs, nearest upsampling and adds, the extra max-pool level),
# every level an output.
DETECTION = ["fpn_resnet50", "fpn_mobilenet_v3_large"]
# Whole detectors, post-processing included (score threshold, per-class top-k, NonMaxSuppression, the best 300):
# one image [3, H, W] in, boxes / scores / labels out, their lengths found by the data. The "_thr" variant raises the
# score threshold to the 80th percentile of its picture's 300 scores, so fewer than 300 pass (60): a count no cap hides.
DETECTOR = ["ssdlite320_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large_thr"]


def export(name, out):
    """NAME.onnx, NAME_in.npy, NAME_torch.npy in `out`; returns None or why the export failed."""
    import torch
    import torchvision.models as tvm
    import torchvision.models.segmentation as tvs
    torch.manual_seed(0)
    size = 299 if name == "inception_v3" else 224
    if name in DETECTOR:
        return export_detector(name, out)
    if name in DETECTION:
        from torchvision.models.detection import backbone_utils as bu

        class Levels(torch.nn.Module):  # the FPN returns an ordered dict of levels
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return tuple(self.m(x).values())
        if name == "fpn_resnet50":
            fpn = bu.resnet_fpn_backbone(backbone_name="resnet50", weights=None, trainable_layers=5)
        else:
            fpn = bu.mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True, trainable_layers=6)
        model = Levels(fpn)
    elif name in SEGMENTATION:
        class Out(torch.nn.Module):  # segmentation models return a dict
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                y = self.m(x)["out"]
                return y.argmax(1) if name.endswith("_argmax") else y
        model = Out(getattr(tvs, name.replace("_argmax", ""))(weights=None, weights_backbone=None))
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
    ys = y if isinstance(y, tuple) else (y,)
    names = ["output"] if len(ys) == 1 else [f"output{i}" for i in range(len(ys))]
    np.save(os.path.join(out, name + "_in.npy"), x)
    np.savez(os.path.join(out, name + "_torch.npz"), **{k: v.numpy().astype(np.float32) for k, v in zip(names, ys)})  # (a class map too)
    path = os.path.join(out, name + ".onnx")
    try:
        with torch.no_grad():
            torch.onnx.export(model, torch.from_numpy(x), path, opset_version=17, input_names=["input"],
                              output_names=names, do_constant_folding=False)
    except Exception:
        # torch 1.13 exports vit's fused attention only when autograd is on (the unfused path).
        torch.onnx.export(model, torch.from_numpy(x), path, opset_version=17, input_names=["input"],
                          output_names=names, do_constant_folding=False)
    return None


def export_detector(name, out):
    """A torchvision detector with its post-processing. Random weights fade to nothing through the backbone (every
    anchor then scores its class bias alone, and the 300 kept are a choice among ties that torch and ONNX make
    differently), so the BatchNorm statistics are first estimated on seeded random pictures: live activations,
    distinct scores."""
    import torch
    import torchvision.models.detection as tvd
    model = getattr(tvd, name.removesuffix("_thr"))(weights=None, weights_backbone=None)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None  # a plain average over the batches below
            m.reset_running_stats()
    model.train()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(4):
            model.head(list(model.backbone(torch.rand(4, 3, 320, 320, generator=g)).values()))
    model.eval()
    x = np.random.RandomState(0).uniform(0, 1, (3, 320, 320)).astype(np.float32)  # a picture's range, as the model takes
    with torch.no_grad():
        y = model([torch.from_numpy(x)])[0]
        if name.endswith("_thr"):
            model.score_thresh = float(np.quantile(y["scores"].numpy(), 0.8))
            y = model([torch.from_numpy(x)])[0]
    names = ["boxes", "scores", "labels"]
    np.save(os.path.join(out, name + "_in.npy"), x)
    np.savez(os.path.join(out, name + "_torch.npz"), **{k: y[k].numpy() for k in names})
    with torch.no_grad():
        torch.onnx.export(model, ([torch.from_numpy(x)],), os.path.join(out, name + ".onnx"), opset_version=17,
                          input_names=["input"], output_names=names)
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


def rules_of(report):
    """'rule (actual, ...)' per broken rule of a check report, e.g. 'drpai.op (HardSigmoid, Resize)'."""
    by_rule, actual = {}, ""
    for line in report.splitlines():
        t = line.strip()
        if t.startswith("actual: "):
            actual = t[len("actual: "):]
        elif t.startswith("rule: "):
            vals = by_rule.setdefault(t[len("rule: "):], [])
            a = actual if len(actual) <= 40 else actual[:37] + "..."
            if a not in vals:
                vals.append(a)
    return "; ".join(f"{r} ({', '.join(v[:3])}{', ...' if len(v) > 3 else ''})" for r, v in sorted(by_rule.items()))


def npuc_cmd(args, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return None, "timeout", time.time() - t0


def torch_outputs(out, name):
    """{output name: torch's output} (an older survey saved NAME_torch.npy for the one output)."""
    npz = os.path.join(out, name + "_torch.npz")
    if os.path.exists(npz):
        return dict(np.load(npz))
    return {"output": np.load(os.path.join(out, name + "_torch.npy"))}


def outputs_in(folder, names):
    return {k: np.load(os.path.join(folder, k + ".npy")) for k in names}


def detections_verdict(got, want):
    """A detector's outputs against torch's as sets: every torch detection has one of the engine's with its label,
    its score within 1e-4 and its box within 1e-4 of the picture's size (320), and no detection is left over. The
    order is not compared: scores a few ulps apart sort differently in float32 evaluated in another order."""
    side = 320.0
    if len(got["scores"]) != len(want["scores"]):
        return f"WRONG ({len(got['scores'])} detections, torch {len(want['scores'])})"
    free = list(range(len(got["scores"])))
    worst = 0.0
    for i in range(len(want["scores"])):
        err = [max(np.abs(got["boxes"][j] - want["boxes"][i]).max() / side, abs(got["scores"][j] - want["scores"][i]))
               if got["labels"][j] == want["labels"][i] else np.inf for j in free]
        k = int(np.argmin(err)) if err else -1
        if k < 0 or err[k] > 1e-4:
            return f"WRONG (torch's detection {i}, label {want['labels'][i]}, score {want['scores'][i]:.5f}, has no match)"
        worst = max(worst, float(err[k]))
        free.pop(k)
    return f"ok ({len(want['scores'])} detections, each within {worst:.1e} of torch's)"


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-300))


def simulate_four(a, pkg, inp, folder):
    """Simulates the package in --exact and fast mode at 1 and 2 threads; returns (the folders, None) or (None, why)."""
    runs = {}
    for mode, extra in (("exact1", ["--exact"]), ("exact2", ["--exact", "-t", "2"]), ("fast1", ["-t", "1"]),
                        ("fast2", ["-t", "2"])):
        d = os.path.join(folder, mode)
        rc, err, _ = npuc_cmd([a.npuc, "simulate", pkg, "--input", "input=" + inp, "-o", d] + extra, a.timeout)
        if rc != 0:
            return None, f"simulate {mode}: {classify(rc, err)}"
        runs[mode] = d
    return runs, None


def check_generic(a, name, names, ref_dir):
    pkg = os.path.join(a.out, "pkg_generic", name)
    runs, why = simulate_four(a, pkg, os.path.join(a.out, name + "_in.npy"), os.path.join(a.out, "sim_generic_" + name))
    if why:
        return False, why
    ref = outputs_in(ref_dir, names)
    for mode, d in runs.items():
        got = outputs_in(d, names)
        for k in names:
            if got[k].shape != ref[k].shape or got[k].tobytes() != ref[k].astype(np.float32).tobytes():
                return False, f"output {k} in {mode} mode differs from the reference engine"
    return True, "the engine's bits in --exact and fast mode at 1 and 2 threads"


def check_drpai(a, name, names, ref_dir):
    pkg = os.path.join(a.out, "pkg_drpai", name)
    inp = os.path.join(a.out, name + "_in.npy")
    runs, why = simulate_four(a, pkg, inp, os.path.join(a.out, "sim_drpai_" + name))
    if why:
        return False, why, None, None
    first = outputs_in(runs["exact1"], names)
    for mode, d in runs.items():
        got = outputs_in(d, names)
        if any(got[k].tobytes() != first[k].tobytes() for k in names):
            return False, f"{mode} differs from exact1", None, None
    # The float16-storage floor: the optimized model in float32 with the input and every layer output rounded.
    tmp = os.path.join(a.out, "floor_" + name)
    os.makedirs(tmp, exist_ok=True)
    r16 = os.path.join(tmp, "o16.onnx")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fp16_sensitivity.py"),
                    "outputs", os.path.join(pkg, name + "_opt.onnx"), r16], check=True, capture_output=True)
    in16 = os.path.join(tmp, "in16.npy")
    np.save(in16, np.load(inp).astype(np.float16).astype(np.float32))
    rc, err, _ = npuc_cmd([a.npuc, "run", r16, "--input", "input=" + in16, "--output-dir", os.path.join(tmp, "run")],
                          a.timeout)
    if rc != 0:
        return False, "floor run: " + classify(rc, err), None, None
    ref = outputs_in(ref_dir, names)
    floor_out = outputs_in(os.path.join(tmp, "run"), names)
    cos = min(cosine(first[k], ref[k]) for k in names)
    floor = min(cosine(floor_out[k], ref[k]) for k in names)
    ok = cos >= 0.9999 or (1 - cos) <= 1.5 * (1 - floor)
    text = f"cosine {cos:.7f}, float16-storage floor {floor:.7f}"
    peak = max(float(np.abs(ref[k]).max()) for k in names)
    if peak < 6e-8:  # float16's smallest subnormal is 2^-24
        text += f" (the float output peaks at {peak:.1e}: below float16's smallest subnormal, it rounds to 0)"
    return ok, text, cos, floor


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npuc", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "npuc"))
    ap.add_argument("--out", default="/tmp/npuc_tv")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--doc", help="write the results table (markdown) to this file")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = a.names or CLASSIFICATION + SEGMENTATION + DETECTION + DETECTOR
    failures = 0
    rows = []
    for name in names:
        model = os.path.join(a.out, name + ".onnx")
        if not os.path.exists(model):
            why = export(name, a.out)
            if why:
                print(f"{name:32s} export: {why}")
                rows.append((name, "export: " + why, "", ""))
                continue
        outs = list(torch_outputs(a.out, name))
        cmds = {"inspect": [a.npuc, "inspect", model]}
        for t in ("generic", "drpai"):
            cmds["check " + t] = [a.npuc, "check", model, "--target", t, "--no-report"]
            cmds["translate " + t] = [a.npuc, "translate", name, "-onnx", model, "--target", t,
                                      "--out", os.path.join(a.out, "pkg_" + t)] + (["-SaveOptOnnx"] if t == "drpai" else [])
        run_dir = os.path.join(a.out, "run_" + name)
        cmds["run"] = [a.npuc, "run", model, "--input", "input=" + os.path.join(a.out, name + "_in.npy"),
                       "--output-dir", run_dir]
        verdicts, reports = {}, {}
        for what, args in cmds.items():
            rc, err, secs = npuc_cmd(args, a.timeout)
            verdict = classify(rc, err)
            if what == "run" and rc == 0 and name in DETECTOR:
                verdict = detections_verdict(outputs_in(run_dir, torch_outputs(a.out, name)), torch_outputs(a.out, name))
            elif what == "run" and rc == 0:
                want = torch_outputs(a.out, name)
                got = outputs_in(run_dir, want)
                rel = max(np.abs(got[k].astype(np.float64) - want[k]).max() / max(np.abs(want[k]).max(), 1e-30)
                          for k in want)
                verdict = f"ok (max rel err {rel:.1e} vs torch)" if rel <= 1e-3 else f"WRONG (max rel err {rel:.1e})"
            bad = verdict.split()[0] in ("TIMEOUT", "CRASH", "INTERNAL", "WRONG")
            failures += bad
            verdicts[what] = verdict
            reports[what] = err
            warn = " [warning: " + err.split("warning")[1].strip()[:80] + "]" if "rounds; stopping" in err else ""
            print(f"{name:32s} {what:18s} {secs:7.1f} s  {verdict}{warn}", flush=True)
        cells = {}
        for t, check in (("generic", check_generic), ("drpai", check_drpai)):
            if not verdicts["translate " + t].startswith("ok"):
                v = verdicts["translate " + t]
                if v.startswith("reported"):
                    cells[t] = "not translated: " + rules_of(reports["check " + t])
                elif "unknown op" in v:
                    cells[t] = "refused: " + v[v.index("unknown op"):].split(" (")[0]
                else:
                    cells[t] = v
                continue
            if not verdicts["run"].startswith("ok"):
                cells[t] = "translated; no engine output to compare"
                continue
            t0 = time.time()
            res = check(a, name, outs, run_dir)
            ok, text = res[0], res[1]
            failures += not ok
            cells[t] = ("ok: " if ok else "FAILED: ") + text
            print(f"{name:32s} {'package ' + t:18s} {time.time() - t0:7.1f} s  {cells[t]}", flush=True)
        run = verdicts["run"]
        if "unknown op" in run:
            run = "refused: " + run[run.index("unknown op"):].split(" (")[0]
        rows.append((name, run, cells.get("generic", ""), cells.get("drpai", "")))
    print(f"{failures} command(s) crashed, timed out, failed internally, computed a wrong output or failed a package check")
    if a.doc:
        write_doc(a.doc, rows)
    return 1 if failures else 0


def write_doc(path, rows):
    """Writes the table; the rows of models not run this time are kept from the file (one model re-run updates its
    row alone)."""
    merged = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if line.startswith("| ") and len(cells) == 5 and cells[0] not in ("model", "---"):
                    merged[cells[0]] = (cells[0], cells[2], cells[3], cells[4])
    merged.update({r[0]: r for r in rows})
    order = CLASSIFICATION + SEGMENTATION + DETECTION + DETECTOR
    rows = sorted(merged.values(), key=lambda r: (order.index(r[0]) if r[0] in order else len(order), r[0]))
    kind = {n: "classification" for n in CLASSIFICATION}
    kind.update({n: "segmentation" for n in SEGMENTATION})
    kind.update({n: "detection backbone (FPN)" for n in DETECTION})
    kind.update({n: "detector with NMS" for n in DETECTOR})
    gen = sum(r[2].startswith("ok") for r in rows)
    drp = sum(r[3].startswith("ok") for r in rows)
    lines = ["# torchvision zoo: what translates for which target", "",
             "Generated by `make zoo` (`tools/survey_torchvision.py --doc docs/zoo-torchvision.md`); do not edit by hand.",
             "Seeded random weights, batch 1, opset 17, input: one seeded standard-normal image. `engine`: the reference",
             "engine against torch. `generic`: the float32 package simulated in --exact and fast mode at 1 and 2 threads,",
             "compared bit for bit with the engine. `drpai`: the float16 package (four runs bit-identical), its cosine",
             "against the float engine and the float16-storage floor (the optimized model in float32 with the input and",
             "every layer output rounded to float16); it passes at cosine >= 0.9999 or within 1.5x of the floor. A model",
             "that does not translate names the rules its nodes break (`npuc check --target T MODEL` lists them).",
             "Detectors take one seeded uniform [0, 1] picture [3, 320, 320] and run with their post-processing; their",
             "BatchNorm statistics are estimated on seeded random pictures first (raw random weights score every anchor",
             "with its class bias alone: ties that torch and ONNX break differently).", "",
             f"{gen} of {len(rows)} models pass for generic, {drp} for drpai.", "",
             "| model | kind | engine vs torch | generic | drpai |", "|---|---|---|---|---|"]
    for name, run, g, d in rows:
        lines.append(f"| {name} | {kind.get(name, '')} | {run} | {g} | {d} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
