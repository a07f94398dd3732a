// Schemas of ONNX's linear quantization ops: QuantizeLinear and DequantizeLinear (per tensor, or per axis with a
// 1-D scale), int8 / uint8 (and, for DequantizeLinear, int32) integer side. npuc's int8 numerics
// (docs/numerics.md) write quantized models in this form (--save-qdq-onnx) and read it back.
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::ops {

namespace {

/// The scale (input 1) and zero point (input 2) fit input 0: a scalar / 1-element scale, or a 1-D one of the
/// length of the axis; the zero point with the scale's shape.
void checkScale(InferContext& c) {
  const Shape& x = c.inputShape(0);
  const Shape& s = c.inputShape(1);
  if (!isFloat(c.inputDType(1))) c.error("the scale must be a float tensor, got {}", dtypeName(c.inputDType(1)));
  if (s.size() > 1) c.unsupported("blocked quantization (a scale of rank {}) is not supported", s.size());
  int64_t n = shapeNumel(s);
  if (s.size() == 1 && n != 1) {
    int64_t axis = c.node().attrInt("axis", 1);
    if (!normalizeAxis(axis, static_cast<int64_t>(x.size()))) c.error("axis {} is out of range for rank {}", c.node().attrInt("axis", 1), x.size());
    if (x[static_cast<size_t>(axis)] != n) c.error("a scale of {} values for axis {} of length {}", n, axis, x[static_cast<size_t>(axis)]);
  }
  if (c.hasInput(2) && c.inputShape(2) != s) c.error("the zero point has shape {}, the scale {}", shapeStr(c.inputShape(2)), shapeStr(s));
}

}  // namespace

void registerQuantOps(Registry& r) {
  r.add(makeSchema("QuantizeLinear", 2, 3, "y = saturate(round_half_even(x / scale) + zero_point), int8 / uint8",
                   [](InferContext& c) {
                     if (!isFloat(c.inputDType(0))) c.error("input must be a float tensor, got {}", dtypeName(c.inputDType(0)));
                     checkScale(c);
                     DType t = c.hasInput(2) ? c.inputDType(2) : DType::kU8;
                     if (t != DType::kI8 && t != DType::kU8) c.unsupported("quantization to {} is not supported (int8, uint8)", dtypeName(t));
                     c.setOutput(0, t, c.inputShape(0));
                   })
            .withDefault("axis", int64_t{1}));
  r.add(makeSchema("DequantizeLinear", 2, 3, "y = (x - zero_point) * scale, from int8 / uint8 / int32", [](InferContext& c) {
          DType t = c.inputDType(0);
          if (t != DType::kI8 && t != DType::kU8 && t != DType::kI32)
            c.unsupported("dequantization of {} is not supported (int8, uint8, int32)", dtypeName(t));
          checkScale(c);
          if (c.hasInput(2) && c.inputDType(2) != t) c.error("the zero point is {}, the input {}", dtypeName(c.inputDType(2)), dtypeName(t));
          c.setOutput(0, c.inputDType(1), c.inputShape(0));
        })
            .withDefault("axis", int64_t{1}));
}

}  // namespace npuc::ops
