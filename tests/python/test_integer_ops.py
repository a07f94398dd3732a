"""ONNX's integer products and dynamic quantization (MatMulInteger, ConvInteger, DynamicQuantizeLinear: what ONNX
Runtime's dynamic quantization writes) on npuc's reference engine, against numpy's exact integer arithmetic on random
shapes larger than the ONNX test data's: batch broadcasting, zero points per row / column / output channel, padding,
strides, dilations and groups, int8 and uint8. They have no package form: `check` names them."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npuc

CLI = os.environ.get("NPUC_CLI")
RNG = np.random.default_rng(17)
ONNX_TYPE = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}


def codes(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)


def save(tmp_path, name, node, inputs, outputs, inits=()):
    graph = helper.make_graph([node], name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = str(tmp_path / (name + ".onnx"))
    onnx.save(model, path)
    return path


def test_matmul_integer_is_the_exact_integer_product(tmp_path):
    for adt, bdt in ((np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8)):
        a, b = codes(adt, (3, 1, 5, 70)), codes(bdt, (4, 70, 6))
        za, zb = codes(adt, (5,)), codes(bdt, (6,))  # per row of a, per column of b
        path = save(tmp_path, "mmi", helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"]),
                    [helper.make_tensor_value_info("a", ONNX_TYPE[a.dtype], a.shape)],
                    [helper.make_tensor_value_info("y", TensorProto.INT32, (3, 4, 5, 6))],
                    [numpy_helper.from_array(b, "b"), numpy_helper.from_array(za, "za"), numpy_helper.from_array(zb, "zb")])
        y = npuc.run_model(path, {"a": a})["y"]
        want = np.matmul(a.astype(np.int64) - za.astype(np.int64)[:, None], b.astype(np.int64) - zb.astype(np.int64))
        assert y.dtype == np.int32 and np.array_equal(y, want.astype(np.int32)), (adt, bdt)


def test_conv_integer_is_the_exact_integer_convolution(tmp_path):
    x, w = codes(np.uint8, (2, 6, 11, 9)), codes(np.int8, (4, 3, 3, 2))
    zx, zw = np.array(131, np.uint8), codes(np.int8, (4,))
    attrs = dict(group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 2, 2, 0])
    path = save(tmp_path, "convi", helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], **attrs),
                [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
                [helper.make_tensor_value_info("y", TensorProto.INT32, (2, 4, 6, 9))],
                [numpy_helper.from_array(w, "w"), numpy_helper.from_array(zx, "zx"), numpy_helper.from_array(zw, "zw")])
    y = npuc.run_model(path, {"x": x})["y"]
    # numpy: the shifted input padded with zeros (the padding adds nothing), then every tap summed in int64
    xs = np.pad(x.astype(np.int64) - int(zx), ((0, 0), (0, 0), (1, 2), (2, 0)))
    ws = w.astype(np.int64) - zw.astype(np.int64)[:, None, None, None]
    oh, ow = (xs.shape[2] - (3 - 1) * 1 - 1) // 2 + 1, (xs.shape[3] - (2 - 1) * 2 - 1) // 1 + 1
    want = np.zeros((2, 4, oh, ow), np.int64)
    for m in range(4):
        g = m // 2
        for ky in range(3):
            for kx in range(2):
                patch = xs[:, 3 * g:3 * g + 3, ky:ky + 2 * (oh - 1) + 1:2, 2 * kx:2 * kx + ow]
                want[:, m] += np.einsum("nchw,c->nhw", patch, ws[m, :, ky, kx])
    assert y.shape == want.shape and np.array_equal(y, want.astype(np.int32))


def test_dynamic_quantize_linear_follows_onnx_formulas(tmp_path):
    path = save(tmp_path, "dql", helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"]),
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, (7, 33))],
                [helper.make_tensor_value_info("y", TensorProto.UINT8, (7, 33)),
                 helper.make_tensor_value_info("s", TensorProto.FLOAT, ()), helper.make_tensor_value_info("z", TensorProto.UINT8, ())])
    for lo, hi in ((-3.0, 5.0), (0.5, 4.0), (-6.0, -1.0)):
        x = RNG.uniform(lo, hi, (7, 33)).astype(np.float32)
        out = npuc.run_model(path, {"x": x})
        xmin, xmax = np.float32(min(0.0, x.min())), np.float32(max(0.0, x.max()))
        scale = np.float32((xmax - xmin) / np.float32(255))
        zp = np.uint8(np.rint(np.clip(np.float32(0) - xmin / scale, 0, 255)))
        want = np.clip(np.rint(x / scale) + np.float32(zp), 0, 255).astype(np.uint8)
        assert out["s"] == scale and out["z"] == zp and np.array_equal(out["y"], want), (lo, hi)
    for bad, what in ((np.inf, "an infinity"), (np.nan, "NaN")):  # no range, no scale: a clear error
        x = np.zeros((7, 33), np.float32)
        x[3, 4] = bad
        with pytest.raises(npuc.Error, match=what):
            npuc.run_model(path, {"x": x})
    if CLI:  # no package form: check names the node and the rule, exit 1
        r = subprocess.run([CLI, "check", path, "--target", "generic"], capture_output=True, text=True)
        assert r.returncode != 0 and "DynamicQuantizeLinear" in r.stdout + r.stderr
