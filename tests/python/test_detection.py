"""Detection accuracy (npuc.detection; evaluate / tune with metric "map", docs/tune.md "Detection"): the average
precision of hand-worked cases, the project-trained YOLO-style detector (models/fashion_yolo) scored on its test
scenes through a package the same for 1 and 2 workers and as the model on the reference engine, npuc tune meeting a
mAP budget from the command line, and the bad inputs it refuses."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import npuc
from npuc import detection

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
YOLO_DIR = os.path.join(SRC, "models", "fashion_yolo")
MODEL = os.path.join(YOLO_DIR, "fashion_yolo.onnx")
DECODER = os.path.join(YOLO_DIR, "yolo.py") + ":detect_all"  # (every box of score 0.05 or more)
CLI = os.environ.get("NPUC_CLI")
sys.path.insert(0, YOLO_DIR)


def boxes(*rows):
    return np.array(rows, dtype=np.float64).reshape(-1, 6)


def truth(*rows):
    return np.array(rows, dtype=np.float64).reshape(-1, 5)


def test_average_precision_of_a_hand_worked_case():
    # Class 0: two boxes; detections best first: right (sample 0), wrong place (sample 1), right with IoU 0.82
    # (sample 1), a duplicate of the first (sample 0). Precision 1, 1/2, 2/3, 1/2 at recall 1/2, 1/2, 1, 1: the
    # envelope gives 1/2 x 1 + 1/2 x 2/3. Class 1: a box never detected (AP 0). Class 2: detections without truth
    # (not counted).
    dets = [boxes((0, 0, 10, 10, 0.9, 0), (0, 0, 10, 10, 0.6, 0), (5, 5, 4, 4, 0.99, 2)),
            boxes((50, 50, 10, 10, 0.8, 0), (1, 0, 10, 10, 0.7, 0))]
    gts = [truth((0, 0, 10, 10, 0)), truth((0, 0, 10, 10, 0), (30, 30, 5, 5, 1))]
    aps = detection.average_precisions(dets, gts)
    assert aps[0] == pytest.approx(0.5 + 0.5 * 2 / 3) and aps[1] == 0.0 and 2 not in aps
    assert detection.mean_average_precision(dets, gts) == pytest.approx((0.5 + 1 / 3) / 2)
    # At IoU 0.9 the shifted box (IoU 90/110) is wrong too: precision 1 at recall 1/2, nothing beyond.
    assert detection.average_precisions(dets, gts, 0.9)[0] == pytest.approx(0.5)
    # Every box found once, best first: AP 1.
    assert detection.mean_average_precision([boxes((0, 0, 10, 10, 0.5, 0))], [truth((0, 0, 10, 10, 0))]) == 1.0
    assert detection.mean_average_precision([boxes()], [truth()]) == 0.0
    # Equal scores rank by sample, then by the decoder's order. Sample 0's miss before its hit: precision 0, 1/2, 2/3
    # at recall 0, 1/2, 1 (envelope 2/3 all along); its hit first: 1, 1/2, 2/3 at recall 1/2, 1/2, 1.
    one_miss_first = [boxes((50, 50, 5, 5, 0.7, 0), (0, 0, 10, 10, 0.7, 0)), boxes((0, 0, 10, 10, 0.7, 0))]
    gts2 = [truth((0, 0, 10, 10, 0)), truth((0, 0, 10, 10, 0))]
    assert detection.average_precisions(one_miss_first, gts2)[0] == pytest.approx(0.5 * 2 / 3 + 0.5 * 2 / 3)
    hit_first = [boxes((0, 0, 10, 10, 0.7, 0), (50, 50, 5, 5, 0.7, 0)), boxes((0, 0, 10, 10, 0.7, 0))]
    assert detection.average_precisions(hit_first, gts2)[0] == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)


def test_voc07_eleven_point_average_precision():
    # The first case above by VOC 2007's rule: precision 1, 1/2, 2/3, 1/2 at recall 1/2, 1/2, 1, 1; the best precision
    # at recall >= 0, 0.1, ..., 0.5 is 1 (six points), at 0.6 ... 1 it is 2/3 (five points): (6 + 5 * 2/3) / 11. Class
    # 1 (never detected) 0. (Equal to py-faster-rcnn's voc_eval with use_07_metric on 800 random cases, docs/tune.md.)
    dets = [boxes((0, 0, 10, 10, 0.9, 0), (0, 0, 10, 10, 0.6, 0), (5, 5, 4, 4, 0.99, 2)),
            boxes((50, 50, 10, 10, 0.8, 0), (1, 0, 10, 10, 0.7, 0))]
    gts = [truth((0, 0, 10, 10, 0)), truth((0, 0, 10, 10, 0), (30, 30, 5, 5, 1))]
    aps = detection.average_precisions(dets, gts, 0.5, eleven_points=True)
    assert aps[0] == pytest.approx((6 + 5 * 2 / 3) / 11) and aps[1] == 0.0 and 2 not in aps
    assert detection.mean_average_precision(dets, gts, "voc07") == pytest.approx((6 + 5 * 2 / 3) / 11 / 2)
    # "voc07" is IoU 0.5: the shifted box (IoU 90/110) is right there; every point-area AP differs from it.
    assert detection.mean_average_precision(dets, gts, "voc07") != detection.mean_average_precision(dets, gts, 0.5)
    # Recall 0.3 reached at exactly 3 of 10 boxes: the point 0.30000000000000004 (np.arange's, the devkit's) is not
    # reached by recall 0.3, so it takes the precision beyond (here 0: nothing beyond).
    gts10 = [truth(*[(20 * k, 0, 10, 10, 0) for k in range(10)])]
    three = [boxes(*[(20 * k, 0, 10, 10, 0.9 - 0.1 * k, 0) for k in range(3)])]
    assert detection.average_precisions(three, gts10, 0.5, eleven_points=True)[0] == pytest.approx(3 / 11)
    # Difficult boxes as in the every-point AP: a detection on one counts neither way, the box is not to be found.
    assert detection.mean_average_precision([boxes((0, 0, 10, 10, 0.9, 0), (30, 0, 10, 10, 0.8, 0))],
                                            [np.array([[0, 0, 10, 10, 0, 1], [30, 0, 10, 10, 0, 0]], float)],
                                            "voc07") == pytest.approx(1.0)  # (eleven 1/11 summed: 1 + 2e-16)
    assert detection.valid_iou_threshold("voc07") and not detection.valid_iou_threshold("voc")
    from npuc import tuning
    assert tuning._iou_threshold_arg("voc07") == "voc07"  # (npuc tune --iou-threshold voc07)


def test_coco_average_precision_of_hand_worked_cases():
    # The first case above at the ten thresholds 0.50-0.95, 101 recall points: up to 0.80 the shifted box (IoU 90/110
    # = 0.818) is right, the envelope 1 up to recall 1/2 (51 points) and 2/3 beyond (50 points); from 0.85 it is
    # wrong, precision 1 up to recall 1/2 and nothing beyond.
    dets = [boxes((0, 0, 10, 10, 0.9, 0), (0, 0, 10, 10, 0.6, 0), (5, 5, 4, 4, 0.99, 2)),
            boxes((50, 50, 10, 10, 0.8, 0), (1, 0, 10, 10, 0.7, 0))]
    gts = [truth((0, 0, 10, 10, 0)), truth((0, 0, 10, 10, 0), (30, 30, 5, 5, 1))]
    ap0 = (7 * (51 + 50 * 2 / 3) / 101 + 3 * 51 / 101) / 10
    aps = detection.coco_average_precisions(dets, gts)
    assert aps[0] == pytest.approx(ap0) and aps[1] == 0.0 and 2 not in aps
    assert detection.mean_average_precision(dets, gts, "coco") == pytest.approx(ap0 / 2)
    # A detection overlapping two boxes alike (IoU 0.818 each) after the first took one: VOC's rule matches it to the
    # box it overlaps most, taken, so a false positive (AP 1/2); COCO's to the best box not taken, right up to 0.80.
    two = [truth((0, 0, 10, 10, 0), (2, 0, 10, 10, 0))]
    d2 = [boxes((0, 0, 10, 10, 0.9, 0), (1, 0, 10, 10, 0.8, 0))]
    assert detection.mean_average_precision(d2, two) == pytest.approx(0.5)
    assert detection.mean_average_precision(d2, two, "coco") == pytest.approx((7 * 1 + 3 * 51 / 101) / 10)
    # A sample's 100 best detections of a class count, no more: the right box scored 101st is dropped (VOC counts it,
    # at precision 1/101).
    many = [boxes(*([(50, 50, 5, 5, 0.9, 0)] * 100 + [(0, 0, 10, 10, 0.1, 0)]))]
    one = [truth((0, 0, 10, 10, 0))]
    assert detection.mean_average_precision(many, one, "coco") == 0.0
    assert detection.mean_average_precision(many, one) == pytest.approx(1 / 101)
    # An overlap exactly at a threshold counts (COCOeval's thresholds are numpy's linspace: 0.85 exactly): 17/20 = 0.85
    # is right at 0.50-0.85, 8 of 10.
    assert detection.mean_average_precision([boxes((0, 0, 17, 10, 0.5, 0))], [truth((0, 0, 20, 10, 0))], "coco") == \
        pytest.approx(0.8)
    # Equal overlaps go to the later box (as COCOeval's loop): detection 1 overlaps A and B alike (0.818) and takes B;
    # detection 2 overlaps A at 0.818 (B at 0.538) and takes it: AP 1 at 0.50-0.80, 0 above (both miss) — 0.7. Had the
    # tie gone to A, detection 2 would find B only at 0.50: (1 + 6 x 51/101) / 10 = 0.403.
    ab = [truth((0, 0, 10, 10, 0), (2, 0, 10, 10, 0))]
    d3 = [boxes((1, 0, 10, 10, 0.9, 0), (-1, 0, 10, 10, 0.8, 0))]
    assert detection.mean_average_precision(d3, ab, "coco") == pytest.approx(0.7)
    assert detection.mean_average_precision([boxes((0, 0, 10, 10, 0.5, 0))], one, "coco") == 1.0
    assert detection.mean_average_precision([boxes()], one, "coco") == 0.0
    assert all(detection.valid_iou_threshold(t) for t in (0.5, 1, "coco", "coco-small", "coco-medium", "coco-large"))
    assert not any(detection.valid_iou_threshold(t) for t in (0, 1.5, "voc", "coco-tiny", True, None))


def test_difficult_boxes_count_neither_way():
    # VOC's "difficult" flag (a sixth value): sample 0 holds an easy box E and a difficult one D. Detections, best first:
    # on D (0.9: neither right nor wrong), a miss (0.8: wrong), on E (0.7: right). D is not a box to find, so recall 1
    # comes at the second counted detection: precision 1/2, AP 0.5 (without the flag: on D right, the miss, on E right:
    # 1 at recall 1/2 and 2/3 at 1, 0.833).
    gts = [np.array([(0, 0, 10, 10, 0, 0), (50, 0, 10, 10, 0, 1)], dtype=np.float64)]
    dets = [boxes((50, 0, 10, 10, 0.9, 0), (100, 100, 10, 10, 0.8, 0), (0, 0, 10, 10, 0.7, 0))]
    assert detection.mean_average_precision(dets, gts) == pytest.approx(0.5)
    assert detection.mean_average_precision(dets, [gts[0][:, :5]]) == pytest.approx(0.5 + 0.5 * 2 / 3)
    # COCO's AP ignores it as a box outside the area range: the same 0.5 at every threshold.
    assert detection.mean_average_precision(dets, gts, "coco") == pytest.approx(0.5)
    # A class of difficult boxes only is left out of the mean; flags other than 0 / 1 are refused.
    only = [np.array([(0, 0, 10, 10, 0, 0), (50, 0, 10, 10, 1, 1)], dtype=np.float64)]
    assert detection.average_precisions([boxes((0, 0, 10, 10, 0.5, 0))], only) == {0: 1.0}
    with pytest.raises(npuc.Error, match="every box is difficult"):
        detection.mean_average_precision(dets, [gts[0][1:]])  # (the difficult box alone: nothing to find)
    assert detection.truth_boxes([[[0, 0, 10, 10, 0, 1]]], 1)[0].shape == (1, 6)
    with pytest.raises(npuc.Error, match="difficult flag"):
        detection.truth_boxes([[[0, 0, 10, 10, 0, 2]]], 1)
    with pytest.raises(npuc.Error, match=r"rows of 8 values; each is \[x, y, w, h, class\],"):
        detection.truth_boxes([[[0, 0, 10, 10, 0, 1, 1, 0]]], 1)


def test_coco_crowd_regions():
    # COCO's iscrowd flag (a seventh value): a crowd region C (100 x 100) and a box B (20 x 20) in another place.
    # Detections, best first: d1 and d2 (20 x 20) inside C — overlap with a crowd region is the intersection over the
    # detection's own area, 1: both matched to C (a crowd takes any number), ignored —, then B, right: AP 1 at every
    # threshold. d3, a 20 x 20 box half inside C (overlap 0.5), is matched at 0.50 only: a false positive from 0.55 on.
    # (Equal to pycocotools' COCOeval on 1,155 random cases with a quarter or half the boxes crowds, docs/tune.md.)
    gts = [np.array([(0, 0, 100, 100, 0, 0, 1), (200, 0, 20, 20, 0, 0, 0)], dtype=np.float64)]
    dets = [boxes((10, 10, 20, 20, 0.9, 0), (50, 50, 20, 20, 0.8, 0), (200, 0, 20, 20, 0.7, 0))]
    assert detection.mean_average_precision(dets, gts, "coco") == pytest.approx(1.0)
    half = [boxes((90, 0, 20, 20, 0.95, 0), (200, 0, 20, 20, 0.7, 0))]
    assert detection.mean_average_precision(half, gts, "coco") == pytest.approx((1 + 9 * 0.5) / 10)
    # The same region as an ordinary box: one more box to find (IoU 0.04: d1 and d2 false positives): precision 1/3
    # at recall 1/2, so 1/3 at the 51 recall points 0 ... 0.5 of 101, at every threshold.
    plain = [gts[0][:, :5]]
    assert detection.mean_average_precision(dets, plain, "coco") == pytest.approx(51 / 101 / 3)
    # VOC's AP has no crowds: C counts as a difficult box (plain IoU 0.04 < 0.5: d1 and d2 are false positives).
    assert detection.mean_average_precision(dets, gts) == pytest.approx(1 / 3)
    # A crowd region is ignored as a box outside the range: a class of crowds only is left out.
    with pytest.raises(npuc.Error, match="every box is difficult or a crowd"):
        detection.mean_average_precision(dets, [gts[0][:1]], "coco")
    assert detection.truth_boxes([[[0, 0, 10, 10, 0, 0, 1]]], 1)[0].shape == (1, 7)
    with pytest.raises(npuc.Error, match="crowd flag"):
        detection.truth_boxes([[[0, 0, 10, 10, 0, 0, 3]]], 1)


def test_coco_average_precision_by_object_size():
    # A small box S (10 x 10) and a large one L (100 x 100); detections, best first: a large false positive (0.95), L
    # (0.9), a small false positive (0.85), S (0.8). Every object: FP, TP, FP, TP: precision 1/2 at recall 1/2 and 1,
    # AP 0.5. Small objects: L ignored, so the detection of L counts neither way, nor does the large false positive
    # (its own area outside the range): FP, TP, AP 0.5 (1/3 had either counted). Large objects: the large FP, L; the
    # small FP and the detection of S not counted: AP 0.5. No medium object: the class is left out (no class: 0).
    gts = [truth((0, 0, 10, 10, 0), (200, 0, 100, 100, 0))]
    dets = [boxes((400, 400, 100, 100, 0.95, 0), (200, 0, 100, 100, 0.9, 0), (50, 50, 20, 20, 0.85, 0),
                  (0, 0, 10, 10, 0.8, 0))]
    assert detection.mean_average_precision(dets, gts, "coco") == pytest.approx(0.5)
    assert detection.mean_average_precision(dets, gts, "coco-small") == pytest.approx(0.5)
    assert detection.mean_average_precision(dets, gts, "coco-large") == pytest.approx(0.5)
    assert detection.coco_average_precisions(dets, gts, detection.COCO_AREAS["coco-medium"]) == {}
    with pytest.raises(npuc.Error, match="no ground-truth box counts for iou_threshold 'coco-medium'"):
        detection.mean_average_precision(dets, gts, "coco-medium")  # (a mean over no class is no score)
    # A detection (31 x 31) matched inside the range stays so even where an ignored box overlaps it more (COCOeval
    # stops at the ignored boxes once it holds a box in range): medium M (34 x 34) at IoU 961/1156 = 0.831, ignored
    # small S (30 x 30) at 900/961 = 0.937. Medium objects: right at 0.50-0.80; at 0.85 and 0.90 it takes S
    # (ignored: not counted), at 0.95 nothing, and its own area (961) lies outside the range: AP 7/10. Had it taken
    # the better-overlapped S from the start, 0.
    ms = [truth((0, 0, 30, 30, 0), (0, 0, 34, 34, 0))]  # (the ignored box first: the boxes in range are tried first)
    assert detection.mean_average_precision([boxes((0, 0, 31, 31, 0.5, 0))], ms, "coco-medium") == pytest.approx(0.7)
    # A detection inside the range matched to an ignored box counts neither way: a 97 x 97 detection (large) on a
    # 90 x 90 box (medium: ignored for large objects) at IoU 8100/9409 = 0.861 before the detection of a large box in
    # another sample. Thresholds 0.50-0.85: not counted, AP 1; 0.90 and 0.95: unmatched, a false positive first, 1/2.
    mixed = [truth((0, 0, 90, 90, 0)), truth((0, 0, 120, 120, 0))]
    found = [boxes((0, 0, 97, 97, 0.9, 0)), boxes((0, 0, 120, 120, 0.5, 0))]
    assert detection.mean_average_precision(found, mixed, "coco-large") == pytest.approx((8 + 2 * 0.5) / 10)
    # The ranges' ends belong to both sides: a 32 x 32 box is small and medium, a 96 x 96 one medium and large.
    for side, sizes in ((32, ("coco-small", "coco-medium")), (96, ("coco-medium", "coco-large"))):
        one = [truth((0, 0, side, side, 0))]
        found = [boxes((0, 0, side, side, 0.5, 0))]
        for name in ("coco-small", "coco-medium", "coco-large"):
            assert detection.coco_average_precisions(found, one, detection.COCO_AREAS[name]) == \
                ({0: 1.0} if name in sizes else {}), (side, name)


def _scenes(split, count, seed):
    import scenes
    s = scenes.scenes(split, count, seed)
    x = np.stack([c.astype(np.float32)[None] / np.float32(255) for c, _ in s])
    return x, [[list(b) for b in t] for _, t in s]


@pytest.fixture(scope="module")
def yolo(tmp_path_factory):
    out = tmp_path_factory.mktemp("yolo")
    calib, _ = _scenes("train", 32, 11)
    x, gt = _scenes("t10k", 40, 7)
    flt = npuc.translate("f", MODEL, target="generic", out=str(out))
    q = npuc.translate("q", MODEL, target="kneron", calib={"image": calib}, out=str(out))
    assert flt.ok and q.ok
    return {"out": out, "calib": calib, "x": x, "truth": gt, "float": str(flt.dir), "int8": str(q.dir)}


def test_map_of_the_detector_is_the_same_for_any_workers_and_the_reference_engine(yolo):
    import yolo as post
    one = npuc.evaluate(yolo["float"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=DECODER, workers=1)
    two = npuc.evaluate(yolo["float"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=post.detect_all, workers=2,
                        shard_size=7)
    assert one["samples"] == 40 and one["map"] == two["map"]
    assert all(np.array_equal(a, b) for a, b in zip(one["boxes"], two["boxes"]))
    # The model on the reference engine, decoded here: the same boxes, the same mAP.
    ref = [detection.boxes_of(post.detect_all(npuc.run_model(MODEL, {"image": yolo["x"][i:i + 1]})["head"]), i, "detect_all")
           for i in range(40)]
    truths = detection.truth_boxes(yolo["truth"], 40)
    assert detection.mean_average_precision(ref, truths) == pytest.approx(one["map"], abs=1e-12)
    assert 0.5 < one["map"] <= 1.0
    q = npuc.evaluate(yolo["int8"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=DECODER, workers=1)
    assert abs(q["map"] - one["map"]) < 0.1, (q["map"], one["map"])
    # COCO's AP: the same boxes scored at 0.50-0.95, below the AP at 0.50 alone.
    coco = npuc.evaluate(yolo["float"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=DECODER, workers=1,
                         iou_threshold="coco")
    assert coco["map"] == pytest.approx(detection.mean_average_precision(ref, truths, "coco"), abs=1e-12)
    assert 0.0 < coco["map"] < one["map"]


def test_map_on_a_dask_cluster_is_the_local_one(yolo):
    distributed = pytest.importorskip("distributed")
    local = npuc.evaluate(yolo["float"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=DECODER, workers=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        # (the decoder travels as its file and function, each worker loading it itself)
        r = npuc.evaluate(yolo["float"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=DECODER, client=client,
                          shard_size=9)
    assert r["map"] == local["map"] and all(np.array_equal(a, b) for a, b in zip(r["boxes"], local["boxes"]))


def test_a_package_of_batch_two_gives_each_sample_its_own_boxes(yolo):
    two = npuc.translate("b2", MODEL, target="generic", out=str(yolo["out"]), input_shapes={"image": [2, 1, 96, 96]})
    assert two.ok
    x = yolo["x"][:7]  # (an odd count: the last batch is padded)
    a = npuc.evaluate(yolo["float"], {"image": x}, yolo["truth"][:7], metric="map", decoder=DECODER, workers=1)
    b = npuc.evaluate(str(two.dir), {"image": x}, yolo["truth"][:7], metric="map", decoder=DECODER, workers=1)
    assert a["map"] == b["map"] and len(b["boxes"]) == 7
    assert all(np.array_equal(p, q) for p, q in zip(a["boxes"], b["boxes"]))


def test_tune_meets_a_map_budget_from_the_command_line(yolo, tmp_path):
    if not CLI:
        pytest.skip("NPUC_CLI is not set")
    np.save(tmp_path / "calib.npy", yolo["calib"])
    np.save(tmp_path / "x.npy", yolo["x"])
    with open(tmp_path / "truth.json", "w") as f:
        json.dump(yolo["truth"], f)
    # A budget of 0.05 points of mAP (hundredths): the search runs where plain int8 loses more.
    r = subprocess.run([CLI, "tune", MODEL, "--target", "generic-int8", "--calib", "image=%s" % (tmp_path / "calib.npy"),
                        "--eval", "image=%s" % (tmp_path / "x.npy"), "--labels", str(tmp_path / "truth.json"),
                        "--metric", "map", "--decoder", DECODER, "--max-drop", "0.05", "--workers", "0",
                        "-o", str(tmp_path / "out")], capture_output=True, text=True)
    res = json.load(open(tmp_path / "out" / "fashion_yolo_tune" / "tune.json"))
    assert r.returncode == (0 if res["met"] else 1), r.stderr
    bad = subprocess.run([CLI, "tune", MODEL, "--target", "generic-int8", "--calib", "image=x.npy", "--eval", "image=x.npy",
                          "--labels", "t.json", "--metric", "map", "--decoder", DECODER, "--iou-threshold", "0"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "'0': a number in (0, 1], or coco" in bad.stderr, bad.stderr
    assert "float32: map" in r.stdout and "tuned:" in r.stdout, r.stdout
    assert res["metric"] == "map" and res["decoder"].endswith("yolo.py:detect_all") and res["iou_threshold"] == 0.5
    flt = npuc.evaluate(yolo["float"], {"image": yolo["x"]}, yolo["truth"], metric="map", decoder=DECODER, workers=1)
    assert res["float"]["accuracy"] == flt["map"]
    assert res["met"] == (res["drop"] <= 0.05 + 1e-9)
    if res["int8_drop"] > 0.05:  # the search kept layers wider, and the result is the best of what it tried
        assert res["keep_float"] and res["drop"] <= res["int8_drop"] and len(res["tried"]) > 3
    else:
        assert res["keep_float"] == []


def test_a_decoder_edited_since_is_loaded_again(yolo, tmp_path):
    dec = tmp_path / "dec.py"
    x, gt = {"image": yolo["x"][:2]}, yolo["truth"][:2]
    dec.write_text("def boxes(head):\n    return []\n")
    assert npuc.evaluate(yolo["float"], x, gt, metric="map", decoder=str(dec) + ":boxes", workers=1)["map"] == 0.0
    # The ground truth itself, found: mAP 1. (Another size, and a later time: the module is not the one cached.)
    dec.write_text("import json\nT = iter(json.loads(%r))\ndef boxes(head):\n    return [b[:4] + [1.0, b[4]] for b in next(T)]\n"
                   % json.dumps(gt))
    os.utime(dec, ns=(os.stat(dec).st_atime_ns, os.stat(dec).st_mtime_ns + 10**9))
    assert npuc.evaluate(yolo["float"], x, gt, metric="map", decoder=str(dec) + ":boxes", workers=1)["map"] == 1.0


def test_bad_detection_inputs_are_refused(yolo, tmp_path):
    ev = lambda labels, **kw: npuc.evaluate(yolo["float"], {"image": yolo["x"][:3]}, labels,  # noqa: E731
                                            **{"metric": "map", "decoder": DECODER, "workers": 1, **kw})
    gt = yolo["truth"][:3]
    with pytest.raises(npuc.Error, match="3 evaluation samples but ground truth for 2"):
        ev(gt[:2])
    with pytest.raises(npuc.Error, match="not one class per sample"):
        ev(np.array([1, 2, 3]))
    with pytest.raises(npuc.Error, match=r"sample 1 has rows of 4 values"):
        ev([gt[0], [[1, 2, 3, 4]], gt[2]])
    with pytest.raises(npuc.Error, match="sample 2 has a box without a positive width"):
        ev([gt[0], gt[1], [[1, 2, 0, 4, 1]]])
    with pytest.raises(npuc.Error, match="needs decoder="):
        ev(gt, decoder=None)
    with pytest.raises(npuc.Error, match="no file"):
        ev(gt, decoder=str(tmp_path / "missing.py") + ":detect")
    with pytest.raises(npuc.Error, match="has no function nothing"):
        ev(gt, decoder=os.path.join(YOLO_DIR, "yolo.py") + ":nothing")
    with pytest.raises(npuc.Error, match="FILE.py:FUNCTION"):
        ev(gt, decoder="detect")
    with pytest.raises(npuc.Error, match=r"sample 0: boxes of 3 values"):
        ev(gt, decoder=lambda head: [[1, 2, 3]])
    with pytest.raises(npuc.Error, match=r"sample 0: ZeroDivisionError"):
        ev(gt, decoder=lambda head: 1 / 0)
    with pytest.raises(npuc.Error, match="asked alone"):
        ev(gt, metric=["map", "top1"])
    with pytest.raises(npuc.Error, match="decoder= is for metric map"):
        ev(np.array([1, 2, 3]), metric="top1")
    with pytest.raises(npuc.Error, match="iou_threshold"):
        ev(gt, iou_threshold=1.5)
    with pytest.raises(npuc.Error, match=r"iou_threshold is 'voc': a number in \(0, 1\], \"coco\" .*, or \"voc07\""):
        ev(gt, iou_threshold="voc")
    with pytest.raises(npuc.Error, match="output= is for topK"):
        ev(gt, output="head")
    with pytest.raises(npuc.Error, match="cannot be sent to worker processes"):
        ev(gt, decoder=lambda head: [], workers=2)
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no weights here')\n")
    with pytest.raises(npuc.Error, match="loading .*broken.py failed: RuntimeError: no weights here"):
        ev(gt, decoder=str(broken) + ":detect")
    with pytest.raises(npuc.Error, match="metric map needs a decoder"):
        npuc.tune(MODEL, "kneron", yolo["calib"], yolo["x"][:3], gt, metric="map", workers=0, out=str(tmp_path))
