#!/usr/bin/python3
"""A YOLO-style detector of Fashion-MNIST items on synthetic 96x96 scenes (models/fashion_yolo/scenes.py), the model
of the Kneron-style YOLO example (examples/python/kneron_yolo.py). Trained on scenes of the training split, scored on
scenes of the test split, exported to ONNX.

    scripts/install_deps.sh torch fashion          the Debian packages it needs (torch only to train)
    /usr/bin/python3 models/fashion_yolo/train.py  train (minutes, one thread), write fashion_yolo.onnx and reference.json

The network: three 3x3 stride-2 convolutions (16, 32, 64 channels), two 3x3 ones (64), each with batch norm and
LeakyReLU(0.1) as Tiny-YOLO has them, and a 1x1 head of 5 + 10 channels on the 12x12 grid (yolo.py decodes it).
Input `image` [1, 1, 96, 96] float32 (pixels / 255), output `head` [1, 15, 12, 12], opset 13. Fully seeded, one
thread: re-running writes the same files. reference.json holds torch's own precision and recall (IoU >= 0.5, class
right) on 500 test scenes (seed 7)."""
import json
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenes  # noqa: E402
import yolo  # noqa: E402

SEED = 2026
TRAIN_SCENES = 16000
EPOCHS = 12
BATCH = 64
LR = 2e-3
TEST_SCENES, TEST_SEED = 500, 7


def targets(boxes):
    """Per cell: objectness, centre offsets, log sizes over the anchor, class (-1: none)."""
    t = np.zeros((5, yolo.GRID, yolo.GRID), np.float32)
    c = np.full((yolo.GRID, yolo.GRID), -1, np.int64)
    for x, y, w, h, k in boxes:
        cx, cy = x + w / 2, y + h / 2
        gx, gy = int(cx // yolo.STRIDE), int(cy // yolo.STRIDE)
        t[:, gy, gx] = (1, cx / yolo.STRIDE - gx, cy / yolo.STRIDE - gy, np.log(w / yolo.ANCHOR), np.log(h / yolo.ANCHOR))
        c[gy, gx] = k
    return t, c


def main():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(SEED)
    random.seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    def block(i, o, s):
        return [nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.LeakyReLU(0.1)]

    net = nn.Sequential(*block(1, 16, 2), *block(16, 32, 2), *block(32, 64, 2), *block(64, 64, 1), *block(64, 64, 1),
                        nn.Conv2d(64, 15, 1))
    train = scenes.scenes("train", TRAIN_SCENES, SEED)
    x = torch.tensor(np.stack([c for c, _ in train])[:, None].astype(np.float32) / 255)
    tt = [targets(b) for _, b in train]
    t = torch.tensor(np.stack([a for a, _ in tt]))
    cls = torch.tensor(np.stack([b for _, b in tt]))
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, EPOCHS * (TRAIN_SCENES // BATCH))
    for epoch in range(EPOCHS):
        net.train()
        perm = torch.randperm(TRAIN_SCENES)
        total = 0.0
        for i in range(0, TRAIN_SCENES - BATCH + 1, BATCH):
            b = perm[i:i + BATCH]
            out = net(x[b])
            obj_t, has = t[b, 0], cls[b] >= 0
            loss = F.binary_cross_entropy_with_logits(out[:, 0], obj_t)
            if has.any():
                m = has.unsqueeze(1)
                xy = torch.sigmoid(out[:, 1:3]).masked_select(m.expand(-1, 2, -1, -1))
                loss = loss + 5 * F.mse_loss(xy, t[b, 1:3].masked_select(m.expand(-1, 2, -1, -1)))
                loss = loss + 2 * F.mse_loss(out[:, 3:5].masked_select(m.expand(-1, 2, -1, -1)),
                                             t[b, 3:5].masked_select(m.expand(-1, 2, -1, -1)))
                logits = out[:, 5:].permute(0, 2, 3, 1)[has]
                loss = loss + F.cross_entropy(logits, cls[b][has])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss)
        print(f"epoch {epoch + 1}: loss {total / (TRAIN_SCENES // BATCH):.4f}", flush=True)
    net.eval()
    test = scenes.scenes("t10k", TEST_SCENES, TEST_SEED)
    tp = fp = fn = 0
    with torch.no_grad():
        for canvas, boxes in test:
            head = net(torch.tensor(canvas[None, None].astype(np.float32) / 255)).numpy()
            a, b, c = yolo.match(yolo.detect(head), boxes)
            tp, fp, fn = tp + a, fp + b, fn + c
    ref = {"precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn), "test_scenes": TEST_SCENES,
           "test_seed": TEST_SEED, "train_scenes": TRAIN_SCENES, "seed": SEED, "epochs": EPOCHS,
           "torch": torch.__version__}
    print(json.dumps(ref))
    torch.onnx.export(net, torch.zeros(1, 1, 96, 96), os.path.join(HERE, "fashion_yolo.onnx"), opset_version=13,
                      input_names=["image"], output_names=["head"], do_constant_folding=True)
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
