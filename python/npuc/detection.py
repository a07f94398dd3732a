"""Detection accuracy for npuc.evaluate / npuc.tune (metric "map"): the user's decoder turns one sample's outputs into
boxes, and the boxes of the whole set are scored against the ground truth as mean average precision at one IoU
threshold (PASCAL VOC's rule, docs/tune.md "Detection"), or as COCO's AP over ten thresholds (below).

Boxes are (x, y, w, h, score, class) from the decoder and (x, y, w, h, class) in the ground truth, in the same units
(pixels of the model's input, say). Per class: the detections of every sample, best score first (ties: the sample's
index, then the decoder's order), each matched to the ground-truth box of its sample and class it overlaps most; a
true positive when that overlap is at least the threshold (as COCO's tools count; VOC's devkit asks for more than it,
which differs only at exactly the threshold) and the box was not matched before, else a false positive (a duplicate
is one). AP is the area under the precision envelope over recall (every point: VOC 2010 onwards; iou_threshold "voc07":
VOC 2007's rule instead, the threshold 0.5 and AP the mean of the best precision at recall ≥ 0, 0.1, …, 1 — eleven
points, as the VOC 2007 devkit and py-faster-rcnn's voc_eval with use_07_metric compute it); mAP
the mean over the classes the ground truth holds (a class with boxes but no detection scores 0; detections of a class
the ground truth does not hold are not counted). A ground-truth box may carry VOC's "difficult" flag (a sixth value, 1):
it is not counted among the boxes to find, and a detection whose best-overlapped box it is (at the threshold) counts
neither as right nor as wrong, as VOC's devkit (a class of difficult boxes only is left out of the mean; no class
left: an error); COCO's AP
below ignores it as it ignores a box outside the area range.

With iou_threshold "coco", COCO's detection AP instead (pycocotools' COCOeval for boxes): the
mean over the IoU thresholds 0.50, 0.55, …, 0.95 of APs that each keep a sample's 100 best-scored detections of a class,
match each (best score first) to the ground-truth box of its sample and class, not matched before, that it overlaps
most at or above the threshold (so a detection may take a second-best box a better one already took), and take the
precision envelope at the 101 recall points 0, 0.01, …, 1. "coco-small", "coco-medium" and "coco-large" are COCO's AP
for objects of an area (w · h, in the boxes' units: pixels) of at most 32², from 32² to 96², and of at least 96²
(COCOeval's area ranges, both ends included): a ground-truth box outside the range is ignored — the boxes in range are
tried first, a detection takes an ignored box only when none in range reaches the threshold, and one matched to an
ignored box counts neither way —, an unmatched detection whose own area lies outside the range is not counted, and a
class with no box in the range is left out of the mean (none left: an error, not a score). A ground-truth row may carry
COCO's iscrowd flag as a seventh value (after the difficult flag): a crowd region is ignored as a box outside the
range, its overlap with a detection is the intersection over the detection's area, and it may take any number of
detections (COCOeval's rules); VOC's AP counts it as a difficult box. (COCO's own annotations give an object's area as its mask's:
on COCO data scored from boxes alone the sizes, hence AP_small / medium / large, can differ from pycocotools'.)
"""
import hashlib
import importlib
import importlib.util
import os
import sys

import numpy as np

_decoders = {}  # module (a file: with its modification time and size) and function -> callable, per process


def _error(message):
    from . import _error as e
    return e(message)


def load_decoder(spec):
    """A decoder from a callable (returned as it is) or a string "FILE.py:FUNCTION" / "package.module:FUNCTION"."""
    if callable(spec):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise _error("decoder %r: give a callable, or FILE.py:FUNCTION or MODULE:FUNCTION (the function that turns one "
                     "sample's outputs into boxes (x, y, w, h, score, class))" % (spec,))
    where, name = spec.rsplit(":", 1)
    state = where
    if where.endswith(".py"):  # (the file's state in the keys: a decoder edited since is loaded again, never a stale one)
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise _error("decoder %s: no file %s" % (spec, path))
        st = os.stat(path)
        state = "%s@%d:%d" % (path, st.st_mtime_ns, st.st_size)
    key = state + ":" + name
    if key in _decoders:
        return _decoders[key]
    try:
        if where.endswith(".py"):
            modname = "npuc_decoder_" + hashlib.sha1(state.encode()).hexdigest()[:16]
            mod = sys.modules.get(modname)
            if mod is None:
                loader = importlib.util.spec_from_file_location(modname, path)
                mod = importlib.util.module_from_spec(loader)
                sys.path.insert(0, os.path.dirname(path))  # (its own imports beside it)
                try:
                    loader.loader.exec_module(mod)
                finally:
                    sys.path.remove(os.path.dirname(path))
                sys.modules[modname] = mod
        else:
            mod = importlib.import_module(where)
    except ImportError as e:
        raise _error("decoder %s: cannot import %s: %s" % (spec, where, e))
    except Exception as e:  # (the user's module failed as it loaded: said with its name)
        from . import Error
        if isinstance(e, Error):
            raise
        raise _error("decoder %s: loading %s failed: %s: %s" % (spec, where, type(e).__name__, e))
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise _error("decoder %s: %s has no function %s" % (spec, where, name))
    _decoders[key] = fn
    return fn


def portable(spec):
    """The decoder as sent to workers: a "FILE.py:FUNCTION" with an absolute path (workers may run elsewhere)."""
    if isinstance(spec, str) and ":" in spec and spec.rsplit(":", 1)[0].endswith(".py"):
        where, name = spec.rsplit(":", 1)
        return os.path.abspath(where) + ":" + name
    return spec


def name_of(decoder):
    """How errors name a decoder."""
    return decoder if isinstance(decoder, str) else getattr(decoder, "__name__", repr(decoder))


def boxes_of(found, index, spec):
    """A decoder's answer for sample `index` as a float64 [k, 6] array (x, y, w, h, score, class), checked."""
    try:
        a = np.asarray(found if found is not None and len(found) else np.zeros((0, 6)), dtype=np.float64)
    except (TypeError, ValueError):
        raise _error("decoder %s, sample %d: its answer is not a list of boxes (x, y, w, h, score, class)" % (spec, index))
    if a.ndim != 2 or a.shape[1] != 6:
        raise _error("decoder %s, sample %d: boxes of %s values; each box is (x, y, w, h, score, class)"
                     % (spec, index, "x".join(map(str, a.shape[1:])) or "no"))
    if not np.all(np.isfinite(a)) or np.any(a[:, 5] < 0) or np.any(a[:, 5] != np.floor(a[:, 5])):
        raise _error("decoder %s, sample %d: a box with a value that is not finite, or a class that is not an index "
                     "(0, 1, …)" % (spec, index))
    return a


def truth_boxes(labels, n):
    """The ground truth for "map": one entry per sample, each a list of (x, y, w, h, class) rows (or an [m, 5] array),
    of (x, y, w, h, class, difficult) rows with PASCAL VOC's difficult flag (0 or 1), or of (x, y, w, h, class,
    difficult, crowd) rows with COCO's iscrowd flag too (0 or 1), checked; returned as float64 [m, 5], [m, 6] or [m, 7]
    arrays."""
    if isinstance(labels, np.ndarray) and labels.dtype != object and labels.ndim != 3:
        raise _error("metric map: labels are the ground-truth boxes per sample (a list of [x, y, w, h, class] rows for "
                     "each, e.g. a JSON file), not one class per sample")
    labels = list(labels)
    if len(labels) != n:
        raise _error("metric map: %d evaluation samples but ground truth for %d" % (n, len(labels)))
    out = []
    for i, t in enumerate(labels):
        try:
            a = np.asarray(t if len(t) else np.zeros((0, 5)), dtype=np.float64)
        except (TypeError, ValueError):
            raise _error("metric map: the ground truth of sample %d is not a list of [x, y, w, h, class] rows" % i)
        if a.ndim != 2 or a.shape[1] not in (5, 6, 7):
            raise _error("metric map: the ground truth of sample %d has rows of %s values; each is [x, y, w, h, class], "
                         "[x, y, w, h, class, difficult] or [x, y, w, h, class, difficult, crowd]"
                         % (i, "x".join(map(str, a.shape[1:])) or "no"))
        if not np.all(np.isfinite(a)) or np.any(a[:, 2:4] <= 0) or np.any(a[:, 4] < 0) or np.any(a[:, 4] != np.floor(a[:, 4])):
            raise _error("metric map: the ground truth of sample %d has a box without a positive width and height, or a "
                         "class that is not an index (0, 1, …)" % i)
        if a.shape[1] >= 6 and not np.all((a[:, 5] == 0) | (a[:, 5] == 1)):
            raise _error("metric map: the ground truth of sample %d has a difficult flag (the sixth value) that is not 0 "
                         "or 1" % i)
        if a.shape[1] == 7 and not np.all((a[:, 6] == 0) | (a[:, 6] == 1)):
            raise _error("metric map: the ground truth of sample %d has a crowd flag (the seventh value) that is not 0 "
                         "or 1" % i)
        out.append(a)
    return out


def _iou(box, boxes, crowd=None):
    """IoU of one (x, y, w, h) box with each row of boxes [m, >= 4]; with crowd (a flag per row), a crowd region's
    overlap is the intersection over the box's own area instead (COCOeval's)."""
    ix = np.maximum(0.0, np.minimum(box[0] + box[2], boxes[:, 0] + boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]))
    iy = np.maximum(0.0, np.minimum(box[1] + box[3], boxes[:, 1] + boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]))
    inter = ix * iy
    union = box[2] * box[3] + boxes[:, 2] * boxes[:, 3] - inter
    if crowd is not None:
        union = np.where(crowd, box[2] * box[3], union)
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _difficult(boxes):
    """The difficult flags of ground-truth rows [m, 5] (none), [m, 6] or [m, 7]."""
    return boxes[:, 5] != 0 if boxes.shape[1] > 5 else np.zeros(len(boxes), bool)


def _crowd(boxes):
    """The crowd flags of ground-truth rows [m, 7] (the seventh value; none for fewer)."""
    return boxes[:, 6] != 0 if boxes.shape[1] > 6 else np.zeros(len(boxes), bool)


def _envelope(precision):
    """The precision envelope: at each point the best precision there or at any later (higher) recall."""
    return np.maximum.accumulate(precision[::-1])[::-1]


def average_precisions(detections, truths, iou_threshold=0.5, eleven_points=False):
    """Per class of the ground truth: its AP (module docstring). detections / truths: per sample, [k, 6] / [m, 5],
    [m, 6] (the sixth: VOC's difficult flag) or [m, 7] (the seventh: COCO's crowd flag, counted as difficult here).
    eleven_points: VOC 2007's AP (the mean over recall ≥ 0, 0.1, …, 1 of the best precision there) instead of the area
    under the envelope."""
    classes = sorted({int(c) for t in truths for c in t[:, 4]})
    aps = {}
    for c in classes:
        gts = [t[t[:, 4] == c] for t in truths]
        difficult = [_difficult(g) | _crowd(g) for g in gts]  # (VOC has no crowds: a crowd region counts as difficult)
        positives = sum(int(np.sum(~d)) for d in difficult)
        if positives == 0:
            continue  # (difficult boxes only: the class is left out)
        dets = [(-d[j, 4], i, j) for i, d in enumerate(detections) for j in range(len(d)) if int(d[j, 5]) == c]
        dets.sort()
        used = [np.zeros(len(g), bool) for g in gts]
        tp, counted = np.zeros(len(dets)), np.ones(len(dets), bool)
        for k, (_, i, j) in enumerate(dets):
            g = gts[i]
            if len(g) == 0:
                continue
            overlaps = _iou(detections[i][j], g)
            best = int(np.argmax(overlaps))  # (the first of equal overlaps)
            if overlaps[best] >= iou_threshold and difficult[i][best]:
                counted[k] = False  # (on a difficult box: neither right nor wrong, as VOC's devkit)
            elif overlaps[best] >= iou_threshold and not used[i][best]:
                used[i][best] = True
                tp[k] = 1
        tp = tp[counted]
        if len(tp) == 0:
            aps[c] = 0.0
            continue
        ctp = np.cumsum(tp)
        recall = ctp / positives
        precision = ctp / np.arange(1, len(tp) + 1)
        if eleven_points:
            # (the recall points and the sum in the devkit's order: np.arange's 0.30000000000000004 included)
            ap = 0.0
            for t in np.arange(0.0, 1.1, 0.1):
                reached = recall >= t
                ap += (float(np.max(precision[reached])) if np.any(reached) else 0.0) / 11.0
            aps[c] = ap
            continue
        # The envelope: the best precision at this recall or beyond; the area over the recall steps.
        mrec = np.concatenate([[0.0], recall, [1.0]])
        mpre = _envelope(np.concatenate([[0.0], precision, [0.0]]))
        steps = np.nonzero(mrec[1:] != mrec[:-1])[0]
        aps[c] = float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))
    return aps


COCO_THRESHOLDS = tuple(np.linspace(0.5, 0.95, 10))  # (as COCOeval makes them: 0.5 + 0.05 * 7 would be 0.8500000000000001)
COCO_MAX_DETECTIONS = 100
_COCO_RECALLS = np.linspace(0.0, 1.0, 101)


# COCOeval's object sizes: the area range (both ends included) of each "coco-SIZE" metric.
COCO_AREAS = {"coco": (0.0, 1e10), "coco-small": (0.0, 32.0 ** 2), "coco-medium": (32.0 ** 2, 96.0 ** 2),
              "coco-large": (96.0 ** 2, 1e10)}


# The named protocols iou_threshold takes besides a number: COCO's, and VOC 2007's eleven-point AP at 0.5.
NAMED_THRESHOLDS = tuple(COCO_AREAS) + ("voc07",)

# What valid_iou_threshold takes, as the errors say it.
IOU_THRESHOLDS_SAID = ('a number in (0, 1], "coco" ("coco-small", "coco-medium", "coco-large": by object size), or '
                       '"voc07" (VOC 2007\'s eleven-point AP at 0.5)')


def valid_iou_threshold(t):
    """Whether t is an IoU threshold metric map takes: a number in (0, 1], "coco", "coco-small" / "-medium" /
    "-large", or "voc07"."""
    if isinstance(t, str):
        return t in NAMED_THRESHOLDS
    return isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t <= 1


def coco_average_precisions(detections, truths, area=COCO_AREAS["coco"]):
    """Per class of the ground truth: COCO's AP, the mean over COCO_THRESHOLDS (module docstring); area: (lo, hi), the
    objects' area range (COCO_AREAS)."""
    classes = sorted({int(c) for t in truths for c in t[:, 4]})

    def outside(b):
        return (b[:, 2] * b[:, 3] < area[0]) | (b[:, 2] * b[:, 3] > area[1])

    aps = {}
    for c in classes:
        # Each sample's boxes of the class, those inside the area range first (in order), then the ignored ones.
        gts, ignored, crowds = [], [], []
        for t in truths:
            g = t[t[:, 4] == c]
            ig = outside(g) | _difficult(g) | _crowd(g)
            order = np.argsort(ig, kind="mergesort")
            gts.append(g[order])
            ignored.append(ig[order])
            crowds.append(_crowd(g)[order])
        positives = sum(int(np.sum(~ig)) for ig in ignored)
        if positives == 0:
            continue  # (no object of the class in the range: COCOeval leaves the class out)
        # Each sample's detections of the class, best score first (ties: the decoder's order), the first 100.
        kept = []
        for d in detections:
            idx = [j for j in range(len(d)) if int(d[j, 5]) == c]
            idx.sort(key=lambda j: -d[j, 4])
            kept.append(idx[:COCO_MAX_DETECTIONS])
        overlaps = [[_iou(detections[i][j], gts[i], crowds[i]) if len(gts[i]) else np.zeros(0) for j in idx]
                    for i, idx in enumerate(kept)]
        det_outside = np.concatenate([outside(detections[i][idx]) if idx else np.zeros(0, bool) for i, idx in enumerate(kept)])
        scores = np.array([detections[i][j, 4] for i, idx in enumerate(kept) for j in idx], dtype=np.float64)
        order = np.argsort(-scores, kind="mergesort")  # (ties: the sample's order, then the one above)
        per_threshold = []
        for t in COCO_THRESHOLDS:
            hits, skip = [], []
            for i, idx in enumerate(kept):
                used = np.zeros(len(gts[i]), bool)
                for ov in overlaps[i]:
                    best, at_least = -1, min(t, 1 - 1e-10)
                    for k in range(len(ov)):  # the most overlapped box not used (ties: the later one, as COCOeval)
                        if used[k] and not crowds[i][k]:  # (a crowd region takes any number of detections)
                            continue
                        if best >= 0 and not ignored[i][best] and ignored[i][k]:
                            break  # (matched inside the range: the ignored boxes after it are not taken)
                        if ov[k] >= at_least:
                            best, at_least = k, ov[k]
                    if best >= 0:
                        used[best] = True
                    hits.append(best >= 0 and not ignored[i][best])
                    skip.append(best >= 0 and bool(ignored[i][best]))
            skip = np.asarray(skip, bool) | ((~np.asarray(hits, bool)) & det_outside)
            counted = order[~skip[order]]  # the detections that count, best score first
            tp = np.cumsum(np.asarray(hits, dtype=np.float64)[counted])
            recall = tp / positives
            precision = _envelope(tp / np.arange(1, len(tp) + 1))
            at = np.searchsorted(recall, _COCO_RECALLS, side="left")
            q = np.zeros(len(_COCO_RECALLS))  # (a recall never reached: precision 0)
            inside = at < len(precision)
            q[inside] = precision[at[inside]]
            per_threshold.append(float(np.mean(q)))
        aps[c] = float(np.mean(per_threshold))
    return aps


def mean_average_precision(detections, truths, iou_threshold=0.5):
    """mAP over the ground truth's classes (0 when it holds no box); iou_threshold "coco" (or "coco-small", …): COCO's
    AP; "voc07": VOC 2007's eleven-point AP at 0.5."""
    if iou_threshold == "voc07":
        aps = average_precisions(detections, truths, 0.5, eleven_points=True)
    elif isinstance(iou_threshold, str):
        aps = coco_average_precisions(detections, truths, COCO_AREAS[iou_threshold])
    else:
        aps = average_precisions(detections, truths, iou_threshold)
    if not aps and any(len(t) for t in truths):
        # (a mean over nothing is no score: 0 would let every package "meet" a budget)
        raise _error("metric map: no ground-truth box counts for iou_threshold %r — every box is difficult or a crowd%s"
                     % (iou_threshold, " or outside its area range" if iou_threshold in COCO_AREAS else ""))
    return float(np.mean(list(aps.values()))) if aps else 0.0


def run_shard_boxes(package, shard, decoder, start, threads=1):
    """Runs `shard` through the package and decodes each sample's outputs (in the package's order: with a batch of 1
    the outputs as they are, else each one's part of the batch) with `decoder`: a list of [k, 6] arrays, one per
    sample; `start` numbers the samples in errors."""
    from .evaluate import _worker_runtime, run_batches
    rt = _worker_runtime(package, threads)
    fn = load_decoder(decoder)
    order = [o["name"] for o in rt.outputs]
    shapes = {o["name"]: list(o["shape"]) for o in rt.outputs}
    out = []
    for first, stop, batch, y in run_batches(rt, shard):
        if batch > 1:  # each sample's part of every output: its first axis must be the batch
            for name in order:
                if not shapes[name] or shapes[name][0] != batch:
                    raise _error("metric map: the package runs %d samples at once, but its output '%s' (%s) has no batch axis "
                                 "to split them by: translate it with a batch of 1" % (batch, name, "x".join(map(str, shapes[name])) or "a scalar"))
        for i in range(stop - first):
            # (a batch of 1: every output is the sample's, whatever its shape — e.g. [detections, 6] after an NMS)
            outs = [np.asarray(y[name]) if batch == 1 else np.asarray(y[name])[i:i + 1] for name in order]
            try:
                found = fn(*outs)
            except Exception as e:  # the user's code: said with the sample it failed on
                raise _error("decoder %s, sample %d: %s: %s" % (name_of(decoder), start + first + i, type(e).__name__, e))
            out.append(boxes_of(found, start + first + i, name_of(decoder)))
    return out
