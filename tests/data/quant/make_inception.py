#!/usr/bin/env python3
# Writes inception_mini.onnx: a small GoogLeNet-style network for the int8 tests (tests/quant/qdq_test.cpp) —
# a stem conv, a 3x3 / stride 2 MaxPool, an inception block (1x1, 3x3 and pool-projection branches, a Concat), a
# 2x2 MaxPool, Flatten and a Gemm: every data-movement op the int8-affine path runs on int8 codes. Seeded weights.
#   /usr/bin/python3 tests/data/quant/make_inception.py
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(24)
inits, nodes = [], []


def const(name, shape, scale):
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
    return name


def conv(name, x, cin, cout, k, relu=True):
    w = const(name + "_w", (cout, cin, k, k), (2.0 / (cin * k * k)) ** 0.5)
    b = const(name + "_b", (cout,), 0.1)
    y = name + "_conv" if relu else name
    nodes.append(helper.make_node("Conv", [x, w, b], [y], name=name, pads=[k // 2] * 4))
    if relu:
        nodes.append(helper.make_node("Relu", [y], [name], name=name + "_relu"))
    return name


s = conv("stem", "input", 3, 8, 3)
nodes.append(helper.make_node("MaxPool", [s], ["pool1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
b1 = conv("b1", "pool1", 8, 4, 1)
b2 = conv("b2", "pool1", 8, 6, 3)
nodes.append(helper.make_node("MaxPool", ["pool1"], ["b3_pool"], name="b3_pool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]))
b3 = conv("b3", "b3_pool", 8, 4, 1)
nodes.append(helper.make_node("Concat", [b1, b2, b3], ["cat"], name="cat", axis=1))
nodes.append(helper.make_node("MaxPool", ["cat"], ["pool2"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]))
nodes.append(helper.make_node("Flatten", ["pool2"], ["flat"], name="flat"))
fw = const("fc_w", (10, 14 * 4 * 4), 0.1)
fb = const("fc_b", (10,), 0.1)
nodes.append(helper.make_node("Gemm", ["flat", fw, fb], ["output"], name="fc", transB=1))
graph = helper.make_graph(nodes, "inception_mini", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "inception_mini.onnx"))
