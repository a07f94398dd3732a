"""Dynamic tensors in packages (docs/package-format.md, "Dynamic tensors"): NonZero's output, whose shape the data
decide, is held at its capacity with an extent the layer writes; transpose and gather_nd layers read it and write
their own; the runtime returns outputs at the run's dims. Oracle: numpy (nonzero, argwhere, boolean indexing), on
frames with no, some and only non-zeros (-0.0 is zero, NaN is not)."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc

CLI = os.environ.get("NPUC_CLI")
SHAPE = (3, 4, 5)


def frames():
    rng = np.random.default_rng(5)
    some = rng.standard_normal(SHAPE).astype(np.float32)
    some[rng.random(SHAPE) < 0.5] = 0
    some[0, 0, :2] = [-0.0, np.nan]
    return {"some": some, "none": np.zeros(SHAPE, np.float32), "all": np.full(SHAPE, 2.5, np.float32)}


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    d = tmp_path_factory.mktemp("dyn")
    nodes = [helper.make_node("NonZero", ["x"], ["where"]),
             helper.make_node("Greater", ["x", "t"], ["above"]),
             helper.make_node("NonZero", ["above"], ["where_above"])]
    graph = helper.make_graph(nodes, "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("where", TensorProto.INT64, (3, "n")),
                               helper.make_tensor_value_info("where_above", TensorProto.INT64, (3, "m"))],
                              [numpy_helper.from_array(np.array(1.0, np.float32), "t")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(d / "nonzero.onnx"))
    subprocess.run([CLI, "translate", "nonzero", "-onnx", str(d / "nonzero.onnx"), "--target", "generic", "--out", str(d)],
                   check=True, capture_output=True)
    return d / "nonzero"


def test_outputs_are_numpys_nonzero_at_the_runs_size(package):
    for exact in (True, False):
        for threads in (1, 2):
            rt = npuc.Runtime(str(package), exact=exact, threads=threads)
            for name, x in frames().items():
                out = rt.run({"x": x}, raw=True)
                for key, want in (("where", np.array(np.nonzero(x))), ("where_above", np.array(np.nonzero(x > 1.0)))):
                    got = out[key]
                    assert got.dtype == np.int64 and got.shape == want.shape, (name, key, got.shape, want.shape)
                    assert np.array_equal(got, want), (name, key)


def test_the_manifest_gives_the_capacity_and_the_extent(package):
    import json
    m = json.loads((package / "manifest.json").read_text())
    where = next(o for o in m["outputs"] if o["name"] == "where")
    assert where["shape"] == [3, 60] and where["extent"]["shape"] == [2] and where["extent"]["dtype"] == "int64"
    info = {o["name"]: o for o in npuc.Runtime(str(package)).outputs}
    assert info["where"]["dynamic"] is True and tuple(info["where"]["shape"]) == (3, 60)


def test_simulate_writes_the_runs_size(package, tmp_path):
    x = frames()["some"]
    np.save(tmp_path / "x.npy", x)
    subprocess.run([CLI, "simulate", str(package), "--input", "x=%s" % (tmp_path / "x.npy"), "-o", str(tmp_path / "sim")],
                   check=True, capture_output=True)
    got = [np.load(p) for p in sorted((tmp_path / "sim").rglob("*.npy")) if "where_above" not in p.name and "where" in p.name]
    assert got and np.array_equal(got[0], np.array(np.nonzero(x))), [g.shape for g in got]


def test_transpose_and_gather_nd_read_dynamic_tensors(tmp_path):
    """tests/data/dynamic/nonzero_gather.onnx: NonZero -> Transpose -> GatherND, each layer writing its extent; numpy's
    argwhere and boolean indexing as the oracle."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "nonzero_gather.onnx")
    subprocess.run([CLI, "translate", "nzg", "-onnx", model, "--target", "generic", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for exact in (True, False):
        for threads in (1, 2):
            rt = npuc.Runtime(str(tmp_path / "nzg"), exact=exact, threads=threads)
            for name, x in frames().items():
                out = rt.run({"x": x}, raw=True)
                assert np.array_equal(out["idx"], np.argwhere(x)), (name, out["idx"].shape)
                assert out["vals"].dtype == np.float32 and np.array_equal(out["vals"], x[x != 0], equal_nan=True), name


def test_a_layer_reading_a_dynamic_tensor_is_named_no_package_written(tmp_path):
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    nodes = [helper.make_node("NonZero", ["x"], ["where"]), helper.make_node("ArgMax", ["where"], ["y"], axis=1, keepdims=0)]
    graph = helper.make_graph(nodes, "nz_t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (4,))],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, (1,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "nz_t.onnx"))
    r = subprocess.run([CLI, "translate", "nz_t", "-onnx", str(tmp_path / "nz_t.onnx"), "--target", "generic", "--out", str(tmp_path)],
                       capture_output=True, text=True)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "(ArgMax): " in text and "ArgMax does not read one in packages yet" in text, text
    assert not (tmp_path / "nz_t" / "manifest.json").exists()


def test_topk_of_a_computed_k_and_gather_on_dynamic_tensors(tmp_path):
    """tests/data/dynamic/sorted_boxes.onnx: the boxes whose score passes 0.3 by descending score — NonZero, Transpose,
    GatherND, Shape (the count, as TopK's k), TopK, Gather: numpy's stable sort as the oracle (ties: the lower index
    first, as ONNX's TopK), with no, some, tied and only passing scores."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "sorted_boxes.onnx")
    subprocess.run([CLI, "translate", "sb", "-onnx", model, "--target", "generic", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    rng = np.random.default_rng(3)
    cases = [rng.random(32), np.zeros(32), np.full(32, 0.9), np.round(rng.random(32) * 4) / 4]
    for exact in (True, False):
        for threads in (1, 2):
            rt = npuc.Runtime(str(tmp_path / "sb"), exact=exact, threads=threads)
            for scores in cases:
                scores = scores.astype(np.float32)
                boxes = rng.standard_normal((32, 4)).astype(np.float32)
                out = rt.run({"scores": scores, "boxes": boxes}, raw=True)
                keep = np.nonzero(scores > np.float32(0.3))[0]
                order = np.argsort(-scores[keep], kind="stable")
                assert out["n"].tolist() == [len(keep)]
                assert np.array_equal(out["sorted"], scores[keep][order])
                assert np.array_equal(out["sorted_boxes"], boxes[keep][order])


def test_the_detectors_candidates_before_nms_equal_the_engine(tmp_path):
    """tests/data/detect/detector.onnx (torchvision's post-processing) cut before its If (the batched NMS): the per-class
    chains — threshold, NonZero, GatherND, Shape, ReduceMin (k = min(20, n)), TopK, Gather, ConstantOfShape (labels) —
    and the Concats of their dynamic results, as a package: the engine's bits on the three pictures (8, 36 and 0
    candidates), exact and fast, 1 and 2 threads."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    data = os.path.join(os.path.dirname(__file__), "..", "data", "detect")
    model = onnx.load(os.path.join(data, "detector.onnx"))
    outs = {"/Concat_4_output_0": TensorProto.FLOAT, "/Concat_5_output_0": TensorProto.FLOAT, "/Concat_6_output_0": TensorProto.INT64}
    del model.graph.output[:]
    for name, t in outs.items():
        model.graph.output.append(helper.make_tensor_value_info(name, t, None))
    onnx.save(model, str(tmp_path / "cut.onnx"))
    subprocess.run([CLI, "translate", "cut", "-onnx", str(tmp_path / "cut.onnx"), "--target", "generic", "--out", str(tmp_path)],
                   check=True, capture_output=True)
    counts = []
    for i in range(3):
        x = np.load(os.path.join(data, "detector.in%d.npy" % i))
        want = npuc.run_model(str(tmp_path / "cut.onnx"), {"image": x})
        counts.append(want["/Concat_5_output_0"].shape[0])
        for exact in (True, False):
            for threads in (1, 2):
                got = npuc.Runtime(str(tmp_path / "cut"), exact=exact, threads=threads).run({"image": x}, raw=True)
                for name in outs:
                    assert got[name].shape == want[name].shape and np.array_equal(got[name], want[name]), (i, name, exact, threads)
    assert counts == [8, 36, 0]


def test_a_concat_of_many_dynamic_tensors_is_a_chain(tmp_path):
    """tests/data/dynamic/concat_chain.onnx: the non-zeros of five rows concatenated — five dynamic inputs, so partial
    concats of at most three, each reading and writing extents; numpy as the oracle."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "concat_chain.onnx")
    subprocess.run([CLI, "translate", "cc", "-onnx", model, "--target", "generic", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    import json
    kinds = [l["kind"] for l in json.loads((tmp_path / "cc" / "manifest.json").read_text())["layers"]]
    assert kinds.count("concat") >= 2, kinds
    rng = np.random.default_rng(9)
    for exact in (True, False):
        for threads in (1, 2):
            rt = npuc.Runtime(str(tmp_path / "cc"), exact=exact, threads=threads)
            for x in (rng.standard_normal((5, 8)) * (rng.random((5, 8)) < 0.5), np.zeros((5, 8)), np.ones((5, 8))):
                x = x.astype(np.float32)
                want = np.concatenate([np.array(np.nonzero(x[i:i + 1])) for i in range(5)], axis=1)
                assert np.array_equal(rt.run({"x": x}, raw=True)["all"], want)


def test_int8_packages_keep_dynamic_tensors_float(tmp_path):
    """generic-int8: the inputs are quantized, the dynamic tensors after the NonZero stay float (no QDQ pair on them);
    exact and fast runs agree bit for bit and with the engine on the saved QDQ model, and the scores are the float
    model's within one quantization step."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "sorted_boxes.onnx")
    rng = np.random.default_rng(11)
    np.save(tmp_path / "sc.npy", rng.random(4 * 32).astype(np.float32))
    np.save(tmp_path / "bx.npy", rng.standard_normal((4 * 32, 4)).astype(np.float32))
    subprocess.run([CLI, "translate", "sbq", "-onnx", model, "--target", "generic-int8", "--calib",
                    "scores=%s" % (tmp_path / "sc.npy"), "--calib", "boxes=%s" % (tmp_path / "bx.npy"), "--out", str(tmp_path),
                    "--save-qdq-onnx"], check=True, capture_output=True)
    scores = rng.random(32).astype(np.float32)
    boxes = rng.standard_normal((32, 4)).astype(np.float32)
    a = npuc.Runtime(str(tmp_path / "sbq"), exact=True).run({"scores": scores, "boxes": boxes}, raw=True)
    b = npuc.Runtime(str(tmp_path / "sbq"), threads=2).run({"scores": scores, "boxes": boxes}, raw=True)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert a["sorted"].dtype == np.float32
    want = npuc.run_model(str(tmp_path / "sbq" / "sbq_qdq.onnx"), {"scores": scores, "boxes": boxes})  # (the engine)
    assert all(np.array_equal(a[k], want[k]) for k in want)
    keep = scores[scores > np.float32(0.3)]
    if a["n"][0] == len(keep):
        assert np.abs(np.sort(a["sorted"]) - np.sort(keep)).max() <= 1.0 / 255 + 1e-6


def test_element_wise_layers_on_dynamic_tensors(tmp_path):
    """tests/data/dynamic/elementwise.onnx: Mul, Add, Sqrt, Greater, Cast and a broadcast Add on the kept scores and
    boxes (binary, unary, typed_binary and cast layers with extents); numpy as the oracle."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "elementwise.onnx")
    subprocess.run([CLI, "translate", "ew", "-onnx", model, "--target", "generic", "--out", str(tmp_path)], check=True,
                   capture_output=True)
    rng = np.random.default_rng(4)
    shift = np.array([1, -2, 0.5, 4], np.float32)
    for exact in (True, False):
        for threads in (1, 2):
            rt = npuc.Runtime(str(tmp_path / "ew"), exact=exact, threads=threads)
            for scores in (rng.random(32), np.zeros(32), np.full(32, 0.9)):
                scores = scores.astype(np.float32)
                boxes = rng.standard_normal((32, 4)).astype(np.float32)
                out = rt.run({"scores": scores, "boxes": boxes}, raw=True)
                keep = scores > np.float32(0.3)
                assert np.array_equal(out["root"], np.sqrt(scores[keep] * np.float32(2) + np.float32(1)))
                assert out["high_i"].dtype == np.int32 and np.array_equal(out["high_i"], (scores[keep] > 0.5).astype(np.int32))
                assert np.array_equal(out["moved"], boxes[keep] + shift)


def test_a_pipeline_hands_extents_to_the_next_stage(tmp_path):
    """sorted_boxes cut into two layers groups before its TopK: the second stage reads dynamic tensors the first wrote,
    so their extents go with them (they did not: the hand-off covered the data only, and the stage read stale dims);
    each frame's outputs equal one Runtime's."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "sorted_boxes.onnx")
    subprocess.run([CLI, "translate", "sbg", "-onnx", model, "--target", "generic", "--layer-group", "TopK_6=2", "--out",
                    str(tmp_path)], check=True, capture_output=True)
    rng = np.random.default_rng(8)
    frames = [{"scores": rng.random(32).astype(np.float32), "boxes": rng.standard_normal((32, 4)).astype(np.float32)}
              for _ in range(4)]
    frames.append({"scores": np.zeros(32, np.float32), "boxes": frames[0]["boxes"]})
    pl = npuc.Pipeline(str(tmp_path / "sbg"))
    assert pl.groups == [1, 2]
    outs = pl.run([[f["scores"], f["boxes"]] for f in frames])
    rt = npuc.Runtime(str(tmp_path / "sbg"))
    for f, got in zip(frames, outs):
        want = rt.run(f)
        for k in want:
            assert np.array_equal(got[k], want[k]), k


def numpy_nms(boxes, scores, iou):
    """ONNX NonMaxSuppression of one batch and class (corners given as [y1, x1, y2, x2], any order): the kept indices
    by descending score (ties: the lower index), a box dropped when its IoU with a kept one passes `iou`."""
    lo, hi = np.minimum(boxes[:, :2], boxes[:, 2:]), np.maximum(boxes[:, :2], boxes[:, 2:])
    area = np.prod(hi - lo, axis=1)
    kept = []
    for i in np.argsort(-scores, kind="stable"):
        inter = [np.prod(np.clip(np.minimum(hi[i], hi[j]) - np.maximum(lo[i], lo[j]), 0, None)) for j in kept]
        if all(a / (area[i] + area[j] - a) <= iou if a > 0 else True for a, j in zip(inter, kept)):
            kept.append(i)
    return np.array(kept, np.int64)


def test_views_slices_nms_and_an_if_on_dynamic_tensors(tmp_path):
    """tests/data/dynamic/views_and_slices.onnx: the kept boxes split into columns (Split, Squeeze), viewed (Unsqueeze,
    Flatten, Reshape), sliced (Slice), reduced (ReduceMax, ReduceSum), NonMaxSuppression of them, and an If whose
    then_branch gives a dynamic tensor and whose else_branch an empty constant; numpy as the oracle on no, one, some
    and every score passing, exact and fast, 1 and 2 threads, with slots of their own and reused by liveness."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    model = os.path.join(os.path.dirname(__file__), "..", "data", "dynamic", "views_and_slices.onnx")
    for prefix, more in (("vs", []), ("vsr", ["--reuse-memory"])):  # (slots reused by liveness: extents and moves too)
        subprocess.run([CLI, "translate", prefix, "-onnx", model, "--target", "generic", "--out", str(tmp_path)] + more,
                       check=True, capture_output=True)
    rng = np.random.default_rng(11)
    one = np.zeros(32)
    one[7] = 0.8
    cases = [rng.random(32), np.zeros(32), one, np.full(32, 0.9), rng.random(32) * 0.45]
    for prefix, exact, threads in (("vs", True, 1), ("vs", False, 2), ("vsr", True, 1), ("vsr", False, 2)):
        rt = npuc.Runtime(str(tmp_path / prefix), exact=exact, threads=threads)
        for scores in cases:
            scores = scores.astype(np.float32)
            xy = rng.random((32, 2)).astype(np.float32) * 10
            boxes = np.concatenate([xy, xy + rng.random((32, 2)).astype(np.float32) * 4 + 0.5], axis=1)
            out = rt.run({"scores": scores, "boxes": boxes}, raw=True)
            keep = scores > np.float32(0.3)
            kept, kb = scores[keep], boxes[keep]
            area = (kb[:, 2] - kb[:, 0]) * (kb[:, 3] - kb[:, 1])
            n = len(kept)
            if n:
                assert np.array_equal(out["area_col"], (area + kb.max())[:, None])
            assert out["area_col"].shape == (n, 1)
            assert np.array_equal(out["flat"], kb.reshape(1, -1)) and np.array_equal(out["flat1"], kb.reshape(-1))
            assert np.array_equal(out["first5"], kept[:5]) and np.array_equal(out["mid"], kb[:, 1:3])
            assert out["total"].shape == (1,) and np.allclose(out["total"], kept.sum(), rtol=1e-6)
            assert np.array_equal(out["picked"], numpy_nms(kb, kept, 0.5)), (n, out["picked"])
            assert np.array_equal(out["branch"], kept * 2 if n > 3 else np.zeros(0, np.float32)), n


def test_a_split_along_a_dim_the_data_change_stops_the_run(tmp_path):
    """A Split of the kept scores [n] into [16, 16] (their capacity 32): its parts are slices of the sizes translated
    for, so a run where n is not 32 stops with an error naming the layer (as the engine's Split does), never a part
    read past the data."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    nodes = [helper.make_node("Greater", ["scores", "t"], ["keep"]), helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["scores", "idx"], ["kept"]),
             helper.make_node("Split", ["kept", "halves"], ["a", "b"], axis=0)]
    graph = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("scores", TensorProto.FLOAT, (32,))],
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, ("p",)),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, ("q",))],
                              [numpy_helper.from_array(np.array(0.3, np.float32), "t"),
                               numpy_helper.from_array(np.array([16, 16], np.int64), "halves")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "split.onnx"))
    subprocess.run([CLI, "translate", "split", "-onnx", str(tmp_path / "split.onnx"), "--target", "generic", "--out",
                    str(tmp_path)], check=True, capture_output=True)
    rt = npuc.Runtime(str(tmp_path / "split"))
    scores = np.linspace(0.4, 1.0, 32).astype(np.float32)
    out = rt.run({"scores": scores})
    assert np.array_equal(out["a"], scores[:16]) and np.array_equal(out["b"], scores[16:])
    scores[:22] = 0
    with pytest.raises(Exception, match="translated for dim 0 of 32"):
        rt.run({"scores": scores})


def test_views_of_empty_and_small_dynamic_tensors(tmp_path):
    """The review's cases: NonMaxSuppression's selections [n, 3] flattened at axis 1 keep their 3 columns when n is 0
    (a "rest" word beside a 0 dim would have made them [0, 0]); a Slice whose count does not grow with the dim (the
    last 3 of the first 5 rows: 0 at a capacity of 8, up to 3 below it) has room for its largest count; a Reshape of a
    dynamic tensor to an output of the same capacity still follows the run's dims (NonZero of [2, 1], transposed to
    [n, 2], viewed as [2, n]).
    numpy as the oracle, exact and fast."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "maxper", "iou", "thr"], ["sel"]),
             helper.make_node("Flatten", ["sel"], ["flat"], axis=1),
             helper.make_node("Slice", ["sel", "m3", "five", "ax0"], ["window"]),
             helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["where"], perm=[1, 0]),
             helper.make_node("Reshape", ["where", "pair"], ["pairs"])]
    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, (1, 8, 4)),
                                               helper.make_tensor_value_info("scores", TensorProto.FLOAT, (1, 1, 8)),
                                               helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 1))],
                              [helper.make_tensor_value_info("flat", TensorProto.INT64, ("n", 3)),
                               helper.make_tensor_value_info("window", TensorProto.INT64, ("w", 3)),
                               helper.make_tensor_value_info("pairs", TensorProto.INT64, (2, "p"))],
                              [ints("maxper", [8]), numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
                               numpy_helper.from_array(np.array([0.5], np.float32), "thr"), ints("m3", [-3]), ints("five", [5]),
                               ints("ax0", [0]), ints("pair", [2, -1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "small.onnx"))
    subprocess.run([CLI, "translate", "small", "-onnx", str(tmp_path / "small.onnx"), "--target", "generic", "--out",
                    str(tmp_path)], check=True, capture_output=True)
    rng = np.random.default_rng(4)
    corners = rng.random((8, 2)).astype(np.float32) * 20
    boxes = np.concatenate([corners, corners + 1], axis=1)[None]  # (far apart: nothing suppressed)
    for exact, threads in ((True, 1), (False, 2)):
        rt = npuc.Runtime(str(tmp_path / "small"), exact=exact, threads=threads)
        for kept, x in ((0, [[0.0], [0.0]]), (2, [[1.0], [0.0]]), (6, [[1.0], [1.0]]), (8, [[0.0], [2.0]])):
            scores = np.full((1, 1, 8), 0.1, np.float32)
            scores[0, 0, :kept] = np.linspace(0.9, 0.6, kept)
            out = rt.run({"boxes": boxes, "scores": scores, "x": np.array(x, np.float32)}, raw=True)
            sel = np.array([[0, 0, i] for i in range(kept)], np.int64).reshape(kept, 3)
            assert np.array_equal(out["flat"], sel) and out["flat"].shape == (kept, 3), (kept, out["flat"].shape)
            assert np.array_equal(out["window"], sel[-3:5]), (kept, out["window"])
            assert np.array_equal(out["pairs"], np.argwhere(np.array(x)).reshape(2, -1)), (x, out["pairs"])


def test_an_nms_count_the_data_leave_empty_stops_the_run(tmp_path):
    """NonMaxSuppression's max_output_boxes_per_class computed from a dynamic tensor (the first kept score × 10, as
    int64): with no score kept it holds no value, and the run stops with an error as the engine's does (it read the
    missing value before: a crash)."""
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    nodes = [helper.make_node("Greater", ["scores", "t"], ["keep"]), helper.make_node("NonZero", ["keep"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             helper.make_node("GatherND", ["scores", "idx"], ["kept"]),
             helper.make_node("Slice", ["kept", "zero", "one"], ["first"]),
             helper.make_node("Mul", ["first", "ten"], ["tenfold"]),
             helper.make_node("Cast", ["tenfold"], ["count"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["scores", "s3"], ["s"]),
             helper.make_node("NonMaxSuppression", ["boxes", "s", "count"], ["sel"])]
    graph = helper.make_graph(nodes, "nms_count", [helper.make_tensor_value_info("scores", TensorProto.FLOAT, (8,)),
                                                   helper.make_tensor_value_info("boxes", TensorProto.FLOAT, (1, 8, 4))],
                              [helper.make_tensor_value_info("sel", TensorProto.INT64, ("n", 3))],
                              [numpy_helper.from_array(np.array(0.3, np.float32), "t"),
                               numpy_helper.from_array(np.array(10.0, np.float32), "ten"),
                               numpy_helper.from_array(np.array([0], np.int64), "zero"),
                               numpy_helper.from_array(np.array([1], np.int64), "one"),
                               numpy_helper.from_array(np.array([1, 1, 8], np.int64), "s3")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "nc.onnx"))
    subprocess.run([CLI, "translate", "nc", "-onnx", str(tmp_path / "nc.onnx"), "--target", "generic", "--out", str(tmp_path)],
                   check=True, capture_output=True)
    rt = npuc.Runtime(str(tmp_path / "nc"))
    corners = np.arange(16, dtype=np.float32).reshape(8, 2) * 3
    boxes = np.concatenate([corners, corners + 1], axis=1)[None]
    out = rt.run({"scores": np.linspace(0.9, 0.5, 8).astype(np.float32), "boxes": boxes}, raw=True)
    assert out["sel"].shape == (8, 3)  # (count 9: every box kept)
    with pytest.raises(Exception, match="holds 0 values"):
        rt.run({"scores": np.zeros(8, np.float32), "boxes": boxes})
