"""Tests of the Python package (issue 26): the runtime, translate, the reference engine, Kneron-style inference,
evaluation on local processes and on a Dask LocalCluster, the helpers, and bad input from Python. Run by ctest
(`python_tests`) with PYTHONPATH=build/python and NPUC_CLI=build/bin/npuc."""
import ctypes
import os
import subprocess
import threading

import numpy as np
import pytest

import npuc

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")
X = np.load(os.path.join(SRC, "models", "digits", "test_x.npy"))
Y = np.load(os.path.join(SRC, "models", "digits", "test_y.npy"))
CLI = os.environ.get("NPUC_CLI")


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    root = tmp_path_factory.mktemp("packages")
    res = {}
    for target in ("generic", "drpai"):
        r = npuc.translate("digits_" + target, DIGITS, target=target, out=str(root))
        assert r.ok and r.content_hash.startswith("sha256:")
        res[target] = str(r.dir)
    return res


def test_runtime_describes_and_runs_the_package(packages):
    rt = npuc.Runtime(packages["drpai"])
    assert rt.target == "drpai" and rt.numerics == "fp16"
    assert rt.inputs[0]["name"] == "input" and rt.inputs[0]["shape"] == (1, 1, 8, 8)
    assert rt.inputs[0]["dtype"] == np.float16
    out = rt.run({"input": X[:1]})
    assert list(out) == ["logits"] and out["logits"].dtype == np.float32 and out["logits"].shape == (1, 10)
    raw = rt.output("logits", raw=True)
    assert raw.dtype == np.float16 and np.array_equal(raw.astype(np.float32), out["logits"])
    assert [l["seq"] for l in rt.layers] == list(range(len(rt.layers)))


def test_outputs_are_the_bytes_of_npuc_simulate(packages, tmp_path):
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    np.save(tmp_path / "x.npy", X[3:4])
    for target, pkg in packages.items():
        subprocess.run([CLI, "simulate", pkg, "--input", "input=%s" % (tmp_path / "x.npy"), "-o", str(tmp_path / target)],
                       check=True, capture_output=True)
        want = np.load(tmp_path / target / "logits.npy")
        got = npuc.Runtime(pkg).run([X[3:4]])["logits"]
        assert got.tobytes() == want.tobytes(), target


def test_the_generic_package_equals_the_reference_engine(packages):
    got = npuc.Runtime(packages["generic"]).run(X[:1])["logits"]
    ref = npuc.run_model(DIGITS, {"input": X[:1]})["logits"]
    assert got.tobytes() == ref.tobytes()


def test_a_layer_callback_sees_every_layer(packages):
    rt = npuc.Runtime(packages["generic"])
    seen = []
    rt.run({"input": X[:1]}, callback=lambda layer, y: seen.append((layer["seq"], y.shape, layer["output"]["shape"])))
    assert [s[0] for s in seen] == list(range(len(rt.layers)))
    assert all(tuple(s[1]) == tuple(s[2]) for s in seen)
    # Inside a callback the runtime's outputs can be read; closing it (or running it) cannot.
    reads, refused = [], []

    def inside(layer, y):
        reads.append(rt.output("logits").shape)
        try:
            rt.close()
        except npuc.Error as e:
            refused.append(str(e))

    rt.run({"input": X[:1]}, callback=inside)
    assert reads and all(r == (1, 10) for r in reads)
    assert len(refused) == len(reads) and "not allowed inside a layer callback" in refused[0]
    assert not rt.closed


def test_kneron_style_inference(packages):
    pkg = packages["drpai"]
    out = npuc.inference([X[:1]], ["input"], package=pkg)
    assert len(out) == 1 and out[0].shape == (1, 10)
    assert np.array_equal(out[0], npuc.Runtime(pkg).run(X[:1])["logits"])
    flt = npuc.inference([X[:1]], ["input"], onnx_file=DIGITS, reordering=["logits"])
    assert np.array_equal(flt[0], npuc.run_model(DIGITS, {"input": X[:1]})["logits"])
    with pytest.raises(npuc.Error, match="reordering names nope"):
        npuc.inference([X[:1]], ["input"], package=pkg, reordering=["nope"])
    with pytest.raises(npuc.Error, match="not as fixed-point codes"):
        npuc.inference([X[:1]], ["input"], package=pkg, data_type="fixed")
    with pytest.raises(npuc.Error, match="exactly one of package"):
        npuc.inference([X[:1]], ["input"])
    with pytest.raises(npuc.Error, match="nef"):
        npuc.inference([X[:1]], ["input"], nef_file="models.nef")


def test_fixed_point_outputs_of_int8_packages(tmp_path):
    # int8-affine: the logits dequantize int8 codes; 'fixed' gives those codes with their scale and zero point.
    r = npuc.translate("q", DIGITS, target="generic-int8", out=str(tmp_path), calib={"input": X[:64]})
    assert r.ok and r.quantized
    fixed = npuc.inference([X[:1]], ["input"], package=str(r.dir), data_type="fixed")[0]
    flt = npuc.inference([X[:1]], ["input"], package=str(r.dir))[0]
    assert isinstance(fixed, npuc.FixedArray) and fixed.dtype == np.int8 and fixed.scale > 0
    assert np.array_equal(fixed.to_float(), flt)
    # int8-radix (target kneron): zero point 0, scale 2^-radix: float = fixed / 2^radix (Kneron's scale 1).
    k = npuc.translate("k", DIGITS, target="kneron", out=str(tmp_path), calib={"input": X[:64]})
    assert k.ok and "k_radix_scale_info.txt" in k.files
    fixed = npuc.inference([X[:1]], ["input"], package=str(k.dir), data_type="fixed")[0]
    flt = npuc.inference([X[:1]], ["input"], package=str(k.dir))[0]
    assert fixed.zero_point == 0 and fixed.kneron_scale == 1.0 and fixed.scale == 2.0 ** -fixed.radix
    assert np.array_equal(np.asarray(fixed, np.float64) / 2.0 ** fixed.radix, flt.astype(np.float64))
    info = (k.dir / "k_radix_scale_info.txt").read_text().split("\n")
    assert "logits %d 1" % fixed.radix in info
    if CLI:  # Kneron's CSIM dumps: the 520's (h, c, w16) and the 720's (c, h, w16) orders, radix and scale files
        np.save(tmp_path / "x.npy", X[:1])
        for platform in (520, 720):
            subprocess.run([CLI, "simulate", str(k.dir), "--input", "input=%s" % (tmp_path / "x.npy"), "-o", str(tmp_path / "sim"),
                            "--kneron-dump", str(platform)], check=True, capture_output=True)
            d = tmp_path / "sim" / ("kneron_%d" % platform)
            vals = np.loadtxt(d / "logits_fixed.txt", dtype=np.int64)
            # logits [1, 10]: C = 10, H = W = 1, the width padded to 16
            want = np.zeros((10, 16), np.int64)
            want[:, 0] = np.asarray(fixed).reshape(10)
            assert np.array_equal(vals, want.reshape(-1)), platform
            if platform == 520:
                assert "logits %d 1" % fixed.radix in (d / "radix_scale_info.txt").read_text()
            else:
                assert (d / "logits_dma2seq.info").read_text() == "radix %d\nscale 1\n" % fixed.radix


def test_evaluate_matches_npuc_eval_with_any_number_of_workers(packages):
    pkg = packages["drpai"]
    one = npuc.evaluate(pkg, {"input": X}, Y, metric=["top1", "top5"], workers=1)
    two = npuc.evaluate(pkg, {"input": X}, Y, workers=2, shard_size=37)
    chunks = npuc.evaluate(pkg, ({"input": X[i:i + 100]} for i in range(0, len(X), 100)), Y, workers=1)
    assert one["samples"] == len(X) and one["top5"] >= one["top1"]
    for r in (two, chunks):
        assert r["top1"] == one["top1"] and np.array_equal(r["predictions"], one["predictions"])
    if CLI:
        text = subprocess.run([CLI, "eval", pkg, "--input", "input=" + os.path.join(SRC, "models/digits/test_x.npy"),
                               "--labels", os.path.join(SRC, "models/digits/test_y.npy")], check=True, capture_output=True,
                              text=True).stdout
        assert "accuracy: %.2f%%" % (100 * one["top1"]) in text


def test_evaluate_on_a_dask_cluster_is_the_same_with_1_2_and_4_workers(packages):
    distributed = pytest.importorskip("distributed")
    pkg = packages["generic"]
    want = npuc.evaluate(pkg, {"input": X}, Y, workers=1)
    for n in (1, 2, 4):
        with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            got = npuc.evaluate(pkg, {"input": X}, Y, client=client)
        assert got["top1"] == want["top1"] and np.array_equal(got["predictions"], want["predictions"]), n


def test_runtimes_run_concurrently_from_threads(packages):
    pkg = packages["generic"]
    want = [npuc.Runtime(pkg).run(X[i:i + 1])["logits"] for i in range(8)]
    errors = []

    def work(k):
        rt = npuc.Runtime(pkg)
        for rep in range(20):
            for i in range(8):
                if not np.array_equal(rt.run(X[i:i + 1])["logits"], want[i]):
                    errors.append((k, rep, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_bad_input_raises_clear_errors(packages, tmp_path):
    rt = npuc.Runtime(packages["generic"])
    with pytest.raises(npuc.Error, match="got float64") as e:
        rt.set_input("input", X[:1].astype(np.float64))
    assert e.value.code == "invalid argument"
    with pytest.raises(npuc.Error, match="needs shape 1x1x8x8, got 2x1x8x8"):
        rt.set_input("input", X[:2])
    with pytest.raises(npuc.Error, match="no input 'nope'"):
        rt.set_input("nope", X[:1])
    with pytest.raises(npuc.Error, match="not C-contiguous"):
        rt.set_input("input", np.zeros((1, 1, 8, 16), np.float32)[..., ::2])
    with pytest.raises(npuc.Error, match="expected a numpy array"):
        rt.set_input("input", [[1.0]])
    with pytest.raises(npuc.Error, match="no npuc element type"):
        rt.set_input("input", np.zeros((1, 1, 8, 8), np.complex64))
    with pytest.raises(npuc.Error, match="not a package directory") as e:
        npuc.Runtime(str(tmp_path / "does_not_exist"))
    assert e.value.code == "i/o error"
    with pytest.raises(npuc.Error, match="threads"):
        npuc.Runtime(packages["generic"], threads=0)
    rt.close()
    with pytest.raises(npuc.Error, match="closed"):
        rt.run(X[:1])
    with pytest.raises(npuc.Error, match="file not found"):
        npuc.translate("x", str(tmp_path / "missing.onnx"), out=str(tmp_path))
    assert not (tmp_path / "x").exists()
    with pytest.raises(npuc.Error, match="samples and"):
        npuc.evaluate(packages["generic"], {"input": X}, Y[:10], workers=1)


def test_the_helpers(tmp_path):
    from npuc import utils
    img = (np.arange(4 * 6 * 3) % 251).astype(np.uint8).reshape(4, 6, 3)
    rgba = utils.convert_pre_numpy_to_rgba(np.transpose(img, (2, 0, 1))[None], tmp_path / "x.rgba")
    back = utils.convert_binary_to_numpy(tmp_path / "x.rgba", 4, 6)
    assert np.array_equal(back, rgba) and np.array_equal(back[..., :3], img) and (back[..., 3] == 255).all()
    with pytest.raises(npuc.Error, match="holds 96 bytes"):
        utils.convert_binary_to_numpy(tmp_path / "x.rgba", 5, 6)
    canvas = np.zeros((40, 60, 3), np.uint8)
    drawn = utils.draw_boxes(canvas, [(10, 5, 20, 15, 0.9, 1)], tmp_path / "boxes.png")
    assert drawn.shape == (40, 60, 3) and drawn[5, 10:30].any() and not drawn[30:, 40:].any()
    assert (tmp_path / "boxes.png").stat().st_size > 0


def test_compare_gives_the_per_layer_table(packages):
    rows = npuc.compare(DIGITS, packages["drpai"], {"input": X[:1]})
    rt = npuc.Runtime(packages["drpai"])
    assert [r["seq"] for r in rows] == list(range(len(rt.layers)))
    matched = [r for r in rows if r["matched"]]
    assert matched and all(r["cosine"] > 0.999 for r in matched)
    assert rows[-1]["value"] == "logits" and rows[-1]["matched"]
    exact = npuc.compare(DIGITS, packages["generic"], {"input": X[:1]})
    assert exact[-1]["max_abs_err"] < 1e-4


def test_dynamic_aipp_from_python(tmp_path):
    cfg = tmp_path / "dyn.cfg"
    cfg.write_text("aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 3072\n}\n")
    r = npuc.translate("aipp", os.path.join(SRC, "tests", "data", "aipp", "aipp_net.onnx"), target="generic", out=str(tmp_path),
                       aipp=str(cfg))
    assert r.ok
    rt = npuc.Runtime(r.dir)
    assert any(i.get("aipp_for") == "image" for i in rt.inputs)
    block = bytearray(160)  # one 32x32 RGB888_U8 image, dtcPixelVarReciChn0..2 = 1/255 (float16 0x1C04)
    block[0], block[4], block[8], block[12] = 3, 1, 32, 32
    for c in range(3):
        block[136 + 2 * c], block[137 + 2 * c] = 0x04, 0x1C
    rt.set_dynamic_aipp("image", bytes(block))
    frame = (np.arange(3072) * 7 % 256).astype(np.uint8).reshape(1, 3072)
    out = rt.run({"image": frame, "mask": np.full((1, 1, 32, 32), 0.25, np.float32)})
    assert np.isfinite(out["out"]).all()
    rt.set_dynamic_aipp("image", np.frombuffer(bytes(block), np.uint8))  # a uint8 array works too
    block[0] = 9
    with pytest.raises(npuc.Error, match="aipp.format"):
        rt.set_dynamic_aipp("image", bytes(block))


def test_dynamic_aipp_by_field_and_small_frames(tmp_path):
    """Issue 47: a dict of the seed's field names gives the raw block's outputs bit for bit; a frame smaller than
    max_src_image_size holding the same picture gives the max-size frame's outputs."""
    cfg = tmp_path / "dyn.cfg"
    cfg.write_text("aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 4096\n}\n")
    r = npuc.translate("aipp", os.path.join(SRC, "tests", "data", "aipp", "aipp_net.onnx"), target="generic", out=str(tmp_path),
                       aipp=str(cfg))
    assert r.ok
    block = bytearray(160)  # one 32x32 RGB888_U8 image, crop 28x28 at (2, 2) resized to 32x32, var_reci 1/255
    block[0], block[4], block[8], block[12] = 3, 1, 32, 32
    block[64], block[65] = 1, 1  # cropSwitch, scfSwitch
    for i, v in enumerate([2, 2, 28, 28, 28, 28, 32, 32]):
        block[72 + 4 * i] = v
    for c in range(3):
        block[136 + 2 * c], block[137 + 2 * c] = 0x04, 0x1C
    fields = {"inputFormat": "RGB888_U8", "srcImageSizeW": 32, "srcImageSizeH": 32, "cropSwitch": 1, "scfSwitch": True,
              "cropStartPosW": 2, "cropStartPosH": np.int32(2), "cropSizeW": 28, "cropSizeH": 28, "scfInputSizeW": 28,
              "scfInputSizeH": 28, "scfOutputSizeW": 32, "scfOutputSizeH": 32, "dtcPixelVarReciChn0": 1 / 255,
              "dtcPixelVarReciChn1": 1 / 255, "dtcPixelVarReciChn2": np.float32(1 / 255), "dtcPixelVarReciChn3": 0.0}
    frame = (np.arange(4096) * 7 % 256).astype(np.uint8).reshape(1, 4096)
    mask = np.full((1, 1, 32, 32), 0.25, np.float32)

    def out(params, image):
        rt = npuc.Runtime(r.dir)
        rt.set_dynamic_aipp("image", params)
        return rt.run({"image": image, "mask": mask})["out"]

    want = out(bytes(block), frame)
    assert np.array_equal(out(fields, frame), want)
    assert np.array_equal(out({"batchNum": 1, **{k: v for k, v in fields.items() if not k[0] in "cds"}, "batch": [
        {k: v for k, v in fields.items() if k[0] in "cds" and not k.startswith("src")}],
        **{k: v for k, v in fields.items() if k.startswith("src")}}, frame), want)
    assert np.array_equal(out(fields, np.ascontiguousarray(frame[:, :3072])), want)  # exactly the picture
    assert np.array_equal(out(fields, np.ascontiguousarray(frame[:, :3500])), want)
    rt = npuc.Runtime(r.dir)
    rt.set_dynamic_aipp("image", fields)
    with pytest.raises(npuc.Error, match="a frame of 3000 bytes per image is smaller than the 32x32 RGB888_U8 source.*3072 bytes"):
        rt.set_input("image", np.ascontiguousarray(frame[:, :3000]))
    for bad, message in [({**fields, "nosuchField": 1}, "nosuchField: unknown field"),
                         ({k: v for k, v in fields.items() if k != "srcImageSizeH"}, "srcImageSizeH: missing"),
                         ({**fields, "cropSwitch": 300}, "cropSwitch: 300 does not fit the field"),
                         ({**fields, "cropSizeW": 28.5}, "cropSizeW: '28.5' is not an integer"),
                         ({**fields, "cropSizeW": [1]}, "cropSizeW: must be a number"),
                         ({**fields, "inputFormat": "NV12"}, "inputFormat: unknown format 'NV12'"),
                         ({**fields, "cropStartPosW": 10}, "aipp.crop")]:
        with pytest.raises(npuc.Error, match=message):
            rt.set_dynamic_aipp("image", bad)
