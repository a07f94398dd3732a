#!/usr/bin/python3
"""Detection mAP of models/fashion_yolo on its synthetic test scenes, per target (docs/tune.md, "Detection").

    PYTHONPATH=build/python /usr/bin/python3 tools/yolo_map.py [--scenes 500] [--out DIR] [--decoder detect_all]

Writes DIR/calib.npy (64 scenes of the training split, seed 11), DIR/x.npy and DIR/truth.json (the test scenes, seed 7:
examples/python/kneron_yolo.py's), translates the model for generic (float), generic-int8 and kneron, and prints each
package's mAP at IoU 0.5 (and COCO's AP over 0.50-0.95, iou_threshold="coco") with models/fashion_yolo/yolo.py's decoder; then the `npuc tune --metric map` command for the
same files.
"""
import argparse
import json
import os
import sys

import numpy as np

import npuc
from npuc import detection

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MODEL_DIR = os.path.join(SRC, "models", "fashion_yolo")
MODEL = os.path.join(MODEL_DIR, "fashion_yolo.onnx")
sys.path.insert(0, MODEL_DIR)


def scenes_as_samples(split, count, seed):
    import scenes
    s = scenes.scenes(split, count, seed)
    return np.stack([c.astype(np.float32)[None] / np.float32(255) for c, _ in s]), [[list(b) for b in t] for _, t in s]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenes", type=int, default=500)
    ap.add_argument("--out", default="yolo_map_out")
    ap.add_argument("--decoder", default="detect_all", help="a function of models/fashion_yolo/yolo.py (default detect_all)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    calib, _ = scenes_as_samples("train", 64, 11)
    x, truth = scenes_as_samples("t10k", a.scenes, 7)
    np.save(os.path.join(a.out, "calib.npy"), calib)
    np.save(os.path.join(a.out, "x.npy"), x)
    with open(os.path.join(a.out, "truth.json"), "w") as f:
        json.dump(truth, f)
    decoder = os.path.join(MODEL_DIR, "yolo.py") + ":" + a.decoder
    for target in ("generic", "generic-int8", "kneron"):
        r = npuc.translate("yolo_" + target.replace("-", "_"), MODEL, target=target, out=a.out,
                           calib=None if target == "generic" else {"image": calib})
        e = npuc.evaluate(str(r.dir), {"image": x}, truth, metric="map", decoder=decoder, workers=1)
        c = detection.mean_average_precision(e["boxes"], detection.truth_boxes(truth, len(truth)), "coco")
        print("%-13s mAP %.2f, COCO's AP %.2f  (estimated %.1f us)" % (target, 100 * e["map"], 100 * c, r.estimated_us))
    print("npuc tune %s --target generic-int8 --calib image=%s --eval image=%s --labels %s --metric map --decoder %s "
          "--max-drop 0.05" % (MODEL, os.path.join(a.out, "calib.npy"), os.path.join(a.out, "x.npy"),
                               os.path.join(a.out, "truth.json"), decoder))


if __name__ == "__main__":
    main()
