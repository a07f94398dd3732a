#!/usr/bin/python3
"""Layer by layer against ONNX Runtime: npuc's per-node times (`npuc bench MODEL --profile --profile-csv NPUC.csv`)
beside ONNX Runtime's own profile of the same model (`node tools/ort_bench.mjs --profile DIR MODEL`), matched on
the model's convolutions.

    /usr/bin/python3 tools/compare_layers.py MODEL.onnx NPUC.csv ORT_PROFILE.json [--top N]

Both sides fuse: ONNX Runtime names a fused node after the tensor it writes (a Conv followed by BatchNormalization
and Clip is `.../Clip_output_0_nchwc`), npuc after the Conv it keeps. Each node of either side is charged to the
model's Conv that starts its chain (walking back from the tensor through BatchNormalization, Relu, Clip, LeakyRelu,
HardSwish, HardSigmoid, Sigmoid / Mul (SiLU) and the Add of a residual connection, whose first input from a Conv
wins); what reaches no Conv (layout reorders, pools, the classifier) is listed by op type. Times: the median over
the profiled runs; ONNX Runtime's profile also holds the warm-up runs, whose first occurrences of each node are
dropped (`--warmup`, ort_bench.mjs's default 3).
"""
import argparse
import collections
import csv
import json
import statistics
import sys

CHAIN = {"BatchNormalization", "Relu", "Clip", "LeakyRelu", "HardSwish", "HardSigmoid", "Sigmoid", "Mul", "Add"}


def load_model(path):
    import onnx
    m = onnx.load(path)
    producer = {}
    by_name = {}
    for n in m.graph.node:
        by_name[n.name] = n
        for o in n.output:
            producer[o] = n
    return m, producer, by_name


def conv_of(node, producer, depth=0):
    """The Conv whose chain ends in node (None when the chain reaches something else)."""
    if node is None or depth > 8:
        return None
    if node.op_type == "Conv":
        return node
    if node.op_type not in CHAIN:
        return None
    for i in node.input:
        c = conv_of(producer.get(i), producer, depth + 1)
        if c is not None:
            return c
    return None


def ort_times(path, producer, warmup):
    events = json.load(open(path))
    per = collections.defaultdict(list)
    ops = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        per[name].append(e["dur"] / 1000.0)
        ops[name] = e.get("args", {}).get("op_name", "?")
    if not per:
        sys.exit(f"{path}: no node events (was the session profiled?)")
    out = collections.defaultdict(float)
    other = collections.defaultdict(float)
    for name, ts in per.items():
        ms = statistics.median(ts[warmup:] if len(ts) > warmup else ts)
        tensor = name[: -len("_nchwc")] if name.endswith("_nchwc") else name
        c = conv_of(producer.get(tensor), producer)
        if c is None:
            other[ops[name]] += ms
        else:
            out[c.name] += ms
    return out, other


def npuc_times(path, producer, by_name):
    out = collections.defaultdict(float)
    other = collections.defaultdict(float)
    for r in csv.DictReader(open(path)):
        ms = float(r["median_ms"])
        node = by_name.get(r["name"])
        c = conv_of(node, producer) if node is not None else None
        if c is None:
            other[r["op"]] += ms
        else:
            out[c.name] += ms
    return out, other


def describe(conv, shapes, inits):
    w = inits.get(conv.input[1], [])
    x = shapes.get(conv.input[0], [])
    attrs = {a.name: (list(a.ints) if a.ints else a.i) for a in conv.attribute}
    g = attrs.get("group", 1)
    s = attrs.get("strides", [1, 1])
    kind = "dw" if g > 1 and len(w) > 1 and w[1] == 1 else ("g%d" % g if g > 1 else "")
    k = "x".join(str(d) for d in w[2:])
    hw = "x".join(str(d) for d in x[2:])
    return f"{k}{'/' + str(s[0]) if s and s[0] > 1 else ''} {w[1] * g if len(w) > 1 else '?'}->{w[0] if w else '?'} @{hw} {kind}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("npuc_csv")
    ap.add_argument("ort_json")
    ap.add_argument("--top", type=int, default=20, help="rows, the largest npuc - ORT difference first (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="ONNX Runtime's warm-up runs in its profile (default 3)")
    a = ap.parse_args()
    import onnx
    m, producer, by_name = load_model(a.model)
    inferred = onnx.shape_inference.infer_shapes(m)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    inits = {i.name: list(i.dims) for i in m.graph.initializer}
    ort, ort_other = ort_times(a.ort_json, producer, a.warmup)
    npu, npu_other = npuc_times(a.npuc_csv, producer, by_name)
    rows = []
    for name in set(ort) | set(npu):
        rows.append((npu.get(name, 0.0) - ort.get(name, 0.0), name, npu.get(name, 0.0), ort.get(name, 0.0)))
    rows.sort(reverse=True)
    print(f"{'conv (kernel/stride in->out @map)':34s} {'npuc ms':>8s} {'ORT ms':>8s} {'ratio':>6s} {'diff':>7s}  node")
    for d, name, n, o in rows[: a.top]:
        ratio = f"{n / o:6.2f}" if o > 0 else "     -"
        print(f"{describe(by_name[name], shapes, inits):34s} {n:8.3f} {o:8.3f} {ratio} {d:+7.3f}  {name}")
    tn, to = sum(npu.values()), sum(ort.values())
    print(f"{'all convolutions (' + str(len(rows)) + ')':34s} {tn:8.3f} {to:8.3f} {tn / to if to else 0:6.2f} {tn - to:+7.3f}")
    for label, d in (("npuc, other nodes", npu_other), ("ORT, other nodes", ort_other)):
        print(f"{label}: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
