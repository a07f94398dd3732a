#!/usr/bin/python3
"""Exports the small PyTorch models behind tests/passes/patterns_test.cpp: one per optimizer pattern, as
torch.onnx emits it. Deterministic (seeded). Rerun with Debian's python3-torch: /usr/bin/python3 <this file>."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
here = os.path.dirname(os.path.abspath(__file__))


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
