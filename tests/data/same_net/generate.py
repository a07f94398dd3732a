#!/usr/bin/python3
"""Writes one MobileNet-shaped network, with the same seeded weights, as ONNX, Caffe, TensorFlow and TensorFlow Lite
(tests/frontend/same_net_test.cpp: every format gives packages with identical outputs for every target).

The network: a 3x3 stride-2 convolution, depthwise + pointwise blocks (one with a residual addition), a stride-2
depthwise layer without padding, a 3x3 stride-2 max pool, global average pooling, a fully-connected layer and softmax,
every convolution with its bias and a ReLU. The sizes are chosen so that each framework's padding rule gives the
same pads (a 31x31 input: TensorFlow's SAME pads a 3x3 stride-2 layer 1 / 1 there, as Caffe's pad 1 does); weights
are already folded (a TFLite file never holds a batch norm).

Each format is written by its own test generator's writer (tests/data/{caffe,tf,tflite}/generate.py, with npuc's
own schemas) and checked by that format's oracle: OpenCV's dnn module (Caffe, TensorFlow), Arm NN's TFLite parser
(TFLite); ONNX's by numpy below. Every oracle must give the numpy output within 1e-5 relative, or generation stops.

    /usr/bin/python3 tests/data/same_net/generate.py
"""
import importlib.util
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)


def _load(fmt):
    spec = importlib.util.spec_from_file_location(f"gen_{fmt}", os.path.join(DATA, fmt, "generate.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.HERE = HERE  # each writer writes HERE/<name>
    return mod


caffe_gen, tf_gen, tflite_gen = _load("caffe"), _load("tf"), _load("tflite")

SIZE = 31
rng = np.random.default_rng(2026)


def w(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# Layers in order: (name, kind, weight [O, I/g, kh, kw] or [O, I], bias, stride, pad, relu)
LAYERS = [("conv0", "conv", w(8, 3, 3, 3), w(8), 2, 1),
          ("dw1", "dw", w(8, 1, 3, 3), w(8), 1, 1),
          ("pw1", "conv", w(16, 8, 1, 1, scale=0.3), w(16), 1, 0),
          ("dw2", "dw", w(16, 1, 3, 3), w(16), 1, 1),
          ("pw2", "conv", w(16, 16, 1, 1, scale=0.3), w(16), 1, 0),  # + pw1's output, then ReLU
          ("dw3", "dw", w(16, 1, 3, 3), w(16), 2, 0),
          ("pw3", "conv", w(32, 16, 1, 1, scale=0.3), w(32), 1, 0)]
FC_W, FC_B = w(10, 32, scale=0.3), w(10)
X = rng.uniform(-1, 1, (1, 3, SIZE, SIZE)).astype(np.float32)


def numpy_net(x):
    """The network in numpy (NCHW), float64."""
    def conv(h, wt, b, s, p, groups):
        h = np.pad(h, ((0, 0), (0, 0), (p, p), (p, p)))
        n, c, hh, ww = h.shape
        o, _, kh, kw = wt.shape
        oh, ow = (hh - kh) // s + 1, (ww - kw) // s + 1
        y = np.zeros((n, o, oh, ow))
        cg, og = c // groups, o // groups
        for g in range(groups):
            for i in range(kh):
                for j in range(kw):
                    patch = h[:, g * cg:(g + 1) * cg, i:i + s * oh:s, j:j + s * ow:s]
                    y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, wt[g * og:(g + 1) * og, :, i, j])
        return y + b[None, :, None, None]

    h = x.astype(np.float64)
    saved = None
    for name, kind, wt, b, s, p in LAYERS:
        h = conv(h, wt.astype(np.float64), b, s, p, h.shape[1] if kind == "dw" else 1)
        if name == "pw2":
            h = h + saved
        if name == "pw1":
            saved = np.maximum(h, 0)
        h = np.maximum(h, 0)
    n, c, hh, ww = h.shape
    oh = (hh - 3) // 2 + 1
    h = np.stack([np.stack([h[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3)) for j in range(oh)], -1)
                  for i in range(oh)], -2)
    g = h.mean(axis=(2, 3))
    z = g @ FC_W.T.astype(np.float64) + FC_B
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


WANT = numpy_net(X)


def close(name, got):
    err = np.abs(np.asarray(got, np.float32).reshape(WANT.shape) - WANT).max() / np.abs(WANT).max()
    assert err < 1e-5, f"{name}: the oracle and numpy differ by {err}"
    print(f"{name}: oracle within {err:.2g} of numpy")


def write_onnx():
    nodes, inits = [], []
    h = "input"
    saved = None
    for name, kind, wt, b, s, p in LAYERS:
        inits += [numpy_helper.from_array(wt, name + ".w"), numpy_helper.from_array(b, name + ".b")]
        nodes.append(helper.make_node("Conv", [h, name + ".w", name + ".b"], [name], strides=[s, s], pads=[p] * 4,
                                      group=wt.shape[0] if kind == "dw" else 1, kernel_shape=list(wt.shape[2:])))
        h = name
        if name == "pw2":
            nodes.append(helper.make_node("Add", [h, saved], ["res"]))
            h = "res"
        nodes.append(helper.make_node("Relu", [h], [h + "_relu"]))
        h = h + "_relu"
        if name == "pw1":
            saved = h
    nodes += [helper.make_node("MaxPool", [h], ["pool"], kernel_shape=[3, 3], strides=[2, 2]),
              helper.make_node("GlobalAveragePool", ["pool"], ["gap"]),
              helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1),
              helper.make_node("Softmax", ["logits"], ["prob"], axis=1)]
    inits += [numpy_helper.from_array(FC_W, "fc.w"), numpy_helper.from_array(FC_B, "fc.b")]
    g = helper.make_graph(nodes, "same_net", [helper.make_tensor_value_info("input", TensorProto.FLOAT, X.shape)],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, WANT.shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc same_net")
    onnx.checker.check_model(m)
    d = os.path.join(HERE, "onnx")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_input.npy"), X)
    np.save(os.path.join(d, "output_prob.npy"), WANT)
    with open(os.path.join(d, "oracle.txt"), "w") as f:
        f.write("numpy " + np.__version__ + " (float64, rounded to float32)\noutputs: prob\n")


def write_caffe():
    m = caffe_gen.Model("caffe", 1)
    m.input("data", list(X.shape))
    h = "data"
    saved = None
    for name, kind, wt, b, s, p in LAYERS:
        group = f" group: {wt.shape[0]}" if kind == "dw" else ""
        m.layer(name, "Convolution", [h], [name], f"convolution_param {{ num_output: {wt.shape[0]} kernel_size: "
                f"{wt.shape[2]} stride: {s} pad: {p}{group} }}", [wt, b])
        h = name
        if name == "pw2":
            m.layer("res", "Eltwise", [h, saved], ["res"])
            h = "res"
        m.layer(h + "_relu", "ReLU", [h], [h + "_relu"])
        h = h + "_relu"
        if name == "pw1":
            saved = h
    m.layer("pool", "Pooling", [h], ["pool"], "pooling_param { pool: MAX kernel_size: 3 stride: 2 }")
    m.layer("gap", "Pooling", ["pool"], ["gap"], "pooling_param { pool: AVE global_pooling: true }")
    m.layer("logits", "InnerProduct", ["gap"], ["logits"], "inner_product_param { num_output: 10 }", [FC_W, FC_B])
    m.layer("prob", "Softmax", ["logits"], ["prob"])
    m.outputs = ["prob"]
    m.rng = np.random.default_rng(0)
    m.write()
    np.save(os.path.join(HERE, "caffe", "input_data.npy"), X)  # the shared input (write drew its own)
    close("caffe (OpenCV)", caffe_run())
    np.save(os.path.join(HERE, "caffe", "output_prob.npy"), caffe_run())


def caffe_run():
    d = os.path.join(HERE, "caffe")
    net = caffe_gen.cv2.dnn.readNetFromCaffe(os.path.join(d, "model.prototxt"), os.path.join(d, "model.caffemodel"))
    net.setPreferableBackend(caffe_gen.cv2.dnn.DNN_BACKEND_OPENCV)
    net.enableFusion(False)
    net.setInput(X, "data")
    return net.forward("prob")


def write_tf():
    pb = tf_gen.pb
    m = tf_gen.Graph("tf", 1)
    h = m.placeholder("input", [1, SIZE, SIZE, 3])
    saved = None
    for name, kind, wt, b, s, p in LAYERS:
        pad = "SAME" if p else "VALID"
        if kind == "dw":  # [C, 1, kh, kw] -> [kh, kw, C, 1]
            c = m.node(name, "DepthwiseConv2dNative", [h, m.weight(name + "/w", wt.transpose(2, 3, 0, 1))],
                       strides=[1, s, s, 1], padding=pad)
        else:  # [O, I, kh, kw] -> [kh, kw, I, O]
            c = m.node(name, "Conv2D", [h, m.weight(name + "/w", wt.transpose(2, 3, 1, 0))], strides=[1, s, s, 1],
                       padding=pad)
        h = m.node(name + "/bias", "BiasAdd", [c, m.weight(name + "/b", b)])
        if name == "pw2":
            h = m.node("res", "AddV2", [h, saved])
        h = m.node(h + "/relu", "Relu", [h])
        if name == "pw1":
            saved = h
    h = m.node("pool", "MaxPool", [h], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="VALID")
    h = m.node("gap", "Mean", [h, m.const("gap/axes", [1, 2])], keep_dims=True, Tidx=("type", pb.DT_INT32))
    h = m.node("flat", "Reshape", [h, m.const("flat/shape", [-1, 32])])
    h = m.node("logits", "MatMul", [h, m.weight("fc/w", FC_W.T.copy())])
    h = m.node("logits/bias", "BiasAdd", [h, m.weight("fc/b", FC_B)])
    m.node("prob", "Softmax", [h])
    m.outputs = ["prob"]
    m.write()
    np.save(os.path.join(HERE, "tf", "input_input.npy"), X.transpose(0, 2, 3, 1))
    got = tf_gen.opencv_outputs(os.path.join(HERE, "tf", "model.pb"), {"input": X.transpose(0, 2, 3, 1)}, ["prob"],
                                [WANT], "tf")
    close("tf (OpenCV)", got[0])
    np.save(os.path.join(HERE, "tf", "output_prob.npy"), got[0])


def write_tflite():
    B = tflite_gen.B
    m = tflite_gen.Model("tflite", 1)
    x = m.input("input", [1, SIZE, SIZE, 3])
    m.feeds["input"] = X.transpose(0, 2, 3, 1).copy()
    h, hw = x, SIZE
    saved = None
    for name, kind, wt, b, s, p in LAYERS:
        pad = tflite_gen.SAME if p else tflite_gen.VALID
        hw = (hw + 2 * p - wt.shape[2]) // s + 1
        out = [1, hw, hw, wt.shape[0]]
        relu = 0 if name == "pw2" else 1
        if kind == "dw":  # [C, 1, kh, kw] -> [1, kh, kw, C]
            h = m.op(B.DEPTHWISE_CONV_2D, [h, m.const(name + "/w", wt.transpose(1, 2, 3, 0).copy()),
                                           m.const(name + "/b", b)], [m.tensor(name, out)], "DepthwiseConv2DOptions",
                     padding=pad, stride_w=s, stride_h=s, depth_multiplier=1, fused_activation_function=relu)
        else:  # [O, I, kh, kw] -> [O, kh, kw, I]
            h = m.op(B.CONV_2D, [h, m.const(name + "/w", wt.transpose(0, 2, 3, 1).copy()), m.const(name + "/b", b)],
                     [m.tensor(name, out)], "Conv2DOptions", padding=pad, stride_w=s, stride_h=s,
                     fused_activation_function=relu)
        if name == "pw2":
            h = m.op(B.ADD, [h, saved], [m.tensor("res", out)], "AddOptions", fused_activation_function=1)
        if name == "pw1":
            saved = h
    hw = (hw - 3) // 2 + 1
    h = m.op(B.MAX_POOL_2D, [h], [m.tensor("pool", [1, hw, hw, 32])], "Pool2DOptions", padding=tflite_gen.VALID,
             stride_w=2, stride_h=2, filter_width=3, filter_height=3)
    h = m.op(B.MEAN, [h, m.const("gap/axes", np.int32([1, 2]))], [m.tensor("gap", [1, 1, 1, 32])], "ReducerOptions",
             keep_dims=True)
    h = m.op(B.RESHAPE, [h, m.const("flat/shape", np.int32([1, 32]))], [m.tensor("flat", [1, 32])])
    h = m.op(B.FULLY_CONNECTED, [h, m.const("fc/w", FC_W), m.const("fc/b", FC_B)], [m.tensor("logits", [1, 10])],
             "FullyConnectedOptions")
    m.outputs = [m.op(B.SOFTMAX, [h], [m.tensor("prob", [1, 10])], "SoftmaxOptions", beta=1.0)]
    outs = m.write()
    close("tflite (Arm NN)", outs[0])


if __name__ == "__main__":
    write_onnx()
    write_caffe()
    write_tf()
    write_tflite()
