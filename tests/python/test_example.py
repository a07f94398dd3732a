"""examples/python/kneron_flow.py (issue 26's acceptance: the Kneron guide's flow with npuc.inference in place of
kneron_inference): the three digits pasted on the picture are found where they were put, with their classes, and
the C pre-processing (ctypes) gives the numpy pre-processing's arrays (the example asserts it)."""
import os
import sys

import numpy as np

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "examples", "python"))

import kneron_flow  # noqa: E402


def test_the_kneron_style_flow_finds_the_digits(tmp_path):
    boxes, truth = kneron_flow.run(str(tmp_path))
    assert sorted((x, y, c) for x, y, w, h, s, c in boxes) == sorted(truth)
    assert all(w == 8 and h == 8 and s >= 0.9 for x, y, w, h, s, c in boxes)
    from PIL import Image
    drawn = np.asarray(Image.open(tmp_path / "boxes.png"))
    assert drawn.shape == (24 * 8, 40 * 8, 3)
    x, y, _ = truth[0]
    assert tuple(drawn[y * 8, x * 8 + 4]) == (255, 0, 0)  # the box's top edge


def test_the_kneron_yolo_example_detects_with_the_float_models_accuracy(tmp_path):
    """examples/python/kneron_yolo.py (the Kneron guide's "this YOLO example"): the project-trained YOLO-style detector
    on a Kneron-style int8 package finds Fashion-MNIST items on 100 test scenes with the float model's precision and
    recall to within 0.05 (measured: package 0.850 / 0.617, float 0.849 / 0.642; torch's own on 500 scenes in
    models/fashion_yolo/reference.json), and the boxes are drawn."""
    import kneron_yolo
    boxes, truth, (p, r), (fp, fr) = kneron_yolo.run(str(tmp_path), 100)
    assert p >= 0.8 and r >= 0.55, (p, r)
    assert abs(p - fp) <= 0.05 and abs(r - fr) <= 0.05, ((p, r), (fp, fr))
    assert boxes and all(len(b) == 6 for b in boxes)
    from PIL import Image
    drawn = np.asarray(Image.open(tmp_path / "boxes.png"))
    assert drawn.shape == (96 * 4, 96 * 4, 3)
