#!/usr/bin/python3
"""Writes the TensorFlow Lite test models of tests/frontend/tflite_test.cpp and their expected outputs.

Each model is a folder: model.tflite (written here, with the FlatBuffers Python classes flatc generates from npuc's
own src/frontend/tflite/tflite.fbs; seeded weights), input_<name>.npy and output_<name>.npy, the outputs of Arm NN's
TfLiteParser on its CpuRef backend (Debian's python3-pyarmnn, Arm NN 20.08), an implementation of TFLite nobody here
wrote. Models whose operators Arm NN 20.08 does not run take their outputs from numpy (written here from TFLite's
reference kernels' definitions; said in oracle.txt). Run it again after changing a model: scripts/install_deps.sh
tflite installs what it needs.

    /usr/bin/python3 tests/data/tflite/generate.py [model ...]
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

_gen = tempfile.mkdtemp(prefix="npuc_tflite_fbs_")
subprocess.run(["flatc", "--python", "-o", _gen, os.path.join(ROOT, "src/frontend/tflite/tflite.fbs")], check=True)
sys.path.insert(0, _gen)
import flatbuffers  # noqa: E402
import importlib  # noqa: E402

BUILTIN = importlib.import_module("npuc_tflite.BuiltinOperator").BuiltinOperator
OPTIONS = importlib.import_module("npuc_tflite.BuiltinOptions").BuiltinOptions
TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 2, np.dtype(np.uint8): 3,
         np.dtype(np.int64): 4, np.dtype(np.int8): 9}


def _mod(name):
    return importlib.import_module("npuc_tflite." + name)


def _camel(field):
    return "".join(p[:1].upper() + p[1:] for p in field.split("_"))


def _table(b, name, fields):
    """A table of npuc_tflite.<name>: fields is [(field_name, value)], values already offsets or scalars."""
    m = _mod(name)
    getattr(m, name + "Start")(b)
    for f, v in fields:
        getattr(m, name + "Add" + _camel(f))(b, v)
    return getattr(m, name + "End")(b)


def _ivec(b, values, dtype=np.int32):
    return b.CreateNumpyVector(np.asarray(values, dtype))


class Model:
    """A TFLite subgraph under construction: tensors, constant buffers and operators, in execution order."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.tensors = []  # dicts: name, shape, dtype, data, quant
        self.ops = []  # (code, inputs, outputs, options name or None, option fields)
        self.inputs, self.outputs = [], []
        self.feeds = {}

    def tensor(self, name, shape, dtype=np.float32, data=None, quant=None, buffer=None):
        self.tensors.append(dict(name=name, shape=list(shape), dtype=np.dtype(dtype), data=data, quant=quant,
                                 buffer=buffer))
        return len(self.tensors) - 1

    def input(self, name, shape, dtype=np.float32, quant=None, low=-1.0, high=1.0):
        t = self.tensor(name, shape, dtype, quant=quant)
        self.inputs.append(t)
        if np.dtype(dtype) == np.float32:
            self.feeds[name] = self.rng.uniform(low, high, shape).astype(np.float32)
        else:
            info = np.iinfo(dtype)
            self.feeds[name] = self.rng.integers(info.min, info.max + 1, shape).astype(dtype)
        return t

    def const(self, name, array, quant=None):
        a = np.asarray(array)
        return self.tensor(name, a.shape, a.dtype, data=a, quant=quant)

    def w(self, *shape, scale=0.5):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def op(self, code, inputs, outputs, options=None, **fields):
        self.ops.append((code, list(inputs), list(outputs), options, fields))
        return outputs[0] if len(outputs) == 1 else outputs

    def sparse_const(self, name, values, dense_shape, order, block_map, levels, dtype=np.float32):
        """A sparse constant: its stored values (in traversal order) and its sparsity parameters; levels is one
        ("dense", size) or ("csr", segments, indices) per traversal dim."""
        self.tensors.append(dict(name=name, shape=list(dense_shape), dtype=np.dtype(dtype),
                                 data=np.asarray(values, dtype), quant=None, buffer=None,
                                 sparsity=(order, block_map, levels)))
        return len(self.tensors) - 1

    @staticmethod
    def _sparsity(b, sp):
        order, block_map, levels = sp
        svt = importlib.import_module("npuc_tflite.SparseIndexVector").SparseIndexVector
        metas = []
        for lv in levels:
            if lv[0] == "dense":
                metas.append(_table(b, "DimensionMetadata", [("format", 0), ("dense_size", lv[1])]))
            else:
                seg = _table(b, "Uint8Vector", [("values", b.CreateNumpyVector(np.asarray(lv[1], np.uint8)))])
                ind = _table(b, "Int32Vector", [("values", _ivec(b, lv[2]))])
                metas.append(_table(b, "DimensionMetadata", [
                    ("format", 1), ("array_segments_type", svt.Uint8Vector), ("array_segments", seg),
                    ("array_indices_type", svt.Int32Vector), ("array_indices", ind)]))
        b.StartVector(4, len(metas), 4)
        for x in reversed(metas):
            b.PrependUOffsetTRelative(x)
        dm = b.EndVector()
        fields = [("traversal_order", _ivec(b, order)), ("dim_metadata", dm)]
        if block_map:
            fields.append(("block_map", _ivec(b, block_map)))
        return _table(b, "SparsityParameters", fields)

    def serialize(self):
        b = flatbuffers.Builder(1024)
        codes = sorted({c for c, *_ in self.ops}, key=str)  # a str: a CUSTOM operator's code
        # buffer 0: the empty sentinel
        bufs = [_table(b, "Buffer", [])]
        tensor_buf = {}
        for i, t in enumerate(self.tensors):
            if t["data"] is not None:
                data = b.CreateNumpyVector(np.frombuffer(np.ascontiguousarray(t["data"]).tobytes(), np.uint8))
                tensor_buf[i] = len(bufs)
                bufs.append(_table(b, "Buffer", [("data", data)]))
        tensors = []
        for i, t in enumerate(self.tensors):
            name = b.CreateString(t["name"])
            shape = _ivec(b, t["shape"])
            q = None
            if t["quant"] is not None:
                scale, zp, axis = t["quant"]
                q = _table(b, "QuantizationParameters", [
                    ("scale", b.CreateNumpyVector(np.asarray(scale, np.float32).reshape(-1))),
                    ("zero_point", b.CreateNumpyVector(np.asarray(zp, np.int64).reshape(-1))),
                    ("quantized_dimension", axis)])
            buf = t["buffer"] if t["buffer"] is not None else tensor_buf.get(i, 0)
            sparsity = self._sparsity(b, t["sparsity"]) if t.get("sparsity") else None
            fields = [("shape", shape), ("type", TYPES[t["dtype"]]), ("buffer", buf), ("name", name)]
            if q is not None:
                fields.append(("quantization", q))
            if sparsity is not None:
                fields.append(("sparsity", sparsity))
            tensors.append(_table(b, "Tensor", fields))
        ops = []
        for code, ins, outs, opt, fields in self.ops:
            opt_off = None
            fields = dict(fields)
            if opt:
                vals = []
                for f, v in fields.items():
                    if f.startswith("_"):
                        continue
                    vals.append((f, _ivec(b, v) if isinstance(v, (list, tuple)) else v))
                opt_off = _table(b, opt, vals)
            index = fields.pop("_opcode_index", codes.index(code))
            custom = fields.pop("_custom_options", None)
            f = [("opcode_index", index), ("inputs", _ivec(b, ins)), ("outputs", _ivec(b, outs))]
            if custom is not None:
                f.append(("custom_options", b.CreateNumpyVector(np.frombuffer(custom, np.uint8))))
            if opt_off is not None:
                f += [("builtin_options_type", getattr(OPTIONS, opt)), ("builtin_options", opt_off)]
            ops.append(_table(b, "Operator", f))

        def vec(items):
            b.StartVector(4, len(items), 4)
            for x in reversed(items):
                b.PrependUOffsetTRelative(x)
            return b.EndVector()

        sg = _table(b, "SubGraph", [("tensors", vec(tensors)), ("inputs", _ivec(b, self.inputs)),
                                    ("outputs", _ivec(b, self.outputs)), ("operators", vec(ops)),
                                    ("name", b.CreateString("main"))])
        # Both code fields, as converters write them today (Arm NN 20.08 reads the first one).
        opcodes = []
        for c in codes:
            if isinstance(c, str):
                cc = b.CreateString(c)
                opcodes.append(_table(b, "OperatorCode", [("deprecated_builtin_code", BUILTIN.CUSTOM), ("custom_code", cc),
                                                          ("version", 1), ("builtin_code", BUILTIN.CUSTOM)]))
            else:
                opcodes.append(_table(b, "OperatorCode", [("deprecated_builtin_code", min(c, 127)), ("version", 1),
                                                          ("builtin_code", c)]))
        desc = b.CreateString("npuc test model " + self.name)
        model = _table(b, "Model", [("version", 3), ("operator_codes", vec(opcodes)), ("subgraphs", vec([sg])),
                                    ("description", desc), ("buffers", vec(bufs))])
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())

    def write(self, oracle="armnn", numpy_outputs=None):
        d = os.path.join(HERE, self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        path = os.path.join(d, "model.tflite")
        with open(path, "wb") as f:
            f.write(self.serialize())
        for n, x in self.feeds.items():
            np.save(os.path.join(d, f"input_{n}.npy"), x)
        names = [self.tensors[t]["name"] for t in self.outputs]
        outs = run_armnn(path, self) if oracle == "armnn" else numpy_outputs(self.feeds)
        for n, y in zip(names, outs):
            np.save(os.path.join(d, f"output_{n}.npy"), np.asarray(y))
        with open(os.path.join(d, "oracle.txt"), "w") as f:
            f.write(("Arm NN 20.08 TfLiteParser, CpuRef" if oracle == "armnn" else "numpy " + np.__version__) + "\n")
            f.write("outputs: " + " ".join(names) + "\n")
        return outs


def run_armnn(path, m):
    import pyarmnn as ann
    parser = ann.ITfLiteParser()
    net = parser.CreateNetworkFromBinaryFile(path)
    runtime = ann.IRuntime(ann.CreationOptions())
    opt, _ = ann.Optimize(net, [ann.BackendId("CpuRef")], runtime.GetDeviceSpec(), ann.OptimizerOptions())
    net_id, _ = runtime.LoadNetwork(opt)
    in_info = [parser.GetNetworkInputBindingInfo(0, m.tensors[t]["name"]) for t in m.inputs]
    out_info = [parser.GetNetworkOutputBindingInfo(0, m.tensors[t]["name"]) for t in m.outputs]
    ins = ann.make_input_tensors(in_info, [m.feeds[m.tensors[t]["name"]] for t in m.inputs])
    outs = ann.make_output_tensors(out_info)
    runtime.EnqueueWorkload(net_id, ins, outs)
    res = ann.workload_tensors_to_ndarray(outs)
    return [np.asarray(r).reshape(m.tensors[t]["shape"]) for r, t in zip(res, m.outputs)]


B = BUILTIN
SAME, VALID = 0, 1


def conv():
    m = Model("conv", 1)
    x = m.input("x", [1, 9, 9, 3])
    y1 = m.tensor("conv_same", [1, 5, 5, 4])
    m.op(B.CONV_2D, [x, m.const("w1", m.w(4, 3, 3, 3)), m.const("b1", m.w(4))], [y1], "Conv2DOptions",
         padding=SAME, stride_w=2, stride_h=2, fused_activation_function=3)
    y2 = m.tensor("conv_valid", [1, 1, 4, 6])
    m.op(B.CONV_2D, [y1, m.const("w2", m.w(6, 3, 2, 4)), m.const("b2", m.w(6))], [y2], "Conv2DOptions",
         padding=VALID, stride_w=1, stride_h=2, dilation_w_factor=1, dilation_h_factor=2)
    y3 = m.tensor("conv_even", [1, 5, 5, 2])
    m.op(B.CONV_2D, [x, m.const("w3", m.w(2, 2, 2, 3)), m.const("b3", m.w(2))], [y3], "Conv2DOptions",
         padding=SAME, stride_w=2, stride_h=2, fused_activation_function=1)
    m.outputs = [y2, y3]
    m.write()


def depthwise():
    m = Model("depthwise", 2)
    x = m.input("x", [1, 8, 7, 3])
    y1 = m.tensor("dw_mult2", [1, 4, 4, 6])
    m.op(B.DEPTHWISE_CONV_2D, [x, m.const("w1", m.w(1, 3, 3, 6)), m.const("b1", m.w(6))], [y1],
         "DepthwiseConv2DOptions", padding=SAME, stride_w=2, stride_h=2, depth_multiplier=2, fused_activation_function=3)
    y2 = m.tensor("dw_valid", [1, 2, 2, 6])
    m.op(B.DEPTHWISE_CONV_2D, [y1, m.const("w2", m.w(1, 2, 2, 6)), m.const("b2", m.w(6))], [y2],
         "DepthwiseConv2DOptions", padding=VALID, stride_w=2, stride_h=2, depth_multiplier=1)
    m.outputs = [y1, y2]
    m.write()


def fully_connected():
    m = Model("fully_connected", 3)
    x = m.input("x", [2, 3, 8])
    y1 = m.tensor("fc_flat", [6, 5])
    m.op(B.FULLY_CONNECTED, [x, m.const("w1", m.w(5, 8)), m.const("b1", m.w(5))], [y1], "FullyConnectedOptions",
         fused_activation_function=1)
    y2 = m.tensor("fc_nobias", [6, 4])
    m.op(B.FULLY_CONNECTED, [y1, m.const("w2", m.w(4, 5)), m.const("b2", m.w(4))], [y2], "FullyConnectedOptions")
    m.outputs = [y2]
    m.write()


def pooling():
    m = Model("pooling", 4)
    x = m.input("x", [1, 7, 8, 3])
    outs = []
    for name, code, pad, k, s, shape in [("avg_same", B.AVERAGE_POOL_2D, SAME, (3, 3), (2, 2), [1, 4, 4, 3]),
                                         ("max_same", B.MAX_POOL_2D, SAME, (3, 2), (2, 3), [1, 4, 3, 3]),
                                         ("avg_valid", B.AVERAGE_POOL_2D, VALID, (2, 2), (2, 2), [1, 3, 4, 3]),
                                         ("max_valid", B.MAX_POOL_2D, VALID, (3, 3), (1, 2), [1, 5, 3, 3])]:
        y = m.tensor(name, shape)
        m.op(code, [x], [y], "Pool2DOptions", padding=pad, stride_w=s[1], stride_h=s[0], filter_width=k[1],
             filter_height=k[0])
        outs.append(y)
    m.outputs = outs
    m.write()


def binary():
    m = Model("binary", 5)
    x = m.input("x", [1, 4, 5, 3])
    z = m.input("z", [1, 4, 5, 3], low=0.5, high=2.0)
    c = m.const("c", m.w(3))
    a = m.op(B.ADD, [x, c], [m.tensor("add", [1, 4, 5, 3])], "AddOptions", fused_activation_function=1)
    s = m.op(B.SUB, [a, z], [m.tensor("sub", [1, 4, 5, 3])], "SubOptions", fused_activation_function=3)
    mu = m.op(B.MUL, [s, m.const("c2", m.w(1, 1, 5, 3))], [m.tensor("mul", [1, 4, 5, 3])], "MulOptions",
              fused_activation_function=4)
    dv = m.op(B.DIV, [mu, z], [m.tensor("div", [1, 4, 5, 3])], "DivOptions")
    mx = m.op(B.MAXIMUM, [dv, x], [m.tensor("max", [1, 4, 5, 3])])
    mn = m.op(B.MINIMUM, [mx, m.const("c3", np.float32([0.25]))], [m.tensor("min", [1, 4, 5, 3])])
    m.outputs = [dv, mn]
    m.write()


def activations():
    m = Model("activations", 6)
    x = m.input("x", [1, 3, 4, 5], low=-4, high=4)
    outs = []
    for name, code, opt, kw in [("relu", B.RELU, None, {}), ("relu6", B.RELU6, None, {}),
                                ("logistic", B.LOGISTIC, None, {}),
                                ("tanh", B.TANH, None, {}), ("leaky", B.LEAKY_RELU, "LeakyReluOptions", {"alpha": 0.2}),
                                ("hard_swish", B.HARD_SWISH, None, {})]:
        outs.append(m.op(code, [x], [m.tensor(name, [1, 3, 4, 5])], opt, **kw))
    m.outputs = outs
    m.write()


def numpy_math():
    """EXP, SQRT, RSQRT, RELU_N1_TO_1 (as an operator and fused), a convolution without bias (input -1): Arm NN
    20.08's TfLiteParser parses none of them: numpy."""
    m = Model("math", 7)
    x = m.input("x", [1, 2, 3, 4], low=0.1, high=3.0)
    e = m.op(B.EXP, [x], [m.tensor("exp", [1, 2, 3, 4])])
    q = m.op(B.SQRT, [x], [m.tensor("sqrt", [1, 2, 3, 4])])
    r = m.op(B.RSQRT, [x], [m.tensor("rsqrt", [1, 2, 3, 4])])
    n = m.op(B.RELU_N1_TO_1, [m.op(B.SUB, [x, m.const("two", np.float32([2]))], [m.tensor("sub", [1, 2, 3, 4])])],
             [m.tensor("relu_n1", [1, 2, 3, 4])])
    w = m.w(2, 1, 1, 4)
    c = m.op(B.CONV_2D, [x, m.const("w", w), -1], [m.tensor("conv_nobias", [1, 2, 3, 2])], "Conv2DOptions",
             padding=VALID, stride_w=1, stride_h=1, fused_activation_function=2)
    m.outputs = [e, q, r, n, c]
    m.write("numpy", lambda f: [np.exp(f["x"]), np.sqrt(f["x"]), 1 / np.sqrt(f["x"]), np.clip(f["x"] - 2, -1, 1),
                                np.clip(np.einsum("nhwc,oc->nhwo", f["x"], w[:, 0, 0, :]), -1, 1)])


def concat_pad_mean():
    m = Model("concat_pad_mean", 8)
    x = m.input("x", [1, 4, 5, 3])
    y = m.input("y", [1, 4, 5, 2])
    c = m.op(B.CONCATENATION, [x, y], [m.tensor("concat", [1, 4, 5, 5])], "ConcatenationOptions", axis=-1,
             fused_activation_function=1)
    c2 = m.op(B.CONCATENATION, [c, c], [m.tensor("concat_h", [1, 8, 5, 5])], "ConcatenationOptions", axis=1)
    p = m.op(B.PAD, [c2, m.const("paddings", np.int32([[0, 0], [1, 2], [0, 1], [0, 0]]))],
             [m.tensor("pad", [1, 11, 6, 5])])
    mean = m.op(B.MEAN, [p, m.const("axes", np.int32([1, 2]))], [m.tensor("mean", [1, 1, 1, 5])], "ReducerOptions",
                keep_dims=True)
    mean2 = m.op(B.MEAN, [c2, m.const("axes2", np.int32([1, 2]))], [m.tensor("mean_flat", [1, 5])], "ReducerOptions",
                 keep_dims=False)
    m.outputs = [p, mean, mean2]
    m.write()


def shapes():
    m = Model("shapes", 9)
    x = m.input("x", [1, 4, 6, 4])
    r = m.op(B.RESHAPE, [x, m.const("shape", np.int32([1, 8, -1]))], [m.tensor("reshape", [1, 8, 12])])
    t = m.op(B.TRANSPOSE, [r, m.const("perm", np.int32([0, 2, 1]))], [m.tensor("transpose", [1, 12, 8])])
    sl = m.op(B.SLICE, [x, m.const("begin", np.int32([0, 1, 2, 0])), m.const("size", np.int32([1, 2, 4, 3]))],
              [m.tensor("slice", [1, 2, 4, 3])])
    ss = m.op(B.STRIDED_SLICE, [x, m.const("ss_begin", np.int32([0, 3, 1, 1])), m.const("ss_end", np.int32([1, 0, 6, 4])),
                               m.const("ss_strides", np.int32([1, -1, 2, 2]))], [m.tensor("strided", [1, 3, 3, 2])],
              "StridedSliceOptions", begin_mask=1, end_mask=1)
    ss2 = m.op(B.STRIDED_SLICE, [x, m.const("ss2_begin", np.int32([0, 2, 0, 0])), m.const("ss2_end", np.int32([1, 3, 6, 4])),
                                m.const("ss2_strides", np.int32([1, 1, 1, 1]))], [m.tensor("strided_shrink", [1, 6, 4])],
               "StridedSliceOptions", shrink_axis_mask=2)
    sp = m.op(B.SPLIT, [m.const("split_axis", np.int32(3)), x], [m.tensor("split0", [1, 4, 6, 2]),
                                                               m.tensor("split1", [1, 4, 6, 2])],
              "SplitOptions", num_splits=2)
    sv = m.op(B.SPLIT_V, [x, m.const("sizes", np.int32([1, -1])), m.const("sv_axis", np.int32(1))],
              [m.tensor("splitv0", [1, 1, 6, 4]), m.tensor("splitv1", [1, 3, 6, 4])], "SplitVOptions", num_splits=2)
    sq = m.op(B.SQUEEZE, [sv[0]], [m.tensor("squeeze", [6, 4])], "SqueezeOptions", squeeze_dims=[0, 1])
    m.outputs = [t, sl, ss, ss2, sp[1], sv[1], sq]
    m.write()


def resize():
    m = Model("resize", 10)
    x = m.input("x", [1, 3, 4, 2])
    size = m.const("size", np.int32([7, 5]))
    outs = []
    for name, code, opt, kw in [("bilinear", B.RESIZE_BILINEAR, "ResizeBilinearOptions", {}),
                                ("bilinear_align", B.RESIZE_BILINEAR, "ResizeBilinearOptions", {"align_corners": True}),
                                ("nearest", B.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptions", {})]:
        outs.append(m.op(code, [x, size], [m.tensor(name, [1, 7, 5, 2])], opt, **kw))
    m.outputs = outs
    m.write()


def tf_resize(x, oh, ow, bilinear, align, half):
    """TFLite's reference resize (resize_bilinear.h / resize_nearest_neighbor.h) in numpy."""
    n, h, w, c = x.shape

    def scale(i, o):
        return (i - 1) / (o - 1) if align and o > 1 else i / o

    sh, sw = np.float32(scale(h, oh)), np.float32(scale(w, ow))
    y = np.zeros((n, oh, ow, c), np.float32)
    for i in range(oh):
        for j in range(ow):
            if bilinear:
                iy = np.float32((i + 0.5) * sh - 0.5) if half else np.float32(i * sh)
                ix = np.float32((j + 0.5) * sw - 0.5) if half else np.float32(j * sw)
                y0, x0 = int(np.floor(iy)), int(np.floor(ix))
                dy, dx = iy - y0, ix - x0
                y0c, x0c = max(y0, 0), max(x0, 0)
                y1, x1 = min(int(np.ceil(iy)), h - 1), min(int(np.ceil(ix)), w - 1)
                y[:, i, j] = (x[:, y0c, x0c] * (1 - dy) * (1 - dx) + x[:, y1, x0c] * dy * (1 - dx) +
                              x[:, y0c, x1] * (1 - dy) * dx + x[:, y1, x1] * dy * dx)
            else:
                off = 0.5 if half else 0.0
                f = (lambda v: int(np.floor(v + 0.5))) if align else (lambda v: int(np.floor(v)))
                iy, ix = min(f((i + off) * sh), h - 1), min(f((j + off) * sw), w - 1)
                y[:, i, j] = x[:, iy, ix]
    return y


def resize_numpy():
    """half_pixel_centers, which Arm NN 20.08 does not read, and nearest with align_corners, where it departs from
    TFLite (it does not round the source coordinate): numpy (TFLite's reference kernels' arithmetic)."""
    m = Model("resize_numpy", 11)
    x = m.input("x", [1, 3, 4, 2])
    size = m.const("size", np.int32([7, 5]))
    b = m.op(B.RESIZE_BILINEAR, [x, size], [m.tensor("bilinear_half", [1, 7, 5, 2])], "ResizeBilinearOptions",
             half_pixel_centers=True)
    n = m.op(B.RESIZE_NEAREST_NEIGHBOR, [x, size], [m.tensor("nearest_half", [1, 7, 5, 2])],
             "ResizeNearestNeighborOptions", half_pixel_centers=True)
    a = m.op(B.RESIZE_NEAREST_NEIGHBOR, [x, size], [m.tensor("nearest_align", [1, 7, 5, 2])],
             "ResizeNearestNeighborOptions", align_corners=True)
    m.outputs = [b, n, a]
    m.write("numpy", lambda f: [tf_resize(f["x"], 7, 5, True, False, True), tf_resize(f["x"], 7, 5, False, False, True),
                                tf_resize(f["x"], 7, 5, False, True, False)])


def softmax_prelu():
    m = Model("softmax_prelu", 12)
    x = m.input("x", [1, 3, 4, 5], low=-3, high=3)
    s = m.op(B.SOFTMAX, [x], [m.tensor("softmax", [1, 3, 4, 5])], "SoftmaxOptions", beta=0.7)
    f = m.input("f", [2, 6], low=-3, high=3)
    s2 = m.op(B.SOFTMAX, [f], [m.tensor("softmax2d", [2, 6])], "SoftmaxOptions", beta=1.0)
    m.outputs = [s, s2]
    m.write()


def tf_transpose_conv(x, w, out_shape, stride, padding):
    """TFLite's reference TransposeConv in numpy: each input pixel scattered through the filter from
    in * stride - pad, the padding computed as for the convolution from out_shape back to the input."""
    y = np.zeros(out_shape, np.float64)
    pads = []
    for a in range(2):
        o, k, s = out_shape[1 + a], w.shape[1 + a], stride[a]
        conv_out = -(-o // s) if padding == SAME else (o - k + s) // s
        pads.append(max((conv_out - 1) * s + k - o, 0) // 2 if padding == SAME else 0)
    for iy in range(x.shape[1]):
        for ix in range(x.shape[2]):
            for fy in range(w.shape[1]):
                for fx in range(w.shape[2]):
                    oy, ox = iy * stride[0] - pads[0] + fy, ix * stride[1] - pads[1] + fx
                    if 0 <= oy < out_shape[1] and 0 <= ox < out_shape[2]:
                        y[:, oy, ox] += x[:, iy, ix].astype(np.float64) @ w[:, fy, fx, :].T.astype(np.float64)
    return y.astype(np.float32)


def transpose_conv():
    """numpy (TFLite's reference TransposeConv): Arm NN 20.08 computes SAME padding from the input's size rather
    than the output's, which differs whenever the padding is odd."""
    m = Model("transpose_conv", 13)
    x = m.input("x", [1, 4, 3, 3])
    w1, w2 = m.w(2, 3, 3, 3), m.w(2, 3, 3, 3)
    a = m.op(B.TRANSPOSE_CONV, [m.const("out_shape", np.int32([1, 8, 6, 2])), m.const("w", w1), x],
             [m.tensor("tconv_same", [1, 8, 6, 2])], "TransposeConvOptions", padding=SAME, stride_w=2, stride_h=2)
    b = m.op(B.TRANSPOSE_CONV, [m.const("out_shape2", np.int32([1, 9, 5, 2])), m.const("w2", w2), x],
             [m.tensor("tconv_valid", [1, 9, 5, 2])], "TransposeConvOptions", padding=VALID, stride_w=1, stride_h=2)
    m.outputs = [a, b]
    m.write("numpy", lambda f: [tf_transpose_conv(f["x"], w1, [1, 8, 6, 2], (2, 2), SAME),
                                tf_transpose_conv(f["x"], w2, [1, 9, 5, 2], (2, 1), VALID)])


def transpose_conv_bias():
    """MediaPipe's CUSTOM Convolution2DTransposeBias (TRANSPOSE_CONV with a bias; its parameters a C struct in
    custom_options): numpy (TFLite's reference TransposeConv plus the bias)."""
    m = Model("transpose_conv_bias", 19)
    x = m.input("x", [1, 3, 4, 5])
    w, bias = m.w(2, 3, 3, 5), m.w(2)
    y = m.op("Convolution2DTransposeBias", [x, m.const("w", w), m.const("b", bias)], [m.tensor("tcb", [1, 6, 8, 2])],
             None, _custom_options=np.int32([1, 2, 2]).tobytes())  # SAME, stride_width 2, stride_height 2
    m.outputs = [y]
    m.write("numpy", lambda f: [tf_transpose_conv(f["x"], w, [1, 6, 8, 2], (2, 2), SAME) + bias])


def arg_max_gather():
    """ARG_MAX and GATHER: numpy (Arm NN 20.08's parser reads neither)."""
    m = Model("arg_max_gather", 14)
    x = m.input("x", [1, 3, 4, 5])
    a = m.op(B.ARG_MAX, [x, m.const("axis", np.int32([3]))], [m.tensor("argmax", [1, 3, 4], np.int32)],
             "ArgMaxOptions", output_type=2)
    g = m.op(B.GATHER, [x, m.const("indices", np.int32([3, 0, 3]))], [m.tensor("gather", [1, 3, 3, 5])],
             "GatherOptions", axis=2)
    m.outputs = [a, g]
    m.write("numpy", lambda f: [np.argmax(f["x"], axis=3).astype(np.int32), np.take(f["x"], [3, 0, 3], axis=2)])


def class_map():
    """A segmentation net's class map: CONV_2D (5 classes) then ARG_MAX over the channels (int64): numpy."""
    m = Model("class_map", 15)
    x = m.input("x", [1, 8, 6, 3])
    w, b = m.w(5, 3, 3, 3), m.w(5)
    c = m.tensor("logits", [1, 8, 6, 5])
    m.op(B.CONV_2D, [x, m.const("w", w), m.const("b", b)], [c], "Conv2DOptions", padding=SAME, stride_w=1, stride_h=1)
    a = m.op(B.ARG_MAX, [c, m.const("axis", np.int32([3]))], [m.tensor("classes", [1, 8, 6], np.int64)],
             "ArgMaxOptions", output_type=4)  # 4: INT64
    m.outputs = [a]
    m.write("numpy", lambda f: [np.argmax(conv_same_s1(f["x"], w, b), axis=3).astype(np.int64)])


def conv_same_s1(x, w, b):
    """A 2-D convolution, SAME padding, stride 1, odd kernel, NHWC x OHWI, in float64."""
    kh, kw = w.shape[1], w.shape[2]
    xp = np.pad(x.astype(np.float64), [(0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)])
    n, h, wd, _ = x.shape
    y = np.zeros((n, h, wd, w.shape[0]))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nhwc,oc->nhwo", xp[:, i:i + h, j:j + wd], w[:, i, j, :].astype(np.float64))
    return (y + b).astype(np.float32)


def prelu_dequantize():
    """PRELU, and DEQUANTIZE of float16 weights feeding a convolution: Arm NN 20.08 parses neither (its convolution
    wants constant weights): numpy."""
    m = Model("prelu_dequantize", 15)
    x = m.input("x", [1, 6, 6, 3], low=-3, high=3)
    alpha = m.w(1, 1, 3)
    p = m.op(B.PRELU, [x, m.const("alpha", alpha)], [m.tensor("prelu", [1, 6, 6, 3])])
    w16 = m.w(4, 3, 3, 3).astype(np.float16)
    b = m.w(4)
    w = m.op(B.DEQUANTIZE, [m.const("w_fp16", w16)], [m.tensor("w", [4, 3, 3, 3])])
    y = m.op(B.CONV_2D, [p, w, m.const("b", b)], [m.tensor("conv", [1, 6, 6, 4])], "Conv2DOptions",
             padding=SAME, stride_w=1, stride_h=1)
    m.outputs = [p, y]

    def oracle(f):
        pr = np.where(f["x"] >= 0, f["x"], f["x"] * alpha).astype(np.float32)
        return [pr, conv_same_s1(pr, w16.astype(np.float32), b)]
    m.write("numpy", oracle)


def mobilenet():
    """A MobileNet-shaped network: conv s2, depthwise + pointwise blocks with RELU6, a residual ADD, global average
    (MEAN), RESHAPE, FULLY_CONNECTED, SOFTMAX."""
    m = Model("mobilenet", 16)
    x = m.input("input", [1, 16, 16, 3])
    h = m.op(B.CONV_2D, [x, m.const("conv0/w", m.w(8, 3, 3, 3)), m.const("conv0/b", m.w(8))],
             [m.tensor("conv0", [1, 8, 8, 8])], "Conv2DOptions", padding=SAME, stride_w=2, stride_h=2,
             fused_activation_function=3)
    shape, c = [1, 8, 8, 8], 8
    for i, (cout, s) in enumerate([(8, 1), (16, 2), (16, 1)]):
        hw = shape[1] // s
        d = m.op(B.DEPTHWISE_CONV_2D, [h, m.const(f"dw{i}/w", m.w(1, 3, 3, c)), m.const(f"dw{i}/b", m.w(c))],
                 [m.tensor(f"dw{i}", [1, hw, hw, c])], "DepthwiseConv2DOptions", padding=SAME, stride_w=s,
                 stride_h=s, depth_multiplier=1, fused_activation_function=3)
        p = m.op(B.CONV_2D, [d, m.const(f"pw{i}/w", m.w(cout, 1, 1, c, scale=0.3)), m.const(f"pw{i}/b", m.w(cout))],
                 [m.tensor(f"pw{i}", [1, hw, hw, cout])], "Conv2DOptions", padding=SAME, stride_w=1, stride_h=1,
                 fused_activation_function=3 if s == 2 else 0)
        if s == 1 and cout == c:
            p = m.op(B.ADD, [p, h], [m.tensor(f"res{i}", [1, hw, hw, cout])], "AddOptions")
        h, shape, c = p, [1, hw, hw, cout], cout
    g = m.op(B.MEAN, [h, m.const("mean_axes", np.int32([1, 2]))], [m.tensor("pool", [1, 1, 1, c])], "ReducerOptions",
             keep_dims=True)
    r = m.op(B.RESHAPE, [g, m.const("flat_shape", np.int32([1, c]))], [m.tensor("flat", [1, c])])
    f = m.op(B.FULLY_CONNECTED, [r, m.const("fc/w", m.w(10, c)), m.const("fc/b", m.w(10))], [m.tensor("logits", [1, 10])],
             "FullyConnectedOptions")
    m.outputs = [m.op(B.SOFTMAX, [f], [m.tensor("prob", [1, 10])], "SoftmaxOptions", beta=1.0)]
    m.write()


def sparse():
    """DENSIFY of sparse constants into a FULLY_CONNECTED and a CONV_2D. Arm NN 20.08 reads no sparsity: numpy, on
    the dense weights. The fully-connected weights are the 4x4 block-sparse example of TFLite's schema documentation
    (tensorflow/lite/testdata/sparse_tensor.json: 2x2 blocks, block rows dense, block columns CSR; stored values
    1, 0, 0, 4, 2, 3, 0, 0, 5, 0, 0, 6), whose dense matrix the documentation gives. The convolution's filter
    [4, 3, 3, 2] keeps about a third of its values: dims 0-2 dense, the input channels CSR."""
    m = Model("sparse", 19)
    x = m.input("x", [1, 4])
    fc_dense = np.array([[1, 0, 2, 3], [0, 4, 0, 0], [0, 0, 5, 0], [0, 0, 0, 6]], np.float32)  # the documentation's
    wfc = m.sparse_const("fc_w_sparse", [1, 0, 0, 4, 2, 3, 0, 0, 5, 0, 0, 6], [4, 4], [0, 1, 2, 3], [0, 1],
                         [("dense", 2), ("csr", [0, 2, 3], [0, 1, 1]), ("dense", 2), ("dense", 2)])
    w = m.op(B.DENSIFY, [wfc], [m.tensor("fc_w", [4, 4])])
    fb = m.w(4)
    fc = m.op(B.FULLY_CONNECTED, [x, w, m.const("fc_b", fb)], [m.tensor("fc", [1, 4])], "FullyConnectedOptions")
    img = m.input("img", [1, 5, 5, 2])
    cw = (m.w(4, 3, 3, 2) * (m.rng.uniform(0, 1, (4, 3, 3, 2)) < 0.35)).astype(np.float32)
    segs, idxs, vals = [0], [], []
    for o in range(4):
        for yy in range(3):
            for xx in range(3):
                nz = np.nonzero(cw[o, yy, xx])[0]
                idxs += nz.tolist()
                vals += cw[o, yy, xx][nz].tolist()
                segs.append(len(idxs))
    cws = m.sparse_const("conv_w_sparse", vals, [4, 3, 3, 2], [0, 1, 2, 3], [],
                         [("dense", 4), ("dense", 3), ("dense", 3), ("csr", segs, idxs)])
    cwd = m.op(B.DENSIFY, [cws], [m.tensor("conv_w", [4, 3, 3, 2])])
    cb = m.w(4)
    conv = m.op(B.CONV_2D, [img, cwd, m.const("conv_b", cb)], [m.tensor("conv", [1, 5, 5, 4])], "Conv2DOptions",
                padding=SAME, stride_w=1, stride_h=1)
    m.outputs = [fc, conv]

    def oracle(f):
        return [(f["x"].astype(np.float64) @ fc_dense.T.astype(np.float64) + fb).astype(np.float32),
                conv_same_s1(f["img"], cw, cb)]
    m.write("numpy", oracle)


def depth_space():
    """DEPTH_TO_SPACE and SPACE_TO_DEPTH (Arm NN 20.08 runs neither): numpy, from TFLite's definition (an output
    pixel's block holds the input channels in row, column, channel order)."""
    m = Model("depth_space", 20)
    x = m.input("x", [1, 3, 4, 8])
    d = m.op(B.DEPTH_TO_SPACE, [x], [m.tensor("d2s", [1, 6, 8, 2])], "DepthToSpaceOptions", block_size=2)
    r = m.op(B.RELU, [d], [m.tensor("relu", [1, 6, 8, 2])])
    s = m.op(B.SPACE_TO_DEPTH, [r], [m.tensor("s2d", [1, 3, 4, 8])], "SpaceToDepthOptions", block_size=2)
    m.outputs = [d, s]

    def oracle(f):
        v = f["x"]
        n, h, w, c = v.shape
        d2s = v.reshape(n, h, w, 2, 2, c // 4).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * 2, w * 2, c // 4)
        rl = np.maximum(d2s, 0)
        s2d = rl.reshape(n, h, 2, w, 2, c // 4).transpose(0, 1, 3, 2, 4, 5).reshape(n, h, w, c)
        return [d2s, s2d]
    m.write("numpy", oracle)


def shapes_numpy():
    """STRIDED_SLICE with an ellipsis, a new axis and a shrunk one, FULLY_CONNECTED with keep_num_dims, PADV2 and a
    TRANSPOSE of a channels-first tensor: Arm NN 20.08 parses none of these forms: numpy."""
    m = Model("shapes_numpy", 17)
    x = m.input("x", [1, 4, 6, 4])
    w = m.w(4, 1, 1, 4)
    c = m.op(B.RELU, [m.op(B.CONV_2D, [x, m.const("w", w), m.const("b", np.zeros(4, np.float32))],
                            [m.tensor("conv", [1, 4, 6, 4])], "Conv2DOptions", padding=VALID, stride_w=1, stride_h=1)],
             [m.tensor("relu", [1, 4, 6, 4])])
    e = m.op(B.STRIDED_SLICE, [c, m.const("e_begin", np.int32([0, 1])), m.const("e_end", np.int32([0, 3])),
                               m.const("e_strides", np.int32([1, 1]))], [m.tensor("ellipsis", [1, 4, 6, 2])],
             "StridedSliceOptions", ellipsis_mask=1)
    n = m.op(B.STRIDED_SLICE, [c, m.const("n_begin", np.int32([0, 0, 2])), m.const("n_end", np.int32([0, 0, 3])),
                               m.const("n_strides", np.int32([1, 1, 1]))], [m.tensor("newaxis", [1, 1, 6, 4])],
             "StridedSliceOptions", begin_mask=1, end_mask=1, new_axis_mask=2, shrink_axis_mask=4)
    wf, bf = m.w(3, 4), m.w(3)
    f = m.op(B.FULLY_CONNECTED, [c, m.const("fc_w", wf), m.const("fc_b", bf)], [m.tensor("fc_keep", [1, 4, 6, 3])],
             "FullyConnectedOptions", keep_num_dims=True)
    p = m.op(B.PADV2, [c, m.const("pads", np.int32([[0, 0], [1, 0], [0, 2], [1, 1]])), m.const("pad_value", np.float32(-0.5))],
             [m.tensor("padv2", [1, 5, 8, 6])])
    t = m.op(B.TRANSPOSE, [c, m.const("perm", np.int32([0, 3, 1, 2]))], [m.tensor("to_nchw", [1, 4, 4, 6])])
    m.outputs = [e, n, f, p, t]

    def oracle(fd):
        r = np.maximum(np.einsum("nhwc,oc->nhwo", fd["x"], w[:, 0, 0, :]), 0).astype(np.float32)
        return [r[..., 1:3], r[:, None, 2], (r @ wf.T + bf).astype(np.float32),
                np.pad(r, [(0, 0), (1, 0), (0, 2), (1, 1)], constant_values=-0.5), r.transpose(0, 3, 1, 2)]
    m.write("numpy", oracle)


def quant_io():
    """QUANTIZE and DEQUANTIZE of activations: a float model with an int8 part in the middle."""
    m = Model("quant_io", 18)
    x = m.input("x", [1, 4, 4, 3], low=-2, high=2)
    q = m.op(B.QUANTIZE, [x], [m.tensor("q", [1, 4, 4, 3], np.int8, quant=([0.02], [0], 0))])
    r = m.op(B.QUANTIZE, [q], [m.tensor("requant", [1, 4, 4, 3], np.int8, quant=([0.03], [5], 0))])
    d = m.op(B.DEQUANTIZE, [r], [m.tensor("dq", [1, 4, 4, 3])])
    m.outputs = [q, d]
    m.write()


def qweights(w, axis):
    """Symmetric int8 weights, one scale per index of `axis` (TFLite's per-channel scheme)."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    scale = np.maximum(np.abs(w).max(axis=red), 1e-6) / 127.0
    shape = [1] * w.ndim
    shape[axis] = -1
    return np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8), scale.astype(np.float32)


def quant_int8():
    """A fully int8 model as TFLite's converter writes one: int8 input and output, per-channel int8 weights, int32
    biases (scale = input scale x weight scale), each activation with its own scale and zero point."""
    m = Model("quant_int8", 20)
    qx = (0.02, 3)
    x = m.input("input", [1, 8, 8, 3], np.int8, quant=([qx[0]], [qx[1]], 0))

    def layer(name, code, inp, in_scale, w_float, axis, out_shape, out_q, opt, **kw):
        wq, ws = qweights(w_float, axis)
        w = m.const(name + "/w", wq, quant=(ws, np.zeros(len(ws), np.int64), axis))
        bias = (m.rng.standard_normal(len(ws)) * 0.3 / (in_scale * ws)).round().astype(np.int32)
        b = m.const(name + "/b", bias, quant=(in_scale * ws, np.zeros(len(ws), np.int64), 0))
        return m.op(code, [inp, w, b], [m.tensor(name, out_shape, np.int8, quant=([out_q[0]], [out_q[1]], 0))],
                    opt, **kw)

    c = layer("conv", B.CONV_2D, x, qx[0], m.w(6, 3, 3, 3), 0, [1, 4, 4, 6], (6 / 255, -128), "Conv2DOptions",
              padding=SAME, stride_w=2, stride_h=2, fused_activation_function=3)
    d = layer("dw", B.DEPTHWISE_CONV_2D, c, 6 / 255, m.w(1, 3, 3, 6), 3, [1, 4, 4, 6], (0.05, 2),
              "DepthwiseConv2DOptions", padding=SAME, stride_w=1, stride_h=1, depth_multiplier=1)
    a = m.op(B.ADD, [d, c], [m.tensor("add", [1, 4, 4, 6], np.int8, quant=([0.06], [-5], 0))], "AddOptions")
    p = m.op(B.AVERAGE_POOL_2D, [a], [m.tensor("pool", [1, 2, 2, 6], np.int8, quant=([0.06], [-5], 0))],
             "Pool2DOptions", padding=VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    r = m.op(B.RESHAPE, [p, m.const("shape", np.int32([1, 24]))],
             [m.tensor("flat", [1, 24], np.int8, quant=([0.06], [-5], 0))])
    wq, ws = qweights(m.w(5, 24, scale=0.2), 0)
    wscale = float(ws.max())
    wq = np.clip(np.round(wq * ws[:, None] / wscale), -127, 127).astype(np.int8)  # per tensor, as FC's version 1-4
    fw = m.const("fc/w", wq, quant=([wscale], [0], 0))
    fb = m.const("fc/b", (m.rng.standard_normal(5) * 0.3 / (0.06 * wscale)).round().astype(np.int32),
                 quant=([0.06 * wscale], [0], 0))
    f = m.op(B.FULLY_CONNECTED, [r, fw, fb], [m.tensor("logits", [1, 5], np.int8, quant=([0.04], [1], 0))],
             "FullyConnectedOptions")
    m.outputs = [c, a, f]
    m.write()


def quant_uint8():
    """A uint8 model (TFLite's older per-tensor asymmetric scheme): uint8 input, weights and output."""
    m = Model("quant_uint8", 21)
    x = m.input("input", [1, 6, 6, 2], np.uint8, quant=([0.03], [128], 0))
    w = m.w(4, 3, 3, 2)
    wscale, wzp = float(np.abs(w).max() / 127), 128
    wq = np.clip(np.round(w / wscale) + wzp, 0, 255).astype(np.uint8)
    bias = (m.rng.standard_normal(4) * 0.3 / (0.03 * wscale)).round().astype(np.int32)
    c = m.op(B.CONV_2D, [x, m.const("conv/w", wq, quant=([wscale], [wzp], 0)),
                         m.const("conv/b", bias, quant=([0.03 * wscale], [0], 0))],
             [m.tensor("conv", [1, 6, 6, 4], np.uint8, quant=([6 / 255], [0], 0))], "Conv2DOptions",
             padding=SAME, stride_w=1, stride_h=1, fused_activation_function=3)
    mp = m.op(B.MAX_POOL_2D, [c], [m.tensor("pool", [1, 3, 3, 4], np.uint8, quant=([6 / 255], [0], 0))],
              "Pool2DOptions", padding=VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    m.outputs = [c, mp]
    m.write()


def bad():
    """Files the importer must refuse, each with one flaw (tests/frontend/tflite_test.cpp, CraftedFiles)."""
    d = os.path.join(HERE, "bad")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)

    def save(name, m):
        with open(os.path.join(d, name + ".tflite"), "wb") as f:
            f.write(m.serialize())

    m = Model("tensor_index", 0)
    x = m.input("x", [1, 4])
    m.outputs = [m.op(B.RELU, [99], [m.tensor("y", [1, 4])])]
    save("tensor_index", m)
    m = Model("buffer_index", 0)
    x = m.input("x", [1, 4])
    c = m.tensor("c", [4], buffer=77)
    m.outputs = [m.op(B.ADD, [x, c], [m.tensor("y", [1, 4])])]
    save("buffer_index", m)
    m = Model("opcode_index", 0)
    x = m.input("x", [1, 4])
    m.outputs = [m.op(B.RELU, [x], [m.tensor("y", [1, 4])], None, _opcode_index=5)]
    save("opcode_index", m)
    for name, levels, values in [  # sparse constants their parameters do not describe
            ("sparse_segments", [("dense", 2), ("csr", [0, 2], [0, 1])], [1, 2]),
            ("sparse_index", [("dense", 2), ("csr", [0, 1, 2], [0, 7])], [1, 2]),
            ("sparse_values", [("dense", 2), ("csr", [0, 1, 2], [0, 1])], [1, 2, 3]),
            ("sparse_huge", [("dense", 65536), ("csr", [0] + [1] * 65536, [0])], [1])]:  # 16 GiB dense from 1 value
        m = Model(name, 0)
        x = m.input("x", [1, 2])
        dense = [65536, 65536] if name == "sparse_huge" else [2, 2]
        w = m.op(B.DENSIFY, [m.sparse_const("w_sparse", values, dense, [0, 1], [], levels)], [m.tensor("w", dense)])
        m.outputs = [m.op(B.FULLY_CONNECTED, [x, w], [m.tensor("y", [1, 2])], "FullyConnectedOptions")]
        save(name, m)
    m = Model("cycle", 0)
    x = m.input("x", [1, 4])
    a, b2 = m.tensor("a", [1, 4]), m.tensor("b", [1, 4])
    m.op(B.TANH, [b2], [a])
    m.op(B.TANH, [a], [b2])
    m.outputs = [b2]
    save("cycle", m)
    m = Model("huge_shape", 0)
    x = m.input("x", [1, 1])
    m.tensors[x]["shape"] = [65536, 65536, 65536]
    m.outputs = [m.op(B.RELU, [x], [m.tensor("y", [65536, 65536, 65536])])]
    save("huge_shape", m)
    m = Model("buffer_size", 0)
    x = m.input("x", [2, 3])
    c = m.const("c", np.float32([1, 2, 3]))
    m.tensors[c]["shape"] = [2, 3]
    m.outputs = [m.op(B.ADD, [x, c], [m.tensor("y", [2, 3])])]
    save("buffer_size", m)
    m = Model("unknown_op", 0)
    x = m.input("x", [1, 4])
    r = m.op(B.RELU, [x], [m.tensor("r", [1, 4])])
    m.outputs = [m.op(B.LSTM, [r], [m.tensor("y", [1, 4])])]
    save("unknown_op", m)
    m = Model("custom_op", 0)
    x = m.input("x", [1, 4])
    m.outputs = [m.op("MyOp", [x], [m.tensor("y", [1, 4])])]
    save("custom_op", m)
    m = Model("shape_mismatch", 0)
    x = m.input("x", [1, 9, 9, 3])
    m.outputs = [m.op(B.CONV_2D, [x, m.const("w", m.w(2, 2, 2, 3)), m.const("b", m.w(2))],
                      [m.tensor("y", [1, 4, 4, 2])], "Conv2DOptions", padding=SAME, stride_w=2, stride_h=2)]
    save("shape_mismatch", m)
    with open(os.path.join(HERE, "conv", "model.tflite"), "rb") as f:  # a file cut short (the verifier refuses it)
        head = f.read(100)
    with open(os.path.join(d, "truncated.tflite"), "wb") as f:
        f.write(head)


def main():
    wanted = set(sys.argv[1:])
    for fn in [conv, depthwise, fully_connected, pooling, binary, activations, numpy_math, concat_pad_mean, shapes,
               resize, resize_numpy, softmax_prelu, transpose_conv, transpose_conv_bias, arg_max_gather, class_map, prelu_dequantize,
               mobilenet, shapes_numpy, sparse, depth_space,
               quant_io, quant_int8, quant_uint8, bad]:
        if wanted and fn.__name__ not in wanted:
            continue
        try:
            fn()
            print("wrote", fn.__name__)
        except Exception as e:  # report and go on: the others are still written
            print("FAILED", fn.__name__, type(e).__name__, e)


if __name__ == "__main__":
    main()
