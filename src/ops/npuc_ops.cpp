// Schemas of npuc's own ops (domain "ai.npuc"), produced by the optimizer:
//  - Conv, ConvTranspose, Gemm, MatMul with a fused activation: the ONNX op's attributes plus
//      activation (string: Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Swish, Mish),
//      activation_alpha, activation_beta (floats: Clip bounds, LeakyRelu/HardSigmoid parameters),
//      fused (strings: the ONNX ops this node stands for, for reports).
//  - MaxPool with attribute pad_value (float): a constant Pad folded into it, padded taps count as that value.
//  - Swish (x * sigmoid(x)), Mish (x * tanh(softplus(x))), HardSwish (x * hardsigmoid(x; 1/6, 1/2)) for models
//    whose opset has no such op.
#include "ops/registry.hpp"

#include <functional>

namespace npuc::ops {

void registerNpucOps(Registry& r) {
  for (const char* op : {"Conv", "ConvTranspose", "Gemm", "MatMul"}) {
    OpSchema s = *registry_detail::onnxSchema(r, op);
    s.domain = "ai.npuc";
    s.doc = std::string(op) + " with a fused activation (attributes activation, activation_alpha, activation_beta)";
    r.add(s);
  }
  {
    OpSchema s;
    s.name = "Focus";
    s.domain = "ai.npuc";
    s.doc = "YOLOv5 Focus: four stride-2 sub-images concatenated on channels, in the order of 'offsets' "
            "([h0, w0, h1, w1, …], each 0 or 1)";
    s.infer = [](InferContext& c) {
      const Shape& x = c.inputShape(0);
      auto off = c.node().attrInts("offsets");
      if (x.size() != 4 || x[2] % 2 || x[3] % 2) c.error("input must be NCHW with even H and W, got {}", shapeStr(x));
      if (off.size() != 8) c.error("attribute 'offsets' must hold 4 (h, w) pairs");
      c.setOutput(0, c.inputDType(0), {x[0], x[1] * 4, x[2] / 2, x[3] / 2});
    };
    r.add(s);
  }
  {
    OpSchema s = *registry_detail::onnxSchema(r, "MaxPool");
    s.domain = "ai.npuc";
    s.doc = "MaxPool whose padded taps count as pad_value (a constant Pad folded into it; -inf = ONNX MaxPool)";
    r.add(s);
  }
  // Pre/post-processing operations (DRP-AI §5; kernels in kernels/prepost.hpp; images are HWC, N-less).
  auto add = [&](const char* name, const char* doc, std::function<void(InferContext&)> infer, int max_inputs = 1) {
    OpSchema s;
    s.max_inputs = max_inputs;
    s.name = name;
    s.domain = "ai.npuc";
    s.doc = doc;
    s.infer = std::move(infer);
    r.add(s);
  };
  auto needType = [](InferContext& c, std::initializer_list<DType> ok) {
    for (DType t : ok)
      if (c.inputDType(0) == t) return;
    c.error("input type {} is not accepted here", dtypeName(c.inputDType(0)));
  };
  add("YuvToRgb", "conv_yuv2rgb: a YUV buffer (attribute format = DIN_YUV_FORMAT code) of height x width pixels to "
                  "RGB (or BGR with bgr = 1) uint8 [H, W, 3]",
      [needType](InferContext& c) {
        needType(c, {DType::kU8});
        int64_t h = c.node().attrInt("height", 0), w = c.node().attrInt("width", 0);
        if (h < 1 || w < 1) c.error("attributes height and width must be positive");
        c.setOutput(0, DType::kU8, {h, w, 3});
      });
  add("ToGray", "conv_x2gray: packed YUV (format 0-3) or RGB/BGR (4096/4097) uint8 to gray uint8 [H, W, 1]",
      [needType](InferContext& c) {
        needType(c, {DType::kU8});
        int64_t h = c.node().attrInt("height", 0), w = c.node().attrInt("width", 0);
        if (h < 1 || w < 1) c.error("attributes height and width must be positive");
        c.setOutput(0, DType::kU8, {h, w, 1});
      });
  add("CropImage", "crop: a window (pos_y, pos_x, out_height x out_width) of an HWC or CHW (layout = 1) image; "
                   "output HWC",
      [needType](InferContext& c) {
        needType(c, {DType::kU8, DType::kF16});
        const Shape& x = c.inputShape(0);
        if (x.size() != 3) c.error("input must be a 3-D image");
        bool chw = c.node().attrInt("layout", 0) == 1;
        int64_t H = chw ? x[1] : x[0], W = chw ? x[2] : x[1], C = chw ? x[0] : x[2];
        int64_t py = c.node().attrInt("pos_y", 0), px = c.node().attrInt("pos_x", 0);
        int64_t oh = c.node().attrInt("out_height", 0), ow = c.node().attrInt("out_width", 0);
        if (oh < 1 || ow < 1 || py < 0 || px < 0 || py + oh > H || px + ow > W)
          c.error("crop window {}x{} at ({}, {}) is not inside the {}x{} image", oh, ow, py, px, H, W);
        c.setOutput(0, c.inputDType(0), {oh, ow, C});
      });
  add("ResizeHwc", "resize_hwc: nearest (alg 0) or bilinear (alg 1) resize of an HWC uint8 or float16 image",
      [needType](InferContext& c) {
        needType(c, {DType::kU8, DType::kF16});
        const Shape& x = c.inputShape(0);
        if (x.size() != 3) c.error("input must be an HWC image");
        int64_t oh = c.node().attrInt("out_height", 0), ow = c.node().attrInt("out_width", 0);
        if (oh < 1 || ow < 1) c.error("out_height and out_width must be positive");
        c.setOutput(0, c.inputDType(0), {oh, ow, x[2]});
      });
  add("Normalize", "normalize: y = (x + add[c]) * mul[c] per channel of an HWC float16 image (swap_rb = 1 swaps R and B)",
      [needType](InferContext& c) {
        needType(c, {DType::kF16});
        const Shape& x = c.inputShape(0);
        if (x.empty()) c.error("input must have a channel axis");
        size_t C = static_cast<size_t>(x.back());
        if (c.node().attrFloats("add").size() != C || c.node().attrFloats("mul").size() != C)
          c.error("add and mul need one value per channel ({})", C);
        c.setOutput(0, DType::kF16, x);
      });
  add("ArgMinMax", "argminmax: index of the maximum (mode 0) or minimum (mode 1) along the channel (axis 0), width (1) "
                   "or height (2) of an HWC (layout 0) or CHW (layout 1) float16 image; uint8 or uint16 (out_type 1)",
      [needType](InferContext& c) {
        needType(c, {DType::kF16});
        Shape x = c.inputShape(0);
        if (x.size() != 3) c.error("input must be a 3-D image");
        bool chw = c.node().attrInt("layout", 0) == 1;
        int64_t axis = c.node().attrInt("axis", 0);
        size_t dim = axis == 0 ? (chw ? 0 : 2) : axis == 1 ? (chw ? 2 : 1) : (chw ? 1 : 0);
        x[dim] = 1;
        c.setOutput(0, c.node().attrInt("out_type", 0) == 1 ? DType::kU16 : DType::kU8, x);
      });
  add("PostSoftmax", "post softmax: over all elements of a float16 tensor; float16 out, or float32 with fp32_out = 1",
      [needType](InferContext& c) {
        needType(c, {DType::kF16});
        c.setOutput(0, c.node().attrInt("fp32_out", 0) ? DType::kF32 : DType::kF16, c.inputShape(0));
      });
  add("Aipp", "Ascend-style AIPP (kernels/aipp.hpp): a uint8 frame [N, image_bytes] (and, with dynamic = 1, the "
              "uint8 parameter block as input 1; otherwise the block's bytes in attribute 'params') to a float32 "
              "[N, channels, height, width] model input; padding_value fills padding mode 1 (padding_values, when set, per "
              "channel 0..3)",
      [needType](InferContext& c) {
        needType(c, {DType::kU8});
        const Shape& x = c.inputShape(0);
        int64_t n = c.node().attrInt("n", 0), ch = c.node().attrInt("channels", 0);
        int64_t h = c.node().attrInt("height", 0), w = c.node().attrInt("width", 0);
        if (n < 1 || ch < 1 || h < 1 || w < 1) c.error("attributes n, channels, height and width must be positive");
        if (x.size() != 2 || x[0] != n) c.error("the frame must be [n, image_bytes] = [{}, …], got {}", n, shapeStr(x));
        bool dynamic = c.node().attrInt("dynamic", 0) != 0;
        if (dynamic != c.node().hasInput(1)) c.error("a dynamic AIPP takes its parameter block as input 1, a static one in 'params'");
        c.setOutput(0, DType::kF32, {n, ch, h, w});
      }, 2);
  for (const char* op : {"Swish", "Mish", "HardSwish"}) {
    OpSchema s;
    s.name = op;
    s.domain = "ai.npuc";
    s.infer = [](InferContext& c) { c.setOutput(0, c.inputDType(0), c.inputShape(0)); };
    s.doc = std::string(op) + " activation detected from a pattern of ONNX ops";
    r.add(s);
  }
}

}  // namespace npuc::ops
