#!/usr/bin/env python3
# Writes attention_mini.onnx: one self-attention block for the int8 tests (tests/quant/qdq_test.cpp) — input
# [2, 6, 16] (a batch of two sequences of 6 tokens), the three projections by constant [16, 16] weights (1/sqrt(d) folded
# into the query's), heads split (Reshape [2, 6, 2, 8], Transpose to [2, 2, 6, 8]; the keys to [2, 2, 8, 6]), the
# scores Q·Kᵀ, Softmax over the keys, the context P·V, heads merged, the output projection. Its two MatMuls of two
# activations are what int8-affine's integer products of two activations (ai.npuc QMatMul) run. Seeded weights.
#   /usr/bin/python3 tests/data/quant/make_attention.py
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(47)
B, S, E, H = 2, 6, 16, 2
D = E // H


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


inits = [const("wq", (rng.standard_normal((E, E)) * 0.5 / np.sqrt(D)).astype(np.float32)),
         const("wk", (rng.standard_normal((E, E)) * 0.5).astype(np.float32)),
         const("wv", (rng.standard_normal((E, E)) * 0.5).astype(np.float32)),
         const("wo", (rng.standard_normal((E, E)) * 0.3).astype(np.float32)),
         const("heads", np.array([B, S, H, D], np.int64)), const("merged", np.array([B, S, E], np.int64))]
nodes = []
for p in "qkv":
    nodes.append(helper.make_node("MatMul", ["input", "w" + p], [p], name=p + "_proj"))
    nodes.append(helper.make_node("Reshape", [p, "heads"], [p + "_h"], name=p + "_heads"))
nodes += [
    helper.make_node("Transpose", ["q_h"], ["qt"], name="q_t", perm=[0, 2, 1, 3]),
    helper.make_node("Transpose", ["k_h"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
    helper.make_node("Transpose", ["v_h"], ["vt"], name="v_t", perm=[0, 2, 1, 3]),
    helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="scores"),
    helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
    helper.make_node("MatMul", ["probs", "vt"], ["ctx"], name="context"),
    helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_t", perm=[0, 2, 1, 3]),
    helper.make_node("Reshape", ["ctx_t", "merged"], ["ctx_m"], name="ctx_merge"),
    helper.make_node("MatMul", ["ctx_m", "wo"], ["output"], name="out_proj"),
]
graph = helper.make_graph(nodes, "attention_mini", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [B, S, E])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [B, S, E])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="npuc-tests")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_mini.onnx"))
