#!/usr/bin/python3
"""Small bodies for pre/post-processing tests, into bodies/.

bodies/nhwc_model.onnx: a channel-last (TensorFlow / Keras style) model, as such exporters write it — the
input [1, 12, 16, 3] NHWC, a Transpose to NCHW, Conv 3x3 (3 -> 5) + Relu, a Transpose back, the output
[1, 12, 16, 5] NHWC (the DRP-AI manual's Appendix B: the translator takes these boundary transposes as the model's
layout). Used with bodies/nhwc_prepost.yaml (a uint8 RGB frame in, a CHW float32 feature map out) by
tests/prepost/graph_test.cpp and tests/e2e/cli_test.sh.

bodies/square_model.onnx: the same with a [1, 4, 4, 4] input and output (H = W = C), whose shapes alone cannot
tell the layouts apart.

bodies/rgb_12x16.onnx: input [1, 3, 12, 16] -> Relu -> output (a body that passes a converted camera frame through,
for the YUV formats of conv_yuv2rgb in tests/runtime/prepost_package_test.cpp).

bodies/normalised_input.onnx: (x - mean) / std per channel on a [1, 3, 16, 16] input (ImageNet's mean and std),
then Conv 3x3 (3 -> 8): an in-model normalisation with no Conv before it (tests/e2e/cli_test.sh).

Deterministic (seeded weights); needs python3-onnx and numpy. Run from this folder: /usr/bin/python3 make_bodies.py"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(h, w, cin, cout, seed):
    rng = np.random.default_rng(seed)
    wt = rng.normal(0.0, np.sqrt(2.0 / (cin * 9)), (cout, cin, 3, 3)).astype(np.float32)
    b = rng.normal(0.0, 0.05, (cout,)).astype(np.float32)
    nodes = [
        helper.make_node("Transpose", ["input"], ["to_nchw"], perm=[0, 3, 1, 2], name="transpose_in"),
        helper.make_node("Conv", ["to_nchw", "w", "b"], ["conv"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("Transpose", ["relu"], ["feat"], perm=[0, 2, 3, 1], name="transpose_out"),
    ]
    g = helper.make_graph(nodes, "nhwc", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, h, w, cin])],
                          [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, h, w, cout])],
                          [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def passthrough():
    g = helper.make_graph([helper.make_node("Relu", ["input"], ["output"], name="relu")], "rgb",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 12, 16])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 12, 16])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def normalised():
    rng = np.random.default_rng(3)
    wt = rng.normal(0.0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    nodes = [helper.make_node("Sub", ["x", "mean"], ["centred"], name="sub"),
             helper.make_node("Div", ["centred", "std"], ["normalised"], name="div"),
             helper.make_node("Conv", ["normalised", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv")]
    g = helper.make_graph(nodes, "normalised", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(mean, "mean"),
                           numpy_helper.from_array(std, "std")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


onnx.save(model(12, 16, 3, 5, 1), "bodies/nhwc_model.onnx")
onnx.save(model(4, 4, 4, 4, 2), "bodies/square_model.onnx")
onnx.save(passthrough(), "bodies/rgb_12x16.onnx")
onnx.save(normalised(), "bodies/normalised_input.onnx")
