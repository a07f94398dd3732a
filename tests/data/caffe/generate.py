#!/usr/bin/python3
"""Writes the Caffe test models of tests/frontend/caffe_test.cpp and their expected outputs.

Each model is a folder: model.prototxt (written here by hand), model.caffemodel (seeded weights, written with the
protobuf classes protoc generates from npuc's own src/frontend/caffe/caffe.proto), input_<name>.npy and
output_<blob>.npy, the outputs of OpenCV's dnn module (cv2.dnn.readNetFromCaffe, layer fusion off), an implementation
of Caffe nobody here wrote. Models whose layer OpenCV does not run take their outputs from numpy (said in
oracle.txt). Run it again after changing a model: scripts/install_deps.sh caffe installs what it needs.

    /usr/bin/python3 tests/data/caffe/generate.py [model ...]
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

_pb_dir = tempfile.mkdtemp(prefix="npuc_caffe_pb_")
subprocess.run(["protoc", "-I" + os.path.join(ROOT, "src/frontend/caffe"), "--python_out=" + _pb_dir,
                os.path.join(ROOT, "src/frontend/caffe/caffe.proto")], check=True)
sys.path.insert(0, _pb_dir)
import caffe_pb2  # noqa: E402

import cv2  # noqa: E402


class Model:
    """A prototxt under construction and the blobs of its layers."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.text = [f'name: "{name}"']
        self.blobs = {}  # layer name -> [arrays]
        self.inputs = {}  # blob name -> shape
        self.outputs = []  # blob names whose values are compared

    def input(self, name, shape, form="layer"):
        self.inputs[name] = shape
        dims = " ".join(f"dim: {d}" for d in shape)
        if form == "layer":
            self.text.append(f'layer {{ name: "{name}" type: "Input" top: "{name}" input_param {{ shape {{ {dims} }} }} }}')
        elif form == "input_shape":
            self.text.insert(1, f'input: "{name}"\ninput_shape {{ {dims} }}')
        else:  # input_dim
            self.text.insert(1, f'input: "{name}"\n' + "\n".join(f"input_dim: {d}" for d in shape))

    def layer(self, name, type_, bottoms, tops, params="", blobs=None):
        b = " ".join(f'bottom: "{x}"' for x in bottoms)
        t = " ".join(f'top: "{x}"' for x in tops)
        self.text.append(f'layer {{ name: "{name}" type: "{type_}" {b} {t} {params} }}')
        if blobs:
            self.blobs[name] = [np.asarray(x, np.float32) for x in blobs]

    def w(self, *shape, scale=0.5):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def write(self, oracle="opencv", numpy_outputs=None):
        d = os.path.join(HERE, self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        proto = os.path.join(d, "model.prototxt")
        with open(proto, "w") as f:
            f.write("\n".join(self.text) + "\n")
        net = caffe_pb2.NetParameter()
        net.name = self.name
        for lname, arrays in self.blobs.items():
            lp = net.layer.add()
            lp.name = lname
            for a in arrays:
                bp = lp.blobs.add()
                bp.shape.dim.extend(a.shape)
                bp.data.extend(a.ravel().tolist())
        weights = os.path.join(d, "model.caffemodel")
        with open(weights, "wb") as f:
            f.write(net.SerializeToString())
        feeds = getattr(self, "feeds", None) or {n: self.rng.standard_normal(s).astype(np.float32)
                                                 for n, s in self.inputs.items()}
        for n, x in feeds.items():
            np.save(os.path.join(d, f"input_{n}.npy"), x)
            if getattr(self, "feeds", None):  # a picture: also as TIDL's raw 8-bit frame (sampleInData)
                x.astype(np.uint8).tofile(os.path.join(d, f"input_{n}.raw"))
        if oracle == "opencv":
            cvnet = cv2.dnn.readNetFromCaffe(proto, weights)
            cvnet.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
            cvnet.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
            cvnet.enableFusion(False)
            for n, x in feeds.items():
                cvnet.setInput(x, n)
            outs = cvnet.forward(self.outputs)
        else:
            outs = numpy_outputs(feeds)
        for n, y in zip(self.outputs, outs):
            np.save(os.path.join(d, f"output_{n}.npy"), np.asarray(y, np.float32))
        with open(os.path.join(d, "oracle.txt"), "w") as f:
            f.write(("OpenCV " + cv2.__version__ if oracle == "opencv" else "numpy " + np.__version__) + "\n")
            f.write("outputs: " + " ".join(self.outputs) + "\n")


def conv():
    m = Model("conv", 1)
    m.input("data", [1, 3, 9, 9])
    m.layer("conv1", "Convolution", ["data"], ["conv1"],
            "convolution_param { num_output: 4 kernel_size: 3 pad: 1 stride: 2 }", [m.w(4, 3, 3, 3), m.w(4)])
    m.layer("relu1", "ReLU", ["conv1"], ["conv1"])  # in place
    m.layer("conv2", "Convolution", ["conv1"], ["conv2"],
            "convolution_param { num_output: 6 group: 2 kernel_h: 3 kernel_w: 2 pad_h: 2 pad_w: 1 stride_h: 1 "
            "stride_w: 2 dilation: 2 bias_term: false }", [m.w(6, 2, 3, 2)])
    m.layer("deconv", "Deconvolution", ["conv2"], ["deconv"],
            "convolution_param { num_output: 3 kernel_size: 4 stride: 2 pad: 1 }", [m.w(6, 3, 4, 4), m.w(3)])
    m.outputs = ["conv2", "deconv"]
    m.write()


def pooling():
    m = Model("pooling", 2)
    m.input("data", [1, 2, 10, 11])
    # Caffe rounds the output size up: 10 -> 5 (floor gives 4) without padding, 6 with pad 1.
    m.layer("max_ceil", "Pooling", ["data"], ["max_ceil"], "pooling_param { pool: MAX kernel_size: 3 stride: 2 }")
    m.layer("max_pad", "Pooling", ["data"], ["max_pad"], "pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }")
    m.layer("ave_pad", "Pooling", ["data"], ["ave_pad"], "pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 }")
    m.layer("ave_ceil", "Pooling", ["data"], ["ave_ceil"], "pooling_param { pool: AVE kernel_size: 2 stride: 2 }")
    m.layer("ave_hw", "Pooling", ["data"], ["ave_hw"],
            "pooling_param { pool: AVE kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 3 pad_h: 1 pad_w: 1 }")
    m.layer("gmax", "Pooling", ["data"], ["gmax"], "pooling_param { pool: MAX global_pooling: true }")
    m.layer("gave", "Pooling", ["data"], ["gave"], "pooling_param { pool: AVE global_pooling: true }")
    m.outputs = ["max_ceil", "max_pad", "ave_pad", "ave_ceil", "ave_hw", "gmax", "gave"]
    m.write()


def caffe_pool(x, kernel, stride, pad, ave):
    """Caffe's PoolingLayer::Forward_cpu in numpy: output size rounded up, a last window starting in the right
    padding dropped; an average divides by the window's taps inside the padded input."""
    n, c, h, w = x.shape

    def size(i, k, s, p):
        o = -(-(i + 2 * p - k) // s) + 1
        return o - 1 if p > 0 and (o - 1) * s >= i + p else o

    oh, ow = size(h, kernel[0], stride[0], pad[0]), size(w, kernel[1], stride[1], pad[1])
    y = np.zeros((n, c, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * stride[0] - pad[0], j * stride[1] - pad[1]
            he, we = min(hs + kernel[0], h + pad[0]), min(ws + kernel[1], w + pad[1])
            area = (he - hs) * (we - ws)
            win = x[:, :, max(hs, 0):min(he, h), max(ws, 0):min(we, w)].astype(np.float64)
            y[:, :, i, j] = win.sum(axis=(2, 3)) / area if ave else win.max(axis=(2, 3))
    return y


def check_pooling_oracle():
    """OpenCV's pooling is the oracle of Caffe's rounding and divisor rules: checked here against Caffe's code."""
    d = os.path.join(HERE, "pooling")
    x = np.load(os.path.join(d, "input_data.npy"))
    for name, k, s, p, ave in [("max_ceil", (3, 3), (2, 2), (0, 0), False), ("max_pad", (3, 3), (2, 2), (1, 1), False),
                               ("ave_pad", (3, 3), (2, 2), (1, 1), True), ("ave_ceil", (2, 2), (2, 2), (0, 0), True),
                               ("ave_hw", (3, 2), (2, 3), (1, 1), True)]:
        got = np.load(os.path.join(d, f"output_{name}.npy"))
        want = caffe_pool(x, k, s, p, ave)
        assert got.shape == want.shape and np.abs(got - want).max() < 1e-6, name


def inner_product():
    m = Model("inner_product", 3)
    m.input("data", [2, 3, 4, 4])
    m.layer("fc1", "InnerProduct", ["data"], ["fc1"], "inner_product_param { num_output: 5 }", [m.w(5, 48), m.w(5)])
    m.layer("fc2", "InnerProduct", ["fc1"], ["fc2"], "inner_product_param { num_output: 3 bias_term: false }",
            [m.w(3, 5)])
    m.layer("fc3", "InnerProduct", ["data"], ["fc3"], "inner_product_param { num_output: 6 axis: 2 }",
            [m.w(6, 16), m.w(6)])
    m.outputs = ["fc2", "fc3"]
    m.write()


def activations():
    m = Model("activations", 4)
    m.input("data", [1, 4, 3, 5])
    m.layer("leaky", "ReLU", ["data"], ["leaky"], "relu_param { negative_slope: 0.1 }")
    m.layer("prelu", "PReLU", ["leaky"], ["prelu"], "", [m.w(4)])
    m.layer("prelu_shared", "PReLU", ["data"], ["prelu_shared"], "prelu_param { channel_shared: true }", [m.w(1)])
    m.layer("sigmoid", "Sigmoid", ["prelu"], ["sigmoid"])
    m.layer("tanh", "TanH", ["prelu_shared"], ["tanh"])
    m.layer("soft1", "Softmax", ["data"], ["soft1"])
    m.layer("soft2", "Softmax", ["data"], ["soft2"], "softmax_param { axis: 2 }")
    m.outputs = ["sigmoid", "tanh", "soft1", "soft2"]
    m.write()


def eltwise_concat():
    m = Model("eltwise_concat", 5)
    m.input("data", [1, 3, 5, 5], form="input_shape")
    m.layer("a", "Convolution", ["data"], ["a"], "convolution_param { num_output: 4 kernel_size: 1 }", [m.w(4, 3, 1, 1), m.w(4)])
    m.layer("b", "Convolution", ["data"], ["b"], "convolution_param { num_output: 4 kernel_size: 3 pad: 1 }", [m.w(4, 3, 3, 3), m.w(4)])
    m.layer("c", "Convolution", ["data"], ["c"], "convolution_param { num_output: 4 kernel_size: 1 }", [m.w(4, 3, 1, 1), m.w(4)])
    m.layer("sum", "Eltwise", ["a", "b"], ["sum"])
    m.layer("wsum", "Eltwise", ["a", "b", "c"], ["wsum"], "eltwise_param { operation: SUM coeff: 0.5 coeff: -2 coeff: 1 }")
    m.layer("prod", "Eltwise", ["a", "b", "c"], ["prod"], "eltwise_param { operation: PROD }")
    m.layer("max", "Eltwise", ["a", "b", "c"], ["max"], "eltwise_param { operation: MAX }")
    m.layer("cat", "Concat", ["sum", "wsum", "prod", "max"], ["cat"])
    m.layer("cat2", "Concat", ["a", "b"], ["cat2"], "concat_param { axis: 2 }")
    m.outputs = ["cat", "cat2"]
    m.write()


def batch_norm():
    m = Model("batch_norm", 6)
    m.input("data", [1, 3, 4, 4], form="input_dim")
    m.layer("conv", "Convolution", ["data"], ["conv"], "convolution_param { num_output: 5 kernel_size: 3 }", [m.w(5, 3, 3, 3), m.w(5)])
    mean, var = m.w(5), np.abs(m.w(5)) + 0.1
    factor = np.float32(0.8)  # the stored sums are the statistics times this
    m.layer("bn", "BatchNorm", ["conv"], ["conv"], "batch_norm_param { eps: 0.001 }",
            [mean * factor, var * factor, np.array([factor])])
    m.layer("scale", "Scale", ["conv"], ["conv"], "scale_param { bias_term: true }", [m.w(5), m.w(5)])
    m.layer("relu", "ReLU", ["conv"], ["conv"])
    m.layer("scale2", "Scale", ["conv"], ["scaled"], "", [m.w(5)])
    m.layer("drop", "Dropout", ["scaled"], ["scaled"], "dropout_param { dropout_ratio: 0.3 }")
    m.layer("out", "Sigmoid", ["scaled"], ["out"])
    m.outputs = ["out"]  # (OpenCV's value of an in-place blob is its first layer's, not the blob's last)
    m.write()


def shapes():
    m = Model("shapes", 7)
    m.input("data", [1, 6, 3, 4])
    m.layer("split", "Split", ["data"], ["s1", "s2"])
    m.layer("slice", "Slice", ["s1"], ["p1", "p2", "p3"], "slice_param { axis: 1 slice_point: 2 slice_point: 5 }")
    m.layer("t1", "TanH", ["p1"], ["t1"])
    m.layer("t2", "TanH", ["p2"], ["t2"])
    m.layer("t3", "TanH", ["p3"], ["t3"])
    m.layer("halves", "Slice", ["s2"], ["h1", "h2"], "slice_param { axis: 3 }")
    m.layer("sum", "Eltwise", ["h1", "h2"], ["hsum"])
    m.layer("flat", "Flatten", ["hsum"], ["flat"])
    m.layer("flat2", "Flatten", ["data"], ["flat2"], "flatten_param { axis: 1 end_axis: 2 }")
    m.layer("reshape", "Reshape", ["flat"], ["reshape"], "reshape_param { shape { dim: 0 dim: 3 dim: -1 } }")
    m.layer("reshape2", "Reshape", ["data"], ["reshape2"], "reshape_param { shape { dim: 2 dim: 3 } axis: 1 num_axes: 1 }")
    m.layer("permute", "Permute", ["data"], ["permute"], "permute_param { order: 0 order: 2 order: 3 order: 1 }")
    m.layer("lrn", "LRN", ["data"], ["lrn"], "lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 }")
    m.outputs = ["t1", "t2", "t3", "flat", "flat2", "reshape", "reshape2", "permute", "lrn"]
    m.write()


def caffe_lrn(x, size, alpha, beta, k):
    """Caffe's LRN across channels: x / (k + alpha / size * sum of squares over `size` channels) ^ beta."""
    sq, s = x.astype(np.float64) ** 2, np.zeros(x.shape)
    for c in range(x.shape[1]):
        s[:, c] = sq[:, max(0, c - (size - 1) // 2):c + (size - 1) // 2 + 1].sum(axis=1)
    return (x / (k + alpha / size * s) ** beta).astype(np.float32)


def lrn_k():
    # OpenCV 4.6 reads no 'k' (its LRN takes 'bias', default 1): with k != 1 the oracle is Caffe's formula in numpy.
    m = Model("lrn_k", 10)
    m.input("data", [1, 7, 3, 4])
    m.layer("lrn", "LRN", ["data"], ["lrn"], "lrn_param { local_size: 5 alpha: 0.3 beta: 0.6 k: 2 }")
    m.outputs = ["lrn"]
    m.write(oracle="numpy", numpy_outputs=lambda f: [caffe_lrn(f["data"], 5, 0.3, 0.6, 2.0)])


def lrn_within():
    m = Model("lrn_within", 12)
    m.input("data", [1, 3, 6, 5])
    m.layer("lrn", "LRN", ["data"], ["lrn"], "lrn_param { norm_region: WITHIN_CHANNEL local_size: 3 alpha: 0.4 beta: 0.7 }")
    m.outputs = ["lrn"]
    m.write()
    # Caffe's WITHIN_CHANNEL in numpy: the oracle checked too.
    d = os.path.join(HERE, m.name)
    x = np.load(os.path.join(d, "input_data.npy")).astype(np.float64)
    sq = np.pad(x ** 2, ((0, 0), (0, 0), (1, 1), (1, 1)))
    mean = sum(sq[:, :, i:i + 6, j:j + 5] for i in range(3) for j in range(3)) / 9
    want = x / (1 + 0.4 * mean) ** 0.7
    assert np.abs(np.load(os.path.join(d, "output_lrn.npy")) - want).max() < 1e-5, "OpenCV's LRN WITHIN_CHANNEL"


def inner_product_transpose():
    # OpenCV 4.6 reads no 'transpose' (it takes the weights as [N, K] always): numpy is the oracle.
    m = Model("inner_product_t", 11)
    m.input("data", [2, 6])
    wt, b = m.w(6, 4), m.w(4)  # transpose: the weights are [K, N]
    m.layer("fc", "InnerProduct", ["data"], ["fc"], "inner_product_param { num_output: 4 transpose: true }", [wt, b])
    m.outputs = ["fc"]
    m.write(oracle="numpy", numpy_outputs=lambda f: [f["data"] @ wt + b])


def argmax():
    m = Model("argmax", 8)
    m.input("data", [2, 5, 3])
    m.layer("argmax", "ArgMax", ["data"], ["argmax"], "argmax_param { axis: 1 }")
    m.outputs = ["argmax"]
    m.write(oracle="numpy", numpy_outputs=lambda f: [np.argmax(f["data"], axis=1)[:, None, :].astype(np.float32)])


def crop():
    m = Model("crop", 13)
    m.input("data", [1, 3, 6, 7])
    m.input("ref", [1, 3, 4, 4])
    m.layer("crop", "Crop", ["data", "ref"], ["crop"], "crop_param { axis: 2 offset: 1 offset: 2 }")
    m.layer("crop1", "Crop", ["data", "ref"], ["crop1"], "crop_param { axis: 1 offset: 0 }")
    m.outputs = ["crop", "crop1"]
    m.write()


def scale_by_bottom():
    # A Scale whose factor is a second bottom, with a bias blob: OpenCV 4.6 adds something else than the bias blob
    # (its output differs from Caffe's formula by up to 6.7 here), so numpy is the oracle.
    m = Model("scale_bottom", 15)
    m.input("data", [1, 3, 6, 7])
    m.input("factor", [3, 6])
    b = m.w(3, 6)
    m.layer("scale2", "Scale", ["data", "factor"], ["scale2"], "scale_param { axis: 1 num_axes: 2 bias_term: true }", [b])
    m.outputs = ["scale2"]
    m.write(oracle="numpy", numpy_outputs=lambda f: [f["data"] * f["factor"][None, :, :, None] + b[None, :, :, None]])


def bias():
    # OpenCV 4.6 has no Bias layer: numpy (Caffe's rule: the blob covers axes [axis, axis + num_axes)).
    m = Model("bias", 14)
    m.input("data", [1, 3, 6, 7])
    b1, b2 = m.w(3), m.w(6, 7)
    m.layer("bias", "Bias", ["data"], ["bias"], "", [b1])
    m.layer("bias2", "Bias", ["bias"], ["bias2"], "bias_param { axis: 2 num_axes: 2 }", [b2])
    m.outputs = ["bias2"]
    m.write(oracle="numpy", numpy_outputs=lambda f: [f["data"] + b1[:, None, None] + b2])


def small_net():
    """A LeNet-shaped network: what a real deploy.prototxt looks like (TEST-phase rules, training layers left out)."""
    m = Model("small_net", 9)
    m.input("data", [1, 1, 12, 12])
    m.layer("conv1", "Convolution", ["data"], ["conv1"], "convolution_param { num_output: 4 kernel_size: 5 }",
            [m.w(4, 1, 5, 5), m.w(4)])
    m.layer("pool1", "Pooling", ["conv1"], ["pool1"], "pooling_param { pool: MAX kernel_size: 2 stride: 2 }")
    m.layer("ip1", "InnerProduct", ["pool1"], ["ip1"], "inner_product_param { num_output: 10 }", [m.w(10, 64), m.w(10)])
    m.layer("relu1", "ReLU", ["ip1"], ["ip1"])
    m.layer("drop1", "Dropout", ["ip1"], ["ip1"], "include { phase: TRAIN }")  # the training net's only
    m.layer("ip2", "InnerProduct", ["ip1"], ["ip2"], "inner_product_param { num_output: 3 }", [m.w(3, 10), m.w(3)])
    m.layer("prob", "Softmax", ["ip2"], ["prob"])
    m.outputs = ["prob"]
    m.write()


def ssd():
    """A JDetNet / SSD-shaped detector: two heads (location and confidence convolutions, Permute, Flatten, Concat),
    a PriorBox per head (with and without max_size, flip, clip), softmax over the classes and DetectionOutput
    (CENTER_SIZE, NMS, keep_top_k)."""
    m = Model("ssd", 16)
    m.input("data", [1, 3, 32, 32])
    m.layer("conv1", "Convolution", ["data"], ["conv1"], "convolution_param { num_output: 8 kernel_size: 3 pad: 1 stride: 2 }",
            [m.w(8, 3, 3, 3), m.w(8)])
    m.layer("relu1", "ReLU", ["conv1"], ["conv1"])
    m.layer("conv2", "Convolution", ["conv1"], ["conv2"], "convolution_param { num_output: 8 kernel_size: 3 pad: 1 stride: 2 }",
            [m.w(8, 8, 3, 3, scale=0.3), m.w(8)])
    m.layer("relu2", "ReLU", ["conv2"], ["conv2"])
    classes = 3
    heads = [("conv1", 4, "min_size: 8 max_size: 16 aspect_ratio: 2 flip: true clip: false "
                          "variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 step: 2 offset: 0.5"),
             ("conv2", 6, "min_size: 16 max_size: 28 aspect_ratio: 2 aspect_ratio: 3 flip: true clip: true "
                          "variance: 0.1 img_size: 32")]
    locs, confs, priors = [], [], []
    for src, n, pb in heads:
        m.layer(src + "_loc", "Convolution", [src], [src + "_loc"],
                f"convolution_param {{ num_output: {4 * n} kernel_size: 3 pad: 1 }}", [m.w(4 * n, 8, 3, 3, scale=0.2), m.w(4 * n, scale=0.1)])
        m.layer(src + "_loc_perm", "Permute", [src + "_loc"], [src + "_loc_perm"], "permute_param { order: 0 order: 2 order: 3 order: 1 }")
        m.layer(src + "_loc_flat", "Flatten", [src + "_loc_perm"], [src + "_loc_flat"], "flatten_param { axis: 1 }")
        m.layer(src + "_conf", "Convolution", [src], [src + "_conf"],
                f"convolution_param {{ num_output: {classes * n} kernel_size: 3 pad: 1 }}", [m.w(classes * n, 8, 3, 3, scale=0.05), m.w(classes * n, scale=0.05)])
        m.layer(src + "_conf_perm", "Permute", [src + "_conf"], [src + "_conf_perm"], "permute_param { order: 0 order: 2 order: 3 order: 1 }")
        m.layer(src + "_conf_flat", "Flatten", [src + "_conf_perm"], [src + "_conf_flat"], "flatten_param { axis: 1 }")
        m.layer(src + "_priorbox", "PriorBox", [src, "data"], [src + "_priorbox"], f"prior_box_param {{ {pb} }}")
        locs.append(src + "_loc_flat")
        confs.append(src + "_conf_flat")
        priors.append(src + "_priorbox")
    m.layer("mbox_loc", "Concat", locs, ["mbox_loc"], "concat_param { axis: 1 }")
    m.layer("mbox_conf", "Concat", confs, ["mbox_conf"], "concat_param { axis: 1 }")
    m.layer("mbox_priorbox", "Concat", priors, ["mbox_priorbox"], "concat_param { axis: 2 }")
    m.layer("mbox_conf_reshape", "Reshape", ["mbox_conf"], ["mbox_conf_reshape"],
            f"reshape_param {{ shape {{ dim: 0 dim: -1 dim: {classes} }} }}")
    m.layer("mbox_conf_softmax", "Softmax", ["mbox_conf_reshape"], ["mbox_conf_softmax"], "softmax_param { axis: 2 }")
    m.layer("mbox_conf_flatten", "Flatten", ["mbox_conf_softmax"], ["mbox_conf_flatten"], "flatten_param { axis: 1 }")
    m.layer("detection_out", "DetectionOutput", ["mbox_loc", "mbox_conf_flatten", "mbox_priorbox"], ["detection_out"],
            f"include {{ phase: TEST }} detection_output_param {{ num_classes: {classes} share_location: true "
            "background_label_id: 0 nms_param { nms_threshold: 0.45 top_k: 100 } code_type: CENTER_SIZE keep_top_k: 200 "
            "confidence_threshold: 0.2 save_output_param { label_map_file: \"labels.prototxt\" } }")
    m.outputs = ["mbox_priorbox", "mbox_loc", "mbox_conf_flatten", "detection_out"]
    m.write()


def jacinto_backbone(m, width, until="res5a"):
    """JacintoNet11 v2's layers (TI's caffe-jacinto-models, imagenet_jacintonet11v2 deploy.prototxt): the input's
    shift by -128, conv1a 5x5 stride 2, conv1b 3x3 in 4 groups, then per stage a 3x3 convolution and a 3x3 one in 4
    groups with a 2x2 max pool between stages; BatchNorm + Scale + ReLU after every convolution (the BVLC form of
    caffe-jacinto's BatchNorm with scale_bias). Widths are the original's times `width` / 32. Returns the blob names
    after each stage."""
    def conv(name, bottom, n, k, stride=1, group=1):
        cin = m.channels[bottom]
        fan = cin // group * k * k
        if bottom == "data/bias":  # trained on pixels of -128..127: the first layer's weights are small
            fan *= 80 * 80
        m.layer(name, "Convolution", [bottom], [name], f"convolution_param {{ num_output: {n} kernel_size: {k} "
                f"pad: {k // 2} stride: {stride} group: {group} }}", [m.w(n, cin // group, k, k, scale=1.4 / np.sqrt(fan)),
                                                                     m.w(n, scale=0.1)])
        mean, var = m.w(n, scale=0.2), np.abs(m.w(n, scale=0.5)) + 0.5
        m.layer(name + "/bn", "BatchNorm", [name], [name + "/bn"], "batch_norm_param { eps: 0.0001 }",
                [mean, var, np.array([1.0])])
        m.layer(name + "/scale", "Scale", [name + "/bn"], [name + "/bn"], "scale_param { bias_term: true }",
                [np.abs(m.w(n, scale=0.3)) + 0.7, m.w(n, scale=0.1)])
        m.layer(name + "/relu", "ReLU", [name + "/bn"], [name + "/bn"])
        m.channels[name + "/bn"] = n
        return name + "/bn"

    m.channels = {"data": 3}
    # (caffe-jacinto writes this as a Bias layer, which OpenCV 4.6 does not run: a Scale of 1 with its bias here)
    m.layer("data/bias", "Scale", ["data"], ["data/bias"], "scale_param { bias_term: true }",
            [np.ones(3), np.full(3, -128.0)])
    m.channels["data/bias"] = 3
    h = conv("conv1a", "data/bias", width, 5, stride=2)
    h = conv("conv1b", h, width, 3, group=4)
    stages = {}
    for i, (stage, mult) in enumerate([("res2a", 2), ("res3a", 4), ("res4a", 8), ("res5a", 16)]):
        m.layer(f"pool{i + 1}", "Pooling", [h], [f"pool{i + 1}"], "pooling_param { pool: MAX kernel_size: 2 stride: 2 }")
        m.channels[f"pool{i + 1}"] = m.channels[h]
        h = conv(stage + "_branch2a", f"pool{i + 1}", width * mult, 3)
        h = conv(stage + "_branch2b", h, width * mult, 3, group=4)
        stages[stage] = h
        if stage == until:
            break
    return stages


def picture(rng, shape):
    """A uint8 picture as the network takes it (values 0..255 as float), the form of TIDL's raw 8-bit frames."""
    return rng.integers(0, 256, shape).astype(np.float32)


def jacintonet11():
    """A JacintoNet11-shaped classifier (the TIDL guide's sample network, tidl_import_j11_v2.txt), a quarter of its
    width on a 64x64 picture, 10 classes: global average pool, InnerProduct, Softmax."""
    m = Model("jacintonet11", 17)
    m.input("data", [1, 3, 64, 64])
    h = jacinto_backbone(m, 8)["res5a"]
    m.layer("pool5", "Pooling", [h], ["pool5"], "pooling_param { pool: AVE global_pooling: true }")
    m.layer("fc10", "InnerProduct", ["pool5"], ["fc10"], "inner_product_param { num_output: 10 }",
            [m.w(10, 128, scale=0.15), m.w(10, scale=0.1)])
    m.layer("prob", "Softmax", ["fc10"], ["prob"])
    m.outputs = ["prob"]
    m.feeds = {"data": picture(m.rng, [1, 3, 64, 64])}
    m.write()


def jdetnet():
    """A JDetNet-shaped SSD (TI's ssdJacintoNetV2): the JacintoNet11 backbone, pool6 / pool7 / pool8 after res5a,
    five heads (res4a, res5a, pool6, pool7, pool8: a 1x1 context convolution, then 3x3 location and confidence
    convolutions, Permute, Flatten), a PriorBox per head, softmax over 4 classes and DetectionOutput. A quarter of the
    width on a 128x128 picture; the pools' ceil rounding gives maps of 8, 4, 3, 2, 2."""
    m = Model("jdetnet", 18)
    m.input("data", [1, 3, 128, 128])
    stages = jacinto_backbone(m, 8)
    srcs = [stages["res4a"], stages["res5a"]]
    h = stages["res5a"]
    for i in (6, 7, 8):
        m.layer(f"pool{i}", "Pooling", [h], [f"pool{i}"], "pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }")
        m.channels[f"pool{i}"] = m.channels[h]
        h = f"pool{i}"
        srcs.append(h)
    classes = 4
    sizes = [(13, 26), (26, 51), (51, 77), (77, 102), (102, 128)]
    locs, confs, priors = [], [], []
    for k, (src, (lo, hi)) in enumerate(zip(srcs, sizes)):
        ctx = f"ctx_output{k + 1}"
        m.layer(ctx, "Convolution", [src], [ctx], "convolution_param { num_output: 32 kernel_size: 1 }",
                [m.w(32, m.channels[src], 1, 1, scale=1.0 / np.sqrt(m.channels[src])), m.w(32, scale=0.1)])
        m.layer(ctx + "/relu", "ReLU", [ctx], [ctx])
        ratios = "aspect_ratio: 2" if k in (0, 4) else "aspect_ratio: 2 aspect_ratio: 3"
        n = 4 if k in (0, 4) else 6
        m.layer(ctx + "_mbox_loc", "Convolution", [ctx], [ctx + "_mbox_loc"],
                f"convolution_param {{ num_output: {4 * n} kernel_size: 3 pad: 1 }}",
                [m.w(4 * n, 32, 3, 3, scale=0.02), m.w(4 * n, scale=0.05)])
        m.layer(ctx + "_mbox_loc_perm", "Permute", [ctx + "_mbox_loc"], [ctx + "_mbox_loc_perm"],
                "permute_param { order: 0 order: 2 order: 3 order: 1 }")
        m.layer(ctx + "_mbox_loc_flat", "Flatten", [ctx + "_mbox_loc_perm"], [ctx + "_mbox_loc_flat"],
                "flatten_param { axis: 1 }")
        m.layer(ctx + "_mbox_conf", "Convolution", [ctx], [ctx + "_mbox_conf"],
                f"convolution_param {{ num_output: {classes * n} kernel_size: 3 pad: 1 }}",
                [m.w(classes * n, 32, 3, 3, scale=0.03), m.w(classes * n, scale=0.1)])
        m.layer(ctx + "_mbox_conf_perm", "Permute", [ctx + "_mbox_conf"], [ctx + "_mbox_conf_perm"],
                "permute_param { order: 0 order: 2 order: 3 order: 1 }")
        m.layer(ctx + "_mbox_conf_flat", "Flatten", [ctx + "_mbox_conf_perm"], [ctx + "_mbox_conf_flat"],
                "flatten_param { axis: 1 }")
        m.layer(ctx + "_mbox_priorbox", "PriorBox", [ctx, "data"], [ctx + "_mbox_priorbox"],
                f"prior_box_param {{ min_size: {lo} max_size: {hi} {ratios} flip: true clip: false "
                "variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 offset: 0.5 }")
        locs.append(ctx + "_mbox_loc_flat")
        confs.append(ctx + "_mbox_conf_flat")
        priors.append(ctx + "_mbox_priorbox")
    m.layer("mbox_loc", "Concat", locs, ["mbox_loc"], "concat_param { axis: 1 }")
    m.layer("mbox_conf", "Concat", confs, ["mbox_conf"], "concat_param { axis: 1 }")
    m.layer("mbox_priorbox", "Concat", priors, ["mbox_priorbox"], "concat_param { axis: 2 }")
    m.layer("mbox_conf_reshape", "Reshape", ["mbox_conf"], ["mbox_conf_reshape"],
            f"reshape_param {{ shape {{ dim: 0 dim: -1 dim: {classes} }} }}")
    m.layer("mbox_conf_softmax", "Softmax", ["mbox_conf_reshape"], ["mbox_conf_softmax"], "softmax_param { axis: 2 }")
    m.layer("mbox_conf_flatten", "Flatten", ["mbox_conf_softmax"], ["mbox_conf_flatten"], "flatten_param { axis: 1 }")
    m.layer("detection_out", "DetectionOutput", ["mbox_loc", "mbox_conf_flatten", "mbox_priorbox"], ["detection_out"],
            f"include {{ phase: TEST }} detection_output_param {{ num_classes: {classes} share_location: true "
            "background_label_id: 0 nms_param { nms_threshold: 0.45 top_k: 100 } code_type: CENTER_SIZE keep_top_k: 50 "
            "confidence_threshold: 0.5 }")
    m.outputs = ["mbox_loc", "mbox_conf_flatten", "detection_out"]
    m.feeds = {"data": picture(m.rng, [1, 3, 128, 128])}
    m.write()


if __name__ == "__main__":
    for make in (conv, pooling, inner_product, activations, eltwise_concat, batch_norm, shapes, argmax, small_net, lrn_k, lrn_within, crop, scale_by_bottom, bias,
                 inner_product_transpose, ssd, jacintonet11, jdetnet):
        if sys.argv[1:] and make.__name__ not in sys.argv[1:]:
            continue
        make()
        print("wrote", make.__name__)
    check_pooling_oracle()
    shutil.rmtree(_pb_dir, ignore_errors=True)
