#!/usr/bin/env python3
# Writes mlp_mini.onnx: a small perceptron for the int8 tests (tests/quant/qdq_test.cpp) — input [2, 12] (a batch of
# two), Gemm with B [12, 7] (transB = 0) and a bias per column, Relu, Gemm with B [5, 7] (transB = 1) and its bias,
# MatMul by a constant [5, 3]: the forms of a product by constant weights the int8-affine path turns into integer
# products. Seeded weights.
#   /usr/bin/python3 tests/data/quant/make_mlp.py
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(31)


def const(name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [const("w1", (12, 7), 0.4), const("b1", (7,), 0.1), const("w2", (5, 7), 0.5), const("b2", (5,), 0.1),
         const("w3", (5, 3), 0.5)]
nodes = [
    helper.make_node("Gemm", ["input", "w1", "b1"], ["h"], name="fc1"),
    helper.make_node("Relu", ["h"], ["hr"], name="fc1_relu"),
    helper.make_node("Gemm", ["hr", "w2", "b2"], ["h2"], name="fc2", transB=1),
    helper.make_node("MatMul", ["h2", "w3"], ["output"], name="proj"),
]
graph = helper.make_graph(nodes, "mlp_mini", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 12])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 3])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp_mini.onnx"))
