#!/usr/bin/env python3
"""Makes digit.png (and digit_label.txt, its label), the picture `make demo` feeds the camera pipeline (scripts/demo.sh).

    cd models/digits/demo && /usr/bin/python3 make_demo_picture.py   # needs python3-numpy, python3-pil; deterministic

The first sample of the held-out test split (../test_x.npy, label ../test_y.npy[0]), drawn as a 64x48 gray
picture: each of its 8x8 pixels becomes a 8x6 block, ink bright (gray = 255 * value). The demo's camera pipeline
(prepost_yuy2.yaml) turns the picture's YUY2 frame back into the 8x8 input the model was trained on.
"""
import numpy as np
from PIL import Image

x = np.load("../test_x.npy")[0, 0]  # [8, 8], 0..1
gray = np.round(255.0 * x).astype(np.uint8)
big = np.kron(gray, np.ones((6, 8), dtype=np.uint8))  # 48 x 64
Image.fromarray(np.stack([big] * 3, axis=-1), "RGB").save("digit.png", optimize=False)
label = int(np.load("../test_y.npy")[0])
with open("digit_label.txt", "w") as f:
    f.write(f"{label}\n")
print("digit.png: label", label)
