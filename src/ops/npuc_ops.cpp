// Schemas of npuc's own ops (domain "ai.npuc"), produced by the optimizer:
//  - Conv, ConvTranspose, Gemm, MatMul with a fused activation: the ONNX op's attributes plus
//      activation (string: Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Swish, Mish),
//      activation_alpha, activation_beta (floats: Clip bounds, LeakyRelu/HardSigmoid parameters),
//      fused (strings: the ONNX ops this node stands for, for reports).
//  - MaxPool with attribute pad_value (float): a constant Pad folded into it, padded taps count as that value.
//  - Swish (x * sigmoid(x)), Mish (x * tanh(softplus(x))), HardSwish (x * hardsigmoid(x; 1/6, 1/2)) for models
//    whose opset has no such op.
#include "ops/registry.hpp"

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
