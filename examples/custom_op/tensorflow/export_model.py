#!/usr/bin/env python3
"""Writes resize_area_model.pb: the example's network (../resize_area_model.onnx: Conv -> Relu -> ResizeArea -> Conv,
its weights) as the frozen TensorFlow graph a TensorFlow user has — NHWC, Conv2D + BiasAdd, and TensorFlow's own
ResizeArea op (images, size as a constant input, attr align_corners), which npuc does not implement. Written with
the protobuf classes protoc generates from npuc's src/frontend/tf/tf_graph.proto (no TensorFlow needed); the file is
committed, so `make test` runs without this script.

    /usr/bin/python3 examples/custom_op/tensorflow/export_model.py [OUT.pb]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "resize_area_model.pb")
    gen = tempfile.mkdtemp(prefix="npuc_tf_pb_")
    subprocess.run(["protoc", "-I" + os.path.join(ROOT, "src/frontend/tf"), "--python_out=" + gen,
                    os.path.join(ROOT, "src/frontend/tf/tf_graph.proto")], check=True)
    sys.path.insert(0, gen)
    import tf_graph_pb2 as pb

    w = {i.name: numpy_helper.to_array(i) for i in onnx.load(os.path.join(HERE, "..", "resize_area_model.onnx")).graph.initializer}
    g = pb.GraphDef()
    g.versions.producer = 1087

    def node(name, op, inputs=(), **attrs):
        n = g.node.add()
        n.name, n.op = name, op
        n.input.extend(inputs)
        for k, v in attrs.items():
            if isinstance(v, bool):
                n.attr[k].b = v
            elif isinstance(v, str):
                n.attr[k].s = v.encode()
            elif isinstance(v, list):
                n.attr[k].list.i.extend(v)
            else:
                n.attr[k].type = v
        return name

    def const(name, a):
        a = np.ascontiguousarray(a)
        n = g.node.add()
        n.name, n.op = name, "Const"
        t = n.attr["value"].tensor
        t.dtype = pb.DT_FLOAT if a.dtype == np.float32 else pb.DT_INT32
        for d in a.shape:
            t.tensor_shape.dim.add().size = d
        t.tensor_content = a.tobytes()
        n.attr["dtype"].type = t.dtype
        return name

    x = node("image", "Placeholder", dtype=pb.DT_FLOAT)
    for d in (1, 24, 24, 3):
        g.node[-1].attr["shape"].shape.dim.add().size = d
    c1 = node("conv1", "Conv2D", [x, const("conv1/w", w["conv1.weight"].transpose(2, 3, 1, 0))], T=pb.DT_FLOAT,
              strides=[1, 1, 1, 1], padding="SAME")
    r = node("relu", "Relu", [node("conv1/bias", "BiasAdd", [c1, const("conv1/b", w["conv1.bias"])], T=pb.DT_FLOAT)],
             T=pb.DT_FLOAT)
    ra = node("resize_area", "ResizeArea", [r, const("resize_area/size", np.int32([10, 10]))], T=pb.DT_FLOAT,
              align_corners=False)
    c2 = node("conv2", "Conv2D", [ra, const("conv2/w", w["conv2.weight"].transpose(2, 3, 1, 0))], T=pb.DT_FLOAT,
              strides=[1, 1, 1, 1], padding="VALID")
    node("scores", "BiasAdd", [c2, const("conv2/b", w["conv2.bias"])], T=pb.DT_FLOAT)
    with open(out, "wb") as f:
        f.write(g.SerializeToString(deterministic=True))
    print("wrote", out)


if __name__ == "__main__":
    main()
