#!/usr/bin/python3
"""Writes examples/example{1..5}.onnx: one small convolutional body per pre/post-processing example of the DRP-AI
manual §5.5 (examples/example{1..5}.yaml, the texts of kExample1..5 in tests/prepost/prepost_test.cpp), so that the
examples can be translated and simulated with their definitions (`npuc translate ... -prepost exampleN.yaml`).

Each model's inputs are exactly the example's input_to_body names and its outputs exactly the output_from_body names
(same order), float32, NCHW: a YAML HWC shape [H, W, C] is the ONNX shape [1, C, H, W], a YAML C shape [K] is [1, K].
Every node is one the `drpai` target supports (Conv 3x3/1x1 with stride 1 or 2, Relu, MaxPool 2x2 s2,
GlobalAveragePool, Flatten, Gemm, Concat). Weights are constant initializers, normal with a He-like scale so that the
activations stay O(1) for the inputs the preprocessing gives (normalized images, [0, 1] or — example 4, which casts the
uint8 pixels without normalizing — [0, 255]). Opset 13, IR version 8; each file well under 300 KB.

Deterministic (the same bytes on every run; example N is seeded with np.random.default_rng(N)); needs python3-onnx and
numpy. Run from this folder: /usr/bin/python3 make_example_models.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OUT = "examples"


class Body:
    """Collects the nodes and initializers of one model; `rng` draws its weights."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, kind):
        self.n += 1
        return "%s_%d" % (kind, self.n)

    def const(self, kind, value):
        name = self.name(kind)
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv(self, x, cin, cout, k=3, stride=1, out=None, in_scale=1.0):
        """Conv k x k, same padding ((k - 1) / 2 on every side), He-scaled weights (divided by in_scale, the input's
        magnitude), small bias."""
        std = np.sqrt(2.0 / (cin * k * k)) / in_scale
        w = self.const("w", self.rng.normal(0.0, std, (cout, cin, k, k)))
        b = self.const("b", self.rng.normal(0.0, 0.05, (cout,)))
        y = out or self.name("conv")
        p = (k - 1) // 2
        self.nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], strides=[stride, stride],
                                           pads=[p, p, p, p]))
        return y

    def op(self, op_type, inputs, out=None, **attrs):
        y = out or self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [y], **attrs))
        return y

    def relu(self, x, out=None):
        return self.op("Relu", [x], out)

    def maxpool(self, x):
        return self.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])

    def gemm(self, x, k_in, k_out, out=None):
        w = self.const("w", self.rng.normal(0.0, np.sqrt(1.0 / k_in), (k_out, k_in)))
        c = self.const("b", self.rng.normal(0.0, 0.05, (k_out,)))
        return self.op("Gemm", [x, w, c], out, transB=1)

    def save(self, name, inputs, outputs):
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, F, s) for n, s in outputs], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, os.path.join(OUT, name + ".onnx"))


os.makedirs(OUT, exist_ok=True)

# Example 1 (classification): cnn_in [224, 224, 3] HWC -> cnn_out [1000] C.
#   Conv 3x3 s2 (3->8, 112) Relu, Conv 3x3 s2 (8->16, 56) Relu, GlobalAveragePool, Flatten, Gemm 16->1000.
b = Body(1)
t = b.relu(b.conv("cnn_in", 3, 8, stride=2))
t = b.relu(b.conv(t, 8, 16, stride=2))
t = b.op("Flatten", [b.op("GlobalAveragePool", [t])], axis=1)
b.gemm(t, 16, 1000, out="cnn_out")
b.save("example1", [("cnn_in", [1, 3, 224, 224])], [("cnn_out", [1, 1000])])

# Example 2 (YOLOv2-style detection head): cnn_in [416, 416, 3] HWC -> cnn_out [13, 13, 125] HWC.
#   Conv s2 (3->8, 208) Relu, MaxPool (104), Conv s2 (8->16, 52) Relu, MaxPool (26), Conv s2 (16->32, 13) Relu,
#   Conv 1x1 (32->125).
b = Body(2)
t = b.maxpool(b.relu(b.conv("cnn_in", 3, 8, stride=2)))
t = b.maxpool(b.relu(b.conv(t, 8, 16, stride=2)))
t = b.relu(b.conv(t, 16, 32, stride=2))
b.conv(t, 32, 125, k=1, out="cnn_out")
b.save("example2", [("cnn_in", [1, 3, 416, 416])], [("cnn_out", [1, 125, 13, 13])])

# Example 3 (YOLOv3-style, three scales): images [416, 416, 3] HWC -> "391" [13, 13, 255], "371" [26, 26, 255],
# "output" [52, 52, 255], all HWC.
#   Conv s2 (3->8, 208) Relu, Conv s2 (8->16, 104) Relu, Conv s2 (16->16, 52) Relu = f52, Conv s2 (16->32, 26) Relu
#   = f26, Conv s2 (32->32, 13) Relu = f13; one Conv 1x1 (->255) head per scale.
b = Body(3)
t = b.relu(b.conv("images", 3, 8, stride=2))
t = b.relu(b.conv(t, 8, 16, stride=2))
f52 = b.relu(b.conv(t, 16, 16, stride=2))
f26 = b.relu(b.conv(f52, 16, 32, stride=2))
f13 = b.relu(b.conv(f26, 32, 32, stride=2))
b.conv(f13, 32, 255, k=1, out="391")
b.conv(f26, 32, 255, k=1, out="371")
b.conv(f52, 16, 255, k=1, out="output")
b.save("example3", [("images", [1, 3, 416, 416])],
       [("391", [1, 255, 13, 13]), ("371", [1, 255, 26, 26]), ("output", [1, 255, 52, 52])])

# Example 4 (image to image): input [96, 96, 3] HWC -> output [96, 96, 3] HWC. The preprocessing casts the uint8
# pixels to fp16 without normalizing, so the first Conv's weights are divided by 255.
#   Conv 3x3 (3->8) Relu, Conv 3x3 (8->3).
b = Body(4)
t = b.relu(b.conv("input", 3, 8, in_scale=255.0))
b.conv(t, 8, 3, out="output")
b.save("example4", [("input", [1, 3, 96, 96])], [("output", [1, 3, 96, 96])])

# Example 5 (two inputs): input_A, input_B [64, 64, 3] HWC -> output [16, 16, 32] HWC.
#   Per input Conv 3x3 s2 (3->8, 32) Relu; Concat (channels, 16); Conv 3x3 s2 (16->32, 16) Relu.
b = Body(5)
a = b.relu(b.conv("input_A", 3, 8, stride=2))
c = b.relu(b.conv("input_B", 3, 8, stride=2))
t = b.op("Concat", [a, c], axis=1)
b.relu(b.conv(t, 16, 32, stride=2), out="output")
b.save("example5", [("input_A", [1, 3, 64, 64]), ("input_B", [1, 3, 64, 64])], [("output", [1, 32, 16, 16])])
