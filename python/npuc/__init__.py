"""npuc from Python (docs/python.md).

The runtime and the compiler come from the extension npuc._npuc (pybind11 over npuc's C++ API):

    rt = npuc.Runtime("output/digits")           # a package on the simulated device
    out = rt.run({"input": x})                   # dict output name -> numpy array (float32; raw=True: device type)
    res = npuc.translate("digits", "digits.onnx", target="generic")
    y = npuc.run_model("digits.onnx", {"input": x})   # the reference engine

Built on them, here:

    npuc.inference(pre_results, input_names, package=..., onnx_file=..., data_type="float"|"fixed",
                   reordering=None, platform=None)   # Kneron's kneron_inference, for npuc packages
    npuc.evaluate(package, dataset, labels, metric="top1", client=None)   # sharded, on Dask or local processes
    npuc.compare(onnx, package, inputs)              # per-layer table, package vs reference engine
    npuc.tune(model, target, calib, dataset, labels, max_drop=0.3)   # int8 with the fewest float layers in budget

and the Kneron guide's helpers (binary image <-> numpy, RGBA dumps, boxes drawn on a picture) in npuc.utils.
Errors raise npuc.Error (a RuntimeError) with npuc's message, and .code ("invalid argument", "i/o error", ...).
"""
import os
import threading

import numpy as np

from ._npuc import (Error, Pipeline, Runtime, TranslateResult, bundle, bundle_model, bundle_model_ids, model_io,  # noqa: F401
                    pictures_as_samples, register_custom_op, run_model, sample_folder, translate)
from .evaluate import evaluate  # noqa: F401
from .tuning import tune  # noqa: F401
from . import calibration  # noqa: F401,E402

def _error(message, code="invalid argument"):
    """An npuc.Error raised from Python, with the same attributes as the C++ ones."""
    e = Error(message)
    e.code = code
    e.message = message
    return e


__all__ = ["Error", "Pipeline", "Runtime", "TranslateResult", "translate", "run_model", "model_io", "pictures_as_samples", "sample_folder", "register_custom_op", "inference", "evaluate",
           "compare", "FixedArray"]


class FixedArray(np.ndarray):
    """An integer output of a quantized package: real = (value - zero_point) * scale (int8-affine), or in Kneron's terms
    real = value / kneron_scale / 2**radix (zero point 0 only; int8-radix: kneron_scale 1). Attributes: scale,
    zero_point, radix, kneron_scale (radix and kneron_scale None where the zero point is not 0)."""

    def __new__(cls, values, scale, zero_point):
        obj = np.asarray(values).view(cls)
        obj.scale = float(scale)
        obj.zero_point = int(zero_point)
        # Kneron's form, real = fixed / kneron_scale / 2^radix: an int8-radix tensor (zero point 0, scale 2^-radix)
        # has kneron_scale 1; another one with zero point 0 radix 0 and kneron_scale 1 / scale. The formula has no
        # zero point: codes with one have no radix and kneron_scale (None; to_float() gives their real values).
        m, e = np.frexp(obj.scale)
        pow2 = obj.zero_point == 0 and m == 0.5
        obj.radix = int(1 - e) if pow2 else 0 if obj.zero_point == 0 else None
        obj.kneron_scale = 1.0 if pow2 else 1.0 / obj.scale if obj.zero_point == 0 else None
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        self.scale = getattr(obj, "scale", 0.0)
        self.zero_point = getattr(obj, "zero_point", 0)
        self.radix = getattr(obj, "radix", 0)
        self.kneron_scale = getattr(obj, "kneron_scale", 1.0)

    def to_float(self):
        """The real values, as float32."""
        return ((np.asarray(self, dtype=np.float64) - self.zero_point) * self.scale).astype(np.float32)


_runtimes = threading.local()  # per thread: package path -> (identity, Runtime) (inference() loads each package once)


def _manifest_identity(path):
    """What tells a package folder's version apart cheaply: its manifest.json's inode, size and time (a re-translation
    publishes a new folder, so a new file)."""
    try:
        st = os.stat(os.path.join(path, "manifest.json"))
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _manifest_hash(path):
    """The content_hash a package's manifest.json declares (None when it cannot be read: the Runtime says why)."""
    import json
    try:
        with open(os.path.join(path, "manifest.json"), "rb") as f:
            return json.load(f).get("content_hash")
    except (OSError, ValueError, AttributeError):
        return None


def _cached_runtime(cache, key, package, threads=None):
    """The Runtime of `package` in `cache` under `key`, loaded again when the package changed since (a re-translation
    to the same folder): the cache entry is the package's content hash, checked whenever its manifest file changed."""
    ident = _manifest_identity(package)
    entry = cache.get(key)
    if entry is not None and not entry[1].closed:
        if entry[0] == ident and ident is not None:
            return entry[1]
        if _manifest_hash(package) == entry[1].content_hash:
            cache[key] = (ident, entry[1])
            return entry[1]
        entry[1].close()
    rt = Runtime(package) if threads is None else Runtime(package, threads=threads)
    cache[key] = (ident, rt)
    return rt


def _runtime(package):
    cache = getattr(_runtimes, "cache", None)
    if cache is None or getattr(_runtimes, "pid", None) != os.getpid():  # (a forked child starts afresh)
        cache = _runtimes.cache = {}
        _runtimes.pid = os.getpid()
    key = os.path.abspath(os.fspath(package))
    return _cached_runtime(cache, key, key)


def inference(pre_results, input_names, package=None, onnx_file=None, data_type="float", reordering=None, platform=None,
              nef_file=None, bie_file=None, model_id=None, model_file=None):
    """Kneron's kneron_inference for npuc: runs `pre_results` (numpy arrays in ONNX shape, one per name of
    `input_names`) through `package` (an npuc package folder, on the simulated device) or `onnx_file` (the float
    model, on the reference engine) and returns the outputs as numpy arrays in ONNX shape, in the model's order or
    in `reordering`'s (a list of output names).

    data_type "float" gives float32 values; "fixed" (packages only) gives each output as int8 codes — those the device
    stores, or those a float output dequantizes (int8-affine / int8-radix packages) — as a FixedArray carrying its
    scale, zero point and Kneron's radix; an output with no int8 form, or whose codes have a zero point (Kneron's
    fixed / scale / 2^radix cannot express one: most int8-affine outputs), refuses it, naming the output and why.
    platform (520/720 for Kneron) selects nothing here: the
    package fixes the device; it is accepted for compatibility (other values are refused). onnx_file takes a str or a
    path-like, as package does; an npuc package folder given as onnx_file runs as package=. model_id picks a model of a
    bundle (package= a folder written by npuc.bundle: Kneron's multi-model NEF). nef_file / bie_file are Kneron's file
    kinds and are refused with a pointer to `package`. model_file= is onnx_file= under a name that fits every format npuc
    reads (the format is detected from the file: docs/frontends.md); give one of the two.
    """
    if model_file is not None:
        if onnx_file is not None:
            raise _error("npuc.inference: give model_file=... or onnx_file=... (the same argument), not both")
        onnx_file = model_file
    if nef_file or bie_file:
        raise _error("npuc.inference runs npuc packages (package=..., a bundle of them with model_id=...: npuc.bundle) or "
                    "ONNX models (onnx_file=...); Kneron's nef / bie files are not npuc's")
    if model_id is not None:
        if package is None:
            raise _error("npuc.inference: model_id picks a model of a bundle (package=FOLDER written by npuc.bundle or "
                         "`npuc bundle`)")
        package = str(bundle_model(os.fspath(package), model_id))
    elif package is not None and bundle_model_ids(os.fspath(package)):
        raise _error("npuc.inference: %s is a bundle of models (ids %s): give model_id=..." % (
            package, ", ".join(str(i) for i in bundle_model_ids(os.fspath(package)))))
    if (package is None) == (onnx_file is None):
        raise _error("npuc.inference: give exactly one of package=... (the simulated device) or onnx_file=... (the float "
                    "model)")
    if data_type not in ("float", "fixed"):
        raise _error("npuc.inference: data_type must be 'float' or 'fixed', got %r" % (data_type,))
    if platform is not None and platform not in (520, 720):
        raise _error("npuc.inference: platform must be 520 or 720 (Kneron's devices), got %r" % (platform,))
    if onnx_file is not None:
        onnx_file = os.fspath(onnx_file)  # (a str or a path-like, as package= takes)
        if os.path.isdir(onnx_file) and os.path.isfile(os.path.join(onnx_file, "manifest.json")):
            package, onnx_file = onnx_file, None  # an npuc package given as the model: the simulated device runs it
    pre_results = list(pre_results)
    input_names = list(input_names)
    if len(pre_results) != len(input_names):
        raise _error("npuc.inference: %d arrays for %d input names" % (len(pre_results), len(input_names)))
    feed = {name: np.ascontiguousarray(x) for name, x in zip(input_names, pre_results)}
    if onnx_file is not None:
        if data_type == "fixed":
            raise _error("npuc.inference: data_type 'fixed' needs a package (the float model has no fixed-point outputs)")
        outs = run_model(onnx_file, feed)
        order = [o["name"] for o in model_io(onnx_file)[1]]
    else:
        rt = _runtime(package)
        # Every input each call: the cached runtime still holds the last call's arrays, which are not this call's.
        missing = [i["name"] for i in rt.inputs if i["name"] not in feed]
        if missing:
            raise _error("npuc.inference: input %s of %s not given (input_names must name every input of the package: %s)"
                         % (", ".join("'%s'" % m for m in missing), package, ", ".join(i["name"] for i in rt.inputs)))
        for name, x in feed.items():
            rt.set_input(name, x if x.dtype != np.float64 else x.astype(np.float32))
        outs = rt.run(raw=data_type == "fixed")
        order = [o["name"] for o in rt.outputs]
        if data_type == "fixed":
            # An output stored as int8 codes is returned as it is; a float output that dequantizes int8 codes (the
            # last layer of an int8-affine / int8-radix package) as those codes, which it holds exactly.
            by_output = {l["output"]["name"]: l for l in rt.layers if "scale" in l}
            by_float = {l["float_value"]: l for l in rt.layers if "scale" in l}
            fixed = {}
            for name in order:
                y = outs[name]
                q = by_output[name] if name in by_output and y.dtype == np.int8 else by_float.get(name)
                if q is not None and q["zero_point"] != 0:
                    # Kneron's float = fixed / scale / 2^radix has no zero point: no radix and scale give these codes'
                    # real values (it was off by zero_point x scale), so they are not given as Kneron fixed point.
                    raise _error("npuc.inference: output '%s' of %s is int8 with zero point %d (int8-affine numerics): "
                                 "Kneron's fixed / scale / 2^radix has no zero point, so data_type 'fixed' cannot express "
                                 "it; use data_type 'float', or Runtime.run(raw=True) with the layer's scale and zero "
                                 "point (real = (q - zero_point) x scale), or a target with zero-point-free codes "
                                 "(kneron: int8-radix)" % (name, package, q["zero_point"]))
                if name in by_output and y.dtype == np.int8:
                    fixed[name] = FixedArray(y, q["scale"], q["zero_point"])
                elif name in by_float:
                    codes = np.rint(np.asarray(y, np.float64) / q["scale"]) + q["zero_point"]
                    fixed[name] = FixedArray(np.clip(codes, -128, 127).astype(np.int8), q["scale"], q["zero_point"])
                else:
                    raise _error("npuc.inference: output '%s' of %s is stored as %s, not as fixed-point codes: "
                                 "data_type 'fixed' needs an int8 package whose output is quantized"
                                 % (name, package, y.dtype))
            outs = fixed
    names = order if reordering is None else list(reordering)
    missing = [n for n in names if n not in outs]
    if missing:
        raise _error("npuc.inference: reordering names %s, not outputs of the model (its outputs: %s)"
                    % (", ".join(missing), ", ".join(order)))
    return [outs[n] for n in names]


def compare(onnx_file, package, inputs, threads=1):
    """The package on the simulated device against the model on the reference engine, layer by layer (as `npuc
    compare`): a list of dicts (seq, layer, kind, value, shape, matched, max_abs_err, cosine, snr_db), in program
    order. Layers match by the value they write; an int8 layer by the float tensor its codes stand for."""
    rt = Runtime(package, threads=threads)
    layer_out = {}

    def keep(layer, y):  # (a custom layer of several outputs: one entry per output)
        layer_out[(layer["seq"], layer.get("output_index", 0))] = (layer, y)

    rt.run(inputs, callback=keep)
    wanted = []
    for layer, _ in layer_out.values():
        wanted.append(layer.get("float_value") or layer["output"]["name"])
    io_inputs = {i["name"] for i in model_io(onnx_file)[0]}
    capture = sorted(set(w for w in wanted if w not in io_inputs))
    ref = {}
    # Values the model does not compute (npuc's own layers) are left unmatched.
    model_values = set()
    try:
        ref = run_model(onnx_file, inputs, capture=capture, threads=threads)
    except Error:
        for name in capture:
            try:
                ref.update(run_model(onnx_file, inputs, capture=[name], threads=threads))
            except Error:
                pass
    for name in io_inputs:  # (a layer quantizing a model input: compared with that input, as `npuc compare` does)
        if name in wanted and name in inputs:
            ref[name] = inputs[name]
    model_values = set(ref)
    rows = []
    for key in sorted(layer_out):
        seq = key[0]
        layer, y = layer_out[key]
        value = layer.get("float_value") or layer["output"]["name"]
        row = {"seq": seq, "layer": layer["name"], "kind": layer["kind"], "value": value, "shape": tuple(y.shape),
               "matched": value in model_values and np.asarray(ref[value]).size == y.size}
        if row["matched"]:
            got = y.astype(np.float64)
            if "scale" in layer:
                got = (got - layer["zero_point"]) * layer["scale"]
            elif "float_value" in layer:  # int8-pow2 codes: 2^-q as of this frame (each slot written once a frame)
                got = got * rt.output_scale(seq)
            want = np.asarray(ref[value], dtype=np.float64).reshape(got.shape)
            d = got - want
            sig, noise = float(np.sum(want * want)), float(np.sum(d * d))
            na, nb = float(np.sqrt(np.sum(got * got))), float(np.sqrt(sig))
            row["max_abs_err"] = float(np.max(np.abs(d))) if d.size else 0.0
            row["cosine"] = 1.0 if na == 0 and nb == 0 else (0.0 if na == 0 or nb == 0 else float(np.sum(got * want) / (na * nb)))
            row["snr_db"] = float("inf") if noise == 0 else (10 * np.log10(sig / noise) if sig > 0 else float("-inf"))
        rows.append(row)
    rt.close()
    return rows
