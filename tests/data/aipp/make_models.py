#!/usr/bin/env python3
"""Makes the models of the AIPP tests (tests/runtime/aipp_package_test.cpp): seeded, committed.

aipp_net.onnx: inputs image [1,3,32,32] and mask [1,1,32,32] (float32); Conv(3->8, 3x3, pad 1) + Relu on the image,
Conv(1->8, 3x3, pad 1) on the mask, Add, MaxPool 2, Conv(8->4, 3x3, pad 1) -> out [1,4,16,16].
Run with /usr/bin/python3 (Debian's numpy and onnx)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261122)
here = os.path.dirname(os.path.abspath(__file__))


def init(name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [init("w1", (8, 3, 3, 3), 0.2), init("b1", (8,), 0.1), init("w2", (8, 1, 3, 3), 0.3), init("b2", (8,), 0.1),
         init("w3", (4, 8, 3, 3), 0.15), init("b3", (4,), 0.1)]
nodes = [
    helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv_image"),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu_image"),
    helper.make_node("Conv", ["mask", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv_mask"),
    helper.make_node("Add", ["r1", "c2"], ["s"], name="add"),
    helper.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
    helper.make_node("Conv", ["p", "w3", "b3"], ["out"], pads=[1, 1, 1, 1], name="conv_out"),
]
graph = helper.make_graph(nodes, "aipp_net",
                          [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32]),
                           helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 32, 32])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 16, 16])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "aipp_net.onnx"))
print("wrote aipp_net.onnx")
