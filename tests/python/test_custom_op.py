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


def model(path):
    node = helper.make_node("ScaleBias", ["x", "bias"], ["y"], name="scale_bias", domain="test.good", scale=1.75)
    graph = helper.make_graph([node], "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 5])],
                              [numpy_helper.from_array(BIAS, "bias")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("test.good", 1)])
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
