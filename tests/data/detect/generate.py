#!/usr/bin/env python3
"""A small single-shot detector exported with its post-processing, as torchvision's SSD / SSDlite do it (issue 49:
detection models; docs/roadmap.md "bounded dynamic shapes"): a CNN gives per-anchor class logits and box offsets on
an 8x8 grid with 3 anchors per cell (192 anchors, 4 classes with background 0); then, per class, softmax scores above
a threshold (Greater + NonZero), the best k = min(K, kept) of them (TopK of a computed k), their boxes decoded,
torchvision.ops.batched_nms (NonMaxSuppression behind the coordinate trick, an If on "no box") and the first
`detections` kept. Every output's length is decided by the data. PyTorch computes the reference.

Run once with Debian's python3-torch / torchvision (scripts/install_deps.sh torch); the tests read the stored files:
    /usr/bin/python3 tests/data/detect/generate.py
Writes detector.onnx, and per input i (0..2): detector.in{i}.npy and PyTorch's detector.out{i}_{boxes,scores,labels}.npy;
input 2 gives no detection at all (its scores stay below the threshold: the empty path).
"""
import io
import os

import numpy as np
import onnx
import torch
import torchvision
from torchvision.models.detection._utils import _topk_min

HERE = os.path.dirname(os.path.abspath(__file__))
GRID, ANCHORS, CLASSES, SIZE = 8, 3, 4, 32
SCORE_THRESH, NMS_THRESH, TOPK, DETECTIONS = 0.3, 0.45, 20, 30
BG, GAIN = 1.0, 10.0  # background bias and logit gain: a few confident classes per image (a random CNN's softmax is flat)


class Detector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU())
        self.cls = torch.nn.Conv2d(32, ANCHORS * CLASSES, 3, padding=1)
        self.reg = torch.nn.Conv2d(32, ANCHORS * 4, 3, padding=1)
        # anchors (cx, cy, w, h) in pixels: per cell, three sizes
        cy, cx = torch.meshgrid(torch.arange(GRID), torch.arange(GRID), indexing="ij")
        step = SIZE / GRID
        centers = torch.stack([(cx + 0.5) * step, (cy + 0.5) * step], -1).reshape(-1, 1, 2).expand(-1, ANCHORS, 2)
        sizes = torch.tensor([[4.0, 4.0], [8.0, 6.0], [6.0, 8.0]]).expand(GRID * GRID, ANCHORS, 2)
        self.register_buffer("anchors", torch.cat([centers, sizes], -1).reshape(-1, 4))

    def forward(self, x):
        f = self.body(x)
        logits = self.cls(f).permute(0, 2, 3, 1).reshape(-1, CLASSES)
        deltas = self.reg(f).permute(0, 2, 3, 1).reshape(-1, 4)
        scores = torch.softmax(logits, -1)
        a = self.anchors
        cx = a[:, 0] + deltas[:, 0] * 0.1 * a[:, 2]
        cy = a[:, 1] + deltas[:, 1] * 0.1 * a[:, 3]
        w = a[:, 2] * torch.exp(deltas[:, 2] * 0.2)
        h = a[:, 3] * torch.exp(deltas[:, 3] * 0.2)
        boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1).clamp(0, SIZE)
        all_boxes, all_scores, all_labels = [], [], []
        for c in range(1, CLASSES):  # (as torchvision's SSD.postprocess_detections, one class at a time)
            s = scores[:, c]
            keep = s > SCORE_THRESH
            s, b = s[keep], boxes[keep]
            k = _topk_min(s, TOPK, 0)  # (torchvision's: traced, a ReduceMin of TOPK and the kept count)
            s, idx = s.topk(k)
            all_boxes.append(b[idx])
            all_scores.append(s)
            all_labels.append(torch.full_like(s, c, dtype=torch.int64))
        b, s, l = torch.cat(all_boxes), torch.cat(all_scores), torch.cat(all_labels)
        keep = torchvision.ops.batched_nms(b, s, l, NMS_THRESH)[:DETECTIONS]
        return b[keep], s[keep], l[keep]


def main():
    torch.manual_seed(3)
    net = Detector().eval()
    with torch.no_grad():
        net.cls.bias.copy_(torch.tensor([BG, 0.0, 0.0, 0.0] * ANCHORS))
        net.cls.weight.mul_(GAIN)
    rng = np.random.default_rng(5)
    inputs = [rng.uniform(0, 1, (1, 3, SIZE, SIZE)).astype(np.float32),
              rng.normal(0.5, 0.5, (1, 3, SIZE, SIZE)).astype(np.float32),
              np.zeros((1, 3, SIZE, SIZE), np.float32)]
    buf = io.BytesIO()
    torch.onnx.export(net, torch.from_numpy(inputs[0]), buf, opset_version=13, input_names=["image"],
                      output_names=["boxes", "scores", "labels"],
                      dynamic_axes={"boxes": {0: "n"}, "scores": {0: "n"}, "labels": {0: "n"}})
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "detector.onnx"))
    with torch.no_grad():
        for i, x in enumerate(inputs):
            b, s, l = net(torch.from_numpy(x))
            np.save(os.path.join(HERE, f"detector.in{i}.npy"), x)
            np.save(os.path.join(HERE, f"detector.out{i}_boxes.npy"), b.numpy())
            np.save(os.path.join(HERE, f"detector.out{i}_scores.npy"), s.numpy())
            np.save(os.path.join(HERE, f"detector.out{i}_labels.npy"), l.numpy())
            print(f"input {i}: {len(s)} detections")


if __name__ == "__main__":
    main()
