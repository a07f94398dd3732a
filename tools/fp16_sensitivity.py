#!/usr/bin/python3
"""Float32 models that round one thing to float16 the way an fp16 (drpai) package stores it, to measure what float16
storage itself costs a model (tools/check_zoo_packages.sh runs them on the reference engine).

    /usr/bin/python3 tools/fp16_sensitivity.py weights  OPT.onnx OUT.onnx
    /usr/bin/python3 tools/fp16_sensitivity.py outputs  OPT.onnx OUT.onnx

OPT.onnx is the optimized model the package was made from (`npuc translate ... -SaveOptOnnx`: BatchNorm folded in
float32). `weights`: the Conv / Gemm / MatMul weights rounded to float16 (biases stay float32, as the package keeps
them). `outputs`: every node's output rounded to float16 through a Cast pair, weights exact — the package rounds each
layer's output as it stores it (a fused activation's rounding is taken after it here too, which is the same value
for Relu and Clip). Round the input as well (np.float16) for the package's whole storage of activations.
Needs numpy and onnx (Debian's python3-onnx).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Nodes whose outputs are shapes or views, not stored layer outputs.
NOT_STORED = {"Shape", "Constant", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}


def round_weights(model):
    g = model.graph
    weights = {n.input[1] for n in g.node if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1}
    for init in g.initializer:
        if init.name in weights:
            a = numpy_helper.to_array(init)
            init.CopyFrom(numpy_helper.from_array(a.astype(np.float16).astype(np.float32), init.name))


def round_outputs(model):
    g = model.graph
    graph_outputs = {o.name for o in g.output}
    nodes, rename = [], {}
    for n in g.node:
        nodes.append(n)
        if n.op_type in NOT_STORED:
            continue
        for o in n.output:
            if not o:
                continue
            # y -> Cast(float16) -> Cast(float32) -> y; the node itself now writes y_unrounded.
            raw = o + "_unrounded"
            rename[o] = raw
            nodes.append(helper.make_node("Cast", [raw], [o + "_f16"], to=TensorProto.FLOAT16))
            nodes.append(helper.make_node("Cast", [o + "_f16"], [o], to=TensorProto.FLOAT))
    for n in g.node:
        for k, o in enumerate(n.output):
            if o in rename:
                n.output[k] = rename[o]
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    assert graph_outputs <= {o for n in g.node for o in n.output}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("weights", "outputs"):
        sys.exit(__doc__)
    model = onnx.load(sys.argv[2])
    (round_weights if sys.argv[1] == "weights" else round_outputs)(model)
    onnx.save(model, sys.argv[3])


if __name__ == "__main__":
    main()
