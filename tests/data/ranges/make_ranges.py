"""Models for the shape-range tests (tests/runtime/gears_test.cpp, ShapeRanges.*): translate with --input_shape LO~HI.

ranges_net.onnx    conv stride 2, conv + residual add, 2x2 max pool, 1x1 conv, global average pool, linear: two
                   outputs (the class scores, size-independent, and the feature map, which follows the range)
ranges_ceil.onnx   the same with a ceil-mode pool (its output takes ceil at odd sizes: refused for a range)
ranges_same.onnx   a convolution with auto_pad SAME_UPPER (pads that move with the size: refused for a range)
ranges_flat.onnx   a feature map flattened into a linear layer (runs at one size only: refused for a range)

Run with Debian's python3 (torch, onnx): python3 make_ranges.py (writes next to itself; fixed seeds).
"""
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


class Net(nn.Module):
    def __init__(self, ceil=False, flat=False):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, 2, 1)
        self.c2 = nn.Conv2d(8, 8, 3, 1, 1)
        self.c3 = nn.Conv2d(8, 16, 1)
        self.pool = nn.MaxPool2d(2, 2, ceil_mode=ceil)
        self.flat = flat
        self.fc = nn.Linear(16 * 8 * 8 if flat else 16, 5)

    def forward(self, x):
        a = torch.relu(self.c1(x))
        b = torch.relu(self.c2(a)) + a
        d = self.c3(self.pool(b))
        v = torch.flatten(d, 1) if self.flat else torch.flatten(nn.functional.adaptive_avg_pool2d(d, 1), 1)
        return self.fc(v), d


def export(model, name):
    torch.manual_seed(0)
    model.eval()
    torch.onnx.export(model, torch.randn(1, 3, 32, 32), os.path.join(HERE, name), input_names=["x"],
                      output_names=["y", "feat"], opset_version=13)


def same():
    rng = np.random.RandomState(0)
    w = numpy_helper.from_array(rng.randn(4, 3, 3, 3).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="same_conv", auto_pad="SAME_UPPER", strides=[2, 2])
    g = helper.make_graph([node], "same", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_ranges.py")
    onnx.save(m, os.path.join(HERE, "ranges_same.onnx"))


if __name__ == "__main__":
    torch.manual_seed(0)
    export(Net(), "ranges_net.onnx")
    torch.manual_seed(0)
    export(Net(ceil=True), "ranges_ceil.onnx")
    torch.manual_seed(0)
    export(Net(flat=True), "ranges_flat.onnx")
    same()
