"""TensorFlow's ops in numpy, written from TensorFlow's documented semantics: the second oracle of generate.py (the
first where OpenCV does not run a graph). Float math in float64, results rounded to float32."""
import numpy as np


def _attr(n, k, default=None):
    if k not in n.attr:
        return default
    a = n.attr[k]
    kind = a.WhichOneof("value")
    if kind == "list":
        return [v.decode() for v in a.list.s] if a.list.s else list(a.list.i)
    if kind == "s":
        return a.s.decode()
    return getattr(a, kind)


def _tensor(t):
    shape = [d.size for d in t.tensor_shape.dim]
    dt = {1: np.float32, 3: np.int32, 9: np.int64}[t.dtype]
    if t.tensor_content:
        return np.frombuffer(t.tensor_content, dt).reshape(shape).copy()
    vals = list(t.float_val) if t.dtype == 1 else list(t.int_val) if t.dtype == 3 else list(t.int64_val)
    n = int(np.prod(shape))
    vals = vals + [vals[-1]] * (n - len(vals)) if vals else [0] * n
    return np.array(vals, dt).reshape(shape)


def same_pads(size, k, s, d=1):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return total // 2, total - total // 2


def _pads(n, x_hw, k, s, d):
    mode = _attr(n, "padding")
    if mode == "VALID":
        return [(0, 0), (0, 0)]
    return [same_pads(x_hw[i], k[i], s[i], d[i]) for i in range(2)]


def conv2d(x, f, strides, dil, pads, depthwise=False):
    """x NHWC, f [kh, kw, in, out] (depthwise: [kh, kw, C, multiplier])."""
    x = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)])
    kh, kw = f.shape[:2]
    oh = (x.shape[1] - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (x.shape[2] - (kw - 1) * dil[1] - 1) // strides[1] + 1
    c = x.shape[3]
    groups = 1 if depthwise else c // f.shape[2]
    out_c = c * f.shape[3] if depthwise else f.shape[3]
    y = np.zeros((x.shape[0], oh, ow, out_c))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dil[0]:i * dil[0] + (oh - 1) * strides[0] + 1:strides[0],
                      j * dil[1]:j * dil[1] + (ow - 1) * strides[1] + 1:strides[1], :]
            if depthwise:
                y += (patch[..., :, None] * f[i, j].astype(np.float64)[None, None, None]).reshape(y.shape)
            else:
                gi, go = c // groups, out_c // groups
                for g in range(groups):
                    y[..., g * go:(g + 1) * go] += patch[..., g * gi:(g + 1) * gi] @ f[i, j, :, g * go:(g + 1) * go]
    return y


def pool(x, k, s, pads, kind):
    n, h, w, c = x.shape
    oh = (h + sum(pads[0]) - k[0]) // s[0] + 1
    ow = (w + sum(pads[1]) - k[1]) // s[1] + 1
    y = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - pads[0][0], j * s[1] - pads[1][0]
            win = x[:, max(h0, 0):min(h0 + k[0], h), max(w0, 0):min(w0 + k[1], w), :].astype(np.float64)
            # TensorFlow: max over the taps inside the input; the average divides by their count
            y[:, i, j] = win.max(axis=(1, 2)) if kind == "max" else win.mean(axis=(1, 2))
    return y


def resize(x, size, bilinear, align, half):
    n, h, w, c = x.shape
    oh, ow = size

    def scale(i, o):
        return np.float32((i - 1) / (o - 1)) if align and o > 1 else np.float32(i / o)

    def src(o, sc):
        return (o + 0.5) * sc - 0.5 if half and bilinear else (o + 0.5) * sc if half else o * sc

    def axis(i, o):
        sc = scale(i, o)
        if not bilinear:
            f = (lambda v: np.floor(v + 0.5)) if align else np.floor  # roundf: half away from zero
            idx = [min(int(f(np.float32(src(k, sc)))), i - 1) for k in range(o)]
            return [(max(v, 0), max(v, 0), 0.0) for v in idx]
        taps = []
        for k in range(o):
            v = float(np.float32(src(k, sc)))
            lo = int(np.floor(v))
            taps.append((min(max(lo, 0), i - 1), min(int(np.ceil(v)), i - 1), v - lo))  # TF: lower, ceil, lerp
        return taps

    ys, xs = axis(h, oh), axis(w, ow)
    out = np.zeros((n, oh, ow, c))
    xd = x.astype(np.float64)
    for a, (y0, y1, fy) in enumerate(ys):
        for b, (x0, x1, fx) in enumerate(xs):
            top = xd[:, y0, x0] + (xd[:, y0, x1] - xd[:, y0, x0]) * fx
            bot = xd[:, y1, x0] + (xd[:, y1, x1] - xd[:, y1, x0]) * fx
            out[:, a, b] = top + (bot - top) * fy
    return out


def deconv(dy, f, out_size, strides, pads):
    """Conv2DBackpropInput: the gradient of a convolution with filter f [kh, kw, oc, ic] from an input of out_size."""
    n, h, w, ic = dy.shape
    kh, kw, oc, _ = f.shape
    oh, ow = out_size
    ph = max((h - 1) * strides[0] + kh, pads[0][0] + oh)
    pw = max((w - 1) * strides[1] + kw, pads[1][0] + ow)
    out = np.zeros((n, ph, pw, oc))
    for y in range(h):
        for xx in range(w):
            contrib = np.einsum("ni,hwoi->nhwo", dy[:, y, xx].astype(np.float64), f.astype(np.float64))
            out[:, y * strides[0]:y * strides[0] + kh, xx * strides[1]:xx * strides[1] + kw] += contrib
    return out[:, pads[0][0]:pads[0][0] + oh, pads[1][0]:pads[1][0] + ow]


def strided_slice(x, b, e, s, n):
    bm, em, el, nm, sm = (_attr(n, k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                                   "shrink_axis_mask"))
    idx = []
    for i in range(len(b)):
        if el >> i & 1:
            idx.append(Ellipsis)
        elif nm >> i & 1:
            idx.append(np.newaxis)
        elif sm >> i & 1:
            idx.append(int(b[i]))
        else:
            idx.append(slice(None if bm >> i & 1 else int(b[i]), None if em >> i & 1 else int(e[i]), int(s[i])))
    return x[tuple(idx)]


class TfNumpy:
    def __init__(self, graph):
        self.nodes = {n.name: n for n in graph.node}

    def run(self, feeds, outputs):
        self.vals = {k: v for k, v in feeds.items()}
        return [np.asarray(self.get(o)).astype(np.float32) for o in outputs]

    def get(self, ref):
        name, _, k = ref.partition(":")
        if name not in self.vals:
            self.vals[name] = self.eval(self.nodes[name])
        v = self.vals[name]
        return v[int(k)] if k else (v[0] if isinstance(v, tuple) else v)

    def eval(self, n):  # noqa: C901 (one branch per op)
        ins = [self.get(i) for i in n.input if not i.startswith("^")]
        op, nhwc = n.op, _attr(n, "data_format", "NHWC") == "NHWC"
        f64 = [np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a) for a in ins]
        if op == "Const":
            return _tensor(n.attr["value"].tensor)
        if op in ("Identity", "StopGradient"):
            return ins[0]
        to_nhwc = (lambda t: t) if nhwc else (lambda t: t.transpose(0, 2, 3, 1))
        from_nhwc = (lambda t: t) if nhwc else (lambda t: t.transpose(0, 3, 1, 2))
        def conv(depthwise):
            x = to_nhwc(ins[0])
            st = _attr(n, "strides")
            dl = _attr(n, "dilations", [1, 1, 1, 1])
            st, dl = (st[1:3], dl[1:3]) if nhwc else (st[2:4], dl[2:4])
            pads = _pads(n, x.shape[1:3], ins[1].shape[:2], st, dl)
            return conv2d(x, ins[1], st, dl, pads, depthwise)

        def matmul():
            a = f64[0].T if _attr(n, "transpose_a", False) else f64[0]
            b = f64[1].T if _attr(n, "transpose_b", False) else f64[1]
            return a @ b

        unary = {"Relu": lambda x: np.maximum(x, 0), "Relu6": lambda x: np.clip(x, 0, 6),
                 "Sigmoid": lambda x: 1 / (1 + np.exp(-x)), "Tanh": np.tanh, "Sqrt": np.sqrt,
                 "Rsqrt": lambda x: 1 / np.sqrt(x), "Elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
                 "Abs": np.abs, "Exp": np.exp, "Log": np.log, "Neg": np.negative, "Floor": np.floor,
                 "Square": np.square,
                 "LeakyRelu": lambda x: np.where(x > 0, x, x * np.float64(np.float32(
                     _attr(n, "leakyrelu_alpha" if op.startswith("_Fused") else "alpha", 0.2))))}
        if op in ("Conv2D", "DepthwiseConv2dNative"):
            return from_nhwc(conv(op != "Conv2D"))
        if op in ("_FusedConv2D", "FusedDepthwiseConv2dNative", "_FusedMatMul"):
            # grappler's fused product: the product, then fused_ops in order on the inputs after its two (NHWC)
            y = matmul() if op == "_FusedMatMul" else conv(op == "FusedDepthwiseConv2dNative")
            args = list(f64[2:])
            for fop in _attr(n, "fused_ops"):
                if fop in ("BiasAdd", "Add", "AddV2"):
                    y = y + args.pop(0)
                elif fop == "Prelu":
                    y = np.maximum(y, 0) + args.pop(0) * np.minimum(y, 0)
                elif fop.startswith("FusedBatchNorm"):
                    sc, of, m, v = args[:4]
                    del args[:4]
                    y = (y - m) / np.sqrt(v + np.float64(np.float32(_attr(n, "epsilon", 1e-4)))) * sc + of
                else:
                    y = unary[fop](y)
            assert not args
            return y
        if op == "AddN":
            return sum(f64)
        if op == "Prelu":  # TensorFlow.js: max(0, x) + alpha * min(0, x)
            return np.maximum(f64[0], 0) + f64[1] * np.minimum(f64[0], 0)
        if op == "Split":
            return tuple(np.split(ins[1], _attr(n, "num_split"), axis=int(ins[0])))
        if op == "SplitV":
            sizes = [int(v) for v in ins[1]]
            if -1 in sizes:
                sizes[sizes.index(-1)] = ins[0].shape[int(ins[2])] - (sum(sizes) + 1)
            return tuple(np.split(ins[0], np.cumsum(sizes)[:-1], axis=int(ins[2])))
        if op == "Conv2DBackpropInput":
            st = _attr(n, "strides")[1:3]
            size = ins[0][1:3]
            pads = _pads(n, size, ins[1].shape[:2], st, [1, 1])
            return deconv(ins[2], ins[1], size, st, pads)
        if op == "BiasAdd":
            b = f64[1] if nhwc or ins[0].ndim < 3 else f64[1].reshape(-1, 1, 1)
            return f64[0] + b
        if op.startswith("FusedBatchNorm"):
            x, sc, of, m, v = [to_nhwc(f64[0])] + f64[1:]
            return from_nhwc((x - m) / np.sqrt(v + _attr(n, "epsilon", 1e-4)) * sc + of)
        if op in ("MaxPool", "AvgPool"):
            x = to_nhwc(ins[0])
            k, st = _attr(n, "ksize"), _attr(n, "strides")
            k, st = (k[1:3], st[1:3]) if nhwc else (k[2:4], st[2:4])
            return from_nhwc(pool(x, k, st, _pads(n, x.shape[1:3], k, st, [1, 1]), "max" if op == "MaxPool" else "avg"))
        if op in ("ResizeBilinear", "ResizeNearestNeighbor"):
            return resize(ins[0], list(ins[1]), op == "ResizeBilinear", _attr(n, "align_corners", False),
                          _attr(n, "half_pixel_centers", False))
        if op in unary:
            return unary[op](f64[0])
        binary = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.divide,
                  "Maximum": np.maximum, "Minimum": np.minimum}
        if op in binary:
            return binary[op](f64[0], f64[1])
        if op == "MatMul":
            return matmul()
        if op == "Softmax":
            e = np.exp(f64[0] - f64[0].max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        if op in ("DepthToSpace", "SpaceToDepth"):  # NHWC; a block's channels in row, column, channel order
            x, b = f64[0], _attr(n, "block_size")
            nb, h, w, c = x.shape
            if op == "DepthToSpace":
                return x.reshape(nb, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5).reshape(nb, h * b, w * b, -1)
            return x.reshape(nb, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5).reshape(nb, h // b, w // b, -1)
        if op in ("Mean", "Prod", "Max", "Min", "Sum"):
            axes = tuple(int(a) for a in np.ravel(ins[1]))
            fn = {"Mean": np.mean, "Prod": np.prod, "Max": np.max, "Min": np.min, "Sum": np.sum}[op]
            return fn(f64[0], axis=axes, keepdims=_attr(n, "keep_dims", False))
        if op == "ArgMax":
            return np.argmax(ins[0], axis=int(ins[1]))
        if op == "Cast":
            return np.asarray(ins[0]).astype(np.float32 if _attr(n, "DstT") == 1 else np.int64)
        if op == "ConcatV2":
            return np.concatenate(ins[:-1], axis=int(ins[-1]))
        if op == "Pack":
            return np.stack(ins, axis=_attr(n, "axis", 0))
        if op == "Reshape":
            return np.reshape(ins[0], [int(v) for v in ins[1]])
        if op == "Squeeze":
            dims = _attr(n, "squeeze_dims", [])
            return np.squeeze(ins[0], axis=tuple(dims) if dims else None)
        if op == "ExpandDims":
            return np.expand_dims(ins[0], int(np.ravel(ins[1])[0]))
        if op == "Shape":
            return np.array(ins[0].shape, np.int32)
        if op == "Slice":
            idx = tuple(slice(int(b), None if s == -1 else int(b + s)) for b, s in zip(ins[1], ins[2]))
            return ins[0][idx]
        if op == "StridedSlice":
            return strided_slice(ins[0], ins[1], ins[2], ins[3], n)
        if op in ("Pad", "PadV2", "MirrorPad"):
            p = [tuple(int(v) for v in r) for r in ins[1]]
            if op == "MirrorPad":
                return np.pad(ins[0], p, mode="reflect" if _attr(n, "mode") == "REFLECT" else "symmetric")
            return np.pad(ins[0], p, constant_values=float(ins[2]) if op == "PadV2" else 0.0)
        if op == "Transpose":
            return np.transpose(ins[0], [int(v) for v in ins[1]])
        raise NotImplementedError(op)
