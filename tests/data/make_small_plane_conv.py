#!/usr/bin/python3
"""Writes small_plane_conv.onnx: a 3x3 stride-2 unpadded Conv on a 1x3x4x4 input, which breaks DRP-AI's minimum
plane size (§4.1.3: 3x3 stride 2 pad 0 needs width >= 5, height >= 7) and is fine for the generic target. Used by tests/e2e/cli_test.sh
as the model that `check`/`translate --target drpai` must reject with a report. Needs python3-onnx."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

w = numpy_helper.from_array(np.random.RandomState(0).randn(8, 3, 3, 3).astype(np.float32) * 0.1, "w")
node = helper.make_node("Conv", ["x", "w"], ["y"], name="small_plane_conv", pads=[0, 0, 0, 0], kernel_shape=[3, 3],
                        strides=[2, 2])
g = helper.make_graph([node], "small_plane", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, __file__.replace("make_small_plane_conv.py", "small_plane_conv.onnx"))
