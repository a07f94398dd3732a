"""A model quantized elsewhere in ONNX's operator form (QLinearConv / QLinearMatMul, ONNX Runtime's "QOperator"
format) is the QDQ model it stands for (docs/quantization.md, "Models quantized elsewhere"): npuc expands each such
node on import into DequantizeLinear -> Conv / MatMul -> QuantizeLinear, keeps its scales, and its generic-int8
package computes the QDQ model's package bit for bit. The QOperator model is written here from npuc's own QDQ model
of the digits CNN by the rewrite ONNX defines (onnx's helper, no npuc code)."""
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import npuc

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIGITS = os.path.join(SRC, "models", "digits", "digits_cnn.onnx")
X = np.load(os.path.join(SRC, "models", "digits", "test_x.npy"))


def to_qoperator(model):
    """Each Conv / MatMul read through DequantizeLinear (activation, constant weights, int32 bias) whose output (or
    whose Relu's output, where the QuantizeLinear's zero point is the int8 minimum, so that its clamp is the Relu)
    goes only to a QuantizeLinear becomes one QLinearConv / QLinearMatMul. Returns the model and how many nodes were
    rewritten."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    inits = {t.name: t for t in g.initializer}

    def dq(name):
        n = producer.get(name)
        return n if n is not None and n.op_type == "DequantizeLinear" and len(n.input) == 3 else None

    def only_reader(name):
        r = readers.get(name, [])
        return r[0] if len(r) == 1 and name not in {o.name for o in g.output} else None

    drop, add, rewritten = set(), [], 0
    for n in g.node:
        if n.op_type not in ("Conv", "MatMul"):
            continue
        dx, dw = dq(n.input[0]), dq(n.input[1])
        db = dq(n.input[2]) if n.op_type == "Conv" and len(n.input) > 2 else None
        if dx is None or dw is None or dw.input[0] not in inits or (len(n.input) > 2 and db is None):
            continue
        nxt, relu = only_reader(n.output[0]), None
        if nxt is not None and nxt.op_type == "Relu":
            relu, nxt = nxt, only_reader(nxt.output[0])
        if nxt is None or nxt.op_type != "QuantizeLinear" or len(nxt.input) != 3:
            continue
        if relu is not None and numpy_helper.to_array(inits[nxt.input[2]]).item() != -128:
            continue
        ins = [dx.input[0], dx.input[1], dx.input[2], dw.input[0], dw.input[1], dw.input[2], nxt.input[1], nxt.input[2]]
        if db is not None:
            ins.append(db.input[0])
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        op = "QLinearConv" if n.op_type == "Conv" else "QLinearMatMul"
        add.append(helper.make_node(op, ins, [nxt.output[0]], name=n.name + "_quant", **attrs))
        drop.update(id(m) for m in (n, relu, nxt) if m is not None)
        rewritten += 1
    nodes = [n for n in g.node if id(n) not in drop] + add
    # (DequantizeLinear nodes nothing reads any more are dropped; the order is re-established topologically)
    used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
    nodes = [n for n in nodes if n.op_type != "DequantizeLinear" or n.output[0] in used]
    known = {i.name for i in g.input} | set(inits)
    ordered = []
    while nodes:
        ready = [n for n in nodes if all(i in known or not i for i in n.input)]
        assert ready, "cycle"
        for n in ready:
            ordered.append(n)
            known.update(n.output)
        nodes = [n for n in nodes if n not in ready]
    del g.node[:]
    g.node.extend(ordered)
    onnx.checker.check_model(model)
    return model, rewritten


def test_a_qoperator_model_is_its_qdq_model(tmp_path):
    q = npuc.translate("qdq", DIGITS, target="generic-int8", out=str(tmp_path), calib={"input": X[:100]}, save_qdq_onnx=True)
    assert q.ok and q.quantized
    qdq_path = q.dir / "qdq_qdq.onnx"
    model, rewritten = to_qoperator(onnx.load(qdq_path))
    assert rewritten >= 3  # the digits CNN's convolutions (and its classifier where it is a MatMul)
    assert not any(n.op_type == "Conv" for n in model.graph.node)
    qop_path = str(tmp_path / "digits_qoperator.onnx")
    onnx.save(model, qop_path)
    # The model's own scales: no calibration is asked for, and the package computes the QDQ model's package's bits.
    r = npuc.translate("qop", qop_path, target="generic-int8", out=str(tmp_path))
    assert r.ok and r.quantized
    a, b = npuc.Runtime(str(q.dir)), npuc.Runtime(str(r.dir))
    for i in range(20):
        ya, yb = a.run({"input": X[i:i + 1]}), b.run({"input": X[i:i + 1]})
        for name in ya:
            assert np.array_equal(ya[name], yb[name]), (i, name)
    # The layers are integer layers, as the QDQ model's: the same kinds, writing codes at the same scales.
    assert [(l["kind"], l.get("scale")) for l in a.layers] == [(l["kind"], l.get("scale")) for l in b.layers]
    assert sum(l["kind"] == "conv" and "scale" in l for l in b.layers) >= 3


def test_a_per_column_qlinearmatmul_is_an_integer_product(tmp_path):
    # a [2, 3, 16] int8 by a constant b [16, 5] quantized per column (b_scale [5], axis -1 of b): the generic-int8
    # package makes it an integer layer, and its codes are within one step of the numpy reference of the definition.
    rng = np.random.default_rng(3)
    b = rng.integers(-127, 128, (16, 5)).astype(np.int8)
    bs = rng.uniform(0.005, 0.02, 5).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"), numpy_helper.from_array(np.array(0, np.int8), "xz"),
             numpy_helper.from_array(b, "b"), numpy_helper.from_array(bs, "bs"), numpy_helper.from_array(np.zeros(5, np.int8), "bz"),
             numpy_helper.from_array(np.array(0.2, np.float32), "ys"), numpy_helper.from_array(np.array(3, np.int8), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearMatMul", ["xq", "xs", "xz", "b", "bs", "bz", "ys", "yz"], ["yq"], name="mm"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "qmm", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 16])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = str(tmp_path / "qmm.onnx")
    onnx.save(model, path)
    r = npuc.translate("qmm", path, target="generic-int8", out=str(tmp_path))
    assert r.ok and r.quantized
    rt = npuc.Runtime(str(r.dir))
    assert any(l["kind"] == "conv" and "scale" in l for l in rt.layers)  # (the product as an integer 1x1 convolution)
    x = rng.uniform(-4, 4, (2, 3, 16)).astype(np.float32)
    xq = np.clip(np.rint(x / np.float32(0.05)), -128, 127)
    want = np.clip(np.rint((xq * 0.05) @ (b.astype(np.float64) * bs) / 0.2) + 3, -128, 127)
    got = rt.run({"x": x})["y"] / np.float32(0.2) + 3
    assert np.max(np.abs(got - want)) <= 1.0 + 1e-4


def test_a_qlinearconv_with_a_vector_x_scale_is_refused(tmp_path):
    # QLinearConv quantizes x and y per tensor: a vector x_scale is an error naming the node, not a per-channel guess.
    inits = [numpy_helper.from_array(np.array([0.1, 0.2], np.float32), "xs"), numpy_helper.from_array(np.array([0, 0], np.uint8), "xz"),
             numpy_helper.from_array(np.ones((2, 2, 1, 1), np.int8), "w"), numpy_helper.from_array(np.array([0.1, 0.1], np.float32), "ws"),
             numpy_helper.from_array(np.zeros(2, np.int8), "wz"), numpy_helper.from_array(np.array(0.2, np.float32), "ys"),
             numpy_helper.from_array(np.array(0, np.uint8), "yz")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qc")
    graph = helper.make_graph([node], "qc", [helper.make_tensor_value_info("x", onnx.TensorProto.UINT8, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, [1, 2, 4, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "qc.onnx")
    onnx.save(model, path)
    with pytest.raises(npuc.Error, match="'qc'.*x_scale must be a scalar"):
        npuc.run_model(path, {"x": np.zeros((1, 2, 4, 4), np.uint8)})
