"""Models with dynamic tensors (docs/package-format.md, "Dynamic tensors"), written with onnx's helper:
- nonzero_gather.onnx: the indices of x's non-zeros (NonZero, Transpose: [n, 3]) and their values (GatherND: [n]),
  the first steps of torchvision's detection post-processing;
- sorted_boxes.onnx: the boxes whose score passes 0.3, by descending score (NonZero, Transpose, GatherND, Shape as
  TopK's k, TopK, Gather);
- concat_chain.onnx: the non-zeros of five rows concatenated (five NonZero, one Concat: a chain of partial concats,
  each reading dynamic tensors);
- elementwise.onnx: the scores above 0.3, then element-wise layers on them — Mul, Add, Sqrt, Greater, Cast, and a
  broadcast Add of the kept boxes [n, 4] and a constant [4];
- views_and_slices.onnx: the kept boxes [n, 4] split into their four columns (Split, Squeeze), their areas as a
  column (Unsqueeze), flattened (Flatten, Reshape), sliced (the first 5 scores, columns 1..2), reduced (ReduceMax
  over all, added to every area: batched_nms's offset; ReduceSum), NonMaxSuppression of them ([1, n, 4] boxes,
  [1, 1, n] scores: the kept indices, Gather of column 2), and an If on "more than three kept" whose then_branch
  doubles the scores and whose else_branch gives no value.
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


def views_and_slices():
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
    then_branch = helper.make_graph([helper.make_node("Mul", ["kept", "two"], ["doubled"])], "then", [],
                                    [helper.make_tensor_value_info("doubled", TensorProto.FLOAT, ("n",))])
    else_branch = helper.make_graph([helper.make_node("Constant", [], ["none"], value=helper.make_tensor("e", TensorProto.FLOAT, [0], []))],
                                    "else", [], [helper.make_tensor_value_info("none", TensorProto.FLOAT, (0,))])
    nodes = [helper.make_node("Greater", ["scores", "t"], ["keep"]),
             helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["scores", "idx"], ["kept"]),
             helper.make_node("GatherND", ["boxes", "idx"], ["kept_boxes"]),
             helper.make_node("Split", ["kept_boxes", "ones4"], ["x1c", "y1c", "x2c", "y2c"], axis=1),
             helper.make_node("Squeeze", ["x1c", "ax1"], ["x1"]), helper.make_node("Squeeze", ["y1c", "ax1"], ["y1"]),
             helper.make_node("Squeeze", ["x2c", "ax1"], ["x2"]), helper.make_node("Squeeze", ["y2c", "ax1"], ["y2"]),
             helper.make_node("Sub", ["x2", "x1"], ["w"]), helper.make_node("Sub", ["y2", "y1"], ["h"]),
             helper.make_node("Mul", ["w", "h"], ["area"]),
             helper.make_node("ReduceMax", ["kept_boxes"], ["top"], keepdims=0),
             helper.make_node("Add", ["area", "top"], ["area_off"]),
             helper.make_node("Unsqueeze", ["area_off", "ax1"], ["area_col"]),
             helper.make_node("Flatten", ["kept_boxes"], ["flat"], axis=0),
             helper.make_node("Reshape", ["kept_boxes", "minus1"], ["flat1"]),
             helper.make_node("Slice", ["kept", "zero", "five"], ["first5"]),
             helper.make_node("Slice", ["kept_boxes", "one", "three", "ax1"], ["mid"]),
             helper.make_node("ReduceSum", ["kept", "ax0"], ["total"], keepdims=1),
             helper.make_node("Unsqueeze", ["kept_boxes", "ax0"], ["b3"]),
             helper.make_node("Unsqueeze", ["kept", "ax01"], ["s3"]),
             helper.make_node("NonMaxSuppression", ["b3", "s3", "maxper", "iou"], ["sel"]),
             helper.make_node("Gather", ["sel", "two_i"], ["picked"], axis=1),
             helper.make_node("Cast", ["keep"], ["keep_f"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["keep_f"], ["count"], keepdims=0),
             helper.make_node("Greater", ["count", "three_f"], ["many"]),
             helper.make_node("If", ["many"], ["branch"], then_branch=then_branch, else_branch=else_branch)]
    consts = [helper.make_tensor("t", TensorProto.FLOAT, [], [0.3]), helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
              helper.make_tensor("iou", TensorProto.FLOAT, [], [0.5]), helper.make_tensor("three_f", TensorProto.FLOAT, [], [3.0]),
              helper.make_tensor("two_i", TensorProto.INT64, [], [2]), ints("maxper", [100]),
              ints("ones4", [1, 1, 1, 1]), ints("ax1", [1]), ints("ax0", [0]), ints("ax01", [0, 1]), ints("minus1", [-1]),
              ints("zero", [0]), ints("five", [5]), ints("one", [1]), ints("three", [3])]
    graph = helper.make_graph(nodes, "views_and_slices",
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, (32,)),
                               helper.make_tensor_value_info("boxes", TensorProto.FLOAT, (32, 4))],
                              [helper.make_tensor_value_info("area_col", TensorProto.FLOAT, ("n", 1)),
                               helper.make_tensor_value_info("flat", TensorProto.FLOAT, (1, "n4")),
                               helper.make_tensor_value_info("flat1", TensorProto.FLOAT, ("n4",)),
                               helper.make_tensor_value_info("first5", TensorProto.FLOAT, ("f",)),
                               helper.make_tensor_value_info("mid", TensorProto.FLOAT, ("n", 2)),
                               helper.make_tensor_value_info("total", TensorProto.FLOAT, (1,)),
                               helper.make_tensor_value_info("picked", TensorProto.INT64, ("k",)),
                               helper.make_tensor_value_info("branch", TensorProto.FLOAT, ("b",))], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "views_and_slices.onnx"))


if __name__ == "__main__":
    nonzero_gather()
    sorted_boxes()
    concat_chain()
    elementwise()
    views_and_slices()
