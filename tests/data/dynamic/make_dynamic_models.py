"""Models with dynamic tensors (docs/package-format.md, "Dynamic tensors"), written with onnx's helper:
nonzero_gather.onnx — the indices of x's non-zeros (NonZero, Transpose: [n, 3]) and their values (GatherND: [n]),
the first steps of torchvision's detection post-processing. Run: /usr/bin/python3 make_dynamic_models.py"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def nonzero_gather():
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["x", "idx"], ["vals"])]
    graph = helper.make_graph(nodes, "nonzero_gather", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 4, 5))],
                              [helper.make_tensor_value_info("idx", TensorProto.INT64, ("n", 3)),
                               helper.make_tensor_value_info("vals", TensorProto.FLOAT, ("n",))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "nonzero_gather.onnx"))


if __name__ == "__main__":
    nonzero_gather()
