#!/usr/bin/env python3
"""Exports resize_area_model.onnx: a small CNN with one op npuc does not implement, com.example.ResizeArea
(TensorFlow's area resize), the way a user's PyTorch model carries a custom op into ONNX: a torch.autograd.Function
whose symbolic() emits the node. Run once with Debian's python3-torch (scripts/install_deps.sh torch); the exported
model is committed, so `make test` needs no torch.

    /usr/bin/python3 examples/custom_op/export_model.py [OUT.onnx]
"""
import sys

import torch


class ResizeArea(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, size, align_corners):
        # Only the shape matters while tracing; npuc runs the op through its plugin.
        return torch.nn.functional.adaptive_avg_pool2d(x, size)

    @staticmethod
    def symbolic(g, x, size, align_corners):
        return g.op("com.example::ResizeArea", x, size_i=list(size), align_corners_i=int(align_corners))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 2, 1)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        y = ResizeArea.apply(y, (10, 10), False)
        return self.conv2(y)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "resize_area_model.onnx"
    torch.manual_seed(7)
    net = Net().eval()
    x = torch.rand(1, 3, 24, 24)
    torch.onnx.export(net, (x,), out, opset_version=13, input_names=["image"], output_names=["scores"],
                      custom_opsets={"com.example": 1})
    print("wrote", out)


if __name__ == "__main__":
    main()
