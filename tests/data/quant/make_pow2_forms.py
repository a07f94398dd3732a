#!/usr/bin/env python3
# Writes pow2_forms.onnx: the int8-pow2 forms added for TIDL's 8-bit layers (docs/numerics.md, "int8-pow2"), for
# tests/quant/pow2_package_test.cpp (fast == exact at every thread count, also under the sanitizers): a convolution,
# a Slice and a Split of its codes, the element-wise Max and Mul of two activations, a PRelu with one slope per
# channel, a channel shuffle (Reshape, Transpose, Reshape), a convolution, and as outputs beside the logits the ArgMax
# of their codes, a global max pooling of the shuffled codes upsampled by a nearest Resize, and the Softmax of those
# peaks flattened (TIDL's flattened softmax: one byte per class), and a depthwise stride-2 deconvolution + Relu of the
# last feature map (TIDL's Deconvolution, JSegNet21's upsampling) and its bilinear resize to 18x25 (integer tap
# weights). Input x [1, 3, 12, 12]. Seeded weights. Needs python3-onnx and numpy:
#   /usr/bin/python3 tests/data/quant/make_pow2_forms.py
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(53)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def w(name, shape, scale):
    return const(name, (rng.standard_normal(shape) * scale).astype(np.float32))


inits = [w("w1", (8, 3, 3, 3), 0.4), w("b1", (8,), 0.1), w("w2", (4, 4, 3, 3), 0.3), w("b2", (4,), 0.1),
         w("w3", (5, 4, 1, 1), 0.5), w("b3", (5,), 0.1), w("wt", (4, 1, 4, 4), 0.4), w("bt", (4,), 0.1),
         const("starts", np.array([1], np.int64)), const("ends", np.array([11], np.int64)), const("axes", np.array([3], np.int64)),
         const("halves", np.array([4, 4], np.int64)),
         const("slope", rng.uniform(0.05, 0.5, (4, 1, 1)).astype(np.float32)),
         const("s5", np.array([1, 2, 2, 12, 10], np.int64)), const("s4", np.array([1, 4, 12, 10], np.int64)),
         const("roi", np.zeros(0, np.float32)), const("twice", np.array([1, 1, 2, 2], np.float32)),
         const("sizes", np.array([1, 4, 18, 25], np.int64))]
N = helper.make_node
nodes = [
    N("Conv", ["x", "w1", "b1"], ["a0"], name="conv_a", pads=[1, 1, 1, 1]),
    N("Slice", ["a0", "starts", "ends", "axes"], ["s"], name="crop"),
    N("Split", ["s", "halves"], ["p", "q"], name="split", axis=1),
    N("Max", ["p", "q"], ["m"], name="max"),
    N("Mul", ["m", "q"], ["mq"], name="mul"),
    N("PRelu", ["mq", "slope"], ["r"], name="prelu"),
    N("Reshape", ["r", "s5"], ["g5"], name="shuffle_in"),
    N("Transpose", ["g5"], ["t5"], name="shuffle", perm=[0, 2, 1, 3, 4]),
    N("Reshape", ["t5", "s4"], ["sh"], name="shuffle_out"),
    N("Conv", ["sh", "w2", "b2"], ["c"], name="conv_c", pads=[1, 1, 1, 1]),
    N("Conv", ["c", "w3", "b3"], ["logits"], name="conv_logits"),
    N("ConvTranspose", ["c", "wt", "bt"], ["up0"], name="deconv", group=4, kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1]),
    N("Relu", ["up0"], ["upsampled"], name="deconv_relu"),
    N("Resize", ["c", "", "", "sizes"], ["bilinear"], name="bilinear", mode="linear"),
    N("ArgMax", ["logits"], ["classes"], name="argmax", axis=1, keepdims=1),
    N("Resize", ["sh", "roi", "twice"], ["up"], name="upsample", mode="nearest"),
    N("GlobalMaxPool", ["up"], ["peaks"], name="peaks"),
    N("Flatten", ["peaks"], ["flat"], name="flatten"),
    N("Softmax", ["flat"], ["probs"], name="softmax", axis=1),
]
g = helper.make_graph(nodes, "pow2_forms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5, 12, 10]),
                       helper.make_tensor_value_info("classes", TensorProto.INT64, [1, 1, 12, 10]),
                       helper.make_tensor_value_info("peaks", TensorProto.FLOAT, [1, 4, 1, 1]),
                       helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 4]),
                       helper.make_tensor_value_info("upsampled", TensorProto.FLOAT, [1, 4, 24, 20]),
                       helper.make_tensor_value_info("bilinear", TensorProto.FLOAT, [1, 4, 18, 25])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
m.ir_version = 8
onnx.checker.check_model(m, full_check=True)
onnx.save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pow2_forms.onnx"))
