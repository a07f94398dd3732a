#!/usr/bin/env python3
"""Makes the small pictures the image-input tests read (Runtime::imageInput, `npuc simulate --input x=photo.png`).

    cd tests/data/images && /usr/bin/python3 make_images.py   # needs python3-pil; deterministic

gradient_64x48.png: an RGB picture whose every pixel is known (R = 4x, G = 5y, B = 255 - 2x - 2y), so a test can
check the decoded values exactly; gradient_64x48.jpg: the same picture as JPEG (quality 95), for the decoder path.
"""
import numpy as np
from PIL import Image

W, H = 64, 48
y, x = np.mgrid[0:H, 0:W]
rgb = np.stack([4 * x, 5 * y, 255 - 2 * x - 2 * y], axis=-1).clip(0, 255).astype(np.uint8)
Image.fromarray(rgb, "RGB").save("gradient_64x48.png", optimize=False)
Image.fromarray(rgb, "RGB").save("gradient_64x48.jpg", quality=95)
