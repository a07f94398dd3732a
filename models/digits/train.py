#!/usr/bin/python3
"""Train a small CNN on scikit-learn's bundled 8x8 handwritten digits and export it to ONNX.

Regenerate everything in this directory with:

    /usr/bin/python3 models/digits/train.py

Outputs (next to this script):
    digits_cnn.onnx   opset 13, input `input` [N,1,8,8] float32 (dynamic N), output `logits` [N,10]
    test_x.npy        float32 [N,1,8,8], pixels scaled to [0,1] (raw value / 16)
    test_y.npy        int64   [N]
    reference.json    {"test_accuracy", "num_test", "seed", ...} computed with plain torch eval

The run is fully seeded and uses a single thread, so re-running writes byte-identical files.
"""

import argparse
import hashlib
import json
import os
import random
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 1234
TEST_SIZE = 0.3
EPOCHS = 30
BATCH = 32
LR = 3e-3
WEIGHT_DECAY = 1e-4
OPSET = 13

HERE = os.path.dirname(os.path.abspath(__file__))


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            # All 3x3 convolutions run on the full 8x8 plane and the pooling comes after them:
            # DRP-AI's minimum plane size for a 3x3 pad-1 Conv is width >= 6 (npuc rule
            # drpai.conv.min_plane), so a Conv on the 4x4 plane after a 2x2 pool is rejected.
            nn.Conv2d(32, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(32, 10)

    def forward(self, x):
        return self.classifier(self.features(x))


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="output directory (default: this script's directory)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    seed_everything(SEED)

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=TEST_SIZE, random_state=SEED, stratify=y)
    x_tr = np.ascontiguousarray(x_tr, dtype=np.float32)
    x_te = np.ascontiguousarray(x_te, dtype=np.float32)
    y_tr = np.ascontiguousarray(y_tr, dtype=np.int64)
    y_te = np.ascontiguousarray(y_te, dtype=np.int64)

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    xt = torch.from_numpy(x_tr)
    yt = torch.from_numpy(y_tr)
    gen = torch.Generator().manual_seed(SEED)

    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        sched.step()
        if epoch % 5 == 4 or epoch == EPOCHS - 1:
            print(f"epoch {epoch + 1:3d}  train loss {total / len(xt):.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(x_te))
        acc = float((logits.argmax(1).numpy() == y_te).mean())
    print(f"test accuracy {acc:.4f} on {len(y_te)} held-out samples")

    onnx_path = os.path.join(args.out, "digits_cnn.onnx")
    torch.onnx.export(
        model,
        torch.from_numpy(x_te[:1]),
        onnx_path,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        opset_version=OPSET,
        do_constant_folding=False,
        # PRESERVE (model is in eval mode) instead of EVAL: in torch 1.13 EVAL runs
        # _jit_pass_onnx_eval_peephole, which fuses BatchNorm into Conv even with
        # do_constant_folding=False. We want the BatchNormalization nodes kept.
        training=torch.onnx.TrainingMode.PRESERVE,
    )
    np.save(os.path.join(args.out, "test_x.npy"), x_te)
    np.save(os.path.join(args.out, "test_y.npy"), y_te)
    ref = {
        "test_accuracy": round(acc, 6),
        "num_test": int(len(y_te)),
        "seed": SEED,
        "test_size": TEST_SIZE,
        "epochs": EPOCHS,
        "opset": OPSET,
        "torch_version": torch.__version__.split("+")[0],
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(ref, sort_keys=True))
    for name in ("digits_cnn.onnx", "test_x.npy", "test_y.npy", "reference.json"):
        p = os.path.join(args.out, name)
        print(f"{name:18s} {os.path.getsize(p):8d} B  sha256 {sha256(p)}")
    if acc < 0.95:
        print("WARNING: test accuracy below 0.95", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
