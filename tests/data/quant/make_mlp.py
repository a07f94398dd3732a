#!/usr/bin/env python3
# Writes mlp_mini.onnx: a small perceptron for the int8 tests (tests/quant/qdq_test.cpp) — input [2, 12] (a batch of
# two), Gemm with B [12, 7] (transB = 0) and a bias per column, Relu, Gemm with B [5, 7] (transB = 1) and its bias,
# MatMul by a constant [5, 3]: the forms of a product by constant weights the int8-affine path turns into integer
# products. Also gemm_row_bias.onnx: x [3, 4] · B [4, 3] + C [3, 1], a bias that adds one value per row (not per
# output column): not an integer product, and gemm_row_bias_qdq.onnx, that Gemm quantized elsewhere (QDQ, an int32
# C [3, 1]); and matmul3d_mini.onnx (below). Seeded weights.
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

# A Gemm whose C broadcasts along the rows: N = M = 3, so C has M values but is no per-channel bias.
rb = [const("w", (4, 3), 0.5), const("c", (3, 1), 0.3)]
g2 = helper.make_graph([helper.make_node("Gemm", ["input", "w", "c"], ["output"], name="fc")], "gemm_row_bias",
                       [helper.make_tensor_value_info("input", TensorProto.FLOAT, [3, 4])],
                       [helper.make_tensor_value_info("output", TensorProto.FLOAT, [3, 3])], rb)
m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
m2.ir_version = 8
onnx.checker.check_model(m2)
onnx.save(m2, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gemm_row_bias.onnx"))

# The same Gemm quantized elsewhere (QDQ): an int8 input, int8 B, an int32 C [3, 1] at x_scale * w_scale, an int8
# output — everything an integer product needs but a per-column bias.
def qdq(name, x, scale, zp, dtype):
    s, z = name + "_scale", name + "_zp"
    qinits.extend([numpy_helper.from_array(np.array(scale, np.float32), s), numpy_helper.from_array(np.array(zp, dtype), z)])
    qnodes.append(helper.make_node("QuantizeLinear", [x, s, z], [name + "_q"], name=name + "_Q"))
    qnodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name + "_dq"], name=name + "_DQ"))
    return name + "_dq"


qinits, qnodes = [], []
xd = qdq("x", "input", 0.01, 0, np.int8)
wq = np.clip(np.round(rng.standard_normal((4, 3)) * 40), -127, 127).astype(np.int8)
cq = np.round(rng.standard_normal((3, 1)) * 1000).astype(np.int32)
qinits += [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
           numpy_helper.from_array(np.array(0, np.int8), "wz"), numpy_helper.from_array(cq, "cq"),
           numpy_helper.from_array(np.array(0.01 * 0.02, np.float32), "cs"), numpy_helper.from_array(np.array(0, np.int32), "cz")]
qnodes += [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w_dq"], name="w_DQ"),
           helper.make_node("DequantizeLinear", ["cq", "cs", "cz"], ["c_dq"], name="c_DQ"),
           helper.make_node("Gemm", [xd, "w_dq", "c_dq"], ["y"], name="fc")]
yd = qdq("y", "y", 0.05, 0, np.int8)
qnodes.append(helper.make_node("Identity", [yd], ["output"], name="out"))
g3 = helper.make_graph(qnodes, "gemm_row_bias_qdq", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [3, 4])],
                       [helper.make_tensor_value_info("output", TensorProto.FLOAT, [3, 3])], qinits)
m3 = helper.make_model(g3, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
m3.ir_version = 8
onnx.checker.check_model(m3)
onnx.save(m3, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gemm_row_bias_qdq.onnx"))

# matmul3d_mini.onnx: products of 3-D activations by constant weights, as a transformer's linear layers export —
# input [2, 3, 12] (two sequences of three rows), MatMul by [12, 7], Relu, MatMul by [7, 5]: each an integer product
# over the 6 rows, the output [2, 3, 5].
m3d = [const("u1", (12, 7), 0.4), const("u2", (7, 5), 0.5)]
g4 = helper.make_graph([helper.make_node("MatMul", ["input", "u1"], ["h"], name="mm1"),
                        helper.make_node("Relu", ["h"], ["hr"], name="mm1_relu"),
                        helper.make_node("MatMul", ["hr", "u2"], ["output"], name="mm2")], "matmul3d_mini",
                       [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 3, 12])],
                       [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 3, 5])], m3d)
m4 = helper.make_model(g4, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
m4.ir_version = 8
onnx.checker.check_model(m4)
onnx.save(m4, os.path.join(os.path.dirname(os.path.abspath(__file__)), "matmul3d_mini.onnx"))
