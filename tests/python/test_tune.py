"""npuc.tune / npuc tune (docs/tune.md, issue 53) on a model made sensitive to int8: the trained digits classifier
with four channels of its first block scaled up 8x (the next convolution's weights scaled down to match, so the float
model computes the same function). Per-tensor int8-pow2 activations (target tidl) then lose the small channels:
plain int8 drops more than 4 points on the real labels, and keeping the first convolution in float32 gives them back."""
import json
import os
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest

import npuc

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")
X = np.load(os.path.join(SRC, "models", "digits", "test_x.npy"))
Y = np.load(os.path.join(SRC, "models", "digits", "test_y.npy"))
CLI = os.environ.get("NPUC_CLI")
SHAPES = {"input": [1, 1, 8, 8]}
FIRST = "/features/features.0/Conv"


@pytest.fixture(scope="module")
def sensitive(tmp_path_factory):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper
    m = onnx.load(DIGITS)
    init = {i.name: i for i in m.graph.initializer}

    def scale(name, f):
        a = numpy_helper.to_array(init[name]).astype(np.float32)
        init[name].CopyFrom(numpy_helper.from_array(f(a).astype(np.float32), name))

    s = np.ones(16, np.float32)
    s[:4] = 8  # (ReLU commutes with a positive scale: the float function is unchanged)
    scale("features.1.weight", lambda a: a * s)
    scale("features.1.bias", lambda a: a * s)
    scale("features.3.weight", lambda a: a / s[None, :, None, None])
    path = str(tmp_path_factory.mktemp("tune") / "sensitive.onnx")
    onnx.save(m, path)
    return path


def tune(model, out, **kw):
    args = dict(max_drop=0.5, out=str(out), input_shapes=SHAPES, workers=0, progress=False)
    args.update(kw)
    return npuc.tune(model, "tidl", {"input": X}, {"input": X}, Y, **args)


@pytest.fixture(scope="module")
def local(sensitive, tmp_path_factory):
    return tune(sensitive, tmp_path_factory.mktemp("local"))


def test_tune_meets_the_budget_where_plain_int8_does_not(local):
    r = local
    assert r["float"]["accuracy"] > 0.99
    assert r["int8_drop"] > 4.0  # plain int8: far outside the budget
    assert r["met"] and r["drop"] <= 0.5
    assert r["keep_float"] == [FIRST]  # the one layer that gives the accuracy back, and the cheapest
    # Faster than every candidate layer in float, slower than plain int8 (the float layer at its float cost).
    assert r["int8"]["estimated_us"] < r["tuned"]["estimated_us"] < r["all_float_layers"]["estimated_us"]
    sens = {s["layer"]: s["gain"] for s in r["sensitivity"]}
    assert max(sens, key=sens.get) == FIRST and len(sens) == 4
    # The package written is the tuned one: its accuracy on the simulator is the search's.
    got = npuc.evaluate(r["package"], {"input": X}, Y, workers=1)["top1"]
    assert got == r["tuned"]["accuracy"]
    rep = r["report_dir"]
    for f in ("precision.yaml", "tune.json", "tune.html", "tune_pareto.png", "tune_sensitivity.png"):
        assert os.path.getsize(os.path.join(rep, f)) > 0, f
    assert not [d for d in os.listdir(os.path.dirname(r["package"])) if d.startswith(".npuc-tune-")]  # work folder gone


def test_float16_width_meets_the_budget_at_a_lower_cost(sensitive, local, tmp_path):
    # Mixed precision at float16 (docs/numerics.md): the same layer gives the accuracy back, the estimate charges it
    # half of float32's width, and the precision file says float16.
    r = tune(sensitive, tmp_path, width="float16")
    assert r["met"] and r["drop"] <= 0.5
    assert r["keep_float"] == [FIRST]
    assert r["int8"]["estimated_us"] < r["tuned"]["estimated_us"] < local["tuned"]["estimated_us"]
    got = npuc.evaluate(r["package"], {"input": X}, Y, workers=1)["top1"]
    assert got == r["tuned"]["accuracy"]
    text = open(os.path.join(r["report_dir"], "precision.yaml")).read()
    assert '"%s": float16' % FIRST in text
    with pytest.raises(npuc.Error, match="unknown width 'int16'"):
        tune(sensitive, tmp_path, width="int16")
    # auto: float16 meets the budget here, so that is the answer
    auto = tune(sensitive, tmp_path / "auto", width="auto")
    assert auto["width"] == "float16" and auto["keep_float"] == [FIRST] and auto["content_hash"] == r["content_hash"]


def test_adaround_in_the_search_is_written_to_the_precision_file(sensitive, tmp_path):
    r = tune(sensitive, tmp_path, adaround=True, candidates=[FIRST])
    assert r["adaround"] and r["met"]
    assert "adaround: true" in open(os.path.join(r["report_dir"], "precision.yaml")).read()
    both = tune(sensitive, tmp_path / "both", adaround=True, bias_correction=True, candidates=[FIRST])
    text = open(os.path.join(both["report_dir"], "precision.yaml")).read()
    assert "adaround: true" in text and "bias_correction: true" in text


def test_bias_absorption_in_the_search_is_written_to_the_precision_file(sensitive, tmp_path):
    r = tune(sensitive, tmp_path, absorb_bias=True, equalize="relu", candidates=[FIRST])
    assert r["absorb_bias"] and r["met"]
    text = open(os.path.join(r["report_dir"], "precision.yaml")).read()
    assert "absorb_bias: true" in text and "equalize: relu" in text
    # Statistics in shards would measure each shard's own floors: refused, saying why.
    with pytest.raises(npuc.Error, match="cannot be gathered in shards"):
        npuc.calibration.statistics(sensitive, "tidl", {"input": X}, workers=0, input_shapes=SHAPES, absorb_bias=True)


def test_a_tighter_budget_keeps_more_layers(sensitive, tmp_path):
    r = tune(sensitive, tmp_path, max_drop=0.3)
    assert r["met"] and r["drop"] <= 0.3
    assert FIRST in r["keep_float"] and len(r["keep_float"]) >= 2


def test_mixed_width_narrows_the_float32_answer_where_the_budget_holds(sensitive, tmp_path):
    # --width mixed: the float32 search, then each chosen layer in float16 where the budget still holds — never
    # slower in the estimate than the float32 answer, each layer's width in the result and the precision file.
    f32 = tune(sensitive, tmp_path / "f32", max_drop=0.3)
    r = tune(sensitive, tmp_path / "mixed", max_drop=0.3, width="mixed")
    assert r["met"] and r["drop"] <= 0.3
    assert r["tuned"]["estimated_us"] <= f32["tuned"]["estimated_us"]
    assert sorted(r["widths"]) == sorted(r["keep_float"]) and set(r["widths"].values()) <= {"float32", "float16"}
    assert r["width"] == ("mixed" if len(set(r["widths"].values())) == 2 else r["widths"][r["keep_float"][0]])
    narrowed = [t for t in r["tried"] if "float16" in t["widths"].values()]
    sets = {tuple(sorted(t["keep_float"])) for t in narrowed}
    assert len(sets) == 1  # (one layer after another narrowed, from the float32 search's answer)
    start = [t for t in r["tried"] if tuple(sorted(t["keep_float"])) in sets and set(t["widths"].values()) == {"float32"}]
    assert len(start) == 1 and start[0]["accuracy"] >= r["float"]["accuracy"] - 0.003 - 1e-12
    text = open(os.path.join(r["report_dir"], "precision.yaml")).read()
    for name, w in r["widths"].items():
        assert '"%s": %s' % (name, w) in text
    got = npuc.evaluate(r["package"], {"input": X}, Y, workers=1)["top1"]
    assert got == r["tuned"]["accuracy"]


def test_tune_is_the_same_on_dask_clusters_of_2_and_4_workers(sensitive, local, tmp_path):
    distributed = pytest.importorskip("distributed")
    for n in (2, 4):
        with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            r = tune(sensitive, tmp_path / str(n), client=client)
        assert r["keep_float"] == local["keep_float"], n
        assert r["content_hash"] == local["content_hash"], n
        assert [(t["keep_float"], t["accuracy"], t["estimated_us"]) for t in r["tried"]] == \
               [(t["keep_float"], t["accuracy"], t["estimated_us"]) for t in local["tried"]], n


def test_a_worker_that_dies_mid_search_changes_nothing(sensitive, local, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        victim = sorted(client.scheduler_info()["workers"])[0]

        def kill():
            time.sleep(1.0)  # the search is under way (the float and int8 packages are evaluated first)
            try:
                client.run(os._exit, 1, workers=[victim])
            except Exception:  # (the worker never answers: it is gone)
                pass

        killer = threading.Thread(target=kill)
        killer.start()
        r = tune(sensitive, tmp_path, client=client)
        killer.join()
        # (its nanny starts a new one, at a new address; the scheduler drops the dead one once it notices: a moment)
        deadline = time.time() + 30
        while victim in client.scheduler_info()["workers"] and time.time() < deadline:
            time.sleep(0.1)
        assert victim not in client.scheduler_info()["workers"]
    assert r["keep_float"] == local["keep_float"] and r["content_hash"] == local["content_hash"]
    assert [(t["keep_float"], t["accuracy"]) for t in r["tried"]] == [(t["keep_float"], t["accuracy"]) for t in local["tried"]]


def test_a_budget_that_cannot_be_met_says_so_and_gives_the_closest(sensitive, tmp_path):
    r = tune(sensitive, tmp_path, max_drop=0.3, candidates=["/classifier/Gemm", "/features/features.6/Conv"])
    assert not r["met"]
    assert r["tuned"]["accuracy"] == max(t["accuracy"] for t in r["tried"] if t["target"] == "tidl")
    page = open(os.path.join(r["report_dir"], "tune.html")).read()
    assert "cannot meet the budget" in page


def test_bad_input_is_refused_clearly(sensitive, tmp_path):
    with pytest.raises(npuc.Error, match="540 evaluation samples but 539 labels"):
        npuc.tune(sensitive, "tidl", {"input": X}, {"input": X}, Y[:-1], out=str(tmp_path), workers=0)
    with pytest.raises(npuc.Error, match="the evaluation set is empty"):
        npuc.tune(sensitive, "tidl", {"input": X}, {"input": X[:0]}, Y[:0], out=str(tmp_path), workers=0)
    with pytest.raises(npuc.Error, match="unknown metric 'top0'"):
        npuc.tune(sensitive, "tidl", {"input": X}, {"input": X}, Y, metric="top0", out=str(tmp_path), workers=0)
    with pytest.raises(npuc.Error, match="metric map needs a decoder"):  # (class labels are not boxes: test_detection.py)
        npuc.tune(sensitive, "tidl", {"input": X}, {"input": X}, Y, metric="map", out=str(tmp_path), workers=0)
    with pytest.raises(npuc.Error, match="candidate 'nope' is not a layer with weights"):
        tune(sensitive, tmp_path, candidates=["nope"])
    with pytest.raises(npuc.Error, match="the evaluation set has no input"):
        npuc.tune(sensitive, "tidl", {"input": X}, {"images": X}, Y, out=str(tmp_path), workers=0)
    assert not [d for d in os.listdir(tmp_path) if d.startswith(".npuc-tune-")]


@pytest.mark.skipif(not CLI, reason="NPUC_CLI (the npuc binary) not set")
def test_the_cli_writes_a_precision_file_that_translate_reproduces(sensitive, local, tmp_path):
    xs, ys = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    np.save(xs, X)
    np.save(ys, Y)
    common = [sensitive, "--target", "tidl", "--calib", "input=" + xs, "--eval", "input=" + xs, "--labels", ys,
              "--input-shape", "input=1,1,8,8", "--workers", "0", "-o", str(tmp_path / "out")]
    p = subprocess.run([CLI, "tune"] + common + ["--max-drop", "0.5"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "1 layer(s) in float32: " + FIRST in p.stdout
    prec = str(tmp_path / "out" / "sensitive_tune" / "precision.yaml")
    t = subprocess.run([CLI, "translate", "sensitive", "-onnx", sensitive, "--target", "tidl", "--calib", "input=" + xs,
                        "--input-shape", "input=1,1,8,8", "--precision", prec, "--out", str(tmp_path / "again")],
                       capture_output=True, text=True)
    assert t.returncode == 0, t.stderr
    assert "package: " + local["content_hash"] in t.stdout
    # A budget it cannot meet: exit status 1, the closest written and said.
    p = subprocess.run([CLI, "tune"] + common + ["--max-drop", "0.3", "--candidate", "/classifier/Gemm"], capture_output=True, text=True)
    assert p.returncode == 1 and "cannot be met" in p.stderr, p.stderr
    p = subprocess.run([CLI, "tune"] + common[:-2] + ["--labels", xs], capture_output=True, text=True)
    assert p.returncode == 2 and "npuc tune: error:" in p.stderr


def test_the_report_opens_in_headless_chromium(local):
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("chromium is not installed (scripts/install_deps.sh browser)")
    page = os.path.join(local["report_dir"], "tune.html")
    dom = subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", "file://" + page],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'id="verdict"' in dom and "meets the budget" in dom
    assert 'src="tune_pareto.png"' in dom and 'src="tune_sensitivity.png"' in dom


def test_sensitivity_without_labels_finds_the_layer_and_ranks_the_search(sensitive, local, tmp_path):
    s = npuc.tuning.sensitivity(sensitive, "tidl", {"input": X}, max_samples=32, out=str(tmp_path), input_shapes=SHAPES)
    assert s["samples"] == 32 and len(s["layers"]) == 4
    by = {r["layer"]: r for r in s["layers"]}
    # The first convolution alone in float gives the most back; alone in int8 (the rest float) it costs the most.
    assert max(by, key=lambda k: by[k]["float_alone"]["snr_db"]) == FIRST
    assert min(by, key=lambda k: by[k]["int8_alone"]["snr_db"]) == FIRST
    assert by[FIRST]["float_alone"]["snr_db"] > s["int8"]["snr_db"] + 6
    assert all(-1 <= r["float_alone"]["cosine"] <= 1 for r in s["layers"])
    # Ranked by it, the search reaches the same package with fewer evaluations.
    r = tune(sensitive, tmp_path / "snr", rank="snr")
    assert r["keep_float"] == local["keep_float"] and r["content_hash"] == local["content_hash"]
    assert len(r["tried"]) < len(local["tried"])
    with pytest.raises(npuc.Error, match="unknown rank 'x'"):
        tune(sensitive, tmp_path, rank="x")


def test_cross_layer_equalization_makes_the_float_layers_unneeded(sensitive, tmp_path):
    # The sensitive model's trouble is unequal channel ranges between two convolutions: equalized, plain int8 is
    # within the budget and the search keeps no layer in float (the fastest package).
    r = tune(sensitive, tmp_path, equalize="relu")
    assert r["met"] and r["keep_float"] == [] and r["int8_drop"] <= 0.5
    assert r["tuned"]["estimated_us"] == r["int8"]["estimated_us"]
    prec = os.path.join(r["report_dir"], "precision.yaml")
    assert "equalize: relu" in open(prec).read()
    if CLI:  # the precision file carries the equalization: translate --precision gives the same package
        xs = str(tmp_path / "x.npy")
        np.save(xs, X)
        t = subprocess.run([CLI, "translate", "sensitive", "-onnx", sensitive, "--target", "tidl", "--calib", "input=" + xs,
                            "--input-shape", "input=1,1,8,8", "--precision", prec, "--out", str(tmp_path / "again")],
                           capture_output=True, text=True)
        assert t.returncode == 0 and "package: " + r["content_hash"] in t.stdout, t.stderr
    for eq, want in (("", 0.96), ("relu", 0.99)):
        res = npuc.translate("e", sensitive, target="tidl", out=str(tmp_path / ("eq" + eq)), calib={"input": X},
                             input_shapes=SHAPES, equalize=eq)
        acc = npuc.evaluate(str(res.dir), {"input": X}, Y, workers=1)["top1"]
        assert (acc >= want) if eq else (acc < want), (eq, acc)
    with pytest.raises(npuc.Error, match="--equalize x: relu"):
        npuc.translate("e", sensitive, target="tidl", out=str(tmp_path), calib={"input": X}, input_shapes=SHAPES, equalize="x")


def test_bias_correction_in_the_search_is_written_to_the_precision_file(sensitive, tmp_path):
    # The per-layer weight shift of int8-pow2 moves the scaled channels' means; corrected, plain int8 is within budget.
    r = tune(sensitive, tmp_path, bias_correction=True)
    assert r["met"] and r["keep_float"] == [] and r["int8_drop"] <= 0.5
    assert "bias_correction: true" in open(os.path.join(r["report_dir"], "precision.yaml")).read()


def _pgm(path, pixels):
    """An 8-bit grey PGM (P5) picture, written by hand (no picture library needed)."""
    h, w = pixels.shape
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h) + pixels.astype(np.uint8).tobytes())


@pytest.mark.skipif(not CLI, reason="needs NPUC_CLI (the npuc binary)")
def test_calibration_and_evaluation_sets_as_folders_of_pictures(sensitive, tmp_path):
    # The test set as 8-bit grey pictures; their samples are v / 255 (translate --calib NAME=DIR's arithmetic).
    pix = np.round(X[:, 0] * 255)
    pics = tmp_path / "pics"
    pics.mkdir()
    for i, p in enumerate(pix):
        _pgm(pics / ("%04d.pgm" % i), p)
    want = (pix[:, None].astype(np.float64) / 255).astype(np.float32)
    got = npuc.calibration.read_samples(str(pics), [1, 1, 8, 8])
    assert got.dtype == np.float32 and np.array_equal(got, want)
    # --calib-scale / --calib-mean as translate takes them: (v - 10) * 0.5.
    assert np.array_equal(npuc.pictures_as_samples([str(pics / "0000.pgm")], [1, 1, 8, 8], [10.0], [0.5]),
                          ((pix[:1, None].astype(np.float64) - 10) * 0.5).astype(np.float32))
    # npuc tune with both sets as picture folders chooses and writes what it does with the same samples as .npy.
    xs, ys = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    np.save(xs, want)
    np.save(ys, Y)
    runs = {}
    for kind, data in (("npy", xs), ("pictures", str(pics))):
        out = tmp_path / kind
        p = subprocess.run([CLI, "tune", sensitive, "--target", "tidl", "--calib", "input=" + data, "--eval", "input=" + data,
                            "--labels", ys, "--input-shape", "input=1,1,8,8", "--workers", "0", "--max-drop", "0.5",
                            "-o", str(out)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        with open(out / "sensitive_tune" / "tune.json") as f:
            r = json.load(f)
        runs[kind] = (r["content_hash"], r["keep_float"], r["tuned"], r["int8"], r["samples"])
    assert runs["pictures"] == runs["npy"]
    assert runs["npy"][1] == [FIRST]
    # Folders that are neither, or both: refused, naming the folder and the rule.
    (tmp_path / "empty").mkdir()
    with pytest.raises(npuc.Error, match="no .npy files or pictures"):
        npuc.calibration.read_samples(str(tmp_path / "empty"), [1, 1, 8, 8])
    np.save(pics / "extra.npy", want)
    p = subprocess.run([CLI, "tune", sensitive, "--target", "tidl", "--calib", "input=" + str(pics), "--eval", "input=" + xs,
                        "--labels", ys, "--input-shape", "input=1,1,8,8", "--workers", "0"], capture_output=True, text=True)
    assert p.returncode != 0 and "both .npy shards" in p.stderr and str(pics) in p.stderr, p.stderr
