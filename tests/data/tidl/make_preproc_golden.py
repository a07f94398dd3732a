#!/usr/bin/python3
"""Golden data for TIDL's pre-processing of encoded calibration pictures (npuc::tidlPreprocessPicture, tidl-import with
rawSampleInData = 0; tests/driver/tidl_preproc_test.cpp).

A development-time oracle (python3-opencv and numpy; the build and `make test` do not need them): the TIDL user
guide's preProcType table (shared/seeds/001_*, §3.15.1.4.7) written with OpenCV as the guide names it — cv2.imread
(B, G, R), cv2.resize with INTER_AREA, crops as cv::Rect, where the table is terse as TI's import tool reads it
(centred crops, the mean subtracted and clamped to [-128, 127], a 1-channel input's first plane) — for a 3-channel
24x24 input. The pictures are PNG
(lossless: every decoder gives the same pixels). Writes preproc_<type>.npy ([1, 3, 24, 24] float32) and
picture_24x24.png next to itself:

    /usr/bin/python3 tests/data/tidl/make_preproc_golden.py
"""
import os

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
H = W = 24
IN_MEAN = (10.0, 20.0, 30.0)
IN_SCALE = (0.5, 0.25, 0.125)


def area(img, h, w):
    return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)


def rect(img, x, y, w, h):
    return img[y:y + h, x:x + w]


def planes(img, sub=(0, 0, 0), mul=(1, 1, 1), div=(1, 1, 1), clamp=False):
    x = img.astype(np.float64) - np.array(sub)
    if clamp:  # TIDL's reader stores the difference in its signed 8-bit input
        x = np.clip(x, -128, 127)
    x = x * np.array(mul) / np.array(div)
    return np.ascontiguousarray(np.transpose(x, (2, 0, 1))[None].astype(np.float32))


def preprocess(path, t):
    bgr = cv2.imread(path, cv2.IMREAD_COLOR)
    ph, pw = bgr.shape[:2]
    if t in (0, 1):
        out = rect(area(bgr, 256, 256), 128 - W // 2, 128 - H // 2, W, H)
        return planes(out, (104, 117, 123) if t == 1 else (0, 0, 0), clamp=t == 1)
    if t == 2:  # the centred 7/8 as TI's import tool crops it
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        cw, ch = int(pw * np.float32(0.875)), int(ph * np.float32(0.875))
        return planes(area(rect(rgb, pw // 2 - cw // 2, ph // 2 - ch // 2, cw, ch), H, W), (128, 128, 128), clamp=True)
    if t == 3:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        return planes(rect(area(rgb, 32, 32), 16 - W // 2, 16 - H // 2, W, H))
    if t == 4:
        return planes(area(bgr, H, W))
    if t == 5:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        return planes(area(rgb, H, W), (128, 128, 128), clamp=True)
    if t == 6:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        return planes(area(rgb, H, W), (123.68, 116.28, 103.53), div=(58.395, 57.12, 57.375))
    if t == 256:
        return planes(area(bgr, H, W), IN_MEAN, IN_SCALE)
    raise ValueError(t)


def main():
    rng = np.random.default_rng(27)
    small = os.path.join(HERE, "picture_24x24.png")
    cv2.imwrite(small, rng.integers(0, 256, (H, W, 3), dtype=np.uint8))
    gradient = os.path.join(ROOT, "tests", "data", "images", "gradient_64x48.png")
    for t in (0, 1, 2, 3, 4, 5, 6, 256):
        np.save(os.path.join(HERE, "preproc_%d.npy" % t), preprocess(gradient, t))
    # preProcType 4 on a picture of the input's size (nothing to resize); a 1-channel input: the first plane.
    np.save(os.path.join(HERE, "preproc_4_same.npy"), preprocess(small, 4))
    np.save(os.path.join(HERE, "preproc_2_grey.npy"), preprocess(gradient, 2)[:, :1])
    # A noisy 50x37 picture: 7/8 of 50 and 37 centred (offsets 3 and 3, not 50/16 and 37/16), means clamped.
    odd = os.path.join(HERE, "picture_50x37.png")
    cv2.imwrite(odd, rng.integers(0, 256, (37, 50, 3), dtype=np.uint8))
    for t in (1, 2, 5):
        np.save(os.path.join(HERE, "preproc_%d_odd.npy" % t), preprocess(odd, t))


if __name__ == "__main__":
    main()
