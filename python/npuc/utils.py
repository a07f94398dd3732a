"""The Kneron guide's conversion and display helpers (python_flow/utils/utils.py there), for npuc:

    convert_binary_to_numpy(path, height, width, fmt="RGBA8888")  -> uint8 array [H, W, C]
    convert_pre_numpy_to_rgba(array, path)                          -> writes RGBA8888 bytes (CSIM's input dump)
    draw_boxes(image, boxes, path, labels=None)                     -> the picture with (x, y, w, h, score, class) boxes

Pictures are saved with Pillow (Debian's python3-pil), imported only by draw_boxes.
"""
import os

import numpy as np

_CHANNELS = {"RGBA8888": 4, "RGB888": 3, "BGR888": 3, "GRAY8": 1, "RAW8": 1}


def convert_binary_to_numpy(path, height, width, fmt="RGBA8888"):
    """A raw image file (row-major pixels, channels interleaved) as a uint8 array [height, width, channels]. fmt:
    RGBA8888 (4 bytes a pixel), RGB888 / BGR888 (3), GRAY8 / RAW8 (1). The file must hold exactly that many bytes."""
    from . import _error
    if fmt not in _CHANNELS:
        raise _error("convert_binary_to_numpy: unknown format %r (%s)" % (fmt, ", ".join(_CHANNELS)))
    c = _CHANNELS[fmt]
    if height < 1 or width < 1:
        raise _error("convert_binary_to_numpy: height and width must be positive, got %d x %d" % (height, width))
    data = np.fromfile(os.fspath(path), dtype=np.uint8)
    if data.size != height * width * c:
        raise _error("convert_binary_to_numpy: %s holds %d bytes, a %dx%d %s image is %d" % (
            path, data.size, height, width, fmt, height * width * c), code="invalid input")
    return data.reshape(height, width, c)


def convert_pre_numpy_to_rgba(array, path):
    """Writes an image ([H, W, C] HWC, or [1, C, H, W] / [C, H, W] CHW as a model input holds it; C = 1, 3 or 4) as
    RGBA8888 bytes: values clipped to [0, 255] and rounded, gray repeated into R, G and B, alpha 255 unless given.
    Returns the array written ([H, W, 4] uint8)."""
    from . import _error
    a = np.asarray(array)
    if a.ndim == 4:
        if a.shape[0] != 1:
            raise _error("convert_pre_numpy_to_rgba: a batch of %d images; pass one" % a.shape[0])
        a = a[0]
    if a.ndim != 3:
        raise _error("convert_pre_numpy_to_rgba: expected an image of rank 3 (or 4 with batch 1), got shape %s" % (a.shape,))
    if a.shape[-1] not in (1, 3, 4) and a.shape[0] in (1, 3, 4):
        a = np.transpose(a, (1, 2, 0))  # CHW -> HWC
    if a.shape[-1] not in (1, 3, 4):
        raise _error("convert_pre_numpy_to_rgba: %d channels; expected 1, 3 or 4" % a.shape[-1])
    a = np.clip(np.rint(a.astype(np.float64)), 0, 255).astype(np.uint8)
    h, w, c = a.shape
    rgba = np.full((h, w, 4), 255, dtype=np.uint8)
    if c == 1:
        rgba[..., :3] = a
    else:
        rgba[..., :c] = a
    rgba.tofile(os.fspath(path))
    return rgba


def draw_boxes(image, boxes, path, labels=None, color=(255, 0, 0), width=2):
    """Draws boxes on a picture and saves it (PNG or JPEG by the file name). image: a file Pillow reads, or a
    uint8 array [H, W, 3] / [H, W]. boxes: (x, y, w, h, score, class) each, in pixels (the Kneron guide's format);
    labels: class index -> name for the captions. Returns the saved picture as a uint8 array [H, W, 3]."""
    from PIL import Image, ImageDraw
    from . import _error
    if isinstance(image, (str, os.PathLike)):
        img = Image.open(image).convert("RGB")
    else:
        arr = np.asarray(image)
        if arr.dtype != np.uint8 or arr.ndim not in (2, 3):
            raise _error("draw_boxes: the image must be a uint8 array [H, W] or [H, W, 3], got %s %s" % (arr.dtype, arr.shape))
        img = Image.fromarray(arr).convert("RGB")
    draw = ImageDraw.Draw(img)
    for i, b in enumerate(boxes):
        if len(b) != 6:
            raise _error("draw_boxes: box %d has %d values; expected (x, y, w, h, score, class)" % (i, len(b)))
        x, y, w, h, score, cls = b
        draw.rectangle([x, y, x + w, y + h], outline=tuple(color), width=width)
        name = labels[int(cls)] if labels is not None else str(int(cls))
        draw.text((x + 2, y + 2), "%s %.2f" % (name, score), fill=tuple(color))
    img.save(os.fspath(path))
    return np.asarray(img)
