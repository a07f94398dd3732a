"""npuc.tune (python3 -m npuc tune, npuc tune): the int8 package that loses at most `max_drop` points of accuracy with the least estimated time.

    res = npuc.tune("model.onnx", "tidl", calib={"input": calib_x}, dataset={"input": test_x}, labels=test_y,
                    max_drop=0.3)

The search (docs/tune.md): the float accuracy (the model as a float32 package, target generic) and the plain int8
package's; when the int8 package is within the budget it is the answer. Otherwise each candidate layer (every layer
with weights: convolutions, inner products, MatMuls) is kept in float32 alone and the package evaluated — its
sensitivity, the accuracy that layer gives back. Then greedy: layers are kept in float in order of sensitivity
(most accuracy back first; ties: the lower estimated time, then the model's order) until the budget is met (the
shortest such prefix of that order, found by bisection); then
refinement: each kept layer, least sensitive first, goes back to int8 where the budget still holds. Every package is
a real translation, timed by the target's cost model with the float layers at their float cost, and evaluated on the
whole evaluation set with npuc.evaluate — as Dask tasks on a LocalCluster (or the cluster `client` is connected to),
so the answer is the same bit for bit for any number of workers, and the same as `workers=0` (in this process).

Written: the package (out/prefix), and out/prefix_tune/: precision.yaml (the kept layers, for translate
--precision), tune.json (every candidate tried), tune.html with tune_pareto.png and tune_sensitivity.png.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

METRICS = ("top1", "top5", "map")  # map: detection, mean average precision (npuc.detection; decoder= and boxes as labels)
WIDTHS = ("float32", "float16")  # what a layer of an int8 package may be kept in (translate --keep-float / --keep-float16)


def _error(message):
    from . import _error as e
    return e("tune: " + message)


def _as_inputs(data, names, what):
    """A dict input name -> array from a dict, or from one array for a model with one input."""
    if isinstance(data, dict):
        missing = [n for n in names if n not in data]
        if missing:
            raise _error("%s has no %s (the model's inputs: %s)" % (what, ", ".join(missing), ", ".join(names)))
        return data
    if len(names) != 1:
        raise _error("%s: a dict input name -> samples for a model with %d inputs (%s)" % (what, len(names), ", ".join(names)))
    return {names[0]: data}


class _Evaluator:
    """npuc.evaluate on a Dask client (given, or a LocalCluster of `workers` processes made here), or in this process
    (workers=0)."""

    def __init__(self, client, workers, decoder=None, iou_threshold=0.5):
        self.client, self.cluster, self.own = client, None, False
        self.detection = {"decoder": decoder, "iou_threshold": iou_threshold} if decoder is not None else {}
        if client is None and workers != 0:
            try:
                import distributed
            except ImportError:
                raise _error("workers=%s needs Dask (python3-distributed); workers=0 evaluates in this process" % (workers,))
            n = workers or (os.cpu_count() or 1)
            self.cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            self.client = distributed.Client(self.cluster)
            self.own = True

    def __call__(self, package, dataset, labels, metric):
        from .evaluate import evaluate
        if self.client is None:
            return evaluate(package, dataset, labels, metric=metric, workers=1, progress=False, **self.detection)[metric]
        try:
            return evaluate(package, dataset, labels, metric=metric, client=self.client, progress=False, **self.detection)[metric]
        except Exception as e:  # a dead worker: Dask retries its tasks elsewhere; what still fails is said as such
            from . import Error
            if isinstance(e, Error):
                raise
            raise _error("evaluating %s on the Dask cluster failed: %s: %s" % (os.path.basename(package), type(e).__name__, e))

    def close(self):
        if self.own:
            self.client.close()
            self.cluster.close()


def _iou_threshold_arg(text):
    """--iou-threshold: a number in (0, 1], coco / coco-small / coco-medium / coco-large, or voc07
    (detection.valid_iou_threshold)."""
    from .detection import NAMED_THRESHOLDS, valid_iou_threshold
    try:
        t = text if text in NAMED_THRESHOLDS else float(text)
    except ValueError:
        t = None
    if not valid_iou_threshold(t):
        raise argparse.ArgumentTypeError("%r: a number in (0, 1], or coco, coco-small, coco-medium, coco-large, voc07"
                                         % (text,))
    return t


def _mac_layers(summary_csv):
    """The layers of a translation's summary that have weights (MACs > 0), in program order."""
    import csv
    with open(summary_csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["ith"] != "total"]
    return [r["name"] for r in rows if int(r["MACs"] or 0) > 0]


def _chosen_candidates(layers, candidates):
    """The layers with weights the search may keep in float: all, or those `candidates` names (each must be one)."""
    if candidates is None:
        return list(layers)
    unknown = [c for c in candidates if c not in layers]
    if unknown:
        raise _error("candidate %r is not a layer with weights of the translated model (those: %s)" % (unknown[0], ", ".join(layers)))
    return [c for c in layers if c in set(candidates)]


def _outputs(package, samples, names):
    """The package's first output for every sample (in order), flattened to float64: [n, size]."""
    from . import Runtime
    from .evaluate import run_batches
    rt = Runtime(package)
    try:
        first = rt.outputs[0]["name"]
        feed = {name: np.asarray(samples[name], dtype=np.float32) for name in names}
        return np.concatenate([np.asarray(y[first], dtype=np.float64).reshape(batch, -1)[: stop - start]
                               for start, stop, batch, y in run_batches(rt, feed)])
    finally:
        rt.close()


def _closeness(ref, got):
    """(cosine, SNR in dB) of `got` against `ref` over every sample's output."""
    a, b = ref.reshape(-1), got.reshape(-1)
    na, nb = float(np.dot(a, a)), float(np.dot(b, b))
    cos = float(np.dot(a, b) / np.sqrt(na * nb)) if na > 0 and nb > 0 else float(na == nb)
    err = float(np.dot(a - b, a - b))
    snr = float("inf") if err == 0 else 10 * np.log10(na / err) if na > 0 else float("-inf")
    return cos, snr


def _widths(keep, width):
    """The layers kept wider, each with its width: `keep` (a list) at `width`, or `keep` itself (a dict layer -> width)."""
    widths = dict(keep) if isinstance(keep, dict) else {name: width for name in keep}
    for w in set(widths.values()) | {width}:
        if w not in WIDTHS:
            raise _error("unknown width %r (%s)" % (w, ", ".join(WIDTHS)))
    return widths


def _kept(keep, width):
    """translate's arguments keeping the layers `keep` at `width` (float32: keep_float, float16: keep_float16), or each
    layer of a dict at its own width."""
    widths = _widths(keep, width)
    return {"keep_float": sorted(n for n, w in widths.items() if w == "float32"),
            "keep_float16": sorted(n for n, w in widths.items() if w == "float16")}


def sensitivity(model, target, calib, samples=None, max_samples=64, candidates=None, out="output", input_shapes=None,
                calib_method="minmax", threads=0, progress=False, int8_alone=True, equalize="", bias_correction=False,
                width="float32", adaround=False, absorb_bias=False):
    """Per-layer int8 sensitivity without labels: for every layer with weights (or `candidates`), the output's
    cosine and SNR against the float model when that layer alone is kept at `width` (float32 or float16: what keeping
    it gives back), and when it alone is quantized (every other candidate kept: what quantizing it costs;
    int8_alone=False skips it). On `samples` (default: the calibration samples), at most `max_samples` of them.

    Returns {"float_us", "int8": {cosine, snr_db, estimated_us}, "layers": [{layer, float_alone: {cosine, snr_db},
    int8_alone: {...}, cost_us}, ...]} in the model's order.
    """
    from . import model_io, translate
    _kept([], width)
    model = os.fspath(model)
    names = [i["name"] for i in model_io(model)[0]]
    calib = _as_inputs(calib, names, "the calibration set")
    samples = _as_inputs(samples if samples is not None else calib, names, "the samples")
    samples = {k: (np.concatenate([np.asarray(a) for a in v]) if isinstance(v, (list, tuple)) else np.asarray(v))[:max_samples]
               for k, v in samples.items()}
    if len(samples[names[0]]) == 0:
        raise _error("no samples to measure the sensitivity on")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".npuc-tune-", dir=out)
    shapes = dict(input_shapes or {})
    count = [0]

    def run(keep, tgt=target):
        count[0] += 1
        prefix = "s%03d" % count[0]
        res = translate(prefix, model, target=tgt, out=work, calib=calib if tgt == target else None,
                        calib_method=calib_method, input_shapes=shapes, threads=threads, **_kept(keep, width),
                        equalize=equalize if tgt == target else "", bias_correction=bias_correction and tgt == target,
                        adaround=adaround and tgt == target, absorb_bias=absorb_bias and tgt == target)
        if not res.ok:
            raise _error("target %s cannot take the model: %s" % (tgt, res.errors[0]["rule"] if res.errors else "?"))
        y = _outputs(str(res.dir), samples, names)
        layers = _mac_layers(os.path.join(str(res.dir), prefix + "_summary.csv")) if not keep and tgt == target else None
        shutil.rmtree(res.dir, ignore_errors=True)
        return y, res.estimated_us, layers

    try:
        ref, float_us, _ = run([], "generic")
        y8, us8, layers = run([])
        layers = _chosen_candidates(layers, candidates)
        cos8, snr8 = _closeness(ref, y8)
        rows = []
        for name in layers:
            yf, usf, _ = run([name])
            cf, sf = _closeness(ref, yf)
            row = {"layer": name, "float_alone": {"cosine": cf, "snr_db": sf}, "cost_us": usf - us8}
            text = "alone in float: cosine %.5f, SNR %.1f dB" % (cf, sf)
            if int8_alone:
                yq, _, _ = run([c for c in layers if c != name]) if len(layers) > 1 else (y8, us8, None)
                cq, sq = _closeness(ref, yq)
                row["int8_alone"] = {"cosine": cq, "snr_db": sq}
                text += "; alone in int8: cosine %.5f, SNR %.1f dB" % (cq, sq)
            rows.append(row)
            if progress:
                print("npuc tune: %-40s %s" % (name[:40], text), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"samples": len(samples[names[0]]), "float_us": float_us,
            "int8": {"cosine": cos8, "snr_db": snr8, "estimated_us": us8}, "layers": rows}


def tune(model, target, calib, dataset, labels, max_drop=0.3, metric="top1", prefix=None, out="output", client=None,
         workers=None, input_shapes=None, candidates=None, calib_method="minmax", threads=0, progress=None, report=True,
         rank="accuracy", equalize="", bias_correction=False, width="float32", adaround=False, absorb_bias=False,
         decoder=None, iou_threshold=0.5):
    """Finds the layers to keep in float32 (or `width` "float16") so that the int8 package of `model` for `target` loses at most `max_drop`
    points of `metric` (top1, top5, map) against the float model on `dataset` / `labels`, with the least estimated time.
    Detection (metric "map"): labels are each sample's ground-truth boxes (rows x, y, w, h, class[, difficult[, crowd]]), `decoder` turns one
    sample's outputs into boxes (x, y, w, h, score, class) — a callable or "FILE.py:FUNCTION" —, and the metric is the
    mean average precision at `iou_threshold` (a number, or "coco": COCO's AP over 0.50-0.95, "coco-small" … by size, "voc07": VOC
    2007's eleven-point AP; npuc.detection;
    points are hundredths of it).

    calib: the calibration samples (as npuc.translate's calib=, or one array for a one-input model). dataset: a dict
    input name -> samples stacked on axis 0 (or one array). client: a dask.distributed Client; without one, a
    LocalCluster of `workers` processes (default: the CPU count) is started for the search, or workers=0 evaluates
    in this process. candidates: the layers the search may keep in float (default: every layer with weights).
    rank: how the layers are ordered for the greedy search — "accuracy" (each layer alone in float evaluated on the
    labelled set) or "snr" (without labels: the output's SNR against float on the calibration samples, `sensitivity`;
    cheaper: no evaluation per layer). equalize: "relu" or "relu6", cross-layer equalization of every int8
    candidate (translate --equalize), often enough on its own. bias_correction: translate --bias-correction for
    every int8 candidate; adaround: translate --adaround for every int8 candidate; absorb_bias: translate --absorb-bias
    for every int8 candidate. width: "float32" or "float16", what
    the chosen layers are kept in; "auto": the float16 search, and the float32 one only when float16 cannot meet the
    budget; "mixed": the float32 search, then each chosen layer (least sensitive first) moved to float16 where the
    budget still holds — one package may keep layers at both widths ("auto" ends with it when float16 alone cannot
    meet the budget). The result says which width it has ("mixed" when both), and "widths" each layer's.

    Returns a dict: float, int8 and tuned accuracies, "keep_float" (the chosen layers), "estimated_us" of each,
    "met" (whether the budget holds; when it cannot be met the closest candidate is written and said so), "tried"
    (every candidate: keep_float, accuracy, estimated_us), "sensitivity", and the paths written.
    """
    from . import model_io, translate
    if metric not in METRICS:
        raise _error("unknown metric %r (%s)" % (metric, ", ".join(METRICS)))
    if rank not in ("accuracy", "snr"):
        raise _error("unknown rank %r (accuracy, snr)" % (rank,))
    if not (isinstance(max_drop, (int, float)) and 0 <= max_drop <= 100):
        raise _error("max_drop is %r: a number of points in [0, 100]" % (max_drop,))
    if width == "auto":  # float16 first (half float32's cost); float32, narrowed to float16 where it can, when float16 cannot meet the budget
        kw = dict(max_drop=max_drop, metric=metric, prefix=prefix, out=out, client=client, workers=workers,
                  input_shapes=input_shapes, candidates=candidates, calib_method=calib_method, threads=threads,
                  progress=progress, report=report, rank=rank, equalize=equalize, bias_correction=bias_correction,
                  adaround=adaround, absorb_bias=absorb_bias, decoder=decoder, iou_threshold=iou_threshold)
        half = tune(model, target, calib, dataset, labels, width="float16", **kw)
        if half["met"]:
            return half
        return tune(model, target, calib, dataset, labels, width="mixed", **kw)
    narrow = width == "mixed"  # the float32 search, then narrowing to float16
    if narrow:
        width = "float32"
    _kept([], width)
    model = os.fspath(model)
    prefix = prefix or os.path.splitext(os.path.basename(model))[0]
    names = [i["name"] for i in model_io(model)[0]]
    dataset = _as_inputs(dataset, names, "the evaluation set")
    calib = _as_inputs(calib, names, "the calibration set")
    n = len(np.asarray(dataset[names[0]]))
    if n == 0:
        raise _error("the evaluation set is empty")
    if metric == "map":
        from .detection import IOU_THRESHOLDS_SAID, load_decoder, portable, truth_boxes, valid_iou_threshold
        if decoder is None:
            raise _error("metric map needs a decoder (the function that turns one sample's outputs into boxes)")
        if not valid_iou_threshold(iou_threshold):
            raise _error("iou_threshold is %r: %s" % (iou_threshold, IOU_THRESHOLDS_SAID))
        decoder = portable(decoder)
        load_decoder(decoder)
        labels = truth_boxes(labels, n)
    else:
        if decoder is not None:
            raise _error("a decoder is for metric map (the metric is %s)" % metric)
        labels = np.asarray(labels).reshape(-1)
        if len(labels) != n:
            raise _error("%d evaluation samples but %d labels (one class index per sample)" % (n, len(labels)))
    if progress is None:
        progress = sys.stderr.isatty()
    os.makedirs(out, exist_ok=True)
    evaluator = _Evaluator(client, workers, decoder if metric == "map" else None, iou_threshold)
    try:
        work = tempfile.mkdtemp(prefix=".npuc-tune-", dir=out)
    except OSError:
        evaluator.close()
        raise
    shapes = dict(input_shapes or {})
    tried = {}  # (target, frozenset of kept layers) -> record
    seconds = {"translate": 0.0, "evaluate": 0.0}  # wall time of each phase

    def say(text):
        if progress:
            print("npuc tune: " + text, file=sys.stderr, flush=True)

    def trial(keep, tgt=target, label=None):
        widths = _widths(keep, width)
        keep = list(widths)
        key = (tgt, frozenset(widths.items()))
        if key in tried:
            return tried[key]
        k = len(tried)
        t0 = time.perf_counter()
        res = translate("t%03d" % k, model, target=tgt, out=work, calib=calib if tgt == target else None,
                        calib_method=calib_method, input_shapes=shapes, threads=threads, **_kept(widths, width),
                        equalize=equalize if tgt == target else "", bias_correction=bias_correction and tgt == target,
                        adaround=adaround and tgt == target, absorb_bias=absorb_bias and tgt == target,
                        calib_stats=stats if tgt == target else b"")
        if not res.ok:
            bad = "; ".join("%s (%s): %s" % (e["name"], e["op_type"], e["rule"]) for e in res.errors[:3])
            raise _error("target %s cannot take the model: %s" % (tgt, bad))
        t1 = time.perf_counter()
        acc = evaluator(str(res.dir), dataset, labels, metric)
        seconds["translate"] += t1 - t0
        seconds["evaluate"] += time.perf_counter() - t1
        kept = sorted(keep, key=order.get) if order else sorted(keep)
        r = {"keep_float": kept, "widths": {name: widths[name] for name in kept}, "accuracy": acc,
             "estimated_us": res.estimated_us, "target": tgt, "label": label or "%d layer(s) in float" % len(keep)}
        tried[key] = r
        if not keep and tgt == target:  # the plain int8 translation: its summary names the candidate layers
            mac_layers.extend(_mac_layers(os.path.join(str(res.dir), "t%03d_summary.csv" % k)))
        say("%-40s %s %.2f %%  %.1f us" % (r["label"][:40], metric, 100 * acc, res.estimated_us))
        shutil.rmtree(res.dir, ignore_errors=True)
        return r

    order, mac_layers = {}, []
    stats = b""
    try:
        if evaluator.client is not None and not absorb_bias:  # the calibration statistics gathered in shards on the cluster, once
            # (not with absorb_bias: its floors are measured on the whole set, each translation measures them itself)
            from .calibration import statistics
            t0 = time.perf_counter()
            stats = statistics(model, target, calib, client=evaluator.client, progress=progress, input_shapes=shapes,
                               equalize=equalize)
            seconds["calibrate"] = time.perf_counter() - t0
        flt = trial([], tgt="generic", label="float32 (target generic)")
        int8 = trial([], label="int8")
        layers = list(mac_layers)
        order.update({name: i for i, name in enumerate(layers)})
        layers = _chosen_candidates(layers, candidates)
        budget = flt["accuracy"] - max_drop / 100.0
        meets = lambda r: r["accuracy"] >= budget - 1e-12  # noqa: E731
        sens_rows = []
        chosen = []
        if not meets(int8):
            if rank == "snr":  # without labels: the output's SNR with the layer alone in float
                sn = sensitivity(model, target, calib, candidates=layers, out=work, input_shapes=shapes,
                                 calib_method=calib_method, threads=threads, progress=progress, int8_alone=False,
                                 equalize=equalize, bias_correction=bias_correction, width=width, adaround=adaround,
                                 absorb_bias=absorb_bias)
                for row in sn["layers"]:
                    snr = row["float_alone"]["snr_db"]
                    sens_rows.append({"layer": row["layer"], "snr_db": snr, "gain": min(snr, 1e9) - sn["int8"]["snr_db"],
                                      "unit": "dB", "cost_us": row["cost_us"]})
            else:
                for name in layers:
                    r = trial([name], label=name)
                    sens_rows.append({"layer": name, "accuracy": r["accuracy"], "gain": r["accuracy"] - int8["accuracy"],
                                      "unit": "points", "estimated_us": r["estimated_us"],
                                      "cost_us": r["estimated_us"] - int8["estimated_us"]})
            ranked = sorted(sens_rows, key=lambda s: (-s["gain"], s["cost_us"], order[s["layer"]]))
            # Greedy, by bisection over the ranked prefixes (accuracy grows with the layers kept in float, about
            # monotonically: the smallest prefix that meets the budget in log2(n) + 1 evaluations, not n).
            prefix_of = lambda k: [s["layer"] for s in ranked[:k]]  # noqa: E731
            lo, hi = 1, len(ranked)
            if ranked and meets(trial(prefix_of(hi), label="every candidate in float")):
                while lo < hi:
                    mid = (lo + hi) // 2
                    if meets(trial(prefix_of(mid))):
                        hi = mid
                    else:
                        lo = mid + 1
                chosen = prefix_of(lo)
            if chosen and meets(trial(chosen)):
                for s in reversed(ranked):  # refinement: least sensitive back to int8 first
                    if s["layer"] in chosen:
                        fewer = [c for c in chosen if c != s["layer"]]
                        if meets(trial(fewer)):
                            chosen = fewer
            if narrow and chosen and meets(trial(chosen)):  # then float16 where it holds, least sensitive first
                widths = {name: "float32" for name in chosen}
                for s in reversed(ranked):
                    if widths.get(s["layer"]) == "float32":
                        narrower = dict(widths, **{s["layer"]: "float16"})
                        if meets(trial(narrower, label="%s in float16" % s["layer"])):
                            widths = narrower
        ints = [r for r in tried.values() if r["target"] == target]
        met_all = [r for r in ints if meets(r)]
        if met_all:  # the least estimated time, then the fewest layers, among the candidates that meet the budget
            best = min(met_all, key=lambda r: (r["estimated_us"], len(r["keep_float"]), r["keep_float"]))
        else:  # the closest: the most accurate, then the fastest
            best = min(ints, key=lambda r: (-r["accuracy"], r["estimated_us"], r["keep_float"]))
        wide = trial(layers, label="every candidate in float") if layers else int8
        final = translate(prefix, model, target=target, out=out, calib=calib, calib_method=calib_method,
                          input_shapes=shapes, threads=threads, **_kept(best["widths"], width), equalize=equalize,
                          bias_correction=bias_correction, adaround=adaround, absorb_bias=absorb_bias, calib_stats=stats)
    finally:
        evaluator.close()
        shutil.rmtree(work, ignore_errors=True)
    from .detection import name_of
    result = {
        "model": model, "target": target, "metric": metric, "max_drop": max_drop, "samples": n, "equalize": equalize,
        "bias_correction": bias_correction, "width": _width_of(best["widths"], width), "adaround": adaround,
        "absorb_bias": absorb_bias,
        **({"decoder": name_of(decoder), "iou_threshold": iou_threshold} if metric == "map" else {}),
        "float": flt, "int8": int8, "all_float_layers": wide, "tuned": best, "keep_float": best["keep_float"],
        "widths": best["widths"],
        "met": meets(best), "drop": 100.0 * (flt["accuracy"] - best["accuracy"]),
        "int8_drop": 100.0 * (flt["accuracy"] - int8["accuracy"]), "sensitivity": sens_rows,
        "tried": [r for r in tried.values()], "package": str(final.dir), "content_hash": final.content_hash,
        "seconds": seconds,
    }
    if report:
        result["report_dir"] = _write_report(result, os.path.join(out, prefix + "_tune"))
    return result


def _width_of(widths, width):
    """What a set of kept layers is kept in: their one width, "mixed" when there are two, `width` when none."""
    used = set(widths.values())
    return "mixed" if len(used) > 1 else used.pop() if used else width


def _names(r):
    """A candidate's kept layers, each with its width when they have two."""
    widths = r.get("widths") or {}
    mixed = len(set(widths.values())) > 1
    return ", ".join("%s (%s)" % (n, widths[n]) if mixed else n for n in r["keep_float"])


def precision_yaml(keep_float, target, equalize="", bias_correction=False, width="float32", adaround=False, widths=None,
                   absorb_bias=False):
    """The precision file translate --precision reads: the layers run wider than the target's numerics, at `width` or
    each at its `widths` entry (and the cross-layer equalization, when one was used)."""
    lines = ["# npuc precision file (translate --precision; docs/tune.md): layers run wider than target %s's numerics"
             % target]
    if equalize:
        lines.append("equalize: %s" % equalize)
    if bias_correction:
        lines.append("bias_correction: true")
    if adaround:
        lines.append("adaround: true")
    if absorb_bias:
        lines.append("absorb_bias: true")
    lines.append("layers:" + ("" if keep_float else " {}"))
    lines += ["  %s: %s" % (json.dumps(name), (widths or {}).get(name, width)) for name in keep_float]
    return "\n".join(lines) + "\n"


def _pareto(points):
    """The candidates no other beats on both accuracy and time (faster and at least as accurate)."""
    front = []
    for p in sorted(points, key=lambda r: (r["estimated_us"], -r["accuracy"])):
        if not front or p["accuracy"] > front[-1]["accuracy"]:
            front.append(p)
    return front


def _write_report(res, folder):
    import html
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "precision.yaml"), "w") as f:
        f.write(precision_yaml(res["keep_float"], res["target"], res["equalize"], res["bias_correction"], res.get("width", "float32"),
                               res.get("adaround", False), res.get("widths"), res.get("absorb_bias", False)))
    with open(os.path.join(tmp, "tune.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    ints = [r for r in res["tried"] if r["target"] == res["target"]]
    plots = _plots(res, ints, tmp)
    pct = lambda a: "%.2f %%" % (100 * a)  # noqa: E731
    rows = "".join("<tr><td>%s</td><td>%s</td><td>%.1f</td><td>%s</td></tr>" % (
        html.escape(r["label"]), pct(r["accuracy"]), r["estimated_us"], html.escape(_names(r) or "—"))
        for r in sorted(ints, key=lambda r: r["estimated_us"]))
    verdict = ("meets the budget: %s %s, %.2f points below float (at most %.2f)" if res["met"] else
               "<b>cannot meet the budget</b>: the closest candidate, %s %s, is %.2f points below float (at most %.2f)") % (
        res["metric"], pct(res["tuned"]["accuracy"]), res["drop"], res["max_drop"])
    page = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>npuc tune: %s</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}</style>
</head><body><h1>npuc tune: %s on %s</h1>
<p id="verdict">The package keeps %d layer(s) in %s and %s.</p>
<ul><li>float32: %s (%d samples)</li><li>int8: %s (%.2f points below float), estimated %.1f us</li>
<li>tuned: %s, estimated %.1f us</li><li>every candidate layer in float: %s, estimated %.1f us</li></ul>
%s
<h2>Every candidate tried</h2><table><tr><th>candidate</th><th>%s</th><th>estimated us</th><th>kept in float</th></tr>%s</table>
</body></html>
""" % (html.escape(os.path.basename(res["model"])), html.escape(os.path.basename(res["model"])), html.escape(res["target"]),
       len(res["keep_float"]), {"mixed": "float32 / float16"}.get(res["width"], res["width"]), verdict, pct(res["float"]["accuracy"]), res["samples"], pct(res["int8"]["accuracy"]),
       res["int8_drop"], res["int8"]["estimated_us"], pct(res["tuned"]["accuracy"]), res["tuned"]["estimated_us"],
       pct(res["all_float_layers"]["accuracy"]), res["all_float_layers"]["estimated_us"],
       "".join('<p><img src="%s" alt="%s"></p>' % (p, p) for p in plots), res["metric"], rows)
    with open(os.path.join(tmp, "tune.html"), "w") as f:
        f.write(page)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return folder


def _plots(res, ints, folder):
    """tune_pareto.png (accuracy against estimated time, the Pareto front) and tune_sensitivity.png (per layer)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    ax.scatter([r["estimated_us"] for r in ints], [100 * r["accuracy"] for r in ints], s=18, label="candidates tried")
    front = _pareto(ints)
    ax.plot([r["estimated_us"] for r in front], [100 * r["accuracy"] for r in front], "g-", label="Pareto front")
    ax.axhline(100 * res["float"]["accuracy"] - res["max_drop"], color="r", ls="--", label="budget")
    t = res["tuned"]
    ax.scatter([t["estimated_us"]], [100 * t["accuracy"]], s=80, marker="*", color="k", zorder=3, label="chosen")
    ax.set_xlabel("estimated time [us] (target %s)" % res["target"])
    ax.set_ylabel("%s [%%]" % res["metric"])
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "tune_pareto.png"), metadata={"Software": None})
    plt.close(fig)
    made.append("tune_pareto.png")
    if res["sensitivity"]:
        s = res["sensitivity"]
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.28 * len(s)), dpi=100)
        dB = s[0]["unit"] == "dB"
        ax.barh(range(len(s)), [x["gain"] if dB else 100 * x["gain"] for x in s])
        ax.set_yticks(range(len(s)))
        ax.set_yticklabels([x["layer"][-40:] for x in s], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("output SNR gained (dB, calibration samples) with the layer alone in float32" if dB else
                      "%s points back with the layer alone in float32" % res["metric"])
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "tune_sensitivity.png"), metadata={"Software": None})
        plt.close(fig)
        made.append("tune_sensitivity.png")
    return made


def main(argv=None):
    """`npuc tune` (the CLI runs `python3 -m npuc tune ...`): MODEL --target T --calib NAME=X.npy ..."""
    p = argparse.ArgumentParser(prog="npuc tune", description="The int8 package within an accuracy budget with the least "
                                "estimated time: which layers to keep in float32 (docs/tune.md)")
    p.add_argument("model")
    p.add_argument("--target", required=True)
    p.add_argument("--calib", required=True, action="append", help="NAME=samples.npy (samples stacked on axis 0), or NAME=DIR: "
                   "DIR/*.npy shards in name order, or a folder of pictures (.png .jpg .jpeg .bmp .pgm .ppm .tga, name order; "
                   "as translate: --calib-mean, --calib-scale, --calib-bgr)")
    p.add_argument("--eval", action="append", help="NAME=samples.npy or NAME=DIR (shards or pictures), the evaluation set "
                   "(required unless --sensitivity-only)")
    p.add_argument("--calib-mean", help="pictures (of --calib and --eval): (v - M) per channel, M or M,M,M (default 0)")
    p.add_argument("--calib-scale", help="pictures: then times S per channel, S or S,S,S (default 1/255)")
    p.add_argument("--calib-bgr", action="store_true", help="pictures: channels in B, G, R order (default R, G, B)")
    p.add_argument("--labels", help="class index per evaluation sample (.npy; required unless --sensitivity-only); with "
                   "--metric map the ground-truth boxes: a JSON list, per sample, of [x, y, w, h, class] rows (or [x, y, w, h, class, "
                   "difficult]: PASCAL VOC's flag, 0 or 1)")
    p.add_argument("--decoder", help="--metric map: FILE.py:FUNCTION, called with one sample's outputs (in the model's order, "
                   "as the package gives them), returning its boxes (x, y, w, h, score, class)")
    p.add_argument("--iou-threshold", type=_iou_threshold_arg, help="--metric map: the overlap a detection needs (default "
                   "0.5), or coco: COCO's AP, the mean over thresholds 0.50-0.95; coco-small, coco-medium, coco-large: "
                   "COCO's AP of objects of at most 32x32, 32x32 to 96x96, at least 96x96 units of area; voc07: VOC 2007's "
                   "eleven-point AP at 0.5 (docs/tune.md)")
    p.add_argument("--rank", default="accuracy", choices=("accuracy", "snr"), help="order of the greedy search: each layer "
                   "alone in float evaluated on the labelled set (accuracy), or its output SNR on the calibration samples "
                   "(snr: no evaluation per layer)")
    p.add_argument("--sensitivity-only", action="store_true", help="no search: print each layer's output cosine / SNR "
                   "against float with it alone in float32 and alone in int8, on the calibration samples (no labels "
                   "needed), and write it to OUT/PREFIX_sensitivity.csv")
    p.add_argument("--samples", type=int, default=64, help="calibration samples --sensitivity-only measures on (default 64)")
    p.add_argument("--max-drop", type=float, default=0.3, help="points of accuracy the package may lose (default 0.3)")
    p.add_argument("--metric", default="top1", choices=METRICS)
    p.add_argument("--prefix")
    p.add_argument("-o", "--out", default="output")
    p.add_argument("--client", help="a Dask scheduler address (tcp://...); default: a LocalCluster")
    p.add_argument("--workers", type=int, help="LocalCluster worker processes (default: the CPU count; 0: this process)")
    p.add_argument("--candidate", action="append", help="a layer the search may keep in float (repeatable; default: every "
                   "layer with weights)")
    p.add_argument("--calib-method", default="minmax")
    p.add_argument("--bias-correction", action="store_true", help="translate --bias-correction for every int8 candidate")
    p.add_argument("--adaround", action="store_true", help="translate --adaround for every int8 candidate (AdaRound "
                   "rounding of the weights; docs/calibration.md)")
    p.add_argument("--absorb-bias", action="store_true", help="translate --absorb-bias for every int8 candidate (bias "
                   "absorption after the equalization; docs/calibration.md)")
    p.add_argument("--equalize", default="", choices=("", "relu", "relu6"), help="cross-layer equalization of every int8 "
                   "candidate (translate --equalize)")
    p.add_argument("--input-shape", action="append", default=[], help="NAME=d0,d1,...")
    p.add_argument("--threads", "-t", type=int, default=0)
    p.add_argument("--width", default="float32", choices=WIDTHS + ("mixed", "auto"), help="what the chosen layers are kept in: "
                   "float32 (translate --keep-float, the default), float16 (--keep-float16: half the cost, docs/numerics.md), "
                   "mixed (the float32 search, then each chosen layer in float16 where the budget still holds) "
                   "or auto (float16, and mixed only when float16 cannot meet the budget)")
    a = p.parse_args(argv)
    from . import Error

    def numbers(text, option):
        try:
            v = [float(t) for t in text.split(",")]
        except ValueError:
            v = []
        if not v or not all(np.isfinite(v)):
            p.error("%s %r: numbers separated by commas" % (option, text))
        return v

    from . import model_io
    input_dims = {}
    mean = numbers(a.calib_mean, "--calib-mean") if a.calib_mean is not None else [0.0]
    scale = numbers(a.calib_scale, "--calib-scale") if a.calib_scale is not None else [1.0 / 255.0]

    def npys(items, what):
        from .calibration import read_samples
        d = {}
        for it in items:
            name, sep, path = it.partition("=")
            if not sep:
                p.error("%s %r: NAME=file.npy" % (what, it))
            if os.path.isdir(path) and name not in input_dims:  # (pictures need the input's shape)
                try:
                    input_dims.update({i["name"]: list(i["shape"]) for i in model_io(a.model)[0]})
                except Error:
                    pass  # (the model's own error comes from the search; --input-shape may still give the shape)
                input_dims.update(shapes)
            try:
                d[name] = read_samples(path, input_dims.get(name), mean, scale, a.calib_bgr, "%s %s=" % (what, name))
            except Error as e:  # (pictures: the shape and the mean / scale counts are --input-shape's, --calib-mean's)
                hint = " (pictures: --input-shape NAME=1,C,H,W; --calib-mean / --calib-scale give 1 or C values)" \
                    if os.path.isdir(path) else ""
                raise SystemExit("npuc tune: error: %s%s" % (e, hint))
        return d

    shapes = {}
    for it in a.input_shape:
        name, _, dims = it.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            p.error("--input-shape %r: NAME=d0,d1,..." % it)
    client = None
    try:
        if a.client:
            import distributed
            client = distributed.Client(a.client)
        if a.sensitivity_only:
            return _print_sensitivity(a, npys(a.calib, "--calib"), shapes)
        if not a.eval or not a.labels:
            p.error("--eval and --labels are required (unless --sensitivity-only)")
        if (a.decoder or a.iou_threshold is not None) and a.metric != "map":
            p.error("--decoder and --iou-threshold are for --metric map")
        if a.metric == "map":
            if not a.decoder:
                p.error("--metric map needs --decoder FILE.py:FUNCTION")
            try:
                with open(a.labels) as f:
                    labels = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError("%s: not JSON (--metric map: a list, per sample, of [x, y, w, h, class] rows): %s" % (a.labels, e))
        else:
            labels = np.load(a.labels)
        res = tune(a.model, a.target, npys(a.calib, "--calib"), npys(a.eval, "--eval"), labels, max_drop=a.max_drop,
                   metric=a.metric, prefix=a.prefix, out=a.out, client=client, workers=a.workers, input_shapes=shapes,
                   candidates=a.candidate, calib_method=a.calib_method, threads=a.threads, progress=True, rank=a.rank, equalize=a.equalize,
                   bias_correction=a.bias_correction, width=a.width, adaround=a.adaround, absorb_bias=a.absorb_bias,
                   decoder=a.decoder, iou_threshold=0.5 if a.iou_threshold is None else a.iou_threshold)
    except (Error, OSError, ValueError) as e:
        print("npuc tune: error: %s" % e, file=sys.stderr)
        return 2
    finally:
        if client is not None:
            client.close()
    pct = lambda x: "%.2f %%" % (100 * x)  # noqa: E731
    print("float32: %s %s" % (a.metric, pct(res["float"]["accuracy"])))
    print("int8: %s (%.2f points below), estimated %.1f us" % (pct(res["int8"]["accuracy"]), res["int8_drop"], res["int8"]["estimated_us"]))
    print("tuned: %s (%.2f points below), estimated %.1f us, %d layer(s) in %s: %s" % (
        pct(res["tuned"]["accuracy"]), res["drop"], res["tuned"]["estimated_us"], len(res["keep_float"]), res["width"],
        _names(res) or "none"))
    print("candidates tried: %d (translations %.1f s, evaluations %.1f s)" % (len(res["tried"]), res["seconds"]["translate"],
                                                                            res["seconds"]["evaluate"]))
    print("wrote %s (package) and %s (precision.yaml, tune.json, tune.html)" % (res["package"], res.get("report_dir")))
    if not res["met"]:
        print("npuc tune: error: the budget of %.2f points cannot be met with the candidates tried; the package written is "
              "the closest (%.2f points below). Layers kept in float still exchange int8 activations with int8 layers: where those lose "
              "the accuracy, %sanother --calib-method may (docs/tune.md)" % (
                  a.max_drop, res["drop"], "" if a.equalize else "--equalize relu (cross-layer equalization) or "), file=sys.stderr)
        return 1
    return 0


def _print_sensitivity(a, calib, shapes):
    width = {"auto": "float16", "mixed": "float32"}.get(a.width, a.width)
    prefix = a.prefix or os.path.splitext(os.path.basename(a.model))[0]
    r = sensitivity(a.model, a.target, calib, max_samples=a.samples, candidates=a.candidate, out=a.out, input_shapes=shapes,
                    calib_method=a.calib_method, threads=a.threads, progress=True, equalize=a.equalize, width=width,
                    absorb_bias=a.absorb_bias)
    lines = ["layer,float_alone_cosine,float_alone_snr_db,int8_alone_cosine,int8_alone_snr_db,float_cost_us"]
    print("int8 (every layer): cosine %.5f, SNR %.1f dB against float32, on %d samples" % (r["int8"]["cosine"], r["int8"]["snr_db"], r["samples"]))
    print("%-48s %28s %28s %10s" % ("layer", "alone in %s: cos / dB" % width, "alone in int8: cos / dB", "+us"))
    for row in r["layers"]:
        f, q = row["float_alone"], row["int8_alone"]
        print("%-48s %18.5f %9.1f %18.5f %9.1f %10.1f" % (row["layer"][-48:], f["cosine"], f["snr_db"], q["cosine"], q["snr_db"], row["cost_us"]))
        lines.append("%s,%.6f,%.3f,%.6f,%.3f,%.3f" % (json.dumps(row["layer"]) if "," in row["layer"] else row["layer"], f["cosine"],
                                                     f["snr_db"], q["cosine"], q["snr_db"], row["cost_us"]))
    path = os.path.join(a.out, prefix + "_sensitivity.csv")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)
    print("wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
