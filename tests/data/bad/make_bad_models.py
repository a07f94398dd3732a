#!/usr/bin/python3
"""Writes the small invalid ONNX models used by tests/e2e/cli_test.sh (committed; rerun to regenerate)."""
import os
import onnx
import numpy as np
from onnx import TensorProto, helper, numpy_helper

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

# The bad-input campaign (issue 22): header fields npuc used to accept.
m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y])
m.opset_import[0].version = -1  # was taken as opset 17
save(m, "opset_minus1.onnx")
m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [x], [y])
m.ir_version = 99
save(m, "ir_version99.onnx")
c1 = helper.make_tensor("c", TensorProto.FLOAT, [1], [1.0])
c2 = helper.make_tensor("c", TensorProto.FLOAT, [1], [2.0])  # the last one won
save(model([helper.make_node("Add", ["x", "c"], ["y"], name="add")], [x], [y], inits=[c1, c2]), "duplicate_initializer.onnx")
# External data named "w.bin" next to the model: tests/e2e/bad_input_test.sh makes it a symbolic link out of the
# model's folder.
w = helper.make_tensor("w", TensorProto.FLOAT, [1], [0.0])
w.ClearField("float_data")
w.data_location = TensorProto.EXTERNAL
e = w.external_data.add()
e.key, e.value = "location", "w.bin"
save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [x], [y], inits=[w]), "external_link.onnx")
# An op the engine runs but no package holds yet (DynamicQuantizeLinear): check reports it, translate writes the error
# report (tests/runtime/runtime_test.cpp).
save(model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("DynamicQuantizeLinear", ["r"], ["q", "y", "z"], name="dql")],  # y: its scale
           [x], [y]), "no_package_form.onnx")
