#!/usr/bin/python3
"""Writes the small invalid ONNX models used by tests/e2e/cli_test.sh (committed; rerun to regenerate)."""
import os
import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="npuc-tests")
    m.ir_version = 8
    return m


def save(m, name):
    with open(os.path.join(here, name), "wb") as f:
        f.write(m.SerializeToString())


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
save(model([helper.make_node("Conv", ["x", "W_missing"], ["y"], name="conv_without_weights")], [x], [y]),
     "missing_initializer.onnx")
save(model([helper.make_node("FancyNewOp", ["x"], ["y"], name="fancy")], [x], [y]), "unknown_op.onnx")
save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y], opset=18), "opset18.onnx")
b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 5, 7, 7])
save(model([helper.make_node("Add", ["x", "b"], ["y"], name="add_mismatch")], [x, b], [y]), "inconsistent_shapes.onnx")
good = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y])
data = good.SerializeToString()
with open(os.path.join(here, "truncated.onnx"), "wb") as f:
    f.write(data[: len(data) // 2])
