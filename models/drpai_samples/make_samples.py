#!/usr/bin/python3
"""The DRP-AI Translator manual's four sample models (§7.1: resnet50v1, VGG16, tiny_yolov2, yolov2) with RANDOM,
seeded weights, for `npuc translate`'s sample-model mode (no arguments). The manual's script downloads trained
ResNet-50 v1 and VGG16 from the ONNX model zoo and ships trained YOLO models; npuc reaches no model zoo and stores no
third-party weights, so these have the same layers and shapes with random weights: translation, the address map, the
time estimate and the simulator behave as with the trained ones, but their outputs mean nothing.

    /usr/bin/python3 models/drpai_samples/make_samples.py [--out DIR] [resnet50v1 vgg16 tiny_yolov2 yolov2]

writes DIR/onnx/NAME.onnx (DIR: this folder). The pre/post-processing and address map definitions of each sample
are committed under UserConfig/sample/ (the manual's layout). resnet50v1 and vgg16 are torchvision's networks
(python3-torchvision; ResNet-50 made v1: the stride of each stage's first block in its first 1x1 convolution, as the
ONNX model zoo's resnet50-v1 has it); tiny_yolov2 and yolov2 are written here with onnx's helper from Darknet's
yolov2-tiny-voc and yolo-voc layer lists (BatchNormalization after each convolution, LeakyRelu 0.1; YOLOv2's
passthrough as SpaceToDepth). Sizes: resnet50v1 98 MB, vgg16 528 MB, tiny_yolov2 61 MB, yolov2 194 MB.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["resnet50v1", "vgg16", "tiny_yolov2", "yolov2"]


def torchvision_model(name, out):
    import torch
    import torchvision
    torch.manual_seed(0)
    if name == "resnet50v1":
        net = torchvision.models.resnet50(weights=None)
        for layer in (net.layer2, net.layer3, net.layer4):  # v1: the first block strides in its 1x1 convolution
            block = layer[0]
            block.conv1.stride, block.conv2.stride = (2, 2), (1, 1)
    else:
        net = torchvision.models.vgg16(weights=None)
    net.eval()
    x = torch.zeros(1, 3, 224, 224)
    torch.onnx.export(net, (x,), out, opset_version=13, input_names=["input"], output_names=["output"],
                      do_constant_folding=True)


class Darknet:
    """An ONNX graph of Darknet layers: convolutions with batch norm and LeakyRelu 0.1, max pools, seeded weights."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.h, self.c, self.i = "input", 3, 0

    def conv(self, n, k, bn=True, src=None, c=None):
        src, c = src or self.h, c or self.c
        self.i += 1
        p = f"conv{self.i}"
        w = (self.rng.standard_normal((n, c, k, k)) * np.sqrt(2.0 / (c * k * k))).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, p + ".w"))
        ins = [src, p + ".w"]
        if not bn:
            self.inits.append(numpy_helper.from_array((self.rng.standard_normal(n) * 0.1).astype(np.float32), p + ".b"))
            ins.append(p + ".b")
        self.nodes.append(helper.make_node("Conv", ins, [p], kernel_shape=[k, k], pads=[k // 2] * 4))
        y = p
        if bn:
            for s, v in (("scale", 1 + 0.1 * self.rng.standard_normal(n)), ("bias", 0.1 * self.rng.standard_normal(n)),
                         ("mean", 0.1 * self.rng.standard_normal(n)), ("var", 1 + 0.1 * np.abs(self.rng.standard_normal(n)))):
                self.inits.append(numpy_helper.from_array(v.astype(np.float32), f"{p}.bn.{s}"))
            self.nodes.append(helper.make_node("BatchNormalization", [y] + [f"{p}.bn.{s}" for s in
                                                                            ("scale", "bias", "mean", "var")],
                                               [p + "_bn"], epsilon=1e-5))
            self.nodes.append(helper.make_node("LeakyRelu", [p + "_bn"], [p + "_act"], alpha=0.1))
            y = p + "_act"
        self.h, self.c = y, n
        return y

    def pool(self, stride=2):
        self.i += 1
        y = f"pool{self.i}"
        # stride 1 (tiny YOLOv2's last pool): Darknet pads the end by one, as ONNX's pads [0, 0, 1, 1]
        self.nodes.append(helper.make_node("MaxPool", [self.h], [y], kernel_shape=[2, 2], strides=[stride, stride],
                                           pads=[0, 0, 0, 0] if stride == 2 else [0, 0, 1, 1]))
        self.h = y
        return y

    def save(self, out, name):
        self.nodes.append(helper.make_node("Identity", [self.h], ["output"]))
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 416, 416])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 125, 13, 13])], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc make_samples.py")
        onnx.checker.check_model(m)
        onnx.save(m, out)


def tiny_yolov2(out):
    """Darknet yolov2-tiny-voc: six 3x3 convolutions 16..512 each with a 2x2 max pool (the last of stride 1), two of
    1024, then a 1x1 convolution to 5 anchors x (5 + 20 classes) = 125 channels at 13x13."""
    d = Darknet(3)
    for n in (16, 32, 64, 128, 256, 512):
        d.conv(n, 3)
        d.pool(1 if n == 512 else 2)
    d.conv(1024, 3)
    d.conv(1024, 3)
    d.conv(125, 1, bn=False)
    d.save(out, "tiny_yolov2")


def yolov2(out):
    """Darknet yolo-voc: Darknet-19's convolutions, two more 3x3 of 1024, the passthrough (the 26x26x512 map through
    a 1x1 convolution of 64 and a 2x2 space-to-depth, joined on channels), a 3x3 of 1024, a 1x1 to 125."""
    d = Darknet(4)
    d.conv(32, 3), d.pool()
    d.conv(64, 3), d.pool()
    for n in (128, 256):
        d.conv(n, 3), d.conv(n // 2, 1), d.conv(n, 3), d.pool()
    d.conv(512, 3), d.conv(256, 1), d.conv(512, 3), d.conv(256, 1)
    fine = d.conv(512, 3)  # 26x26x512
    d.pool()
    d.conv(1024, 3), d.conv(512, 1), d.conv(1024, 3), d.conv(512, 1), d.conv(1024, 3)
    d.conv(1024, 3)
    deep = d.conv(1024, 3)
    reduced = d.conv(64, 1, src=fine, c=512)
    d.nodes.append(helper.make_node("SpaceToDepth", [reduced], ["reorg"], blocksize=2))
    d.nodes.append(helper.make_node("Concat", ["reorg", deep], ["route"], axis=1))
    d.h, d.c = "route", 256 + 1024
    d.conv(1024, 3)
    d.conv(125, 1, bn=False)
    d.save(out, "yolov2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("names", nargs="*", choices=NAMES + [[]], default=[])
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "onnx"), exist_ok=True)
    for name in a.names or NAMES:
        out = os.path.join(a.out, "onnx", name + ".onnx")
        {"resnet50v1": lambda o: torchvision_model("resnet50v1", o), "vgg16": lambda o: torchvision_model("vgg16", o),
         "tiny_yolov2": tiny_yolov2, "yolov2": yolov2}[name](out)
        print(f"wrote {out} ({os.path.getsize(out) / 1e6:.0f} MB, random weights)")


if __name__ == "__main__":
    main()
