"""A transformer layer as torch exports it (tests/data/quant/encoder_layer.onnx) in int8-affine: the package's layers
are integer products (each Linear with its bias, attention's two products of activations), the saved QDQ model
(--save-qdq-onnx) is standard ONNX that onnx's full checker accepts, and translating that QDQ model again (its own
scales, no calibration) gives a package that computes the same outputs within one int8 step of the output."""
import os

import numpy as np
import onnx

import npuc

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENCODER = os.path.join(SRC, "tests", "data", "quant", "encoder_layer.onnx")


def test_an_encoder_layer_is_integer_and_its_qdq_model_is_standard_onnx(tmp_path):
    rng = np.random.default_rng(4)
    calib = rng.standard_normal((16, 16, 64)).astype(np.float32)
    q = npuc.translate("enc", ENCODER, target="generic-int8", out=str(tmp_path), calib={"input": calib}, save_qdq_onnx=True)
    assert q.ok and q.quantized
    rt = npuc.Runtime(str(q.dir))
    int8_products = [l for l in rt.layers if l["kind"] in ("conv", "matmul") and "scale" in l]
    float_products = [l for l in rt.layers if l["kind"] in ("conv", "matmul", "gemm") and "scale" not in l]
    assert len(int8_products) == 6, [(l["kind"], l.get("name")) for l in rt.layers]  # 4 Linears, Q·Kᵀ, P·V
    assert not float_products
    model = onnx.load(str(q.dir / "enc_qdq.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert {n.domain for n in model.graph.node} <= {""}
    constants = {i.name for i in model.graph.initializer} | {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    dequantized = {n.output[0]: n.input[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    # (no Add of a bias left: each reads activations only, the residual Adds)
    assert not any(n.op_type == "Add" and any(i in constants or dequantized.get(i) in constants for i in n.input) for n in model.graph.node)
    r = npuc.translate("again", str(q.dir / "enc_qdq.onnx"), target="generic-int8", out=str(tmp_path))
    assert r.ok and r.quantized
    again = npuc.Runtime(str(r.dir))
    out_scale = [l for l in rt.layers if "scale" in l][-1]["scale"]
    for _ in range(4):
        x = rng.standard_normal((1, 16, 64)).astype(np.float32)
        a, b = rt.run({"input": x})["output"], again.run({"input": x})["output"]
        assert np.abs(a - b).max() <= out_scale * (1 + 1e-6)
