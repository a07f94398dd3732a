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
    # Issue 47.12: Kneron's platforms only; onnx_file takes what package= takes (a path-like; a package folder).
    for platform in (520, 720):
        assert np.array_equal(npuc.inference([X[:1]], ["input"], package=pkg, platform=platform)[0], out[0])
    with pytest.raises(npuc.Error, match="platform must be 520 or 720"):
        npuc.inference([X[:1]], ["input"], package=pkg, platform=630)
    import pathlib
    assert np.array_equal(npuc.inference([X[:1]], ["input"], onnx_file=pathlib.Path(DIGITS))[0], flt[0])
    assert np.array_equal(npuc.inference([X[:1]], ["input"], onnx_file=pathlib.Path(pkg))[0], out[0])
    # model_file= is onnx_file= for every format (detected from the file); not both.
    assert np.array_equal(npuc.inference([X[:1]], ["input"], model_file=DIGITS)[0], flt[0])
    with pytest.raises(npuc.Error, match="not both"):
        npuc.inference([X[:1]], ["input"], model_file=DIGITS, onnx_file=DIGITS)


def test_model_id_picks_a_model_of_a_bundle(packages, tmp_path):
    # Kneron's multi-model NEF, whose model_id picks a model: npuc.bundle puts packages in one folder under ids.
    folder = npuc.bundle("nef", {211: packages["drpai"], 5: packages["generic"]}, out=str(tmp_path))
    assert sorted(npuc.bundle_model_ids(folder)) == [5, 211]
    for model_id, target in ((211, "drpai"), (5, "generic")):
        got = npuc.inference([X[1:2]], ["input"], package=folder, model_id=model_id)
        assert np.array_equal(got[0], npuc.inference([X[1:2]], ["input"], package=packages[target])[0])
    with pytest.raises(npuc.Error, match=r"is a bundle of models \(ids 5, 211\): give model_id"):
        npuc.inference([X[:1]], ["input"], package=folder)
    with pytest.raises(npuc.Error, match=r"holds no model of id 7 \(its models: 5, 211\)"):
        npuc.inference([X[:1]], ["input"], package=folder, model_id=7)
    with pytest.raises(npuc.Error, match="is no bundle of models"):
        npuc.inference([X[:1]], ["input"], package=packages["generic"], model_id=5)
    with pytest.raises(npuc.Error, match="is a bundle of models"):
        npuc.Runtime(str(folder))
    with pytest.raises(npuc.Error, match="model id 3 is given twice|a bundle holds 1 to"):
        npuc.bundle("none", {}, out=str(tmp_path))
    with pytest.raises(npuc.Error, match="no such file|missing|not"):
        npuc.bundle("bad", {1: str(tmp_path / "nothing")}, out=str(tmp_path))
    assert not (tmp_path / "bad").exists()  # nothing half-written
    if CLI:  # the command line's bundle and simulate --model-id
        subprocess.run([CLI, "bundle", "cli_nef", "7=" + packages["generic"], "-o", str(tmp_path)], check=True, capture_output=True)
        np.save(tmp_path / "x.npy", X[:1])
        subprocess.run([CLI, "simulate", str(tmp_path / "cli_nef"), "--model-id", "7", "--input", "input=" + str(tmp_path / "x.npy"),
                        "-o", str(tmp_path / "sim")], check=True, capture_output=True)
        got = np.load(tmp_path / "sim" / "logits.npy")
        assert np.array_equal(got, npuc.Runtime(packages["generic"]).run(X[:1])["logits"])


def test_fixed_point_outputs_of_int8_packages(tmp_path):
    # int8-affine: the logits dequantize int8 codes; 'fixed' gives those codes with their scale and zero point.
    r = npuc.translate("q", DIGITS, target="generic-int8", out=str(tmp_path), calib={"input": X[:64]})
    assert r.ok and r.quantized
    # The logits' codes have zero point 0: Kneron's float = fixed / kneron_scale / 2^radix holds (radix 0, 1 / scale).
    fixed = npuc.inference([X[:1]], ["input"], package=str(r.dir), data_type="fixed")[0]
    flt = npuc.inference([X[:1]], ["input"], package=str(r.dir))[0]
    assert isinstance(fixed, npuc.FixedArray) and fixed.dtype == np.int8 and fixed.scale > 0 and fixed.zero_point == 0
    assert np.array_equal(fixed.to_float(), flt)
    assert np.allclose(np.asarray(fixed, np.float64) / fixed.kneron_scale / 2.0 ** fixed.radix, flt, rtol=1e-6, atol=0)
    # Issue 47.5: codes with a zero point (a Relu output: range [0, m], zero point -128) cannot be written as Kneron's
    # fixed / scale / 2^radix, which has none: refused with the reason (it gave radix 0, scale 1 / s, off by zp x s).
    from onnx import TensorProto, helper, numpy_helper, save
    w = numpy_helper.from_array(np.random.default_rng(3).standard_normal((4, 1, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["input", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
                          "relu_out", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "relu_out.onnx"))
    ra = npuc.translate("ra", str(tmp_path / "relu_out.onnx"), target="generic-int8", out=str(tmp_path), calib={"input": X[:64]})
    q = [l for l in npuc.Runtime(ra.dir).layers if l.get("float_value") == "y" and "scale" in l]
    assert len(q) == 1 and q[0]["zero_point"] != 0
    with pytest.raises(npuc.Error, match="zero point %d .*has no zero point" % q[0]["zero_point"]):
        npuc.inference([X[:1]], ["input"], package=str(ra.dir), data_type="fixed")
    codes = npuc.FixedArray(np.arange(-3, 4, dtype=np.int8), q[0]["scale"], q[0]["zero_point"])
    assert codes.radix is None and codes.kneron_scale is None
    assert np.array_equal(codes.to_float(), ((np.arange(-3, 4) - q[0]["zero_point"]) * q[0]["scale"]).astype(np.float32))
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
        # CSIM's RGBA input (issue 47.5): the int8 codes of the package's input quantization, which simulate reads back
        # as the values they stand for: the outputs are those of the float input itself, bit for bit.
        from npuc import utils
        codes = utils.convert_pre_numpy_to_rgba(X[:1], tmp_path / "x.rgba", package=str(k.dir))
        assert codes.dtype == np.int8 and codes.shape == (8, 8, 4) and not codes[..., 1:].any()
        subprocess.run([CLI, "simulate", str(k.dir), "--input", "input=%s" % (tmp_path / "x.rgba"), "-o", str(tmp_path / "rgba")],
                       check=True, capture_output=True)
        want = npuc.Runtime(k.dir).run(X[:1])["logits"]
        assert np.load(tmp_path / "rgba" / "logits.npy").tobytes() == want.tobytes()
        bad = subprocess.run([CLI, "simulate", str(k.dir), "--input", "input=%s" % (tmp_path / "n.rgba"), "-o", str(tmp_path / "r2")],
                             capture_output=True, text=True)
        assert bad.returncode != 0 and "file not found" in bad.stderr
        (tmp_path / "short.rgba").write_bytes(b"\0" * 255)
        bad = subprocess.run([CLI, "simulate", str(k.dir), "--input", "input=%s" % (tmp_path / "short.rgba"), "-o", str(tmp_path / "r2")],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and "needs exactly 256 bytes (8x8 pixels, RGBA8888), the file has 255" in bad.stderr, bad.stderr


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
    assert np.array_equal(back, rgba) and np.array_equal(back[..., :3], img) and (back[..., 3] == 0).all()
    # Issue 47.5: [1, C, H, W] is always the model's NCHW, [1, 3, 5, 4] too (it was read as an HWC 3x5 image of 4
    # channels), and the last axis of an image [H, W, C] its channels.
    chw = np.arange(3 * 5 * 4).reshape(1, 3, 5, 4).astype(np.float32)
    got = utils.convert_pre_numpy_to_rgba(chw, tmp_path / "y.rgba")
    assert got.shape == (5, 4, 4) and np.array_equal(got[..., :3], np.transpose(chw[0], (1, 2, 0)))
    # Normalised values need their quantization (they were written as 0 and 1): refused without it, int8 codes with it.
    norm = np.linspace(-1, 1, 3 * 5 * 4, dtype=np.float32).reshape(1, 3, 5, 4)
    with pytest.raises(npuc.Error, match="not uint8 pixels"):
        utils.convert_pre_numpy_to_rgba(norm, tmp_path / "n.rgba")
    codes = utils.convert_pre_numpy_to_rgba(norm, tmp_path / "n.rgba", radix=6)
    assert codes.dtype == np.int8 and np.array_equal(codes[..., :3], np.clip(np.rint(np.transpose(norm[0], (1, 2, 0)) * 64), -128, 127))
    assert np.fromfile(tmp_path / "n.rgba", np.int8).tobytes() == codes.tobytes()
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


def _two_input_model(path):
    """z = x + y, x and y [1, 4] float32 (a model whose inputs can be forgotten one at a time)."""
    from onnx import TensorProto, helper, save
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "two_inputs", [x, y], [z])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_a_missing_input_is_an_error_never_zeros_or_the_last_calls(tmp_path):
    # Issue 47.1: the device keeps what was set, but an input never set is an error (it used to run on zeros), and
    # npuc.inference needs every input each call (it used to reuse the previous call's array from its cached runtime).
    _two_input_model(tmp_path / "two.onnx")
    r = npuc.translate("two", str(tmp_path / "two.onnx"), target="generic", out=str(tmp_path))
    assert r.ok
    x, y = np.full((1, 4), 1.0, np.float32), np.full((1, 4), 10.0, np.float32)
    rt = npuc.Runtime(r.dir)
    rt.set_input("x", x)
    with pytest.raises(npuc.Error, match="input 'y' never set") as e:
        rt.run()
    assert e.value.code == "invalid argument"
    with pytest.raises(npuc.Error, match="input 'y' never set"):
        rt.run({"x": x})
    rt.set_input("y", y)
    assert np.array_equal(rt.run()["z"], x + y)
    assert np.array_equal(rt.run({"x": 2 * x})["z"], 2 * x + y)  # (y stays set, as on the device)
    with pytest.raises(npuc.Error, match="input 'x', 'y' never set"):
        npuc.Runtime(r.dir).run()
    with pytest.raises(npuc.Error, match="input 'y' of .* not given"):
        npuc.inference([x], ["x"], package=str(r.dir))
    assert np.array_equal(npuc.inference([x, y], ["x", "y"], package=str(r.dir))[0], x + y)
    with pytest.raises(npuc.Error, match="input 'x' of .* not given"):
        npuc.inference([y], ["y"], package=str(r.dir))  # (the cached runtime holds the last x: refused, not reused)


def test_a_retranslated_package_is_reloaded_by_inference_and_evaluate(tmp_path):
    # Issue 46.6: the cached runtimes of npuc.inference and npuc.evaluate(workers=1) are keyed by the package's
    # content: translating another model to the same folder is seen (they kept running the old package).
    a = npuc.translate("m", DIGITS, target="generic", out=str(tmp_path))
    pkg = str(a.dir)
    first = npuc.inference([X[:1]], ["input"], package=pkg)[0]
    acc = npuc.evaluate(pkg, {"input": X}, Y, workers=1)["top1"]
    assert acc > 0.8
    # The same model with its classifier's bias shifted hard towards class 0: a different package at the same path.
    from onnx import load, numpy_helper, save
    m = load(DIGITS)
    inits = {i.name: i for i in m.graph.initializer}
    gemm = [n for n in m.graph.node if n.op_type == "Gemm"][-1]
    bias = numpy_helper.to_array(inits[gemm.input[2]]).copy()
    bias[0] += 1000.0
    inits[gemm.input[2]].CopyFrom(numpy_helper.from_array(bias, gemm.input[2]))
    save(m, str(tmp_path / "biased.onnx"))
    b = npuc.translate("m", str(tmp_path / "biased.onnx"), target="generic", out=str(tmp_path))
    assert str(b.dir) == pkg and b.content_hash != a.content_hash
    second = npuc.inference([X[:1]], ["input"], package=pkg)[0]
    assert not np.array_equal(first, second) and int(np.argmax(second)) == 0
    got = npuc.evaluate(pkg, {"input": X}, Y, workers=1)
    assert got["top1"] == pytest.approx(float(np.mean(Y == 0))) and (got["predictions"] == 0).all()


def test_evaluate_checks_its_data_as_set_input_does(packages):
    # Issue 46.6: NHWC data for an NCHW package, flat vectors, uint8 and int64 were reshaped and cast silently.
    pkg = packages["generic"]
    with pytest.raises(npuc.Error, match="layout='NHWC'"):
        npuc.evaluate(pkg, {"input": np.transpose(X, (0, 2, 3, 1))}, Y, workers=1)
    nhwc = npuc.evaluate(pkg, {"input": np.transpose(X, (0, 2, 3, 1)).copy()}, Y, workers=1, layout="NHWC")
    assert nhwc["top1"] == npuc.evaluate(pkg, {"input": X}, Y, workers=1)["top1"]
    with pytest.raises(npuc.Error, match="each sample must be 1x8x8"):
        npuc.evaluate(pkg, {"input": X.reshape(len(X), -1)}, Y, workers=1)
    for dt in (np.uint8, np.int64, np.float64):
        with pytest.raises(npuc.Error, match="the data set's is %s" % np.dtype(dt).name) as e:
            npuc.evaluate(pkg, {"input": X.astype(dt)}, Y, workers=1)
        assert isinstance(e.value, npuc.Error)
    assert npuc.evaluate(pkg, {"input": X.astype(np.float64)}, Y, workers=1, dtype=np.float32)["samples"] == len(X)
    with pytest.raises(npuc.Error, match="layout must be"):
        npuc.evaluate(pkg, {"input": X}, Y, workers=1, layout="CHWN")


def test_outputs_whose_names_sanitize_alike_get_distinct_files(tmp_path):
    # Issue 46.2: outputs 'a/b' and 'a_b' both became a_b.npy in `run` and `simulate` (one overwrote the other). A name
    # that needs no change keeps its file; the other gets _2 (docs/cli.md, "Output file names").
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    from onnx import TensorProto, helper, save
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("a/b", "a_b")]
    g = helper.make_graph([helper.make_node("Neg", ["x"], ["a/b"]), helper.make_node("Relu", ["x"], ["a_b"])], "clash", [x], outs)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "clash.onnx"))
    v = np.array([[-2, -1, 1, 2]], np.float32)
    np.save(tmp_path / "x.npy", v)
    run = subprocess.run([CLI, "run", str(tmp_path / "clash.onnx"), "--input", "x=%s" % (tmp_path / "x.npy"), "--output-dir",
                          str(tmp_path / "run")], capture_output=True, text=True, check=True)
    assert np.array_equal(np.load(tmp_path / "run" / "a_b.npy"), np.maximum(v, 0))
    assert np.array_equal(np.load(tmp_path / "run" / "a_b_2.npy"), -v)
    assert "a/b: float32 1x4 -> %s" % (tmp_path / "run" / "a_b_2.npy") in run.stdout, run.stdout
    r = npuc.translate("clash", str(tmp_path / "clash.onnx"), target="generic", out=str(tmp_path))
    sim = subprocess.run([CLI, "simulate", str(r.dir), "--input", "x=%s" % (tmp_path / "x.npy"), "-o", str(tmp_path / "sim")],
                         capture_output=True, text=True, check=True)
    assert np.array_equal(np.load(tmp_path / "sim" / "a_b.npy"), np.maximum(v, 0))
    assert np.array_equal(np.load(tmp_path / "sim" / "a_b_2.npy"), -v)
    assert "a/b float32 1x4 -> %s.npy" % (tmp_path / "sim" / "a_b_2") in sim.stdout, sim.stdout


def test_csv_reports_quote_names_with_commas_quotes_and_newlines(tmp_path):
    # Issue 46.8: the summary quoted only names with a comma (a quote or a newline broke its rows), and simulate's
    # trace index and compare's table wrapped names in quotes without doubling those inside.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    import csv
    from onnx import TensorProto, helper, save
    odd = 'conv,"one"\nline two'
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ['t"1'], name=odd), helper.make_node("Neg", ['t"1'], ["y"], name="plain")],
                          "odd", [x], [y])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "odd.onnx"))
    r = npuc.translate("odd", str(tmp_path / "odd.onnx"), target="generic", out=str(tmp_path))
    with open(r.dir / "odd_summary.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert all(len(row) == 20 for row in rows), rows
    assert odd in [row[1] for row in rows]
    np.save(tmp_path / "x.npy", np.ones((1, 4), np.float32))
    subprocess.run([CLI, "simulate", str(r.dir), "--input", "x=%s" % (tmp_path / "x.npy"), "-o", str(tmp_path / "s"), "--trace",
                    str(tmp_path / "t")], check=True, capture_output=True)
    with open(tmp_path / "t" / "trace_index.csv", newline="") as f:
        trace = list(csv.DictReader(f))
    assert [t["name"] for t in trace] == [odd, "plain"] and trace[0]["output"] == 't"1'
    subprocess.run([CLI, "compare", str(tmp_path / "odd.onnx"), str(r.dir), "--input", "x=%s" % (tmp_path / "x.npy"), "-o",
                    str(tmp_path / "c")], check=True, capture_output=True)
    with open(tmp_path / "c" / "compare.csv", newline="") as f:
        cmp = list(csv.DictReader(f))
    assert [c["layer"] for c in cmp] == [odd, "plain"] and cmp[0]["value"] == 't"1' and all(c["matched"] == "1" for c in cmp)


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


def test_every_node_of_an_unknown_op_has_its_row_in_the_report(tmp_path):
    # Issue 47.9: a model npuc cannot import gets one report row per node of an unknown op, with its node_idx, name and
    # op_type (the report had one row without them).
    import csv
    from onnx import TensorProto, helper, save
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"), helper.make_node("FooOp", ["a"], ["b"], name="bar"),
             helper.make_node("Baz", ["b"], ["y"], name="qux", domain="com.acme")]
    m = helper.make_model(helper.make_graph(nodes, "unknown", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.acme", 1)])
    save(m, str(tmp_path / "unknown.onnx"))
    with pytest.raises(npuc.Error, match="unknown op 'FooOp'.*1 more node") as e:
        npuc.translate("u", str(tmp_path / "unknown.onnx"), target="drpai", out=str(tmp_path))
    assert e.value.code == "unsupported"
    with open(tmp_path / "u" / "u_error_report.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["node_idx"], r["name"], r["op_type"]) for r in rows] == [("1", "bar", "FooOp"), ("2", "qux", "com.acme.Baz")]
    assert all(r["rule_id"] == "drpai.import" and "Not Support Layer Error" in r["message"] for r in rows)


def test_drpai_messages_are_the_manuals(tmp_path):
    # Issue 47.9: where the DRP-AI manual prints a message (§9), npuc prints it too, so scripts that grep for it work.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    from onnx import TensorProto, helper, save
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    save(helper.make_model(helper.make_graph([helper.make_node("Erf", ["x"], ["y"], name="bar")], "erf", [x], [y]),
                           opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "erf.onnx"))
    save(helper.make_model(helper.make_graph([helper.make_node("FooOp", ["x"], ["y"], name="baz")], "foo", [x], [y]),
                           opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "foo.onnx"))
    r = subprocess.run([CLI, "translate", "erf", "-onnx", str(tmp_path / "erf.onnx"), "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and "[Error(DRP Converter-003)] Not support layer: 'Erf'" in r.stdout, r.stdout
    r = subprocess.run([CLI, "check", str(tmp_path / "erf.onnx"), "--target", "drpai", "--no-report"], capture_output=True, text=True)
    assert r.returncode == 1 and "Tool does not support onnx operator 'Erf'." in r.stdout, r.stdout
    r = subprocess.run([CLI, "translate", "foo", "-onnx", str(tmp_path / "foo.onnx"), "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "ONNX: Not Support Layer Error: Not Support\nName: baz\nOp : FooOp\n" in r.stdout, r.stdout
    small = os.path.join(SRC, "tests", "data", "small_plane_conv.onnx")  # 3x3 stride 2 unpadded on 4x4: needs 5x7
    r = subprocess.run([CLI, "check", small, "--target", "drpai", "--no-report"], capture_output=True, text=True)
    assert ("ONNX: Conv Minimum plane size violation\n3x3 st=2 pad=(0, 0, 0, 0))\nHW requirement of minimum 2D plane size: "
            "(width 5, height 7\nActual input : (width 4, height 4)\n") in r.stdout, r.stdout
    r = subprocess.run([CLI, "check", str(tmp_path / "erf.onnx"), "--target", "generic", "--no-report"], capture_output=True, text=True)
    assert "DRP Converter" not in r.stdout


def test_a_caffe_model_from_python(tmp_path):
    # A Caffe network and its weights (docs/frontends.md) through the same calls as an ONNX model: model_io, run_model
    # and translate take caffe_model=; the generic package computes run_model's outputs bit for bit.
    net = os.path.join(SRC, "tests", "data", "caffe", "small_net")
    proto, weights = os.path.join(net, "model.prototxt"), os.path.join(net, "model.caffemodel")
    ins, outs = npuc.model_io(proto, caffe_model=weights)
    assert [i["name"] for i in ins] == ["data"] and [o["name"] for o in outs] == ["prob"]
    x = np.load(os.path.join(net, "input_data.npy"))
    ref = npuc.run_model(proto, {"data": x}, caffe_model=weights)["prob"]
    assert np.allclose(ref, np.load(os.path.join(net, "output_prob.npy")), rtol=1e-5, atol=1e-6)
    r = npuc.translate("small", proto, caffe_model=weights, target="generic", out=str(tmp_path))
    assert r.ok
    assert np.array_equal(npuc.Runtime(r.dir).run([x])["prob"], ref)
    with pytest.raises(npuc.Error, match="give its trained weights"):
        npuc.model_io(proto)


def test_evaluate_shards_may_arrive_unaligned(packages):
    # A shard Dask deserialized can sit at an odd byte offset in its frame (seen with scattered data): run_shard
    # copies such an array instead of refusing it.
    from npuc.evaluate import run_shard
    buf = bytearray(X[:10].nbytes + 1)
    odd = np.frombuffer(buf, dtype=np.float32, offset=1, count=X[:10].size).reshape(X[:10].shape)
    odd[...] = X[:10]
    assert not odd.flags.aligned
    pkg = packages["generic"]
    assert np.array_equal(run_shard(pkg, {"input": odd}, "logits", 1), run_shard(pkg, {"input": X[:10]}, "logits", 1))


def test_a_stateful_model_runs_frame_after_frame(tmp_path):
    """lstm_stream (tests/data/recurrent/generate.py): one frame in, the LSTM's states as inputs and outputs. Fed back
    frame after frame through npuc.Runtime, the 12 frames give PyTorch's outputs for the whole sequence."""
    d = os.path.join(SRC, "tests", "data", "recurrent")
    r = npuc.translate("lstm_stream", os.path.join(d, "lstm_stream.onnx"), target="generic", out=str(tmp_path))
    assert r.ok
    rt = npuc.Runtime(str(r.dir))
    frames = np.load(os.path.join(d, "lstm_stream.frames.npy"))
    h = c = np.zeros((2, 1, 8), np.float32)
    ys = []
    for x in frames:
        out = rt.run({"x": x, "h0": h, "c0": c})
        ys.append(out["y"])
        h, c = out["h"], out["c"]
    np.testing.assert_allclose(np.stack(ys), np.load(os.path.join(d, "lstm_stream.y.npy")), atol=1e-5)
    np.testing.assert_allclose(h, np.load(os.path.join(d, "lstm_stream.h.npy")), atol=1e-5)
    np.testing.assert_allclose(c, np.load(os.path.join(d, "lstm_stream.c.npy")), atol=1e-5)


def test_a_package_serving_a_shape_range(tmp_path):
    # translate --input_shape "x:1,3,24~40,20~36": one package, every size inside; set_input with a picture's own
    # shape selects it, and the outputs are the reference engine's bits at that size (generic: float32).
    model = os.path.join(SRC, "tests", "data", "ranges", "ranges_net.onnx")
    r = npuc.translate("ranges", model, target="generic", out=str(tmp_path),
                       input_shape_ranges={"x": [(1, 1), (3, 3), (24, 40), (20, 36)]})
    assert r.ok
    rt = npuc.Runtime(str(r.dir), threads=2)
    assert rt.shape_ranges == [{"value": "x", "dim": 2, "lo": 24, "hi": 40, "also": []},
                               {"value": "x", "dim": 3, "lo": 20, "hi": 36, "also": []}]
    rng = np.random.RandomState(3)
    for h, w in ((24, 20), (37, 29), (40, 36), (31, 22)):
        x = rng.rand(1, 3, h, w).astype(np.float32)
        got = rt.run({"x": x})
        want = npuc.run_model(model, {"x": x})
        assert rt.inputs[0]["shape"] == (1, 3, h, w)
        for name in ("y", "feat"):
            assert got[name].shape == want[name].shape and np.array_equal(got[name], want[name]), (h, w, name)
    rt.set_input_shape("x", [1, 3, 30, 30])
    assert rt.outputs[1]["shape"] == (1, 16, 7, 7)
    with pytest.raises(npuc.Error, match=r"input 'x' takes shape \[1,3,24~40,20~36\]"):
        rt.set_input("x", np.zeros((1, 3, 41, 30), np.float32))
