#!/usr/bin/python3
"""The recurrent benchmark model of issue 49 (docs/numerics.md, "Recurrent layers"): one ONNX LSTM of hidden 256 over
100 steps, input 64, batch 1, forward, ONNX's default activations, seeded random weights (×0.1), written with onnx's
helper (no torch) to models/zoo/lstm256.onnx (byte-identical from run to run). Time it against ONNX Runtime with

    /usr/bin/python3 tools/make_lstm_bench.py && tools/bench_vs_ort.sh --threads 1,2 --rounds 3 models/zoo/lstm256.onnx
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, INPUT, STEPS = 256, 64, 100


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "models", "zoo")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((1, 4 * HIDDEN, INPUT)) * 0.1).astype(np.float32)
    r = (rng.standard_normal((1, 4 * HIDDEN, HIDDEN)) * 0.1).astype(np.float32)
    b = (rng.standard_normal((1, 8 * HIDDEN)) * 0.1).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=HIDDEN)
    graph = helper.make_graph([node], "lstm256", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (STEPS, 1, INPUT))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (STEPS, 1, 1, HIDDEN)),
                               helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, (1, 1, HIDDEN)),
                               helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, (1, 1, HIDDEN))],
                              [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="npuc tools")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(out, "lstm256.onnx")
    onnx.save(model, path)
    print(path)


if __name__ == "__main__":
    main()
