#!/usr/bin/python3
"""Writes the TensorFlow test graphs of tests/frontend/tf_test.cpp and their expected outputs.

Each graph is a folder: model.pb (a frozen GraphDef written here, with the protobuf classes protoc generates from
npuc's own src/frontend/tf/tf_graph.proto; weights seeded), input_<placeholder>.npy (NHWC, as the graph takes it) and
output_<node>.npy, the outputs of the ORACLE named in oracle.txt:

- OpenCV's dnn module (cv2.dnn.readNetFromTensorflow), an implementation of TensorFlow's ops nobody here wrote. It is
  fed NCHW blobs and gives 4-D outputs NCHW (it converts NHWC graphs to its own layout): they are transposed back to
  NHWC here.
- numpy, written below from TensorFlow's documented semantics (`TfNumpy`), where OpenCV 4.6 does not run the graph
  or departs from TensorFlow (each such graph says why in WHY_NUMPY). Every graph OpenCV runs is also checked
  against the numpy transcription (they agree within 1e-5 relative, or generation stops).

Run it again after changing a graph: scripts/install_deps.sh tf installs what it needs.

    /usr/bin/python3 tests/data/tf/generate.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

_pb_dir = tempfile.mkdtemp(prefix="npuc_tf_pb_")
subprocess.run(["protoc", "-I" + os.path.join(ROOT, "src/frontend/tf"), "--python_out=" + _pb_dir,
                os.path.join(ROOT, "src/frontend/tf/tf_graph.proto")], check=True)
sys.path.insert(0, _pb_dir)
import tf_graph_pb2 as pb  # noqa: E402

import cv2  # noqa: E402

sys.path.insert(0, HERE)
from tf_numpy import TfNumpy  # noqa: E402

# Graphs whose oracle is numpy, and why (OpenCV 4.6's TensorFlow importer does not run them as TensorFlow does).
WHY_NUMPY = {}


def opencv_outputs(path, feeds, outputs, want, name):
    """OpenCV's outputs of the graph, NHWC; each checked against TensorFlow's semantics (numpy)."""
    net = cv2.dnn.readNetFromTensorflow(path)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    for n, x in feeds.items():
        net.setInput(x.transpose(0, 3, 1, 2) if x.ndim == 4 else x, n)
    got = net.forward(outputs)
    outs = []
    for out, y, w in zip(outputs, got, want):
        y = np.asarray(y, np.float32)
        if y.ndim == 4 and w.ndim == 4:
            y = y.transpose(0, 2, 3, 1)  # OpenCV's NCHW back to the graph's NHWC
        assert y.size == w.size, f"{name}/{out}: OpenCV gives {y.shape}, TensorFlow's semantics {w.shape}"
        y = y.reshape(w.shape)
        err = np.abs(y - w).max() / max(1.0, np.abs(w).max())
        assert err < 1e-5, f"{name}/{out}: OpenCV and TensorFlow's semantics (numpy) differ by {err}"
        outs.append(y)
    return outs


class Graph:
    """A GraphDef under construction."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.g = pb.GraphDef()
        self.g.versions.producer = 1087
        self.inputs = {}  # placeholder -> shape
        self.outputs = []  # node names compared

    def w(self, *shape, scale=0.5):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def node(self, name, op, inputs=(), **attrs):
        n = self.g.node.add()
        n.name, n.op = name, op
        n.input.extend(inputs)
        for k, v in attrs.items():
            a = n.attr[k]
            if isinstance(v, bool):
                a.b = v
            elif isinstance(v, int):
                a.i = v
            elif isinstance(v, float):
                a.f = v
            elif isinstance(v, str):
                a.s = v.encode()
            elif isinstance(v, list):
                a.list.i.extend(v)
            elif isinstance(v, tuple) and v[0] == "strs":
                a.list.s.extend(x.encode() for x in v[1])
            elif isinstance(v, tuple) and v[0] == "type":
                a.type = v[1]
            elif isinstance(v, tuple) and v[0] == "shape":
                for d in v[1]:
                    a.shape.dim.add().size = d
            else:
                raise ValueError(k)
        if "T" not in attrs and op not in ("Const", "Placeholder", "NoOp", "Shape", "Cast", "Pack", "ConcatV2"):
            n.attr["T"].type = pb.DT_FLOAT
        return name

    def placeholder(self, name, shape, declared=None):
        self.inputs[name] = shape
        return self.node(name, "Placeholder", dtype=("type", pb.DT_FLOAT), shape=("shape", declared or shape))

    def const(self, name, value, dtype=None, form="content"):
        value = np.asarray(value)
        if dtype is None:
            dtype = np.float32 if value.dtype.kind == "f" else np.int32
        value = value.astype(dtype)
        n = self.g.node.add()
        n.name, n.op = name, "Const"
        t = n.attr["value"].tensor
        t.dtype = {np.float32: pb.DT_FLOAT, np.int32: pb.DT_INT32, np.int64: pb.DT_INT64}[dtype]
        for d in value.shape:
            t.tensor_shape.dim.add().size = d
        if form == "content":
            t.tensor_content = value.tobytes()
        elif dtype is np.float32:
            t.float_val.extend(value.ravel().tolist() if form == "list" else [float(value.ravel()[0])])
        elif dtype is np.int32:
            t.int_val.extend(value.ravel().tolist())
        else:
            t.int64_val.extend(value.ravel().tolist())
        n.attr["dtype"].type = t.dtype
        return name

    def weight(self, name, value):
        """A constant read through an Identity (name/read), as frozen variables are."""
        self.const(name, value)
        return self.node(name + "/read", "Identity", [name])

    def write(self):
        d = os.path.join(HERE, self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        path = os.path.join(d, "model.pb")
        with open(path, "wb") as f:
            f.write(self.g.SerializeToString(deterministic=True))
        feeds = {n: self.rng.standard_normal(s).astype(np.float32) for n, s in self.inputs.items()}
        for n, x in feeds.items():
            np.save(os.path.join(d, f"input_{n}.npy"), x)
        want = TfNumpy(self.g).run(feeds, self.outputs)
        if self.name in WHY_NUMPY:
            outs, oracle = want, "numpy " + np.__version__ + ": " + WHY_NUMPY[self.name]
        else:
            outs = opencv_outputs(path, feeds, self.outputs, want, self.name)
            oracle = "OpenCV " + cv2.__version__ + " (checked against numpy from TensorFlow's semantics)"
        for n, y in zip(self.outputs, outs):
            np.save(os.path.join(d, f"output_{n}.npy"), np.asarray(y, np.float32))
        with open(os.path.join(d, "oracle.txt"), "w") as f:
            f.write(oracle + "\n")
            f.write("outputs: " + " ".join(self.outputs) + "\n")
        print(f"{self.name}: {oracle.split(':')[0]}")


F = ("type", pb.DT_FLOAT)


def conv():
    m = Graph("conv", 1)
    x = m.placeholder("input", [1, 9, 9, 3])
    c1 = m.node("conv1", "Conv2D", [x, m.weight("w1", m.w(3, 3, 3, 4))], strides=[1, 2, 2, 1], padding="SAME")
    b1 = m.node("bias1", "BiasAdd", [c1, m.weight("b1", m.w(4))])
    r1 = m.node("relu1", "Relu", [b1])
    # SAME with an odd total: in 5, kernel 4, stride 1 -> 3 padded, 1 before and 2 after (TensorFlow's split)
    m.node("conv2", "Conv2D", [r1, m.weight("w2", m.w(4, 2, 4, 5))], strides=[1, 1, 1, 1], padding="SAME")
    m.node("conv4", "Conv2D", [x, m.const("w4", m.w(4, 4, 3, 3))], strides=[1, 3, 2, 1], padding="SAME")
    m.outputs = ["conv2", "conv4"]
    m.write()


def conv_dilated():
    m = Graph("conv_dilated", 14)
    x = m.placeholder("input", [1, 9, 8, 4])
    m.node("dilated_valid", "Conv2D", [x, m.const("w1", m.w(3, 3, 4, 2))], strides=[1, 1, 1, 1], padding="VALID",
           dilations=[1, 2, 2, 1])
    m.node("dilated_same", "Conv2D", [x, m.const("w2", m.w(3, 2, 4, 3))], strides=[1, 2, 1, 1], padding="SAME",
           dilations=[1, 2, 3, 1])
    m.node("grouped", "Conv2D", [x, m.const("w3", m.w(3, 3, 2, 6))], strides=[1, 1, 1, 1], padding="SAME")
    m.outputs = ["dilated_valid", "dilated_same", "grouped"]
    m.write()


def depthwise():
    m = Graph("depthwise", 2)
    x = m.placeholder("input", [1, 8, 7, 3])
    d1 = m.node("dw1", "DepthwiseConv2dNative", [x, m.weight("w1", m.w(3, 3, 3, 2))], strides=[1, 2, 2, 1],
                padding="SAME")
    m.node("relu6", "Relu6", [m.node("bias", "BiasAdd", [d1, m.const("b", m.w(6, scale=3.0))])])
    m.node("dw2", "DepthwiseConv2dNative", [x, m.const("w2", m.w(2, 3, 3, 1))], strides=[1, 1, 1, 1],
           padding="VALID")
    m.outputs = ["relu6", "dw2"]
    m.write()


def pooling():
    m = Graph("pooling", 3)
    x = m.placeholder("input", [1, 10, 11, 2])
    m.node("max_same", "MaxPool", [x], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    m.node("avg_same", "AvgPool", [x], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    m.node("avg_valid", "AvgPool", [x], ksize=[1, 2, 3, 1], strides=[1, 2, 2, 1], padding="VALID")
    m.node("max_odd", "MaxPool", [x], ksize=[1, 4, 2, 1], strides=[1, 3, 3, 1], padding="SAME")
    m.node("avg_odd", "AvgPool", [x], ksize=[1, 4, 4, 1], strides=[1, 1, 3, 1], padding="SAME")
    m.outputs = ["max_same", "avg_same", "avg_valid", "max_odd", "avg_odd"]
    m.write()


def batch_norm():
    m = Graph("batch_norm", 4)
    x = m.placeholder("input", [1, 5, 4, 3])
    c = m.node("conv", "Conv2D", [x, m.weight("w", m.w(1, 1, 3, 4))], strides=[1, 1, 1, 1], padding="VALID")
    stats = [m.const(f"bn1/{k}", v) for k, v in (("gamma", m.w(4)), ("beta", m.w(4)), ("mean", m.w(4)),
                                                 ("var", np.abs(m.w(4)) + 0.2))]
    b1 = m.node("bn1", "FusedBatchNorm", [c] + stats, epsilon=0.001, is_training=False)
    stats2 = [m.const(f"bn2/{k}", v) for k, v in (("gamma", m.w(4)), ("beta", m.w(4)), ("mean", m.w(4)),
                                                  ("var", np.abs(m.w(4)) + 0.2))]
    m.node("bn2", "FusedBatchNormV3", [b1] + stats2, epsilon=0.0005, is_training=False, U=F)
    m.outputs = ["bn2"]
    m.write()


def eltwise():
    m = Graph("eltwise", 5)
    x = m.placeholder("input", [1, 4, 5, 3])
    y = m.placeholder("other", [1, 4, 5, 3])
    c = m.node("conv", "Conv2D", [x, m.const("w", m.w(1, 1, 3, 3))], strides=[1, 1, 1, 1], padding="VALID")
    a = m.node("add", "Add", [c, y])
    s = m.node("sub", "Sub", [a, m.const("k", m.w(3))])
    mul = m.node("mul", "Mul", [s, m.const("scale", m.w(3))])
    m.node("sig", "Sigmoid", [mul])
    m.node("tanh", "Tanh", [m.node("addv2", "AddV2", [c, c])])
    m.node("leaky", "LeakyRelu", [mul], alpha=0.1)
    m.outputs = ["sig", "tanh", "leaky"]
    m.write()


def math():
    m = Graph("math", 15)
    x = m.placeholder("input", [1, 4, 5, 3])
    y = m.placeholder("other", [1, 4, 5, 3])
    c = m.node("conv", "Conv2D", [x, m.const("w", m.w(1, 1, 3, 3))], strides=[1, 1, 1, 1], padding="VALID")
    m.node("min", "Minimum", [c, m.const("cap", np.full([1, 1, 5, 3], 0.5, np.float32))])
    mul = m.node("mul", "Mul", [c, m.const("two", np.float32(2.0), form="scalar")])
    m.node("max", "Maximum", [mul, y])
    sq = m.node("sq", "Mul", [c, c])
    pos = m.node("pos", "Add", [sq, m.const("eps", np.float32(0.5), form="scalar")])
    m.node("rsqrt", "Rsqrt", [pos])
    m.node("div", "RealDiv", [m.node("sqrt", "Sqrt", [pos]), y])
    m.outputs = ["min", "max", "rsqrt", "div"]
    m.write()


def shapes_cv():
    m = Graph("shapes_cv", 6)
    x = m.placeholder("input", [2, 4, 6, 4])
    c = m.node("conv", "Conv2D", [x, m.const("w", m.w(1, 1, 4, 4))], strides=[1, 1, 1, 1], padding="VALID")
    m.node("slice", "Slice", [c, m.const("sb", [0, 1, 2, 1]), m.const("ss", [1, 2, -1, 2])])
    # Flatten as frozen graphs write it: Shape -> StridedSlice (the batch) -> Pack with -1 -> Reshape.
    shp = m.node("shape", "Shape", [c], T=F, out_type=("type", pb.DT_INT32))
    batch = m.node("batch", "StridedSlice", [shp, m.const("b0", [0]), m.const("b1", [1]), m.const("b2", [1])],
                   shrink_axis_mask=1, T=("type", pb.DT_INT32), Index=("type", pb.DT_INT32))
    packed = m.node("packed", "Pack", [batch, m.const("minus1", np.int32(-1))], N=2, T=("type", pb.DT_INT32))
    m.node("flat", "Reshape", [c, packed])
    m.node("pad", "Pad", [c, m.const("paddings", [[0, 0], [1, 2], [0, 1], [0, 0]])])
    m.node("mirror", "MirrorPad", [c, m.const("mp", [[0, 0], [1, 1], [2, 1], [0, 0]])], mode="REFLECT")
    I32 = ("type", pb.DT_INT32)
    m.node("mean_keep", "Mean", [c, m.const("hw", [1, 2])], keep_dims=True, Tidx=I32)
    m.node("mean_hw", "Mean", [c, m.const("hw2", [1, 2])], keep_dims=False, Tidx=I32)
    m.node("mean_c", "Mean", [c, m.const("c", [-1])], Tidx=I32)
    m.node("squeeze", "Squeeze", [m.node("mean_k2", "Mean", [c, m.const("hw3", [1, 2])], keep_dims=True, Tidx=I32)],
           squeeze_dims=[1, 2])
    m.outputs = ["slice", "flat", "pad", "mirror", "mean_keep", "mean_hw", "mean_c", "squeeze"]
    m.write()


def shapes():
    m = Graph("shapes", 16)
    x = m.placeholder("input", [1, 4, 6, 4])
    c = m.node("conv", "Conv2D", [x, m.const("w", m.w(1, 1, 4, 4))], strides=[1, 1, 1, 1], padding="VALID")
    I32 = ("type", pb.DT_INT32)
    m.node("concat_c", "ConcatV2", [c, x, m.const("axis_c", np.int32(3))], N=2, T=F, Tidx=I32)
    m.node("concat_h", "ConcatV2", [c, x, m.const("axis_h", np.int32(-3))], N=2, T=F, Tidx=I32)
    m.node("transpose", "Transpose", [c, m.const("perm", [0, 3, 1, 2])])
    m.node("transpose2", "Transpose", [c, m.const("perm2", [2, 0, 3, 1])])
    m.node("expand", "ExpandDims", [m.node("r2", "Reshape", [c, m.const("s2", [4, 6, 4])]), m.const("d", np.int32(1))])
    am = m.node("argmax", "ArgMax", [c, m.const("dim", np.int32(3))], Tidx=I32, output_type=("type", pb.DT_INT64))
    m.node("argmax_f", "Cast", [am], SrcT=("type", pb.DT_INT64), DstT=F)
    am2 = m.node("argmax_h", "ArgMax", [c, m.const("dim2", np.int32(1))], Tidx=I32, output_type=I32)
    m.node("argmax_hf", "Cast", [am2], SrcT=I32, DstT=F)
    m.node("padv2", "PadV2", [c, m.const("p2", [[0, 0], [2, 0], [0, 1], [1, 1]]), m.const("cv", np.float32(-1.5))])
    m.outputs = ["concat_c", "concat_h", "transpose", "transpose2", "expand", "argmax_f", "argmax_hf", "padv2"]
    m.write()


def matmul():
    m = Graph("matmul", 7)
    x = m.placeholder("input", [2, 6])
    h = m.node("fc1", "MatMul", [x, m.weight("w1", m.w(6, 5))])
    h = m.node("fc1_bias", "BiasAdd", [h, m.const("b1", m.w(5))])
    h = m.node("fc2", "MatMul", [h, m.const("w2", m.w(4, 5))], transpose_b=True)
    m.node("prob", "Softmax", [h])
    m.node("fc3", "MatMul", [m.const("w3", m.w(6, 3)), x], transpose_a=True, transpose_b=True)
    m.outputs = ["prob", "fc3"]
    m.write()


def resize():
    m = Graph("resize", 8)
    x = m.placeholder("input", [1, 5, 4, 2])
    up = m.const("size", [9, 7])
    down = m.const("down", [3, 3])
    m.node("bilinear", "ResizeBilinear", [x, up])
    m.node("bilinear_ac", "ResizeBilinear", [x, up], align_corners=True)
    m.node("bilinear_hp", "ResizeBilinear", [x, up], half_pixel_centers=True)
    m.node("bilinear_down", "ResizeBilinear", [x, down], half_pixel_centers=True)
    m.node("nearest", "ResizeNearestNeighbor", [x, up])
    m.node("nearest_ac", "ResizeNearestNeighbor", [x, up], align_corners=True)
    m.node("nearest_hp", "ResizeNearestNeighbor", [x, up], half_pixel_centers=True)
    m.outputs = ["bilinear", "bilinear_ac", "bilinear_hp", "bilinear_down", "nearest", "nearest_ac", "nearest_hp"]
    m.write()


def deconv():
    m = Graph("deconv", 9)
    x = m.placeholder("input", [1, 4, 5, 3])
    m.node("deconv_same", "Conv2DBackpropInput", [m.const("s1", [1, 8, 10, 2]), m.const("f1", m.w(3, 3, 2, 3)), x],
           strides=[1, 2, 2, 1], padding="SAME")
    m.node("deconv_valid", "Conv2DBackpropInput", [m.const("s2", [1, 9, 11, 4]), m.const("f2", m.w(3, 3, 4, 3)), x],
           strides=[1, 2, 2, 1], padding="VALID")
    m.node("deconv_odd", "Conv2DBackpropInput", [m.const("s3", [1, 7, 9, 2]), m.const("f3", m.w(2, 2, 2, 3)), x],
           strides=[1, 2, 2, 1], padding="SAME")
    m.outputs = ["deconv_same", "deconv_valid", "deconv_odd"]
    m.write()


def strided_slice():
    m = Graph("strided_slice", 11)
    x = m.placeholder("input", [1, 6, 7, 4])
    c = m.node("conv", "Conv2D", [x, m.const("w", m.w(1, 1, 4, 4))], strides=[1, 1, 1, 1], padding="VALID")
    I32 = ("type", pb.DT_INT32)

    def ss(name, b, e, s, **masks):
        return m.node(name, "StridedSlice", [c, m.const(name + "/b", b), m.const(name + "/e", e),
                                            m.const(name + "/s", s)], Index=I32, **masks)
    ss("ss_step", [0, 1, 0, 0], [1, 6, 7, 4], [1, 2, 3, 1])
    ss("ss_neg", [0, -1, 6, 3], [1, 0, 0, 0], [1, -1, -2, -1], end_mask=1 | 8)
    ss("ss_masks", [0, 2, 0, 1], [0, 5, 0, 3], [1, 1, 1, 1], begin_mask=1 | 4, end_mask=1 | 4)
    ss("ss_shrink", [0, 2, 0, 0], [1, 3, 7, 4], [1, 1, 1, 1], shrink_axis_mask=2)
    ss("ss_ellipsis", [0, 1], [0, 3], [1, 1], ellipsis_mask=1)
    ss("ss_newaxis", [0, 0, 1], [0, 0, 4], [1, 1, 1], ellipsis_mask=1, new_axis_mask=2)
    m.outputs = ["ss_step", "ss_neg", "ss_masks", "ss_shrink", "ss_ellipsis", "ss_newaxis"]
    m.write()


def nchw():
    m = Graph("nchw", 12)
    x = m.placeholder("input", [1, 7, 6, 3])
    t = m.node("to_nchw", "Transpose", [x, m.const("perm", [0, 3, 1, 2])])
    c = m.node("conv", "Conv2D", [t, m.const("w", m.w(3, 3, 3, 4))], strides=[1, 1, 2, 2], padding="SAME",
               data_format="NCHW")
    b = m.node("bias", "BiasAdd", [c, m.const("b", m.w(4))], data_format="NCHW")
    p = m.node("pool", "MaxPool", [b], ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    # epsilon not given: TensorFlow's default, 0.0001
    stats = [m.const(f"bn/{k}", v) for k, v in (("gamma", m.w(4)), ("beta", m.w(4)), ("mean", m.w(4)),
                                                ("var", np.abs(m.w(4)) * 0.01 + 0.001))]
    p = m.node("bn", "FusedBatchNormV3", [p] + stats, is_training=False, data_format="NCHW", U=F)
    m.node("out", "Transpose", [p, m.const("perm2", [0, 2, 3, 1])])
    m.outputs = ["out"]
    m.write()


def mobilenet():
    """A small MobileNet-shaped network: BN folded from FusedBatchNorm, Relu6, depthwise, Mean, Reshape, MatMul."""
    m = Graph("mobilenet", 13)
    x = m.placeholder("input", [1, 32, 32, 3], declared=[-1, 32, 32, 3])

    def bn(name, h, c):
        stats = [m.const(f"{name}/{k}", v) for k, v in (("gamma", np.abs(m.w(c)) + 0.5), ("beta", m.w(c)),
                                                        ("mean", m.w(c, scale=0.1)), ("var", np.abs(m.w(c)) + 0.5))]
        return m.node(name + "/relu6", "Relu6", [m.node(name, "FusedBatchNorm", [h] + stats, epsilon=0.001,
                                                         is_training=False)])

    h = bn("bn0", m.node("conv0", "Conv2D", [x, m.weight("conv0/w", m.w(3, 3, 3, 8))], strides=[1, 2, 2, 1],
                         padding="SAME"), 8)
    for i, (cin, cout, s) in enumerate([(8, 16, 1), (16, 16, 2), (16, 32, 2)]):
        d = m.node(f"dw{i}", "DepthwiseConv2dNative", [h, m.weight(f"dw{i}/w", m.w(3, 3, cin, 1))],
                   strides=[1, s, s, 1], padding="SAME")
        h = bn(f"dwbn{i}", d, cin)
        p = m.node(f"pw{i}", "Conv2D", [h, m.weight(f"pw{i}/w", m.w(1, 1, cin, cout, scale=0.3))],
                   strides=[1, 1, 1, 1], padding="SAME")
        h = bn(f"pwbn{i}", p, cout)
    g = m.node("pool", "Mean", [h, m.const("pool/axes", [1, 2])], keep_dims=True, Tidx=("type", pb.DT_INT32))
    r = m.node("flatten", "Reshape", [g, m.const("flatten/shape", [-1, 32])])
    fc = m.node("logits", "MatMul", [r, m.weight("fc/w", m.w(32, 10, scale=0.2))])
    fc = m.node("logits_bias", "BiasAdd", [fc, m.const("fc/b", m.w(10))])
    m.node("prob", "Softmax", [fc])
    m.outputs = ["prob"]
    m.write()


def fused():
    """What optimized graphs carry (grappler's rewrites, TensorFlow.js graph models): _FusedConv2D with each fused_ops
    form, FusedDepthwiseConv2dNative, _FusedMatMul, AddN, Prelu, Split, SplitV, Elu."""
    m = Graph("fused", 15)
    x = m.placeholder("input", [1, 9, 8, 4])

    def fconv(name, h, w, ops, args, op="_FusedConv2D", s=1, pad="SAME", **extra):
        return m.node(name, op, [h, m.const(name + "/w", w)] + [m.const(f"{name}/a{i}", a) for i, a in enumerate(args)],
                      strides=[1, s, s, 1], padding=pad, fused_ops=("strs", ops), num_args=len(args), **extra)

    c1 = fconv("c1", x, m.w(3, 3, 4, 6), ["BiasAdd", "Relu"], [m.w(6)], s=2)
    c2 = fconv("c2", c1, m.w(1, 1, 6, 6), ["BiasAdd", "Relu6"], [m.w(6, scale=3.0)])
    c3 = fconv("c3", c2, m.w(3, 3, 6, 6, scale=0.3), ["FusedBatchNorm", "Relu"],
               [np.abs(m.w(6)) + 0.5, m.w(6), m.w(6, scale=0.1), np.abs(m.w(6)) + 0.5], epsilon=0.001)
    c4 = fconv("c4", c3, m.w(1, 1, 6, 6), ["BiasAdd", "Add", "LeakyRelu"], [m.w(6)], leakyrelu_alpha=0.1)
    m.g.node[-1].input.append(c2)  # the residual addend: a tensor of the graph, not a constant
    m.g.node[-1].attr["num_args"].i = 2
    d = fconv("dw", c4, m.w(3, 3, 6, 2), ["BiasAdd", "Elu"], [m.w(12)], op="FusedDepthwiseConv2dNative")
    a = m.node("addn", "AddN", [c2, c3, c4], N=3)
    p = m.node("prelu", "Prelu", [a, m.const("prelu/alpha", m.w(6))])
    s1 = m.node("split", "Split", [m.const("split/axis", 3), d], num_split=3)
    s2 = m.node("splitv", "SplitV", [p, m.const("splitv/sizes", [2, -1, 1]), m.const("splitv/axis", 3)], num_split=3,
                Tlen=("type", pb.DT_INT32))
    cat = m.node("cat", "ConcatV2", [s1 + ":2", s2 + ":1", s2, m.const("cat/axis", 3)], N=3, Tidx=("type", pb.DT_INT32))
    g = m.node("gap", "Mean", [cat, m.const("gap/axes", [1, 2])], keep_dims=False, Tidx=("type", pb.DT_INT32))
    m.node("fc", "_FusedMatMul", [g, m.const("fc/w", m.w(9, 5)), m.const("fc/b", m.w(5))], fused_ops=("strs", ["BiasAdd", "Relu"]),
           num_args=1, transpose_a=False, transpose_b=False)
    m.node("split_1", "Identity", [s1 + ":1"])  # graph outputs: nodes nothing reads
    m.node("cat_out", "Identity", [cat])
    m.outputs = ["fc", "split_1", "cat_out"]
    m.write()


def misc():
    """More of what trained graphs carry: DepthToSpace / SpaceToDepth, Max / Min / Sum reductions (a global max pool),
    Abs, Exp, Log, Neg, Floor, Square, Elu, StopGradient, a _FusedConv2D whose fused_ops end in Prelu, and a Reshape
    target computed from the shape (Shape, StridedSlice, Prod, Pack)."""
    m = Graph("misc", 16)
    x = m.placeholder("input", [1, 6, 8, 8])
    d2s = m.node("d2s", "DepthToSpace", [x], block_size=2)
    s2d = m.node("s2d", "SpaceToDepth", [d2s], block_size=2)
    c = m.node("conv", "_FusedConv2D", [s2d, m.const("conv/w", m.w(3, 3, 8, 4)), m.const("conv/b", m.w(4)),
                                        m.const("conv/alpha", m.w(4, scale=0.3))],
               strides=[1, 1, 1, 1], padding="SAME", fused_ops=("strs", ["BiasAdd", "Prelu"]), num_args=2)
    ax = m.const("axes", [1, 2])
    m.node("gmax", "Max", [c, ax], keep_dims=True, Tidx=("type", pb.DT_INT32))
    m.node("rmin", "Min", [c, m.const("axis3", [3])], keep_dims=False, Tidx=("type", pb.DT_INT32))
    m.node("rsum", "Sum", [c, m.const("axis2", [2])], keep_dims=True, Tidx=("type", pb.DT_INT32))
    a = m.node("abs", "Abs", [c])
    e = m.node("exp", "Exp", [m.node("neg", "Neg", [a])])
    lg = m.node("log", "Log", [m.node("sq", "Square", [m.node("add1", "AddV2", [a, m.const("one", 1.0, form="scalar")])])])
    m.node("math", "AddV2", [m.node("floor", "Floor", [lg]), e])
    m.node("d2s_out", "Identity", [d2s])
    m.node("elu", "Elu", [m.node("stop", "StopGradient", [c]), "^" + m.node("noop", "NoOp")])  # (a control input)
    # a flatten whose target is shape arithmetic: [1, prod(shape(c)[1:])]
    shp = m.node("shape", "Shape", [c], out_type=("type", pb.DT_INT32))
    tail = m.node("tail", "StridedSlice", [shp, m.const("b", [1]), m.const("e", [4]), m.const("s", [1])],
                  Index=("type", pb.DT_INT32), T=("type", pb.DT_INT32), begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0)
    count = m.node("count", "Prod", [tail, m.const("axis0", [0])], keep_dims=False, T=("type", pb.DT_INT32),
                   Tidx=("type", pb.DT_INT32))
    target = m.node("target", "Pack", [m.const("target/one", 1), count], N=2, T=("type", pb.DT_INT32), axis=0)
    m.node("flat", "Reshape", [c, target], Tshape=("type", pb.DT_INT32))
    m.outputs = ["d2s_out", "gmax", "rmin", "rsum", "math", "elu", "flat"]
    m.write()


WHY_NUMPY.update({
    "misc": "OpenCV 4.6 runs no _FusedConv2D, and neither Min nor Sum of a feature map",
    "fused": "OpenCV 4.6 runs none of grappler's fused ops (_FusedConv2D, _FusedMatMul), AddN, Prelu or SplitV",
    "conv_dilated": "OpenCV 4.6 reads no 'dilations' attr of Conv2D (it gives the undilated output size)",
    "math": "OpenCV 4.6 creates no Minimum layer, fails on Maximum, misreads a Mul by a scalar constant "
            "(a float_val of one value) and refuses a Mul whose two inputs are one tensor",
    "shapes": "OpenCV 4.6 crashes on ConcatV2 of a Placeholder with a computed tensor, permutes a Transpose's NHWC "
              "input in its own layout, and runs neither ArgMax nor Cast",
    "matmul": "OpenCV 4.6's MatMul of a Placeholder fails its fully-connected layer's assertion",
    "strided_slice": "OpenCV 4.6 refuses a StridedSlice whose mask attrs are not all written (key not found: end_mask)",
    "nchw": "OpenCV 4.6 refuses the graph (only NHWC <-> NCHW permutations are allowed)",
})


if __name__ == "__main__":
    only = sys.argv[1:]
    for fn in [conv, conv_dilated, depthwise, pooling, batch_norm, eltwise, math, shapes_cv, shapes, matmul, resize,
               deconv, strided_slice, nchw, mobilenet, fused, misc]:
        if not only or fn.__name__ in only:
            fn()
    shutil.rmtree(_pb_dir, ignore_errors=True)
