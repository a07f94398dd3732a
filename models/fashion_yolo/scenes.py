"""Synthetic detection scenes from Fashion-MNIST for the YOLO-style example (models/fashion_yolo/train.py,
examples/python/kneron_yolo.py): numpy only, seeded, so that training, the example and its test make the same
scenes.

A scene is a 96x96 uint8 gray canvas with 1 to 3 items of Debian's dataset-fashion-mnist, each scaled (nearest) to a
side of 16, 20, 24 or 28 pixels and pasted (per-pixel maximum) where it overlaps no other; its boxes are the items'
squares (x, y, w, h in pixels) with their classes."""
import gzip
import os

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
SIZE = 96
SIDES = (16, 20, 24, 28)
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


def idx(name):
    """An idx-ubyte file of the Debian package as a numpy array."""
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing: install Debian's dataset-fashion-mnist (scripts/install_deps.sh fashion)")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def items(split):
    """(images uint8 [N, 28, 28], labels [N]) of 'train' or 't10k'."""
    return idx(f"{split}-images-idx3-ubyte.gz"), idx(f"{split}-labels-idx1-ubyte.gz").astype(np.int64)


def scene(rng, images, labels):
    """One scene: (canvas uint8 [96, 96], boxes [(x, y, w, h, class)])."""
    canvas = np.zeros((SIZE, SIZE), np.uint8)
    boxes = []
    for _ in range(int(rng.integers(1, 4))):
        for _try in range(20):
            s = int(SIDES[rng.integers(len(SIDES))])
            x, y = int(rng.integers(0, SIZE - s + 1)), int(rng.integers(0, SIZE - s + 1))
            if all(x + s <= bx or bx + bw <= x or y + s <= by or by + bh <= y for bx, by, bw, bh, _ in boxes):
                k = int(rng.integers(len(images)))
                pick = np.arange(s) * 28 // s
                canvas[y:y + s, x:x + s] = np.maximum(canvas[y:y + s, x:x + s], images[k][pick][:, pick])
                boxes.append((x, y, s, s, int(labels[k])))
                break
    return canvas, boxes


def scenes(split, count, seed):
    """`count` scenes of the split's items, from a numpy Generator seeded with `seed`."""
    images, labels = items(split)
    rng = np.random.default_rng(seed)
    return [scene(rng, images, labels) for _ in range(count)]
