#!/usr/bin/python3
"""Exports the small PyTorch models behind tests/passes/patterns_test.cpp: one per optimizer pattern, as
torch.onnx emits it. Deterministic (seeded). Rerun with Debian's python3-torch: /usr/bin/python3 <this file>."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
here = os.path.dirname(os.path.abspath(__file__))


def pad_value():
    """pad_value_conv: constant Pads of non-zero values (DRP-AI §4.1.1 "Support float32 value") in front of a Conv and
    an AveragePool, which pad with zeros: they cannot fold, and run as pad layers (`... make_pattern_models.py
    pad_value` writes only this model)."""
    torch.manual_seed(7)
    model = nn.Sequential(nn.ConstantPad2d((1, 1, 2, 0), 1.5), nn.Conv2d(4, 8, 3), nn.ConstantPad2d((1, 1, 1, 1), -0.5),
                          nn.AvgPool2d(2, 2)).eval()
    path = os.path.join(here, "pad_value_conv.onnx")
    torch.onnx.export(model, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13)
    print(path, os.path.getsize(path))


def s2d_channels():
    """s2d_c6: SpaceToDepth as Reshape-Transpose-Reshape over 6 channels, which DRP-AI's component case does not take
    (ich % 4 == 0, D:L599-612) (`... make_pattern_models.py s2d_channels` writes only this model)."""
    torch.manual_seed(8)

    def s2d6(x, b=2):
        n, c, h, w = x.shape
        x = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
        return x.reshape(n, c * b * b, h // b, w // b)

    model = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), Lambda(s2d6)).eval()
    path = os.path.join(here, "s2d_c6.onnx")
    torch.onnx.export(model, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13)
    print(path, os.path.getsize(path))




class ConvAct(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.act = act

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Lambda(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] in (["pad_value"], ["s2d_channels"]):
        {"pad_value": pad_value, "s2d_channels": s2d_channels}[sys.argv[1]]()
        sys.exit(0)


models = {
    "relu": (ConvAct(nn.ReLU()), 13),
    "relu6": (ConvAct(nn.ReLU6()), 13),
    "leakyrelu": (ConvAct(nn.LeakyReLU(0.1)), 13),
    "sigmoid": (ConvAct(nn.Sigmoid()), 13),
    "swish": (ConvAct(nn.SiLU()), 13),
    "mish": (ConvAct(nn.Mish()), 13),
    "hardswish_op13": (ConvAct(nn.Hardswish()), 13),
    "hardswish_op14": (ConvAct(nn.Hardswish()), 14),
    "hardswish_add_clip_div_mul": (ConvAct(Lambda(lambda x: x * (F.relu6(x + 3) / 6))), 13),
    "hardswish_add_clip_mul_div": (ConvAct(Lambda(lambda x: x * F.relu6(x + 3) / 6)), 13),
    "gap_reducemean": (nn.Sequential(nn.Conv2d(4, 8, 3), Lambda(lambda x: x.mean(dim=(2, 3), keepdim=True))), 13),
    "gap_avgpool": (nn.Sequential(nn.Conv2d(4, 8, 3), nn.AvgPool2d(6)), 13),
    "flatten_view": (nn.Sequential(nn.Conv2d(4, 8, 3), Lambda(lambda x: x.view(x.size(0), -1)), nn.Linear(8 * 36, 5)), 13),
}

for name, (model, opset) in models.items():
    model.eval()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):  # non-trivial statistics so that folding is visible
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    x = torch.randn(1, 4, 8, 8)
    path = os.path.join(here, f"{name}.onnx")
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"], opset_version=opset,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    print(path, os.path.getsize(path))

# Pad folding: zero Pad before a Conv folds; a zero Pad before a MaxPool must not (it changes the maximum).
for name, model in {
    "pad_conv": nn.Sequential(nn.ZeroPad2d((1, 1, 1, 1)), nn.Conv2d(4, 8, 3)),
    "pad_maxpool": nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.LeakyReLU(0.1), nn.ZeroPad2d((0, 1, 0, 1)),
                                 nn.MaxPool2d(2, 1)),
}.items():
    model.eval()
    path = os.path.join(here, f"{name}.onnx")
    torch.onnx.export(model, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13)
    print(path, os.path.getsize(path))

# Data-movement patterns: SpaceToDepth as Reshape-Transpose-Reshape, upsample as Reshape-Expand-Reshape, Focus.
def s2d(x, b=2):
    n, c, h, w = x.shape
    x = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return x.reshape(n, c * b * b, h // b, w // b)


def reorg(x, s=2):
    # Darknet's reorg layer as PyTorch YOLOv2 ports write it (e.g. pytorch-yolo2's ReorgLayer): the same element
    # moves as SpaceToDepth, spelled with four Reshapes and three Transposes.
    b, c, h, w = x.shape
    x = x.view(b, c, h // s, s, w // s, s).transpose(3, 4).contiguous()
    x = x.view(b, c, h // s * w // s, s * s).transpose(2, 3).contiguous()
    x = x.view(b, c, s * s, h // s, w // s).transpose(1, 2).contiguous()
    return x.view(b, s * s * c, h // s, w // s)


def upsample(x, s=2):
    n, c, h, w = x.shape
    return x.reshape(n, c, h, 1, w, 1).expand(n, c, h, s, w, s).reshape(n, c, h * s, w * s)


def focus(x):
    return torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)


for name, fn in {"space_to_depth": s2d, "upsample_expand": upsample, "focus": focus}.items():
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), Lambda(fn)).eval()
    path = os.path.join(here, f"{name}.onnx")
    torch.onnx.export(model, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13)
    print(path, os.path.getsize(path))


class FrozenBN(nn.Module):  # BatchNorm written as arithmetic, as detection codebases do
    def __init__(self, c):
        super().__init__()
        self.mean = nn.Parameter(torch.rand(1, c, 1, 1), requires_grad=False)
        self.std = nn.Parameter(torch.rand(1, c, 1, 1) + 0.5, requires_grad=False)
        self.gamma = nn.Parameter(torch.rand(1, c, 1, 1) + 0.5, requires_grad=False)
        self.beta = nn.Parameter(torch.rand(1, c, 1, 1), requires_grad=False)

    def forward(self, x):
        return (x - self.mean) / self.std * self.gamma + self.beta


model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), FrozenBN(8), nn.ReLU()).eval()
path = os.path.join(here, "bn_equivalent_chain.onnx")
torch.onnx.export(model, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13,
                  do_constant_folding=False)
print(path, os.path.getsize(path))

# BatchNorm1d after a Linear layer: folds into the Gemm.
lin = nn.Sequential(nn.Flatten(), nn.Linear(4 * 8 * 8, 16), nn.BatchNorm1d(16), nn.ReLU()).eval()
lin[2].running_mean.uniform_(-0.5, 0.5)
lin[2].running_var.uniform_(0.5, 1.5)
lin[2].weight.data.uniform_(0.5, 1.5)
lin[2].bias.data.uniform_(-0.5, 0.5)
path = os.path.join(here, "gemm_bn.onnx")
torch.onnx.export(lin, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13,
                  training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
print(path, os.path.getsize(path))

# Added later, last so that the models above keep their seeded weights.
torch.manual_seed(7)
model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), Lambda(reorg)).eval()
path = os.path.join(here, "darknet_reorg.onnx")
torch.onnx.export(model, torch.randn(1, 4, 8, 8), path, input_names=["x"], output_names=["y"], opset_version=13)
print(path, os.path.getsize(path))

# Focus as four two-axis Slices (axes [2, 3], steps [2, 2]), which some exporters and hand-written graphs emit in
# place of torch's eight one-axis ones. torch cannot write it: made with onnx.helper (seeded numpy weights).
import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper, save  # noqa: E402


def focus_two_axis(path):
    rng = np.random.default_rng(11)
    w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    inits = [w, b, numpy_helper.from_array(np.array([2, 3], np.int64), "axes"),
             numpy_helper.from_array(np.array([2, 2], np.int64), "steps"),
             numpy_helper.from_array(np.array([1 << 30, 1 << 30], np.int64), "ends")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])]
    for i, (h0, w0) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):
        inits.append(numpy_helper.from_array(np.array([h0, w0], np.int64), "starts%d" % i))
        nodes.append(helper.make_node("Slice", ["c", "starts%d" % i, "ends", "axes", "steps"], ["s%d" % i]))
    nodes.append(helper.make_node("Concat", ["s0", "s1", "s2", "s3"], ["y"], axis=1))
    g = helper.make_graph(nodes, "focus_two_axis", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 4, 4])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    print(path, os.path.getsize(path))


focus_two_axis(os.path.join(here, "focus_two_axis.onnx"))


# HardSwish as the DRP-AI manual writes it (Add, Clip, Div, Mul; §4.1.2) in the forms exporters and hand-written
# graphs use: operands either way round, "/ 6" as a Div or a Mul by 1/6, constants of shape [] or [1], Clip with
# attributes (opset 10). Each must fuse into one HardSwish layer through translate's whole flow.
def hardswish_manual(path, rev=False, mul=False, shape=(), opset=13):
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.full(shape, 3, np.float32), "three"),
             numpy_helper.from_array(np.full(shape, 1 / 6 if mul else 6, np.float32), "six")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["three", "c"] if rev else ["c", "three"], ["a"])]
    if opset < 11:
        nodes.append(helper.make_node("Clip", ["a"], ["r"], min=0.0, max=6.0))
    else:
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", ["a", "lo", "hi"], ["r"]))
    nodes.append(helper.make_node("Mul" if mul else "Div", ["r", "six"], ["d"]))
    nodes.append(helper.make_node("Mul", ["d", "c"] if rev else ["c", "d"], ["y"]))
    g = helper.make_graph(nodes, "hardswish_manual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    print(path, os.path.getsize(path))


hardswish_manual(os.path.join(here, "hardswish_manual.onnx"))
hardswish_manual(os.path.join(here, "hardswish_manual_swapped.onnx"), rev=True, shape=(1,))
hardswish_manual(os.path.join(here, "hardswish_manual_mul.onnx"), mul=True)
hardswish_manual(os.path.join(here, "hardswish_manual_op10.onnx"), opset=10)
