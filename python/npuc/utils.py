"""The Kneron guide's conversion and display helpers (python_flow/utils/utils.py there), for npuc:

    convert_binary_to_numpy(path, height, width, fmt="RGBA8888")  -> uint8 array [H, W, C]
    convert_pre_numpy_to_rgba(array, path, radix=None, package=None)  -> writes RGBA8888 bytes (CSIM's input dump;
                                                                       `npuc simulate --input NAME=FILE.rgba` reads it)
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


def _input_quantization(package, input_name):
    """(scale, zero_point) of the int8 codes a package makes of its input `input_name` (the quantize layer whose codes
    stand for it), or None when the package takes that input as it is."""
    from . import _error, _runtime
    rt = _runtime(package)  # (the thread's cached runtime of npuc.inference, reloaded when the package changed)
    names = [i["name"] for i in rt.inputs]
    if input_name is None:
        if len(names) != 1:
            raise _error("convert_pre_numpy_to_rgba: the package has %d inputs (%s): name one with input_name="
                         % (len(names), ", ".join(names)))
        input_name = names[0]
    elif input_name not in names:
        raise _error("convert_pre_numpy_to_rgba: the package has no input '%s' (inputs: %s)" % (input_name, ", ".join(names)))
    for layer in rt.layers:
        if layer.get("float_value") == input_name and layer.get("scale", 0) > 0:
            return float(layer["scale"]), int(layer["zero_point"])
    return None


def convert_pre_numpy_to_rgba(array, path, radix=None, package=None, input_name=None):
    """Writes a pre-processed input as RGBA8888 bytes (CSIM's input dump; `npuc simulate --input NAME=FILE.rgba` reads
    it back): pixel by pixel, its channels then zeros up to 4 (C = 1 to 4). The array is the input as the model holds
    it, [1, C, H, W] (ONNX shape; any rank-4 array is read so), or an image [H, W, C].

    The bytes are the values as the device takes them: with `radix` (Kneron's input radix), int8 codes
    round(x * 2^radix); with `package` (an npuc package folder; `input_name` when it has several inputs), the int8
    codes its quantize layer makes of that input (x / scale + zero point, rounded half to even), or — a package that
    takes the input as it is — the values themselves, which must then be whole numbers in [0, 255] (uint8 pixels).
    Without either, the values must be such pixels too: normalised values (fractions, negatives) need the
    quantization, and are refused rather than rounded to 0 and 1. Codes beyond [-128, 127] are clipped, as the
    package's own quantize layer clips them. Returns the array written ([H, W, 4], int8 codes or uint8 pixels)."""
    from . import _error
    if radix is not None and package is not None:
        raise _error("convert_pre_numpy_to_rgba: give radix= or package=, not both")
    a = np.asarray(array)
    if a.ndim == 4:
        if a.shape[0] != 1:
            raise _error("convert_pre_numpy_to_rgba: a batch of %d images; pass one" % a.shape[0])
        a = np.transpose(a[0], (1, 2, 0))  # [1, C, H, W] (ONNX shape) -> [H, W, C]
    elif a.ndim != 3:
        raise _error("convert_pre_numpy_to_rgba: expected [1, C, H, W] (ONNX shape) or an image [H, W, C], got shape %s"
                     % (a.shape,))
    if not 1 <= a.shape[-1] <= 4:
        raise _error("convert_pre_numpy_to_rgba: %d channels; RGBA8888 holds 1 to 4" % a.shape[-1])
    quant = None
    if radix is not None:
        if int(radix) != radix or not -32 <= radix <= 32:
            raise _error("convert_pre_numpy_to_rgba: radix must be a whole number in [-32, 32], got %r" % (radix,))
        quant = (2.0 ** -int(radix), 0)
    elif package is not None:
        quant = _input_quantization(package, input_name)
    x = a.astype(np.float64)
    if quant is None:
        if not np.all(np.isfinite(x)) or np.any(x != np.rint(x)) or x.min(initial=0) < 0 or x.max(initial=0) > 255:
            raise _error("convert_pre_numpy_to_rgba: the values (%.6g to %.6g) are not uint8 pixels: a normalised input needs "
                         "its quantization, radix= (Kneron's input radix) or package= (the npuc package it is for)"
                         % (np.nanmin(x), np.nanmax(x)), code="invalid input")
        data = x.astype(np.uint8)
        rgba = np.zeros(a.shape[:2] + (4,), np.uint8)
    else:
        scale, zero_point = quant
        if not np.all(np.isfinite(x)):
            raise _error("convert_pre_numpy_to_rgba: the input holds NaN or infinity", code="invalid input")
        data = np.clip(np.rint(x / scale) + zero_point, -128, 127).astype(np.int8)
        rgba = np.zeros(a.shape[:2] + (4,), np.int8)
    rgba[..., :a.shape[-1]] = data
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
