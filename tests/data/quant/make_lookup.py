#!/usr/bin/env python3
# Writes lookup_mini.onnx: a small network whose activations have no integer arithmetic of their own — HardSwish,
# LeakyRelu, Sigmoid, Tanh, HardSigmoid, Elu, each between convolutions, and a squeeze-and-excitation block (a map
# times its per-channel HardSigmoid gate) — for the int8 look-up tables and products
# (tests/quant/qdq_test.cpp, docs/numerics.md "Look-up tables"). Seeded weights.
#   /usr/bin/python3 tests/data/quant/make_lookup.py
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(53)
inits, nodes = [], []


def conv(name, x, cin, cout, k):
    w = numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5).astype(np.float32), name + "_w")
    b = numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), name + "_b")
    inits.extend([w, b])
    nodes.append(helper.make_node("Conv", [x, w.name, b.name], [name], name=name, pads=[k // 2] * 4))
    return name


def act(op, x, **attrs):
    nodes.append(helper.make_node(op, [x], [x + "_" + op.lower()], name=x + "_" + op.lower(), **attrs))
    return x + "_" + op.lower()


x = act("HardSwish", conv("c1", "input", 3, 8, 3))
x = act("LeakyRelu", conv("c2", x, 8, 8, 3), alpha=0.1)
x = act("Sigmoid", conv("c3", x, 8, 8, 1))
x = act("Tanh", conv("c4", x, 8, 8, 3))
# A squeeze-and-excitation block: the map times its per-channel gate (an int8 product of two tensors).
nodes.append(helper.make_node("GlobalAveragePool", [x], ["se_pool"], name="se_pool"))
gate = act("HardSigmoid", conv("se_expand", act("Relu", conv("se_squeeze", "se_pool", 8, 4, 1)), 4, 8, 1), alpha=1.0 / 6, beta=0.5)
nodes.append(helper.make_node("Mul", [x, gate], ["se_out"], name="se_mul"))
x = "se_out"
x = act("HardSigmoid", conv("c5", x, 8, 8, 1), alpha=0.2, beta=0.5)
x = act("Elu", conv("c6", x, 8, 4, 3), alpha=1.0)
nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
nodes.append(helper.make_node("Flatten", ["gap"], ["output"], name="flat"))
graph = helper.make_graph(nodes, "lookup_mini", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="npuc tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lookup_mini.onnx"))
