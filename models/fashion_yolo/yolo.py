"""The post-processing of fashion_yolo.onnx (numpy only), as a YOLO release ships its own: the head [1, 5 + 10, 12, 12]
decoded into boxes, non-maximum suppression, and the matching used to score detections against a scene's truth.

Head channels per grid cell (gx, gy) of the 8-pixel grid: 0 objectness logit, 1-2 the centre's offsets in the cell
(sigmoid), 3-4 log of the width / height over the anchor, 5-14 the class logits. A cell's score is
sigmoid(objectness) x softmax(classes)[best]."""
import numpy as np

STRIDE = 8
ANCHOR = 22.0
GRID = 12


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def decode(head, threshold=0.5):
    """Boxes (x, y, w, h, score, class) with a score of at least `threshold`, best first (before NMS)."""
    h = np.asarray(head, np.float64).reshape(-1, GRID, GRID)
    obj = sigmoid(h[0])
    cls = np.exp(h[5:] - h[5:].max(axis=0))
    cls /= cls.sum(axis=0)
    best = cls.argmax(axis=0)
    score = obj * cls.max(axis=0)
    out = []
    for gy, gx in zip(*np.nonzero(score >= threshold)):
        cx = (gx + sigmoid(h[1, gy, gx])) * STRIDE
        cy = (gy + sigmoid(h[2, gy, gx])) * STRIDE
        w = ANCHOR * np.exp(np.clip(h[3, gy, gx], -4, 4))
        hh = ANCHOR * np.exp(np.clip(h[4, gy, gx], -4, 4))
        out.append((cx - w / 2, cy - hh / 2, w, hh, float(score[gy, gx]), int(best[gy, gx])))
    out.sort(key=lambda b: -b[4])
    return out


def iou(a, b):
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def nms(boxes, threshold=0.45):
    """Greedy non-maximum suppression over boxes sorted best first (any class)."""
    kept = []
    for b in boxes:
        if all(iou(a, b) <= threshold for a in kept):
            kept.append(b)
    return kept


def detect(head, threshold=0.5):
    return nms(decode(head, threshold))


def match(found, truth, min_iou=0.5):
    """(true positives, false positives, missed): a detection is right when it overlaps an unmatched truth box of its
    class by at least min_iou."""
    used = [False] * len(truth)
    tp = 0
    for b in found:
        for k, t in enumerate(truth):
            if not used[k] and t[4] == b[5] and iou(b, t) >= min_iou:
                used[k] = True
                tp += 1
                break
    return tp, len(found) - tp, len(truth) - tp


def detect_all(head):
    """Every box scoring 0.05 or more, after NMS: what mean average precision ranks (npuc tune --metric map --decoder
    models/fashion_yolo/yolo.py:detect_all), where detect's 0.5 would cut the precision / recall curve short."""
    return detect(head, 0.05)
