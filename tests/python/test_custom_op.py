"""Custom-op plugins from Python (docs/custom-ops.md): npuc.register_custom_op, then translate and run a model with
the op; a faulty plugin raises npuc.Error naming it. The plugin is the tests' own (tests/plugin/test_plugin.cpp, in
NPUC_TEST_PLUGIN_DIR)."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc

PLUGINS = os.environ.get("NPUC_TEST_PLUGIN_DIR", "")
BIAS = np.array([0.5, -1.25, 3.0], dtype=np.float32)


def model(path, domain="test.good", **attrs):
    node = helper.make_node("ScaleBias", ["x", "bias"], ["y"], name="scale_bias", domain=domain, scale=1.75, **attrs)
    graph = helper.make_graph([node], "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 5])],
                              [numpy_helper.from_array(BIAS, "bias")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(domain, 1)])
    m.ir_version = 8
    onnx.save(m, path)


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
def test_a_registered_plugin_translates_and_runs(tmp_path):
    assert npuc.register_custom_op(os.path.join(PLUGINS, "libnpuc_test_plugin_good.so")) == ["test.good.ScaleBias"]
    onnx_path = str(tmp_path / "custom.onnx")
    model(onnx_path)
    r = npuc.translate("custom", onnx_path, target="generic", out=str(tmp_path))
    assert r.ok
    x = np.random.default_rng(5).standard_normal((1, 3, 4, 5)).astype(np.float32)
    y = npuc.Runtime(str(r.dir)).run({"x": x})["y"]
    np.testing.assert_array_equal(y, x * np.float32(1.75) + BIAS.reshape(1, 3, 1, 1))


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
def test_a_faulty_plugin_raises_an_error_naming_it(tmp_path):
    with pytest.raises(npuc.Error, match="libnpuc_test_plugin_abi.so.*ABI version 99"):
        npuc.register_custom_op(os.path.join(PLUGINS, "libnpuc_test_plugin_abi.so"))
    text = tmp_path / "notes.so"
    text.write_text("not a library")
    with pytest.raises(npuc.Error, match="is not a shared library"):
        npuc.register_custom_op(str(text))


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
def test_a_plugin_that_writes_part_of_its_output_is_refused(tmp_path):
    # The first call runs the compute twice into outputs pre-filled with different bytes: the half it leaves
    # unwritten shows, in the runtime (--exact or not) as on the engine.
    assert npuc.register_custom_op(os.path.join(PLUGINS, "libnpuc_test_plugin_half.so")) == ["test.half.ScaleBias"]
    onnx_path = str(tmp_path / "half.onnx")
    model(onnx_path, domain="test.half")
    r = npuc.translate("half", onnx_path, target="generic", out=str(tmp_path))
    assert r.ok
    x = np.random.default_rng(5).standard_normal((1, 3, 4, 5)).astype(np.float32)
    expected = (r"test\.half\.ScaleBias.*node 'scale_bias': compute_ref did not write output 0 \('y'\) in full: "
                r"30 of its 60 elements were not written, the first at element 30")
    for exact in (False, True):
        with pytest.raises(npuc.Error, match=expected):
            npuc.Runtime(str(r.dir), exact=exact).run({"x": x})
    with pytest.raises(npuc.Error, match=expected):
        npuc.run_model(onnx_path, {"x": x})


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
@pytest.mark.parametrize("attrs, expected", [
    ({"i8": 300}, r"parameter 'i8' \(VX_TYPE_INT8\) is 300, which the type cannot hold \(its range is -128 to 127\)"),
    ({"u8": -1}, r"parameter 'u8' \(VX_TYPE_UINT8\) is -1, which the type cannot hold \(its range is 0 to 255\)"),
    ({"h": 1e5}, r"parameter 'h' \(VX_TYPE_FLOAT16\) is 100000, which the type cannot hold \(its range is -65504 to 65504"),
])
def test_a_parameter_beyond_its_declared_type_is_refused(tmp_path, attrs, expected):
    npuc.register_custom_op(os.path.join(PLUGINS, "libnpuc_test_plugin_ranges.so"))
    onnx_path = str(tmp_path / "ranges.onnx")
    model(onnx_path, domain="test.ranges", **attrs)
    with pytest.raises(npuc.Error, match=r"test\.ranges\.ScaleBias.*node 'scale_bias'.*" + expected):
        npuc.translate("ranges", onnx_path, target="generic", out=str(tmp_path))


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
def test_parameters_at_the_bounds_of_their_declared_types_run(tmp_path):
    npuc.register_custom_op(os.path.join(PLUGINS, "libnpuc_test_plugin_ranges.so"))
    onnx_path = str(tmp_path / "ranges.onnx")
    model(onnx_path, domain="test.ranges", i8=-128, u8=255, h=65504.0)
    r = npuc.translate("ranges", onnx_path, target="generic", out=str(tmp_path))
    assert r.ok
    x = np.random.default_rng(5).standard_normal((1, 3, 4, 5)).astype(np.float32)
    y = npuc.Runtime(str(r.dir)).run({"x": x})["y"]
    np.testing.assert_array_equal(y, x * np.float32(1.75) + BIAS.reshape(1, 3, 1, 1))


@pytest.mark.skipif(not PLUGINS, reason="NPUC_TEST_PLUGIN_DIR is not set")
def test_a_custom_layer_of_several_outputs_runs_and_compares_each(tmp_path):
    # The multiout op writes y, sq = y * y and csum [1, 3]: one package layer, each output the engine's bits, and
    # npuc.compare a row per output.
    npuc.register_custom_op(os.path.join(PLUGINS, "libnpuc_test_plugin_multiout.so"))
    node = helper.make_node("ScaleBias", ["x", "bias"], ["y", "sq", "csum"], name="scale_bias", domain="test.multiout",
                            scale=1.75)
    add = helper.make_node("Add", ["sq", "y"], ["z"], name="add")
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 5]),
           helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 3, 4, 5]),
           helper.make_tensor_value_info("csum", TensorProto.FLOAT, [1, 3])]
    graph = helper.make_graph([node, add], "multiout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])],
                              out, [numpy_helper.from_array(BIAS, "bias")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("test.multiout", 1)])
    m.ir_version = 8
    onnx_path = str(tmp_path / "multiout.onnx")
    onnx.save(m, onnx_path)
    r = npuc.translate("multiout", onnx_path, target="generic", out=str(tmp_path))
    assert r.ok
    x = np.random.default_rng(5).standard_normal((1, 3, 4, 5)).astype(np.float32)
    ref = npuc.run_model(onnx_path, {"x": x})
    rt = npuc.Runtime(str(r.dir))
    [layer] = [l for l in rt.layers if l["kind"] == "custom"]
    assert layer["output"]["name"] == "y" and [o["name"] for o in layer["more_outputs"]] == ["sq", "csum"]
    for exact in (False, True):
        got = npuc.Runtime(str(r.dir), exact=exact).run({"x": x})
        for name in ("y", "z", "csum"):
            np.testing.assert_array_equal(got[name], ref[name])
    rows = [row for row in npuc.compare(onnx_path, str(r.dir), {"x": x}) if row["kind"] == "custom"]
    assert [row["value"] for row in rows] == ["y", "sq", "csum"]
    assert all(row["matched"] and row["max_abs_err"] == 0 for row in rows)
