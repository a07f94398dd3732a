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
