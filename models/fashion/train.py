#!/usr/bin/python3
"""Fashion-MNIST models for the int8 accuracy checks (issue 24): a ResNet-style CNN (residual Adds), a
MobileNetV2-style CNN (inverted residuals with depthwise convolutions), a DenseNet-style CNN (concatenated
features behind batch norms no convolution absorbs) and a depthwise-separable CNN with a small classifier (with
fashion_dw_sensitive, the same function made sensitive to per-tensor int8 on purpose: make_sensitive), trained on Debian's dataset-fashion-mnist (60k training / 10k
test images) and exported to ONNX.

    scripts/install_deps.sh torch fashion               the Debian packages it needs (torch only to train)
    /usr/bin/python3 models/fashion/train.py            train the three (minutes, one thread; the dense one ~26), write the ONNX files
    /usr/bin/python3 models/fashion/train.py --data DIR write only the data sets as .npy into DIR

Outputs next to this script: fashion_resnet.onnx, fashion_mbv2.onnx, fashion_dense.onnx, fashion_dw.onnx,
fashion_dw_sensitive.onnx (opset 13, input `input`
[N, 1, 28, 28] float32, dynamic N; output `logits` [N, 10]) and reference.json (torch's own test accuracy, seeds, versions).
Data (--data DIR, or DIR = --out when training): test_x.npy float32 [10000, 1, 28, 28] (pixels / 255), test_y.npy
int64 [10000], calib_x.npy float32 [500, 1, 28, 28] (the first 500 training images: calibration samples, never
test ones). Fully seeded, one thread, deterministic algorithms: re-running writes the same files.
"""

import argparse
import gzip
import hashlib
import json
import os
import random
import sys

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 2024
EPOCHS = 3
BATCH = 128
LR = 2e-3
OPSET = 13
CALIB = 500


def idx(name):
    """An idx-ubyte file of the Debian package as a numpy array."""
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load():
    if not os.path.isdir(DATA):
        sys.exit(f"{DATA} is missing: install Debian's dataset-fashion-mnist (scripts/install_deps.sh fashion)")
    x_tr = (idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)[:, None]
    y_tr = idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    x_te = (idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0)[:, None]
    y_te = idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    return x_tr, y_tr, x_te, y_te


def write_data(out, x_tr, x_te, y_te):
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "test_x.npy"), np.ascontiguousarray(x_te))
    np.save(os.path.join(out, "test_y.npy"), np.ascontiguousarray(y_te))
    np.save(os.path.join(out, "calib_x.npy"), np.ascontiguousarray(x_tr[:CALIB]))


def models():
    import torch
    import torch.nn as nn

    def conv_bn(cin, cout, k, s, groups=1, act="relu"):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act == "relu":
            layers.append(nn.ReLU())
        elif act == "relu6":
            layers.append(nn.ReLU6())
        return nn.Sequential(*layers)

    class Residual(nn.Module):  # ResNet basic block: relu(x + bn(conv(relu(bn(conv(x))))))
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(conv_bn(c, c, 3, 1), conv_bn(c, c, 3, 1, act=None))
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(x + self.body(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(conv_bn(1, 16, 3, 1), Residual(16), conv_bn(16, 32, 3, 2), Residual(32),
                                     conv_bn(32, 64, 3, 2), Residual(64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(64, 10))

        def forward(self, x):
            return self.net(x)

    class InvertedResidual(nn.Module):  # MobileNetV2: expand 1x1, depthwise 3x3, project 1x1 (linear)
        def __init__(self, cin, cout, stride, t):
            super().__init__()
            mid = cin * t
            self.skip = stride == 1 and cin == cout
            self.body = nn.Sequential(conv_bn(cin, mid, 1, 1, act="relu6"),
                                      conv_bn(mid, mid, 3, stride, groups=mid, act="relu6"),
                                      conv_bn(mid, cout, 1, 1, act=None))

        def forward(self, x):
            return x + self.body(x) if self.skip else self.body(x)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(conv_bn(1, 16, 3, 2, act="relu6"), InvertedResidual(16, 16, 1, 3),
                                     InvertedResidual(16, 24, 2, 3), InvertedResidual(24, 24, 1, 3),
                                     InvertedResidual(24, 48, 1, 3), InvertedResidual(48, 48, 1, 3),
                                     conv_bn(48, 96, 1, 1, act="relu6"), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(96, 10))

        def forward(self, x):
            return self.net(x)

    class DenseLayer(nn.Module):  # DenseNet: pre-activation BN-ReLU-Conv3x3 on every earlier feature, concatenated
        def __init__(self, cin, growth):
            super().__init__()
            self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, growth, 3, 1, 1, bias=False))

        def forward(self, feats):
            return self.body(torch.cat(feats, 1))

    class DenseBlock(nn.Module):
        def __init__(self, cin, growth, n):
            super().__init__()
            self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth) for i in range(n))

        def forward(self, x):
            feats = [x]
            for layer in self.layers:
                feats.append(layer(feats))
            return torch.cat(feats, 1)

    def transition(cin, cout):
        return nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, cout, 1, bias=False), nn.AvgPool2d(2))

    class DenseNet(nn.Module):  # (88 features into the classifier: TIDL's inner product takes a multiple of 8)
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(conv_bn(1, 24, 3, 1), DenseBlock(24, 12, 4), transition(72, 36),
                                     DenseBlock(36, 12, 4), transition(84, 40), DenseBlock(40, 12, 4),
                                     nn.BatchNorm2d(88), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(88, 10))

        def forward(self, x):
            return self.net(x)

    class DepthwiseNet(nn.Module):  # depthwise-separable blocks (3x3 depthwise, 1x1 pointwise) and a small classifier
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(conv_bn(1, 16, 3, 1), conv_bn(16, 16, 3, 1, groups=16), conv_bn(16, 32, 1, 1),
                                     conv_bn(32, 32, 3, 2, groups=32), conv_bn(32, 64, 1, 1),
                                     conv_bn(64, 64, 3, 2, groups=64), conv_bn(64, 64, 1, 1),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))

        def forward(self, x):
            return self.net(x)

    return {"fashion_resnet": ResNet, "fashion_mbv2": MobileNetV2, "fashion_dense": DenseNet, "fashion_dw": DepthwiseNet}


# fashion_dw_sensitive (issue 53: a model made deliberately sensitive to per-tensor int8): fashion_dw with channels
# 0-3 of its second depthwise block's output scaled by SENSITIVE_SCALE — that block's batch-norm gamma and beta times
# the factor, the next pointwise convolution's weights of those input channels divided by it. ReLU commutes with a
# positive scale, so the float function is the trained one (its accuracy is recorded beside it); one activation
# tensor now has four channels 32 times wider than the other 28, which one scale per tensor cannot serve both.
SENSITIVE_SCALE = 32.0
SENSITIVE_CHANNELS = 4


def make_sensitive(model):
    import torch
    dw_bn = model.net[3][1]   # conv_bn(32, 32, 3, 2, groups=32): its BatchNorm2d
    pw_conv = model.net[4][0]  # conv_bn(32, 64, 1, 1): its Conv2d
    s = torch.ones(dw_bn.weight.shape[0])
    s[:SENSITIVE_CHANNELS] = SENSITIVE_SCALE
    with torch.no_grad():
        dw_bn.weight.mul_(s)
        dw_bn.bias.mul_(s)
        pw_conv.weight.div_(s[None, :, None, None])


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="where the ONNX files and reference.json go (default: here)")
    ap.add_argument("--data", help="write only the data sets (.npy) into this folder")
    ap.add_argument("--only", choices=list(models()), help="train one model")
    a = ap.parse_args()
    x_tr, y_tr, x_te, y_te = load()
    if a.data:
        write_data(a.data, x_tr, x_te, y_te)
        return 0
    import torch
    import torch.nn as nn

    os.makedirs(a.out, exist_ok=True)
    ref_path = os.path.join(a.out, "reference.json")
    ref = json.load(open(ref_path)) if os.path.exists(ref_path) else {}
    for name, cls in models().items():
        if a.only and name != a.only:
            continue
        random.seed(SEED)
        np.random.seed(SEED)
        torch.manual_seed(SEED)
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(1)
        model = cls()
        opt = torch.optim.Adam(model.parameters(), lr=LR)
        steps = EPOCHS * ((len(x_tr) + BATCH - 1) // BATCH)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=steps)
        loss_fn = nn.CrossEntropyLoss()
        xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
        gen = torch.Generator().manual_seed(SEED)
        for epoch in range(EPOCHS):
            model.train()
            perm = torch.randperm(len(xt), generator=gen)
            total = 0.0
            for i in range(0, len(xt), BATCH):
                b = perm[i:i + BATCH]
                opt.zero_grad()
                loss = loss_fn(model(xt[b]), yt[b])
                loss.backward()
                opt.step()
                sched.step()
                total += loss.item() * len(b)
            print(f"{name} epoch {epoch + 1}  train loss {total / len(xt):.4f}", flush=True)
        model.eval()
        variants = [(name, model)]
        if name == "fashion_dw":
            sensitive = cls()
            sensitive.load_state_dict(model.state_dict())
            sensitive.eval()
            make_sensitive(sensitive)
            variants.append(("fashion_dw_sensitive", sensitive))
        for out_name, m in variants:
            with torch.no_grad():
                correct = sum(int((m(torch.from_numpy(x_te[i:i + 1000])).argmax(1).numpy() == y_te[i:i + 1000]).sum())
                              for i in range(0, len(x_te), 1000))
            acc = correct / len(y_te)
            print(f"{out_name} test accuracy {acc:.4f} on {len(y_te)} images", flush=True)
            path = os.path.join(a.out, out_name + ".onnx")
            torch.onnx.export(m, torch.from_numpy(x_te[:1]), path, input_names=["input"], output_names=["logits"],
                              dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, opset_version=OPSET,
                              do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
            ref[out_name] = {"test_accuracy": round(acc, 6), "num_test": int(len(y_te)), "seed": SEED, "epochs": EPOCHS,
                             "batch": BATCH, "lr": LR, "opset": OPSET, "torch_version": torch.__version__.split("+")[0],
                             "sha256": sha256(path)}
            if out_name == "fashion_dw_sensitive":
                ref[out_name].update({"made_from": "fashion_dw", "scale": SENSITIVE_SCALE,
                                      "scaled_channels": SENSITIVE_CHANNELS})
        with open(ref_path, "w") as f:
            json.dump(ref, f, indent=2, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
