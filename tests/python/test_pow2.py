"""int8-pow2 (TIDL's fixed point, docs/numerics.md): npuc's package against an oracle written from the specification in
numpy and Python integers, frame by frame — the dynamic quantization's range history included. The oracle reads only
the optimized ONNX model (float weights) and PREFIX_pow2_table.csv (which layers are integer, each slot's tensor,
signedness and calibrated range, each layer's weight and bias q): every code it computes, it computes itself.
Run by ctest (`python_tests`) with PYTHONPATH=build/python and NPUC_CLI=build/bin/npuc."""
import csv
import math
import os
import struct
import subprocess

import numpy as np
import pytest

import npuc

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402

CLI = os.environ.get("NPUC_CLI")


def make_model(path):
    """Every int8-pow2 form: conv + Relu, conv without activation (signed), residual add + Relu, depthwise conv +
    Clip(0, 6), max pooling on codes, a slice of codes, average pooling (3x3, padding counted), a depthwise stride-2
    deconvolution + Relu (a fourth output), a bilinear 2x Resize (a fifth), element-wise Max and Mul of two activations, a Mul by a constant per
    channel (a depthwise 1x1 conv), a float layer between conversions, an add without activation, a concat of a
    signed and an unsigned tensor (two q's), a split of codes and their concatenation in the other order, a batch norm
    no convolution absorbs and its Relu (a depthwise 1x1 conv), a PRelu with one slope per channel, global average
    pooling, flatten, inner product, the ArgMax of its codes (a second output) and its Softmax, one byte per class (a
    third). The float layer is a Relu after a Concat (nothing to fuse it into; the int8-pow2 numerics have no layer
    of its own for it): exact in float32, so the oracle computes it bit for bit."""
    rng = np.random.default_rng(5)

    def w(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("wa", (8, 3, 3, 3), 0.4), w("ba", (8,), 0.2), w("wb", (8, 8, 3, 3), 0.15), w("bb", (8,), 0.1),
             w("wc", (8, 1, 3, 3), 0.5), w("bc", (8,), 0.3), w("wd", (8, 8, 1, 1), 0.3), w("bd", (8,), 0.1),
             w("we", (8, 8, 1, 1), 0.4), w("be", (8,), 0.05), w("wg", (5, 16), 0.5), w("bg", (5,), 0.1),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"), numpy_helper.from_array(np.array(6.0, np.float32), "six"),
             numpy_helper.from_array(rng.uniform(0.3, 2.0, 16).astype(np.float32), "bn_s"), w("bn_b", (16,), 0.3),
             w("bn_m", (16,), 0.2), numpy_helper.from_array(rng.uniform(0.5, 2.0, 16).astype(np.float32), "bn_v"),
             numpy_helper.from_array(np.array([0], np.int64), "crop_start"), numpy_helper.from_array(np.array([3], np.int64), "crop_end"),
             numpy_helper.from_array(np.array([3], np.int64), "crop_axis"), numpy_helper.from_array(np.array([8, 8], np.int64), "halves"),
             numpy_helper.from_array(rng.uniform(0.05, 0.5, (8, 1, 1)).astype(np.float32), "slope"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, 8, 1, 1)).astype(np.float32), "gain")]
    inits += [w("wt", (8, 1, 4, 4), 0.4), w("bt", (8,), 0.1)]  # (drawn last: the other weights stay as they were)
    inits += [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "twice")]
    N = helper.make_node
    nodes = [
        N("Conv", ["x", "wa", "ba"], ["a0"], name="conv_a", pads=[1, 1, 1, 1]), N("Relu", ["a0"], ["a"], name="relu_a"),
        N("Conv", ["a", "wb", "bb"], ["b"], name="conv_b", pads=[1, 1, 1, 1]),
        N("Add", ["a", "b"], ["c0"], name="add_c"), N("Relu", ["c0"], ["c"], name="relu_c"),
        N("Conv", ["c", "wc", "bc"], ["d0"], name="conv_d", group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
        N("Clip", ["d0", "zero", "six"], ["d"], name="clip_d"),
        N("MaxPool", ["d"], ["e"], name="pool_e", kernel_shape=[2, 2], strides=[1, 1]),
        N("Slice", ["e", "crop_start", "crop_end", "crop_axis"], ["es"], name="crop_es"),
        N("AveragePool", ["es"], ["ea"], name="pool_ea", kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        N("ConvTranspose", ["ea", "wt", "bt"], ["up0"], name="deconv_up", group=8, kernel_shape=[4, 4], strides=[2, 2],
          pads=[1, 1, 1, 1]),
        N("Relu", ["up0"], ["up"], name="relu_up"),
        N("Resize", ["ea", "", "twice"], ["ups"], name="resize_ups", mode="linear"),
        N("Conv", ["ea", "wd", "bd"], ["f"], name="conv_f"),
        N("Conv", ["ea", "we", "be"], ["h0"], name="conv_h"), N("Relu", ["h0"], ["h"], name="relu_h"),
        N("Max", ["f", "h"], ["g"], name="max_g"),
        N("Mul", ["g", "f"], ["gm"], name="mul_m"),
        N("PRelu", ["gm", "slope"], ["gp"], name="prelu_p"),
        N("Mul", ["gp", "gain"], ["gg"], name="gain_g"),
        N("Add", ["gg", "f"], ["i"], name="add_i"),
        N("Concat", ["i", "h"], ["ih"], name="cat_ih", axis=1),
        N("Split", ["ih", "halves"], ["ih_a", "ih_b"], name="split_ih", axis=1),
        N("Concat", ["ih_b", "ih_a"], ["ihs0"], name="cat_ihs", axis=1),
        N("Relu", ["ihs0"], ["ihs"], name="relu_ihs"),
        N("BatchNormalization", ["ihs", "bn_s", "bn_b", "bn_m", "bn_v"], ["ik0"], name="bn_k"), N("Relu", ["ik0"], ["ik"], name="relu_k"),
        N("GlobalAveragePool", ["ik"], ["j"], name="gap_j"),
        N("Flatten", ["j"], ["k"], name="flat_k"),
        N("Gemm", ["k", "wg", "bg"], ["logits"], name="fc", transB=1),
        N("ArgMax", ["logits"], ["cls"], name="argmax_cls", axis=1, keepdims=0),
        N("Softmax", ["logits"], ["probs"], name="softmax_p", axis=1),
    ]
    g = helper.make_graph(nodes, "pow2_forms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 10])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5]),
                           helper.make_tensor_value_info("cls", TensorProto.INT64, [1]),
                           helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5]),
                           helper.make_tensor_value_info("up", TensorProto.FLOAT, [1, 8, 8, 6]),
                           helper.make_tensor_value_info("ups", TensorProto.FLOAT, [1, 8, 8, 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, path)


def translated_says(prefix, model, calib, out, *extra, target="tidl"):
    """What `npuc translate` prints (stdout and stderr) for MODEL with calibration samples CALIB (input x); it must
    succeed."""
    run = subprocess.run([CLI, "translate", prefix, "-onnx", str(model), "--target", target, "--out", str(out), "--calib",
                          "x=%s" % calib] + list(extra), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout + run.stderr


def frames(n, seed):
    rng = np.random.default_rng(seed)
    # Scales that move from frame to frame, so the ranges (and the q's) do.
    return [(rng.standard_normal((1, 3, 10, 10)) * s).astype(np.float32) for s in rng.uniform(0.3, 3.0, n)]


class Oracle:
    """The int8-pow2 specification, computed from the optimized model and the pow2 table."""

    def __init__(self, opt_onnx, table_csv, bits, R, h1, h2, margin, boot, dynamic):
        self.m = onnx.load(opt_onnx)
        self.w = {t.name: numpy_helper.to_array(t) for t in self.m.graph.initializer}
        self.bits, self.R, self.h1, self.h2, self.margin, self.boot, self.dynamic = bits, R, h1, h2, margin, boot, dynamic
        self.slots, self.layers = [], {}
        with open(table_csv) as f:
            for row in csv.DictReader(f):
                if row["kind"] == "slot":
                    lo, hi = float(np.float32(float(row["lo"]))), float(np.float32(float(row["hi"])))
                    self.slots.append({"tensor": row["name"], "signed": row["signed"] == "1", "init": (lo, hi)})
                else:
                    self.layers[row["name"]] = row
        self.slot_of = {s["tensor"]: i for i, s in enumerate(self.slots)}
        self.reset()

    def reset(self):
        for s in self.slots:
            s["lo"], s["hi"] = s["init"]
            s["frames"] = 0
            s["q"] = self.q_for(s["lo"], s["hi"], s["signed"])

    def q_for(self, lo, hi, signed):
        m = max(abs(lo), abs(hi)) if signed else max(hi, 0.0)
        m *= 1.0 + self.margin / 100.0
        if not m > 0:
            return 24
        q = 24
        while q > -24 and math.ldexp(m, q) > (127.0 if signed else 255.0):
            q -= 1
        return q

    def update(self, i, lo, hi):
        s = self.slots[i]
        if self.dynamic:
            w = float(self.h1 if s["frames"] < self.boot else self.h2)
            s["lo"] = (w * s["lo"] + (100.0 - w) * lo) / 100.0
            s["hi"] = (w * s["hi"] + (100.0 - w) * hi) / 100.0
            s["frames"] += 1
            s["q"] = self.q_for(s["lo"], s["hi"], s["signed"])
        return s["q"]

    def requant(self, acc, a, S, signed):
        a = max(-100, min(40, a))
        up, down = 2 ** max(a, 0), 2 ** max(-a, 0)
        flat = [((int(v) * up * 100 + self.R * S * down) // (100 * S * down)) for v in acc.reshape(-1)]
        lo, hi = (-128, 127) if signed else (0, 255)
        return np.clip(np.array(flat, dtype=np.int64), lo, hi).reshape(acc.shape)

    def finish(self, acc, qacc, S, slot, act=None, clip=None):
        if act == "Relu":
            acc = np.maximum(acc, 0)
        if act == "Clip":
            lo = math.ceil(math.ldexp(float(np.float32(clip[0])), qacc) * S)
            hi = math.floor(math.ldexp(float(np.float32(clip[1])), qacc) * S)
            acc = np.clip(acc, lo, hi)
        real = lambda a: math.ldexp(float(int(a)), -qacc) / S  # noqa: E731
        q = self.update(slot, real(acc.min()), real(acc.max()))
        return (self.requant(acc, q - qacc, S, self.slots[slot]["signed"]), slot)

    def quantize(self, x, slot):
        fin = x[np.isfinite(x)].astype(np.float64)
        q = self.update(slot, float(fin.min()) if fin.size else 0.0, float(fin.max()) if fin.size else 0.0)
        lo, hi = (-128, 127) if self.slots[slot]["signed"] else (0, 255)
        return (np.clip(np.floor(np.ldexp(x.astype(np.float64), q) + self.R / 100.0), lo, hi).astype(np.int64), slot)

    def codes(self, v, name):
        return v if isinstance(v, tuple) else self.quantize(v, self.slot_of[name])

    def real(self, v):
        if not isinstance(v, tuple):
            return v
        c, slot = v
        return np.ldexp(c.astype(np.float32), -self.slots[slot]["q"]).astype(np.float32)

    def bias_at(self, b, qb, qacc):
        a = qacc - qb
        if a >= 0:
            return b << a
        return (b * 100 + self.R * 2 ** -a) // (100 * 2 ** -a)

    def conv(self, n, xc, attrs):
        x, slot = xc
        qx = self.slots[slot]["q"]
        row = self.layers[n.name]
        qw, qb = int(row["qw"]), int(row["qb"])
        lim = 2 ** (self.bits - 1) - 1
        W = self.w[n.input[1]].astype(np.float64)
        wc = np.clip(np.sign(W) * np.floor(np.abs(W) * 2.0 ** qw + 0.5), -lim, lim).astype(np.int64)
        B = self.w[n.input[2]].astype(np.float64)
        bc = [self.bias_at(int(v), qb, qx + qw) for v in np.sign(B) * np.floor(np.abs(B) * 2.0 ** qb + 0.5)]
        if n.op_type == "Gemm":
            acc = x @ wc.T + np.array(bc, dtype=np.int64)
        elif n.op_type == "ConvTranspose":  # each input code scattered through the window: o = i * stride - pad + tap
            g, st, p = attrs.get("group", 1), attrs["strides"], attrs["pads"]
            C, Mg, KH, KW = wc.shape
            OH = (x.shape[2] - 1) * st[0] + KH - p[0] - p[2]
            OW = (x.shape[3] - 1) * st[1] + KW - p[1] - p[3]
            full = np.zeros((1, Mg * g, (x.shape[2] - 1) * st[0] + KH, (x.shape[3] - 1) * st[1] + KW), dtype=np.int64)
            for c in range(C):
                for ml in range(Mg):
                    m = c // (C // g) * Mg + ml
                    for ky in range(KH):
                        for kx in range(KW):
                            full[0, m, ky:ky + st[0] * (x.shape[2] - 1) + 1:st[0], kx:kx + st[1] * (x.shape[3] - 1) + 1:st[1]] += \
                                x[0, c] * wc[c, ml, ky, kx]
            acc = full[:, :, p[0]:p[0] + OH, p[1]:p[1] + OW] + np.array(bc, dtype=np.int64).reshape(1, -1, 1, 1)
        else:
            g = attrs.get("group", 1)
            st = attrs.get("strides", [1, 1])
            p = attrs.get("pads", [0, 0, 0, 0])
            M, Cg, KH, KW = wc.shape
            xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
            OH = (xp.shape[2] - KH) // st[0] + 1
            OW = (xp.shape[3] - KW) // st[1] + 1
            acc = np.zeros((1, M, OH, OW), dtype=np.int64)
            for m in range(M):
                c0 = (m // (M // g)) * Cg
                for ky in range(KH):
                    for kx in range(KW):
                        patch = xp[0, c0:c0 + Cg, ky:ky + st[0] * (OH - 1) + 1:st[0], kx:kx + st[1] * (OW - 1) + 1:st[1]]
                        acc[0, m] += np.einsum("cij,c->ij", patch, wc[m, :, ky, kx])
                acc[0, m] += bc[m]
        act = attrs.get("activation")
        act = act.decode() if isinstance(act, bytes) else act
        out, params = n.output[0], (attrs.get("activation_alpha", 0.0), attrs.get("activation_beta", 6.0))
        if act is None:  # the saved model is standard ONNX: the activation that alone reads the product is npuc's fused one
            after = [r for r in self.m.graph.node if list(r.input[:1]) == [out]]
            if len(after) == 1 and after[0].op_type in ("Relu", "Clip", "LeakyRelu") and out not in self.slot_of:
                r = after[0]
                self.fused.add(r.name)
                act, out = r.op_type, r.output[0]
                if r.op_type == "Clip":
                    params = tuple(float(self.w[i]) for i in r.input[1:3])
                elif r.op_type == "LeakyRelu":
                    params = ({a.name: helper.get_attribute_value(a) for a in r.attribute}.get("alpha", 0.01), 0.0)
        return out, self.finish(acc, qx + qw, 1, self.slot_of[out], act, params)

    def run(self, x):
        v = {"x": x}
        fused = self.fused = set()
        for n in self.m.graph.node:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            ins = [v.get(i) for i in n.input]
            row = self.layers.get(n.name, {})
            if n.name in fused:
                continue
            if row.get("op") in ("conv", "gemm", "deconv"):
                out, y = self.conv(n, self.codes(ins[0], n.input[0]), attrs)
                v[out] = y
            elif row.get("op") == "add":
                (a, sa), (b, sb) = self.codes(ins[0], n.input[0]), self.codes(ins[1], n.input[1])
                qa, qb = self.slots[sa]["q"], self.slots[sb]["q"]
                Q = max(qa, qb)
                acc = (a << (Q - qa)) + (b << (Q - qb))
                out = n.output[0]
                relu = [r for r in self.m.graph.node if r.op_type == "Relu" and list(r.input) == [out]]
                if out not in self.slot_of and relu:  # the Relu that alone reads the sum is fused
                    fused.add(relu[0].name)
                    v[relu[0].output[0]] = self.finish(acc, Q, 1, self.slot_of[relu[0].output[0]], "Relu")
                else:
                    v[out] = self.finish(acc, Q, 1, self.slot_of[out])
            elif row.get("op") == "concat":  # each input brought to the finest q, one slot for the result
                parts = [self.codes(x, name) for x, name in zip(ins, n.input)]
                Q = max(self.slots[s]["q"] for _, s in parts)
                acc = np.concatenate([c << (Q - self.slots[s]["q"]) for c, s in parts], axis=attrs.get("axis", 0))
                v[n.output[0]] = self.finish(acc, Q, 1, self.slot_of[n.output[0]])
            elif row.get("op") == "avg_pool":  # 3x3, stride 1, padding 1 (codes 0 there), every window divided by 9
                c, s = ins[0]
                p = np.pad(c, ((0, 0), (0, 0), (1, 1), (1, 1)))
                H, W = c.shape[2], c.shape[3]
                acc = sum(p[:, :, ky:ky + H, kx:kx + W] for ky in range(3) for kx in range(3))
                v[n.output[0]] = self.finish(acc, self.slots[s]["q"], 9, self.slot_of[n.output[0]])
            elif row.get("op") == "global_avg_pool":
                c, s = ins[0]
                S = c.shape[2] * c.shape[3]
                v[n.output[0]] = self.finish(c.sum(axis=(2, 3), keepdims=True), self.slots[s]["q"], S, self.slot_of[n.output[0]])
            elif n.op_type == "MaxPool" and isinstance(ins[0], tuple):
                c, s = ins[0]
                k, st = attrs["kernel_shape"], attrs.get("strides", [1, 1])
                OH, OW = (c.shape[2] - k[0]) // st[0] + 1, (c.shape[3] - k[1]) // st[1] + 1
                out = np.full((1, c.shape[1], OH, OW), -1000, dtype=np.int64)
                for ky in range(k[0]):
                    for kx in range(k[1]):
                        out = np.maximum(out, c[:, :, ky:ky + st[0] * (OH - 1) + 1:st[0], kx:kx + st[1] * (OW - 1) + 1:st[1]])
                v[n.output[0]] = (out, s)
            elif n.op_type == "Flatten" and isinstance(ins[0], tuple):
                v[n.output[0]] = (ins[0][0].reshape(1, -1), ins[0][1])
            elif n.op_type == "Slice" and isinstance(ins[0], tuple):  # codes moved, the slot kept
                c, s = ins[0]
                cut = [slice(None)] * c.ndim
                for a, b, e in zip(self.w[n.input[3]], self.w[n.input[1]], self.w[n.input[2]]):
                    cut[int(a)] = slice(int(b), int(e))
                v[n.output[0]] = (c[tuple(cut)], s)
            elif n.op_type == "Split" and isinstance(ins[0], tuple):
                c, s = ins[0]
                parts = np.split(c, np.cumsum(self.w[n.input[1]])[:-1], axis=attrs.get("axis", 0))
                for name, part in zip(n.output, parts):
                    v[name] = (part, s)
            elif n.op_type == "ArgMax":  # of the values the codes stand for
                v[n.output[0]] = np.argmax(self.real(ins[0]), axis=attrs.get("axis", 0)).astype(np.int64)
            elif row.get("op") in ("max", "mul"):
                (a, sa), (b, sb) = self.codes(ins[0], n.input[0]), self.codes(ins[1], n.input[1])
                qa, qb = self.slots[sa]["q"], self.slots[sb]["q"]
                if row["op"] == "max":  # both at the finer q
                    Q = max(qa, qb)
                    v[n.output[0]] = self.finish(np.maximum(a << (Q - qa), b << (Q - qb)), Q, 1, self.slot_of[n.output[0]])
                else:  # the product at the sum of the q's
                    v[n.output[0]] = self.finish(a * b, qa + qb, 1, self.slot_of[n.output[0]])
            elif row.get("op") == "prelu":  # the slopes' codes at 2^-qs; x * 2^qs where x >= 0, x * slope below
                (x, sx), qs = self.codes(ins[0], n.input[0]), int(row["qw"])
                lim = 2 ** (self.bits - 1) - 1
                S = self.w[n.input[1]].astype(np.float64)
                sc = np.clip(np.sign(S) * np.floor(np.abs(S) * 2.0 ** qs + 0.5), -lim, lim).astype(np.int64)
                acc = np.where(x >= 0, x << qs, x * sc.reshape(1, -1, 1, 1))
                v[n.output[0]] = self.finish(acc, self.slots[sx]["q"] + qs, 1, self.slot_of[n.output[0]])
            elif row.get("op") == "resize":  # bilinear 2x, half_pixel: per axis two taps (edge-clamped), weights at 2^-10
                (c, sx) = ins[0]
                def taps(n_in):
                    xs = (np.arange(2 * n_in) + 0.5) / 2 - 0.5
                    x0 = np.floor(xs).astype(np.int64)
                    w1 = np.rint((xs - x0) * 1024).astype(np.int64)
                    return np.clip(x0, 0, n_in - 1), np.clip(x0 + 1, 0, n_in - 1), 1024 - w1, w1
                h0, h1, hw0, hw1 = taps(c.shape[2])
                c0, c1, cw0, cw1 = taps(c.shape[3])
                acc = np.zeros((1, c.shape[1], 2 * c.shape[2], 2 * c.shape[3]), dtype=np.int64)
                for hi, hw in ((h0, hw0), (h1, hw1)):
                    for ci, cw in ((c0, cw0), (c1, cw1)):
                        acc += c[:, :, hi][:, :, :, ci] * hw.reshape(1, 1, -1, 1) * cw.reshape(1, 1, 1, -1)
                v[n.output[0]] = self.finish(acc * 1024 * 1024, self.slots[sx]["q"] + 40, 1, self.slot_of[n.output[0]])
            elif row.get("op") == "softmax":  # one byte per class at the fixed 2^-8, exp from a table at 2^-16
                (c, sx), axis = ins[0], attrs.get("axis", -1)
                E = np.array([int(np.rint(math.ldexp(math.exp(-math.ldexp(float(d), -self.slots[sx]["q"])), 16)))
                              for d in range(256)], dtype=np.int64)
                e = E[c.max(axis=axis, keepdims=True) - c]
                S = np.broadcast_to(e.sum(axis=axis, keepdims=True), e.shape)
                out = self.slot_of[n.output[0]]
                self.slots[out]["q"] = 8  # (fixed: no range history)
                y = [self.requant(np.array([a]), 8, int(b), False)[0] for a, b in zip(e.reshape(-1), S.reshape(-1))]
                v[n.output[0]] = (np.array(y, dtype=np.int64).reshape(c.shape), out)
            elif n.op_type == "Relu":  # the float layer (exact)
                v[n.output[0]] = np.maximum(self.real(ins[0]), np.float32(0))
            else:
                raise AssertionError("the oracle has no rule for %s (%s)" % (n.name, n.op_type))
        self.cls = v["cls"]
        self.probs = self.real(v["probs"])
        self.up = self.real(v["up"])
        self.ups = self.real(v["ups"])
        return self.real(v["logits"])


CONFIGS = {
    "default": [],
    "tuned": ["--quantHistoryParam1", "30", "--quantHistoryParam2", "10", "--quantMargin", "10", "--boot-frames", "3",
              "--quantRoundAdd", "25", "--numParamBits", "10"],
    "static": ["--static-quant"],
    "unsigned_in": ["--inElementType", "0", "--quantHistoryParam1", "0", "--quantHistoryParam2", "0"],
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    root = tmp_path_factory.mktemp("pow2")
    model = str(root / "forms.onnx")
    make_model(model)
    np.save(root / "calib.npy", np.concatenate(frames(16, 1)))
    # inElementType 0 declares the input unsigned: its calibration data must not be negative (issue 51.1).
    np.save(root / "calib_unsigned.npy", np.abs(np.concatenate(frames(16, 1))))
    res = {}
    for name, extra in CONFIGS.items():
        calib = root / ("calib_unsigned.npy" if "--inElementType" in extra else "calib.npy")
        subprocess.run([CLI, "translate", name, "-onnx", model, "--target", "tidl", "--out", str(root), "--calib",
                        "x=%s" % calib, "-SaveOptOnnx"] + extra, check=True, capture_output=True)
        res[name] = root / name
    res["model"] = model
    return res


def oracle_for(pkg, name):
    args = CONFIGS[name]
    opt = lambda k, d: int(args[args.index(k) + 1]) if k in args else d  # noqa: E731
    return Oracle(str(pkg / (name + "_opt.onnx")), str(pkg / (name + "_pow2_table.csv")), opt("--numParamBits", 8),
                  opt("--quantRoundAdd", 50), opt("--quantHistoryParam1", 20), opt("--quantHistoryParam2", 5),
                  opt("--quantMargin", 0), opt("--boot-frames", 4), "--static-quant" not in args)


def test_the_table_names_every_integer_form(packages):
    with open(packages["default"] / "default_pow2_table.csv") as f:
        rows = list(csv.DictReader(f))
    ops = {r["name"]: r["op"] for r in rows if r["kind"] == "layer"}
    assert ops["conv_a"] == "conv" and ops["conv_d"] == "conv" and ops["fc"] == "gemm"
    assert ops["add_c"] == "add" and ops["add_i"] == "add" and ops["gap_j"] == "global_avg_pool" and ops["cat_ih"] == "concat"
    assert ops["pool_ea"] == "avg_pool" and ops["bn_k"] == "conv"
    assert ops["max_g"] == "max" and ops["mul_m"] == "mul" and ops["prelu_p"] == "prelu" and ops["gain_g"] == "conv"
    assert ops["relu_ihs"] == "float"
    assert ops["crop_es"] == "moves" and ops["split_ih"] == "moves" and ops["argmax_cls"] == "argmax"
    assert ops["softmax_p"] == "softmax" and ops["deconv_up"] == "deconv" and ops["resize_ups"] == "resize"
    signed = {r["name"]: r["signed"] for r in rows if r["kind"] == "slot"}
    assert signed["a"] == "0" and signed["b"] == "1" and signed["c"] == "0" and signed["d"] == "0" and signed["i"] == "1"
    assert signed["h"] == "0" and signed["ih"] == "1" and signed["ik"] == "0"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_frame_sequence_is_the_oracles(packages, name):
    pkg = packages[name]
    oracle = oracle_for(pkg, name)
    seq = frames(12, 7)
    want, classes, probs, ups, resized = [], [], [], [], []
    for x in seq:
        want.append(oracle.run(x))
        classes.append(oracle.cls)
        probs.append(oracle.probs)
        ups.append(oracle.up)
        resized.append(oracle.ups)
    for threads, exact in ((1, True), (1, False), (2, False), (3, False), (2, True)):
        rt = npuc.Runtime(str(pkg), threads=threads, exact=exact)
        got = [rt.run({"x": x}) for x in seq]
        for i, (g, w, c, p, u, r) in enumerate(zip(got, want, classes, probs, ups, resized)):
            assert g["up"].tobytes() == u.tobytes(), (name, i, "deconvolution")
            assert g["ups"].tobytes() == r.tobytes(), (name, i, "resize")
            assert g["logits"].tobytes() == w.tobytes(), "%s frame %d (threads %d, exact %s): %s vs %s" % (
                name, i, threads, exact, g["logits"], w)
            assert g["probs"].tobytes() == p.tobytes(), (name, i, g["probs"], p)  # one byte per class, as float
            assert g["cls"].tolist() == c.tolist(), (name, i, g["cls"], c)  # (outputs as float32 values)
        # (the device type: TIDL's one byte per index — an ArgMax output of at most 255 classes —, the model's values)
        raw = rt.run({"x": seq[0]}, raw=True)["cls"]
        assert raw.dtype == np.uint8 and raw.tolist() == classes[0].tolist()


def test_an_unsigned_input_with_negative_data_is_refused_and_its_clipping_reported(packages, tmp_path):
    # TIDL's inElementType 0: the input is unsigned 8-bit. Normalised (signed) calibration data with it used to be
    # clipped at 0 silently (issue 51.1: half the values lost, exit 0). translate refuses it, naming the input, the
    # share of negative values and the way out; at run time, the trace counts the values the unsigned codes clipped.
    calib = tmp_path / "signed.npy"
    x = np.concatenate(frames(4, 1))
    np.save(calib, x)
    r = subprocess.run([CLI, "translate", "neg", "-onnx", packages["model"], "--target", "tidl", "--out", str(tmp_path),
                        "--calib", "x=%s" % calib, "--inElementType", "0"], capture_output=True, text=True)
    assert r.returncode != 0 and not (tmp_path / "neg").exists()
    share = 100.0 * np.count_nonzero(x < 0) / x.size
    assert "input 'x': inElementType = 0" in r.stderr and ("%.1f%%" % share) in r.stderr, r.stderr
    assert "inElementType = 1" in r.stderr
    # The unsigned package, run on a frame with negative values: each layer that clipped says how many.
    frame = frames(1, 5)[0]
    np.save(tmp_path / "f.npy", frame)
    r = subprocess.run([CLI, "simulate", str(packages["unsigned_in"]), "--input", "x=%s" % (tmp_path / "f.npy"),
                        "--trace", str(tmp_path / "tr"), "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, check=True)
    with open(tmp_path / "tr" / "trace_index.csv") as f:
        rows = list(csv.DictReader(f))
    clipped = {row["name"]: int(row["clipped"]) for row in rows if row["clipped"]}
    assert list(clipped.values()) == [int(np.count_nonzero(frame < 0))], clipped
    assert "were negative" in r.stderr and "clipped them to 0" in r.stderr
    # Non-negative data: nothing clipped, nothing said.
    np.save(tmp_path / "g.npy", np.abs(frame))
    r = subprocess.run([CLI, "simulate", str(packages["unsigned_in"]), "--input", "x=%s" % (tmp_path / "g.npy"),
                        "--output-dir", str(tmp_path / "out2")], capture_output=True, text=True, check=True)
    assert "were negative" not in r.stderr


def test_the_history_matters_and_reset_forgets_it(packages):
    pkg = str(packages["default"])
    seq = frames(6, 9)
    rt = npuc.Runtime(pkg)
    first = [rt.run({"x": x})["logits"].copy() for x in seq]
    again = [rt.run({"x": x})["logits"].copy() for x in seq]
    assert any(a.tobytes() != b.tobytes() for a, b in zip(first, again))  # another history, other scales
    rt.reset_state()
    assert all(a.tobytes() == rt.run({"x": x})["logits"].tobytes() for a, x in zip(first, seq))
    static = npuc.Runtime(str(packages["static"]))
    s1 = [static.run({"x": x})["logits"].copy() for x in seq]
    # Frozen ranges: a frame gives the same output whatever came before it.
    back = [static.run({"x": x})["logits"].copy() for x in reversed(seq)]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(s1, reversed(back)))


def test_a_pipeline_of_layers_groups_is_the_runtime_frame_by_frame(packages, tmp_path):
    # npuc.Pipeline (docs/runtime-api.md, "Pipelines"): the package in two layers groups (npuc's own cut), one
    # simulated core each; its outputs are Runtime.run's on the same frames in order, range history included.
    model, calib = packages["model"], tmp_path / "calib.npy"
    np.save(calib, np.concatenate(frames(16, 1)))
    subprocess.run([CLI, "translate", "grp", "-onnx", model, "--target", "tidl", "--out", str(tmp_path), "--calib",
                    "x=%s" % calib, "--layer-groups", "auto"], check=True, capture_output=True)
    pkg = str(tmp_path / "grp")
    seq = frames(6, 9)
    for threads, exact in ((1, False), (2, False), (1, True)):
        pl = npuc.Pipeline(pkg, threads=threads, exact=exact)
        assert pl.groups == [1, 2] and [t["name"] for t in pl.inputs] == ["x"]
        rt = npuc.Runtime(pkg, threads=threads, exact=exact)
        for rnd in range(2):  # (the second run goes on from the first's history, as rt does)
            got = pl.run([{"x": x} for x in seq] if rnd == 0 else [[x] for x in seq])
            assert len(got) == len(seq)
            for i, (g, x) in enumerate(zip(got, seq)):
                assert g["logits"].tobytes() == rt.run({"x": x})["logits"].tobytes(), "round %d frame %d" % (rnd, i)
        assert len(pl.stage_ms) == 2 and pl.wall_ms > 0 and pl.handoff_bytes[1] > 0
        pl.reset_state()
        rt.reset_state()
        assert pl.run([seq[0]])[0]["logits"].tobytes() == rt.run({"x": seq[0]})["logits"].tobytes()
        pl.close()
        assert pl.closed
    pl = npuc.Pipeline(pkg)
    with pytest.raises(npuc.Error, match="frame 0: no array for input 'x'"):
        pl.run([{"y": seq[0]}])
    with pytest.raises(npuc.Error, match="frame 1: the package has 1 inputs, got 2"):
        pl.run([seq[0], [seq[0], seq[1]]])
    with pytest.raises(npuc.Error, match="a list of frames"):
        pl.run(seq[0])
    with pytest.raises(npuc.Error, match="an empty list"):
        pl.run([])
    with pytest.raises(npuc.Error):
        npuc.Pipeline(str(tmp_path / "missing"))


def test_int8_pow2_is_close_to_float(packages):
    # The quantized model tracks the float one (8-bit codes, 8-bit weights: a few percent of error at most here).
    seq = frames(8, 3)
    for name in ("default", "static"):
        rt = npuc.Runtime(str(packages[name]))
        for x in seq:
            q = rt.run({"x": x})["logits"].reshape(-1).astype(np.float64)
            f = npuc.run_model(str(packages["model"]), {"x": x})["logits"].reshape(-1).astype(np.float64)
            cos = q @ f / (np.linalg.norm(q) * np.linalg.norm(f))
            assert cos > 0.98, (name, cos, q, f)


def test_translate_reports_the_tidl_estimates(tmp_path):
    # The estimate's single-core times and multi-core throughput reach Python (cost-model.md): the two-group sets are
    # at least as fast as their EVE cores alone, and one engine's cores side by side scale with their count.
    digits = os.path.join(os.path.dirname(__file__), "..", "..", "models", "digits", "digits_cnn.onnx")
    r = npuc.translate("est", digits, target="tidl", out=str(tmp_path))
    assert set(r.single_core_us) == {"dsp", "eve"}
    roi = r.multi_core_roi_s
    assert list(roi) == ["2xDSP", "2xEVE", "2xEVE+1xDSP", "4xEVE", "4xEVE+1xDSP", "1xEVE+1xDSP", "AM5749", "AM5746/AM572x", "AM571x/AM5706/AM5708"]
    assert roi["2xEVE"] == pytest.approx(2e6 / r.single_core_us["eve"])
    assert roi["4xEVE"] == pytest.approx(2 * roi["2xEVE"])
    assert roi["2xEVE+1xDSP"] >= roi["2xEVE"] and roi["4xEVE+1xDSP"] >= roi["4xEVE"]


def test_compare_matches_every_layer_to_the_tensor_its_codes_stand_for(packages, tmp_path):
    # Each layer's codes name the model tensor they stand for (the manifest's codes_of); npuc compare reads them as
    # real values at this frame's q and matches every layer of the package.
    np.save(tmp_path / "x.npy", frames(1, 9)[0])
    subprocess.run([CLI, "compare", packages["model"], str(packages["default"]), "--input", "x=%s" % (tmp_path / "x.npy"),
                    "--out", str(tmp_path / "cmp")], check=True, capture_output=True)
    with open(tmp_path / "cmp" / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["matched"] == "1" for r in rows), [r["layer"] for r in rows if r["matched"] != "1"]
    assert min(float(r["cosine"]) for r in rows) > 0.99
    assert {r["value"] for r in rows} >= {"a", "c", "ea", "ih", "logits"}
    # The Python API's compare, the same way (the codes read at the frame's q: Runtime.output_scale).
    api = npuc.compare(packages["model"], str(packages["default"]), {"x": np.load(tmp_path / "x.npy")})
    assert len(api) == len(rows) and all(r["matched"] for r in api)
    for a, c in zip(api, rows):
        assert a["value"] == c["value"] and abs(a["cosine"] - float(c["cosine"])) < 1e-6, (a, c)


def test_a_channel_whose_weights_round_to_zero_is_named(tmp_path):
    # int8-pow2 weights share one scale per layer (TIDL's shift): a batch norm (a depthwise 1x1 conv here) whose
    # factors span more than the weight codes can hold loses its small channel; translate says which layer, how many
    # channels and the remedy. With 12-bit weights the same factors keep a code, and nothing is said.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    g = helper.make_graph(
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn_spread")], "spread",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
        [c("s", [2.0, 0.002]), c("b", [0.1, 0.2]), c("m", [0.0, 0.0]), c("v", [1.0, 1.0])])
    model = str(tmp_path / "spread.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
    np.save(tmp_path / "cal.npy", np.random.default_rng(0).standard_normal((4, 2, 4, 4)).astype(np.float32))
    said = {bits: translated_says("sp" + bits, model, tmp_path / "cal.npy", tmp_path, "--numParamBits", bits) for bits in ("8", "12")}
    assert "layer 'bn_spread': the weights of 1 of its 2 output channels (the first: 1) all round to 0" in said["8"], said["8"]
    assert "round to 0" not in said["12"], said["12"]


def test_a_prelu_slope_that_rounds_to_zero_is_named(tmp_path):
    # The PRelu slopes share one scale too (the largest sets it): a slope far below it rounds to 0 in 8 bits, so that
    # channel's negative inputs give 0; translate says so (layer, count, first channel, remedy), not with 12 bits.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    rng = np.random.default_rng(4)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("PRelu", ["c", "slope"], ["y"], name="prelu_spread")], "slopes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
        [numpy_helper.from_array((rng.standard_normal((2, 2, 3, 3)) * 0.3).astype(np.float32), "w"),
         numpy_helper.from_array(np.zeros(2, np.float32), "b"),
         numpy_helper.from_array(np.array([0.9, 0.001], np.float32).reshape(2, 1, 1), "slope")])
    model = str(tmp_path / "slopes.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
    np.save(tmp_path / "cal.npy", rng.standard_normal((4, 2, 4, 4)).astype(np.float32))
    said = {bits: translated_says("sl" + bits, model, tmp_path / "cal.npy", tmp_path, "--numParamBits", bits) for bits in ("8", "12")}
    assert "layer 'prelu_spread': 1 of its 2 PRelu slopes (the first: channel 1) round to 0" in said["8"], said["8"]
    assert "round to 0" not in said["12"], said["12"]


@pytest.mark.skipif(not CLI, reason="NPUC_CLI (the npuc binary) not set")
def test_bias_correction_gives_back_what_4_bit_weights_lose(tmp_path):
    # int8-pow2 weights at one shift per layer in 4 bits move each output channel's mean; --bias-correction takes the
    # shift out of the bias (measured with the float model's input means): the trained digits classifier's accuracy
    # on its real labels comes most of the way back.
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    x, y = os.path.join(src, "models/digits/test_x.npy"), os.path.join(src, "models/digits/test_y.npy")
    acc = {}
    for bc in (False, True):
        out = str(tmp_path / str(bc))
        p = subprocess.run([CLI, "translate", "d", "-onnx", os.path.join(src, "models/digits/digits_cnn.onnx"), "--target", "tidl",
                            "--calib", "input=" + x, "--input-shape", "input=1,1,8,8", "--numParamBits", "4", "--out", out]
                           + (["--bias-correction"] if bc else []), capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert ("bias correction: 4 layer(s)" in p.stdout) == bc, p.stdout
        acc[bc] = npuc.evaluate(os.path.join(out, "d"), {"input": np.load(x)}, np.load(y), workers=1)["top1"]
    assert acc[False] < 0.6 and acc[True] > 0.9, acc


@pytest.mark.skipif(not CLI, reason="NPUC_CLI (the npuc binary) not set")
def test_tidl_sim_runs_the_guides_simulation_file_like_the_python_runtime(tmp_path):
    # The TIDL guide's simulation workflow (§3.15.1.4.13): tidl-import writes the package and, at outputNetFile /
    # outputParamsFile, references to it; `npuc tidl-sim sim.txt` (the guide's "1 CONFIG ... 0" list) runs numFrames = 10
    # raw 8-bit frames of one file through it frame after frame — the int8-pow2 package's dynamic quantization carried
    # from frame to frame — and writes the outputs to outData: the bytes of 10 runs of one npuc.Runtime on those frames.
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    rng = np.random.default_rng(3)
    calib = rng.integers(0, 256, (8, 1, 8, 8), dtype=np.uint8)
    frames = rng.integers(0, 256, (10, 1, 8, 8), dtype=np.uint8)
    (tmp_path / "calib.raw").write_bytes(calib.tobytes())
    (tmp_path / "frames.raw").write_bytes(frames.tobytes())
    (tmp_path / "import.txt").write_text(
        'modelType = 2\ninputNetFile = "%s"\noutputNetFile = "./out/tidl_net_d.bin"\noutputParamsFile = "./out/tidl_param_d.bin"\n'
        'inWidth = 8\ninHeight = 8\ninNumChannels = 1\nrawSampleInData = 1\nnumSampleInData = 8\nsampleInData = "./calib.raw"\n'
        'inElementType = 0\ninMean = 0\ninScale = 0.5\n' % os.path.join(src, "models/digits/digits_cnn.onnx"))
    # (inMean / inScale: the frames' values (v - 0) * 0.5; the simulation file does not repeat them — the package
    # reference carries them, as it carries inElementType)
    (tmp_path / "sim_cfg.txt").write_text(
        'rawImage = 1\nnumFrames = 10\ninData = "./frames.raw"\ninElementType = 0\ntraceDumpBaseName = "./trace/trace_dump_"\n'
        'outData = "stats_tool_out.bin"\nnetBinFile = "./out/tidl_net_d.bin"\nparamsBinFile = "./out/tidl_param_d.bin"\n')
    (tmp_path / "sim.txt").write_text("1 ./sim_cfg.txt\n0\n")
    run = subprocess.run([CLI, "tidl-import", "import.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    # The import tool's calibration run (§3.15.1.4.7.3): the layers printed with TIDL's names, the last calibration
    # frame's data per layer in tempDir (0: the input) and its outputs in stats_tool_out.bin, beside the package.
    assert "TIDL_ConvolutionLayer" in run.stdout and "TIDL_InnerProductLayer" in run.stdout, run.stdout
    rt = npuc.Runtime(str(tmp_path / "out" / "tidl_net_d"))
    for i in range(8):
        last = rt.run({"input": calib[i:i + 1].astype(np.float32) * np.float32(0.5)}, raw=True)["logits"]
    assert (tmp_path / "out" / "stats_tool_out.bin").read_bytes() == last.tobytes()
    dumps = sorted((tmp_path / "out" / "tempDir").iterdir(), key=lambda p: int(p.name.split("_")[2]))
    assert len(dumps) == len(rt.layers) + 1, [p.name for p in dumps]
    assert dumps[0].name == "trace_dump_0_8x8.y" and dumps[0].read_bytes() == (calib[7].astype(np.float32) * np.float32(0.5)).tobytes()
    run = subprocess.run([CLI, "tidl-sim", "sim.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    rt = npuc.Runtime(str(tmp_path / "out" / "tidl_net_d"))
    want = b"".join(rt.run({"input": frames[i:i + 1].astype(np.float32) * np.float32(0.5)}, raw=True)["logits"].tobytes() for i in range(10))
    assert (tmp_path / "stats_tool_out.bin").read_bytes() == want
    # inElementType: the import's (recorded in its reference) when the simulation file leaves it out — the frames read as
    # the calibration frames were —, and another value refused (signed reads of unsigned bytes give other inputs).
    (tmp_path / "sim_def.txt").write_text((tmp_path / "sim_cfg.txt").read_text().replace("inElementType = 0\n", "")
                                          .replace("stats_tool_out.bin", "def.bin"))
    run = subprocess.run([CLI, "tidl-sim", "sim_def.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0 and (tmp_path / "def.bin").read_bytes() == want, run.stdout + run.stderr
    (tmp_path / "sim_sig.txt").write_text((tmp_path / "sim_cfg.txt").read_text().replace("inElementType = 0", "inElementType = 1"))
    run = subprocess.run([CLI, "tidl-sim", "sim_sig.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0 and "the package was imported with inElementType = 0" in run.stderr, run.stderr
    traces = sorted(p.name for p in (tmp_path / "trace").iterdir())
    assert traces[0].startswith("trace_dump_0_8x8") and len(traces) >= 5, traces
    # `npuc simulate` takes the reference too; a reference to a package translated again since is refused.
    np.save(tmp_path / "f0.npy", frames[:1].astype(np.float32) * np.float32(0.5))
    run = subprocess.run([CLI, "simulate", "out/tidl_net_d.bin", "--input", "input=f0.npy", "-o", "sim0"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert np.load(tmp_path / "sim0" / "logits.npy").tobytes() == want[:40]  # (a float32 output: one file)
    ref = (tmp_path / "out" / "tidl_net_d.bin").read_text().replace("sha256:", "sha256:0")
    (tmp_path / "out" / "tidl_net_d.bin").write_text(ref)
    run = subprocess.run([CLI, "tidl-sim", "sim.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0 and "translated again since?" in run.stderr, run.stderr
    # Keys of the other file are named as such; updateNetWithStats = 1 is refused with the reason.
    (tmp_path / "bad.txt").write_text('netBinFile = "./out/tidl_net_d.bin"\ninData = "./frames.raw"\nnumSampleInData = 3\n')
    run = subprocess.run([CLI, "tidl-sim", "bad.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0 and "bad.txt:3: numSampleInData: a key of the import configuration" in run.stderr, run.stderr


@pytest.mark.skipif(not CLI, reason="NPUC_CLI (the npuc binary) not set")
def test_tidl_classify_decides_as_the_package_classifies(tmp_path):
    # The guide's classification demo (tidl_classification: -l every label, -s the permitted ones, pictures in): each
    # picture pre-processed as preProcType 256 says ((v - inMean) * inScale), run frame after frame on one runtime; the
    # top class printed is the Python Runtime's on the same input and frames, and the decision is it when permitted,
    # else none (the last one kept).
    from PIL import Image
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    x = np.load(os.path.join(src, "models/digits/test_x.npy"))
    pkg = npuc.translate("cls", os.path.join(src, "models/digits/digits_cnn.onnx"), target="tidl", out=str(tmp_path / "o"),
                         calib={"input": x[:60]}, input_shapes={"input": [1, 1, 8, 8]}).dir
    pics = tmp_path / "pics"
    pics.mkdir()
    frames = []
    for i in range(12):
        img = np.rint(x[100 + i, 0] * 255).astype(np.uint8)
        Image.fromarray(img).save(pics / ("%02d.png" % i))
        frames.append((img.astype(np.float32) * np.float32(1 / 255.0)).reshape(1, 1, 8, 8))
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    (tmp_path / "labels.txt").write_text("\n".join(names) + "\n")
    (tmp_path / "classes.txt").write_text("# permitted\nthree\nseven\n")
    run = subprocess.run([CLI, "tidl-classify", str(pkg), "-i", str(pics), "-l", "labels.txt", "-s", "classes.txt", "--top", "2",
                          "--preProcType", "256", "--inMean", "0", "--inScale", str(1 / 255.0)], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 12, lines
    rt = npuc.Runtime(str(pkg))
    last = "none"
    for line, f in zip(lines, frames):
        best = names[int(np.argmax(rt.run({"input": f})["logits"]))]
        assert ("top-2: %s " % best) in line, (line, best)
        if best in ("three", "seven"):
            last = best
            assert line.endswith("decision: " + best), line
        else:
            assert line.endswith("decision: none (kept: %s)" % last), line
    # --stable N (the demo's ShowRegion takes 3): a decision only where the same class passed in this frame and the N - 1
    # before. Every class permitted here, N = 2: frames 0 and 1 are both zeros, so both branches are taken.
    def decide(stable):
        r = subprocess.run([CLI, "tidl-classify", str(pkg), "-i", str(pics), "-l", "labels.txt", "--top", "1", "--preProcType",
                            "256", "--inMean", "0", "--inScale", str(1 / 255.0), "--stable", str(stable)], cwd=tmp_path,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip().splitlines()
    passed = [line.split("decision: ")[1] if "none (kept" not in line else "" for line in decide(1)]
    last, shown = "none", 0
    for i, line in enumerate(decide(2)):
        if i >= 1 and passed[i] and passed[i] == passed[i - 1]:
            last, shown = passed[i], shown + 1
            assert line.endswith("decision: " + last), (i, line, passed)
        else:
            assert line.endswith("decision: none (kept: %s)" % last), (i, line, passed)
    assert 0 < shown < len(passed), passed
    # The same frames as a video clip (the demo's video input): an uncompressed AVI written here, decoded by OpenCV's
    # VideoCapture inside npuc — the same lines, frame after frame, as the folder of its pictures; --frames stops early.
    write_avi(tmp_path / "clip.avi", np.stack([np.repeat(np.rint(x[100 + i, 0] * 255).astype(np.uint8)[:, :, None], 3, axis=2)
                                               for i in range(12)]))
    args = ["-l", "labels.txt", "-s", "classes.txt", "--top", "2", "--preProcType", "256", "--inMean", "0", "--inScale", str(1 / 255.0)]
    video = subprocess.run([CLI, "tidl-classify", str(pkg), "-i", "clip.avi"] + args, cwd=tmp_path, capture_output=True, text=True)
    if video.returncode != 0 and "built without a video decoder" in video.stderr:
        pytest.skip("npuc built without OpenCV's videoio: " + video.stderr.strip())
    assert video.returncode == 0, video.stderr
    got = [line.split(": ", 1)[1] for line in video.stdout.strip().splitlines()]
    assert [line.split(": ", 1)[0] for line in video.stdout.strip().splitlines()] == ["clip.avi#%d" % i for i in range(12)]
    assert got == [line.split(": ", 1)[1] for line in lines]
    five = subprocess.run([CLI, "tidl-classify", str(pkg), "-i", "clip.avi", "--frames", "5"] + args, cwd=tmp_path,
                          capture_output=True, text=True)
    assert five.returncode == 0 and five.stdout.strip().splitlines() == video.stdout.strip().splitlines()[:5], five.stderr
    (tmp_path / "broken.avi").write_bytes(b"RIFF0000AVI junk")
    bad = subprocess.run([CLI, "tidl-classify", str(pkg), "-i", "broken.avi"] + args, cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode not in (0, 3) and bad.returncode < 128 and "broken.avi" in bad.stderr, (bad.returncode, bad.stderr)


def write_avi(path, frames, fps=10):
    """An uncompressed AVI: RIFF, one video stream of 24-bit BI_RGB frames (bottom-up B, G, R rows padded to 4 bytes),
    frames [n, h, w, 3] uint8 in B, G, R order — what a decoder gives back exactly."""
    n, h, w, _ = frames.shape
    stride = (w * 3 + 3) & ~3
    size = stride * h

    def chunk(tag, data):
        return tag + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")

    def lst(kind, data):
        return b"LIST" + struct.pack("<I", len(data) + 4) + kind + data
    avih = struct.pack("<14I", 1000000 // fps, size * fps, 0, 0x10, n, 0, 1, size, w, h, 0, 0, 0, 0)
    strh = b"vids" + b"DIB " + struct.pack("<IHHIIIIIIIIhhhh", 0, 0, 0, 0, 1, fps, 0, n, size, 0xFFFFFFFF, 0, 0, 0, w, h)
    strf = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, size, 0, 0, 0, 0)
    hdrl = lst(b"hdrl", chunk(b"avih", avih) + lst(b"strl", chunk(b"strh", strh) + chunk(b"strf", strf)))
    movi, idx, off = b"", b"", 4
    for f in frames:
        rows = np.zeros((h, stride), np.uint8)
        rows[:, :w * 3] = f[::-1].reshape(h, w * 3)
        c = chunk(b"00db", rows.tobytes())
        idx += b"00db" + struct.pack("<III", 0x10, off, size)
        movi += c
        off += len(c)
    body = b"AVI " + hdrl + lst(b"movi", movi) + chunk(b"idx1", idx)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(body)) + body)


def test_a_channel_shuffle_and_a_global_max_pool_move_codes(tmp_path):
    # Reshape -> Transpose -> Reshape (a channel shuffle) and a GlobalMaxPool move the codes (form `moves`, no
    # conversions around them; the largest code of a plane is the largest value's). Fast == exact, close to float.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    rng = np.random.default_rng(3)
    w = lambda n, s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)  # noqa: E731
    N = helper.make_node
    inits = [w("w1", (8, 3, 3, 3)), w("b1", (8,)), w("w2", (4, 8, 1, 1)), w("b2", (4,)),
             numpy_helper.from_array(np.array([1, 2, 4, 6, 6], np.int64), "s5"),
             numpy_helper.from_array(np.array([1, 8, 6, 6], np.int64), "s4")]
    nodes = [N("Conv", ["x", "w1", "b1"], ["a0"], name="c1"), N("Relu", ["a0"], ["a"], name="r1"),
             N("Reshape", ["a", "s5"], ["g5"], name="shuf_r1"), N("Transpose", ["g5"], ["t5"], name="shuf_t", perm=[0, 2, 1, 3, 4]),
             N("Reshape", ["t5", "s4"], ["sh"], name="shuf_r2"),
             N("Conv", ["sh", "w2", "b2"], ["y0"], name="c2"), N("GlobalMaxPool", ["y0"], ["y"], name="gmp")]
    g = helper.make_graph(nodes, "shuffle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])], inits)
    model = str(tmp_path / "shuffle.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
    np.save(tmp_path / "calib.npy", rng.standard_normal((8, 3, 8, 8)).astype(np.float32))
    # TIDL takes no channel shuffle (Reshape / Transpose only as a flatten or in an SSD, T:L207, T:L286): refused, and
    # moved as codes with the relaxation.
    r = subprocess.run([CLI, "translate", "shuffle", "-onnx", model, "--target", "tidl", "--out", str(tmp_path), "--calib",
                        "x=%s" % (tmp_path / "calib.npy")], capture_output=True, text=True)
    assert r.returncode != 0 and "shuf_r2 (Reshape): Reshape is taken only" in r.stdout, r.stdout + r.stderr
    subprocess.run([CLI, "translate", "shuffle", "-onnx", model, "--target", "tidl", "--out", str(tmp_path), "--calib",
                    "x=%s" % (tmp_path / "calib.npy"), "--relax", "reshape-transpose"], check=True, capture_output=True)
    with open(tmp_path / "shuffle" / "shuffle_pow2_table.csv") as f:
        forms = {r["name"]: r["op"] for r in csv.DictReader(f) if r["kind"] == "layer"}
    assert forms["shuf_t"] == "moves" and forms["gmp"] == "moves"
    pkg = str(tmp_path / "shuffle")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    fast, exact = npuc.Runtime(pkg).run({"x": x})["y"], npuc.Runtime(pkg, exact=True).run({"x": x})["y"]
    assert fast.tobytes() == exact.tobytes()
    f = npuc.run_model(model, {"x": x})["y"]
    assert np.abs(fast - f).max() <= 0.05 * np.abs(f).max()


def test_ranges_8_bit_codes_cannot_hold_are_said(tmp_path):
    # A tensor whose calibrated range is beyond 127 * 2^24 saturates at the coarsest q, and one below half the finest step
    # 2^-24 becomes all zeros: both legal and both silent before (the TIDL audit: a conv with weights * 1e10, and a
    # random-weight network whose activations shrink to nothing); translate now names the tensor. Kneron's radixes
    # (int8-radix, [-31, 31]) likewise.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    rng = np.random.default_rng(4)
    said = {}
    for name, gain, target in (("huge", 1e10, "tidl"), ("tiny", 1e-10, "tidl"), ("plain", 1.0, "tidl"),
                               ("radix_tiny", 1e-13, "kneron")):  # (Kneron's radixes: [-31, 31])
        w = numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * gain).astype(np.float32), "w")
        g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / (name + ".onnx")))
        np.save(tmp_path / "x.npy", rng.standard_normal((4, 3, 8, 8)).astype(np.float32))
        said[name] = translated_says(name, tmp_path / (name + ".onnx"), tmp_path / "x.npy", tmp_path / "o", target=target)
    assert "tensor 'y': its calibrated range reaches" in said["huge"] and "saturate" in said["huge"], said["huge"]
    assert "tensor 'y': its calibrated range peaks at" in said["tiny"] and "every value becomes 0" in said["tiny"], said["tiny"]
    assert "calibrated range" not in said["plain"], said["plain"]
    assert "tensor 'y': its calibrated range peaks at" in said["radix_tiny"] and "2^-31" in said["radix_tiny"], said["radix_tiny"]


def voc_palette(n=256):
    # Pascal VOC's segmentation palette (its devkit's colormap: the bits of k spread over R, G, B from the top bit down).
    pal = np.zeros((n, 3), np.int32)
    for k in range(n):
        c, r, g, b = k, 0, 0, 0
        for j in range(8):
            r |= ((c >> 0) & 1) << (7 - j)
            g |= ((c >> 1) & 1) << (7 - j)
            b |= ((c >> 2) & 1) << (7 - j)
            c >>= 3
        pal[k] = (r, g, b)
    return pal


def test_tidl_segment_writes_each_frames_class_map(tmp_path):
    # The guide's segmentation demo: each frame's class map as an 8-bit PNG, a byte per pixel its class. From the
    # per-class scores (the logits: the best class per pixel) and from the package's own ArgMax output the maps are the
    # same bytes, and both are numpy's argmax of the Python Runtime's logits over the same frame sequence (preProcType
    # 256: (v - inMean) * inScale on the decoded B, G, R planes).
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    from PIL import Image
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    rng = np.random.default_rng(2)
    np.save(tmp_path / "calib.npy", rng.standard_normal((8, 3, 12, 12)).astype(np.float32))
    subprocess.run([CLI, "translate", "seg", "-onnx", os.path.join(src, "tests/data/quant/pow2_forms.onnx"), "--target", "tidl",
                    "--out", str(tmp_path), "--calib", "x=%s" % (tmp_path / "calib.npy"), "--relax", "reshape-transpose"],
                   check=True, capture_output=True)  # (its channel shuffle: beyond TIDL's Reshape / Transpose)
    (tmp_path / "pics").mkdir()
    frames = []
    for i in range(4):
        rgb = rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)
        Image.fromarray(rgb).save(tmp_path / "pics" / ("%d.png" % i))
        frames.append(np.ascontiguousarray(((rgb[:, :, ::-1].astype(np.float64) - 128) * 0.02).transpose(2, 0, 1)[None], np.float32))
    maps = {}
    for output in ("logits", "classes"):
        run = subprocess.run([CLI, "tidl-segment", str(tmp_path / "seg"), "-i", str(tmp_path / "pics"), "-o", str(tmp_path / output),
                              "--output", output, "--preProcType", "256", "--inMean", "128", "128", "128", "--inScale", "0.02",
                              "0.02", "0.02", "--overlay", str(tmp_path / ("over_" + output))], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.strip().splitlines()) == 4 and "10x12 class map" in run.stdout, run.stdout
        maps[output] = [np.array(Image.open(tmp_path / output / ("%d.png" % i))) for i in range(4)]
    rt = npuc.Runtime(str(tmp_path / "seg"))
    for i, x in enumerate(frames):
        want = np.argmax(rt.run({"x": x})["logits"][0], axis=0).astype(np.uint8)
        assert maps["logits"][i].tobytes() == want.tobytes(), i
        assert maps["classes"][i].tobytes() == want.tobytes(), i
        # --overlay: the picture, each pixel (picture + the VOC colour of the map's class over it) // 2.
        pic = np.array(Image.open(tmp_path / "pics" / ("%d.png" % i))).astype(np.int32)
        h, w = want.shape
        ys, xs = np.meshgrid(np.arange(pic.shape[0]) * h // pic.shape[0], np.arange(pic.shape[1]) * w // pic.shape[1], indexing="ij")
        over = ((pic + voc_palette()[want[ys, xs]]) // 2).astype(np.uint8)
        assert np.array_equal(np.array(Image.open(tmp_path / "over_logits" / ("%d.png" % i))), over), i
    bad = subprocess.run([CLI, "tidl-segment", str(tmp_path / "seg"), "-i", str(tmp_path / "pics"), "-o", str(tmp_path / "x"),
                          "--output", "probs"], capture_output=True, text=True)  # ([1, 4]: no map)
    assert bad.returncode == 2 and "segmentation package writes a class map" in bad.stderr, bad.stderr


def test_tidl_detect_prints_each_frames_detections(tmp_path):
    # The guide's detection demo (ssd_multibox, -p the threshold): each frame's DetectionOutput rows scoring -p or more,
    # in the output's order — the Python Runtime's rows over the same frames (preProcType 256 on the decoded B, G, R
    # planes), label, score and box to the printed digits.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    from PIL import Image
    ssd = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "data", "caffe", "ssd"))
    subprocess.run([CLI, "translate", "ssd", "-caffe", os.path.join(ssd, "model.prototxt"), os.path.join(ssd, "model.caffemodel"),
                    "--target", "generic", "--out", str(tmp_path)], check=True, capture_output=True)
    rng = np.random.default_rng(6)
    (tmp_path / "pics").mkdir()
    frames = []
    for i in range(3):
        rgb = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        Image.fromarray(rgb).save(tmp_path / "pics" / ("%d.png" % i))
        frames.append(np.ascontiguousarray(((rgb[:, :, ::-1].astype(np.float64) - 128) * 0.01).transpose(2, 0, 1)[None], np.float32))
    (tmp_path / "labels.txt").write_text("background\ncat\ndog\n")
    run = subprocess.run([CLI, "tidl-detect", str(tmp_path / "ssd"), "-i", str(tmp_path / "pics"), "-p", "0.6", "-l",
                          str(tmp_path / "labels.txt"), "--preProcType", "256", "--inMean", "128", "128", "128", "--inScale", "0.01",
                          "0.01", "0.01", "--draw", str(tmp_path / "drawn")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    blocks = []  # (a frame's line, then its detections' lines, indented)
    for line in run.stdout.splitlines():
        if line.startswith("  "):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    assert len(blocks) == 3, run.stdout
    rt = npuc.Runtime(str(tmp_path / "ssd"))
    names = ["background", "cat", "dog"]
    total = 0
    for block, x in zip(blocks, frames):
        rows = rt.run({"data": x})["detection_out"].reshape(-1, 7)
        rows = rows[rows[:, 2] >= np.float32(0.6)]
        got = [line.split() for line in block[1:]]
        assert ("%d detection(s)" % len(rows)) in block[0] and len(got) == len(rows), (block[0], len(rows))
        for g, r in zip(got, rows):
            assert g[0] == names[int(r[1])] and g[1] == "%.4f" % r[2], (g, r)
            assert " ".join(g[2:6]) == "[%.4f, %.4f, %.4f, %.4f]" % tuple(r[3:7]), (g, r)
        total += len(rows)
        # --draw: the picture with each box's 2-pixel outline in the VOC colour of its label, in the output's order.
        pic = np.array(Image.open(tmp_path / "pics" / ("%d.png" % len(blocks[:blocks.index(block)])))).copy()
        H, W = pic.shape[:2]
        for r in rows:
            lft, top = [min(max(int(np.floor(v + 0.5)), 0), n - 1) for v, n in ((r[3] * W, W), (r[4] * H, H))]
            rgt, bot = [min(max(int(np.floor(v + 0.5)), 0), n - 1) for v, n in ((r[5] * W, W), (r[6] * H, H))]
            box = np.zeros((H, W), bool)
            box[top:bot + 1, lft:rgt + 1] = True
            inner = np.zeros((H, W), bool)
            inner[top + 2:bot - 1, lft + 2:rgt - 1] = True
            pic[box & ~inner] = voc_palette()[int(r[1])]
        drawn = np.array(Image.open(tmp_path / "drawn" / ("%d.png" % blocks.index(block))))
        assert np.array_equal(drawn, pic), blocks.index(block)
    assert total > 0


def test_a_1d_convolution_is_the_2d_one_of_height_1(tmp_path):
    # The guide: "no fundamental limitations" for 1-D blobs (T:L7). A 1-D Conv (+ Relu) is an integer layer, its view
    # NC1W: the package gives the bytes of the same network written in 2-D (height 1) over a frame sequence.
    if not CLI:
        pytest.skip("NPUC_CLI not set")
    rng = np.random.default_rng(8)
    w1, b1 = (rng.standard_normal((6, 4, 5)) * 0.3).astype(np.float32), (rng.standard_normal(6) * 0.1).astype(np.float32)
    w2, b2 = (rng.standard_normal((3, 6, 3)) * 0.3).astype(np.float32), (rng.standard_normal(3) * 0.1).astype(np.float32)
    N = helper.make_node
    for dims, name in ((1, "one"), (2, "two")):
        sh = (lambda w: w[:, :, None, :]) if dims == 2 else (lambda w: w)
        pads = [2, 2] if dims == 1 else [0, 2, 0, 2]
        pads2 = [1, 1] if dims == 1 else [0, 1, 0, 1]
        strides = [2] if dims == 1 else [1, 2]
        inits = [numpy_helper.from_array(sh(w1), "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(sh(w2), "w2"),
                 numpy_helper.from_array(b2, "b2")]
        nodes = [N("Conv", ["x", "w1", "b1"], ["a0"], name="conv1", pads=pads, strides=strides), N("Relu", ["a0"], ["a"], name="relu1"),
                 N("Conv", ["a", "w2", "b2"], ["y"], name="conv2", pads=pads2)]
        xs, ys = ([1, 4, 32], [1, 3, 16]) if dims == 1 else ([1, 4, 1, 32], [1, 3, 1, 16])
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)], inits)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / (name + ".onnx")))
    calib = rng.standard_normal((8, 4, 32)).astype(np.float32)
    np.save(tmp_path / "c1.npy", calib)
    np.save(tmp_path / "c2.npy", calib[:, :, None, :])
    for name, c in (("one", "c1"), ("two", "c2")):
        subprocess.run([CLI, "translate", name, "-onnx", str(tmp_path / (name + ".onnx")), "--target", "tidl", "--out", str(tmp_path),
                        "--calib", "x=%s" % (tmp_path / (c + ".npy"))], check=True, capture_output=True)
    with open(tmp_path / "one" / "one_pow2_table.csv") as f:
        ops = {r["name"]: r["op"] for r in csv.DictReader(f) if r["kind"] == "layer"}
    assert ops["conv1"] == "conv" and ops["conv2"] == "conv", ops
    r1, r2 = npuc.Runtime(str(tmp_path / "one")), npuc.Runtime(str(tmp_path / "two"))
    for i in range(6):
        x = (rng.standard_normal((1, 4, 32)) * (0.5 + 0.3 * i)).astype(np.float32)
        y1, y2 = r1.run({"x": x})["y"], r2.run({"x": np.ascontiguousarray(x[:, :, None, :])})["y"]
        assert y1.shape == (1, 3, 16) and y1.tobytes() == y2.tobytes(), i
