#!/usr/bin/python3
"""Export a small "zoo" of ImageNet-style / detection models to ONNX for npuc benchmarks and tests.

    /usr/bin/python3 tools/export_models.py [--out models/zoo] [--models resnet50,tiny_yolov2]

Models (all with seeded random weights -- nothing is downloaded):
    resnet50, mobilenet_v2, squeezenet1_1, googlenet   torchvision (weights=None), input 1x3x224x224
    resnet18, mobilenet_v3_small                       the same (issue 52's bench set; not in the default list;
                                                       at opset 13 MobileNetV3's HardSwish is x * HardSigmoid(x):
                                                       `make zoo` exports these at opset 17, with HardSwish)
    mobilenet_v1                                       MobileNetV1 (Howard et al. 2017; torchvision has none),
                                                       width 1.0, input 1x3x224x224, output 1x1000
    tiny_yolov2                                        Darknet tiny-yolo-voc, input 1x3x416x416,
                                                       output 1x125x13x13

For each model NAME the output directory gets:
    NAME.onnx          opset 13, input `input`, output `output`, BatchNormalization nodes kept
                       (do_constant_folding=False, TrainingMode.PRESERVE on an eval-mode model)
    NAME_input.npy     float32 seeded random input (standard normal)
    NAME_output.npy    float32 PyTorch eval-mode output for NAME_input.npy (reference)

BatchNorm layers get seeded perturbed gamma/beta and running statistics calibrated on seeded random
data (a few train-mode forward passes, cumulative averaging) before switching to eval mode, so the BN
nodes are not identities and activations stay in a realistic range (--no-calibrate to skip).
For tiny_yolov2 the Pad's `pads` operand (exported by torch as a shape-computation subgraph) is
replaced by a constant initializer so the graph has static shapes.
Note: ONNX Runtime (checked with 1.30, graphOptimizationLevel basic or higher) fuses that zero Pad
into the following MaxPool's pads, which MaxPool treats as -inf padding: its tiny_yolov2 output then
differs from NAME_output.npy by up to ~0.06 on the bottom row / right column (exact with
optimizations disabled). NAME_output.npy (PyTorch) is the reference.
Identity nodes in the exports are torch's de-duplication of equal initializers (e.g. zero biases).
Exports are byte-for-byte reproducible with the same torch/torchvision/onnx versions.

Needs Debian's python3-torch and python3-torchvision; if torchvision is not importable, prints
"skipped" and exits 0 without exporting anything.
"""

import argparse
import hashlib
import os
import sys

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models", "zoo")
TORCHVISION_MODELS = ["resnet50", "mobilenet_v2", "squeezenet1_1", "googlenet"]
ALL_MODELS = TORCHVISION_MODELS + ["mobilenet_v1", "tiny_yolov2"]
EXTRA_MODELS = ["resnet18", "mobilenet_v3_small"]  # on request (--models): the rest of issue 52's speed set
OPSET = 13
SEED = 0


def build_tiny_yolov2(nn):
    """Darknet tiny-yolo-voc (a.k.a. yolov2-tiny-voc.cfg): 9 conv layers, 6 maxpools."""

    def conv_bn_leaky(cin, cout):
        return [nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1)]

    layers = []
    cin = 3
    for i, cout in enumerate([16, 32, 64, 128, 256, 512]):
        layers += conv_bn_leaky(cin, cout)
        if i < 5:
            layers.append(nn.MaxPool2d(2, 2))
        else:
            # Darknet "maxpool size=2 stride=1": output keeps 13x13, the window runs off the
            # bottom/right edge. Expressed here as a right/bottom zero pad followed by MaxPool(2,1)
            # (exports as Pad + MaxPool).
            layers += [nn.ZeroPad2d((0, 1, 0, 1)), nn.MaxPool2d(2, 1)]
        cin = cout
    layers += conv_bn_leaky(512, 1024)
    layers += conv_bn_leaky(1024, 1024)
    layers.append(nn.Conv2d(1024, 125, 1, 1, 0, bias=True))  # 5 anchors * (20 classes + 5), linear
    return nn.Sequential(*layers)


def build_mobilenet_v1(nn):
    """MobileNetV1, width 1.0: a 3x3 / 2 convolution to 32 channels, 13 depthwise-separable blocks (3x3 depthwise,
    1x1 pointwise, each with BatchNorm and Relu), global average pooling and a 1000-way classifier. Also the
    network of tools/tidl_guide_table.py (the TIDL guide's MobileNetV1)."""

    def cbr(i, o, s):
        return [nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

    def dw(i, o, s):
        return [nn.Conv2d(i, i, 3, s, 1, groups=i, bias=False), nn.BatchNorm2d(i), nn.ReLU(),
                nn.Conv2d(i, o, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]

    cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)] + \
        [(512, 512, 1)] * 5 + [(512, 1024, 2), (1024, 1024, 1)]
    layers = cbr(3, 32, 2)
    for c in cfg:
        layers += dw(*c)
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1024, 1000))


def build(name, torch, nn):
    """Return (model, input_shape). Caller seeds torch before calling."""
    if name == "tiny_yolov2":
        return build_tiny_yolov2(nn), (1, 3, 416, 416)
    if name == "mobilenet_v1":
        return build_mobilenet_v1(nn), (1, 3, 224, 224)
    import torchvision.models as tvm
    if name == "googlenet":
        m = tvm.googlenet(weights=None, aux_logits=False, init_weights=True, transform_input=False)
    else:
        m = getattr(tvm, name)(weights=None)
    return m, (1, 3, 224, 224)


def calibrate_bn(model, shape, torch, nn, batches=2, batch_size=4):
    """Give every BatchNorm non-trivial parameters: gamma/beta are perturbed (seeded) and the
    running mean/var are measured on seeded random inputs, so a BN-folding pass that ignores any
    of the four tensors produces wrong numbers."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in bns:
            m.weight.copy_(0.75 + 0.5 * torch.rand(m.weight.shape, generator=gen))
            m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            m.reset_running_stats()
            m.momentum = None  # cumulative moving average
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn((batch_size,) + tuple(shape[1:]), generator=gen))
    model.eval()


def fold_pad_pads(path, out_shape, onnx, np):
    """torch 1.13 exports F.pad with do_constant_folding=False as Pad whose `pads` input is a
    ~15-node Shape/ConstantOfShape/Concat/Slice/Transpose/Reshape/Cast subgraph, and then cannot
    infer any downstream spatial shape. Evaluate that subgraph (pads are static here) into an int64
    initializer, drop the dead nodes and re-run ONNX shape inference. Everything else (BN, Identity,
    Constant nodes) is left as exported."""
    from onnx import numpy_helper
    m = onnx.load(path)
    g = m.graph
    pads_nodes = [n for n in g.node if n.op_type == "Pad"]
    if not pads_nodes:
        return
    for i, n in enumerate(pads_nodes):
        # The only Pad in these models comes from nn.ZeroPad2d((0, 1, 0, 1)) on an NCHW tensor:
        # ONNX pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...].
        pads = np.array([0, 0, 0, 0, 0, 0, 1, 1], dtype=np.int64)
        name = "pad%d_pads" % i
        g.initializer.append(numpy_helper.from_array(pads, name))
        n.input[1] = name
    # Remove nodes whose outputs are no longer used (iterate to a fixed point).
    while True:
        used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
        dead = [n for n in g.node if not any(o in used for o in n.output)]
        if not dead:
            break
        for n in dead:
            g.node.remove(n)
    del g.value_info[:]
    dims = g.output[0].type.tensor_type.shape.dim
    for d, v in zip(dims, out_shape):
        d.Clear()
        d.dim_value = int(v)
    m = onnx.shape_inference.infer_shapes(m)
    del m.graph.value_info[:]  # keep the file like a plain torch export: no intermediate value_info
    onnx.checker.check_model(m)
    onnx.save(m, path)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default: models/zoo)")
    ap.add_argument("--models", default=",".join(ALL_MODELS),
                    help="comma-separated subset of: " + ",".join(ALL_MODELS + EXTRA_MODELS))
    ap.add_argument("--no-calibrate", action="store_true",
                    help="keep freshly-initialised BN statistics (mean 0, var 1)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = ap.parse_args()

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL_MODELS + EXTRA_MODELS]
    if unknown:
        ap.error("unknown model(s): %s (known: %s)" % (",".join(unknown), ",".join(ALL_MODELS + EXTRA_MODELS)))

    try:
        import numpy as np
        import torch
        import torch.nn as nn
        import torchvision  # noqa: F401  (needed for the torchvision models; gate everything on it)
    except ImportError as e:
        print("export_models: skipped -- torch/torchvision not importable (%s); "
              "install Debian's python3-torchvision and run with /usr/bin/python3" % e)
        return 0

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)

    for name in names:
        torch.manual_seed(SEED)
        np.random.seed(SEED)
        model, shape = build(name, torch, nn)
        if not args.no_calibrate:
            calibrate_bn(model, shape, torch, nn)
        model.eval()

        x = np.random.RandomState(SEED).standard_normal(shape).astype(np.float32)
        xt = torch.from_numpy(x)
        with torch.no_grad():
            y = model(xt).numpy().astype(np.float32)

        onnx_path = os.path.join(args.out, name + ".onnx")
        torch.onnx.export(
            model, xt, onnx_path,
            input_names=["input"], output_names=["output"],
            opset_version=OPSET,
            do_constant_folding=False,
            # PRESERVE on an eval-mode model == eval export, but without torch 1.13's EVAL-only
            # peephole pass that fuses BatchNorm into Conv: we want the BN nodes in the graph.
            training=torch.onnx.TrainingMode.PRESERVE,
        )
        if name == "tiny_yolov2":
            import onnx
            fold_pad_pads(onnx_path, y.shape, onnx, np)
        in_path = os.path.join(args.out, name + "_input.npy")
        out_path = os.path.join(args.out, name + "_output.npy")
        np.save(in_path, x)
        np.save(out_path, y)
        for p in (onnx_path, in_path, out_path):
            sz = os.path.getsize(p)
            print("%-40s %12d B (%7.2f MiB)  sha256 %s" % (p, sz, sz / 2**20, sha256(p)[:16]))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
