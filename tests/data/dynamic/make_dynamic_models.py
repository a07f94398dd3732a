"""Models with dynamic tensors (docs/package-format.md, "Dynamic tensors"), written with onnx's helper:
- nonzero_gather.onnx: the indices of x's non-zeros (NonZero, Transpose: [n, 3]) and their values (GatherND: [n]),
  the first steps of torchvision's detection post-processing;
- sorted_boxes.onnx: the boxes whose score passes 0.3, by descending score (NonZero, Transpose, GatherND, Shape as
  TopK's k, TopK, Gather);
- concat_chain.onnx: the non-zeros of five rows concatenated (five NonZero, one Concat: a chain of partial concats,
  each reading dynamic tensors);
- elementwise.onnx: the scores above 0.3, then element-wise layers on them — Mul, Add, Sqrt, Greater, Cast, and a
  broadcast Add of the kept boxes [n, 4] and a constant [4].
Run: /usr/bin/python3 make_dynamic_models.py (the files are byte-identical from run to run)."""
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


def sorted_boxes():
    nodes = [helper.make_node("Greater", ["scores", "t"], ["keep"]),
             helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["scores", "idx"], ["kept"]),
             helper.make_node("GatherND", ["boxes", "idx"], ["kept_boxes"]),
             helper.make_node("Shape", ["kept"], ["n"]),
             helper.make_node("TopK", ["kept", "n"], ["sorted", "order"], axis=0),
             helper.make_node("Gather", ["kept_boxes", "order"], ["sorted_boxes"], axis=0)]
    graph = helper.make_graph(nodes, "sorted_boxes",
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, (32,)),
                               helper.make_tensor_value_info("boxes", TensorProto.FLOAT, (32, 4))],
                              [helper.make_tensor_value_info("sorted", TensorProto.FLOAT, ("n",)),
                               helper.make_tensor_value_info("sorted_boxes", TensorProto.FLOAT, ("n", 4)),
                               helper.make_tensor_value_info("n", TensorProto.INT64, (1,))],
                              [helper.make_tensor("t", TensorProto.FLOAT, [], [0.3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "sorted_boxes.onnx"))


def concat_chain():
    rows = ["r%d" % i for i in range(5)]
    nodes = [helper.make_node("Split", ["x"], rows, axis=0)]
    nodes += [helper.make_node("NonZero", [r], ["nz%d" % i]) for i, r in enumerate(rows)]
    nodes.append(helper.make_node("Concat", ["nz%d" % i for i in range(5)], ["all"], axis=1))
    graph = helper.make_graph(nodes, "concat_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (5, 8))],
                              [helper.make_tensor_value_info("all", TensorProto.INT64, (2, "n"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "concat_chain.onnx"))


def elementwise():
    nodes = [helper.make_node("Greater", ["scores", "t"], ["keep"]),
             helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["scores", "idx"], ["kept"]),
             helper.make_node("GatherND", ["boxes", "idx"], ["kept_boxes"]),
             helper.make_node("Mul", ["kept", "two"], ["doubled"]),
             helper.make_node("Add", ["doubled", "one"], ["plus"]),
             helper.make_node("Sqrt", ["plus"], ["root"]),
             helper.make_node("Greater", ["kept", "half"], ["high"]),
             helper.make_node("Cast", ["high"], ["high_i"], to=TensorProto.INT32),
             helper.make_node("Add", ["kept_boxes", "shift"], ["moved"])]
    consts = [helper.make_tensor("t", TensorProto.FLOAT, [], [0.3]), helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
              helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("half", TensorProto.FLOAT, [], [0.5]),
              helper.make_tensor("shift", TensorProto.FLOAT, [4], [1.0, -2.0, 0.5, 4.0])]
    graph = helper.make_graph(nodes, "elementwise",
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, (32,)),
                               helper.make_tensor_value_info("boxes", TensorProto.FLOAT, (32, 4))],
                              [helper.make_tensor_value_info("root", TensorProto.FLOAT, ("n",)),
                               helper.make_tensor_value_info("high_i", TensorProto.INT32, ("n",)),
                               helper.make_tensor_value_info("moved", TensorProto.FLOAT, ("n", 4))], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "elementwise.onnx"))


if __name__ == "__main__":
    nonzero_gather()
    sorted_boxes()
    concat_chain()
    elementwise()
