// Lowering of ONNX's linear quantization ops into int8-affine packages (docs/numerics.md): a per-tensor
// QuantizeLinear / DequantizeLinear with int8 on its integer side becomes a quantize / dequantize layer.
#include "codegen/lowerer.hpp"

namespace npuc::codegen::detail {

void Lowerer::quantizeNode(const ir::Node& n) {
  const bool q = n.op == "QuantizeLinear";
  if (t_.numerics != Numerics::kInt8Affine)
    unsupported(n, "{} has a package form in int8-affine packages only (target '{}' has {} numerics)", n.op, t_.name,
                numericsName(t_.numerics));
  const Tensor* scale = constIn(n, 1);
  const Tensor* zp = constIn(n, 2);
  if (!scale || scale->numel() != 1) unsupported(n, "the scale must be one constant value (per-tensor quantization)");
  if (!n.hasInput(2) || !zp || zp->numel() != 1 || zp->dtype() != DType::kI8)
    unsupported(n, "the zero point must be one constant int8 value (int8-affine)");
  const ir::Type& xt = g_.value(n.inputs[0]).type;
  if (q ? xt.dtype != DType::kF32 : xt.dtype != DType::kI8)
    unsupported(n, "{} of {} has no package form ({})", n.op, dtypeName(xt.dtype), q ? "float32 → int8" : "int8 → float32");
  if (xt.shape.size() > package::kMaxRank) unsupported(n, "rank {} above {}", xt.shape.size(), package::kMaxRank);
  const float s = static_cast<float>(scale->toDouble()[0]);
  if (!(s > 0) || !std::isfinite(s)) unsupported(n, "scale {} is not a finite positive number", s);
  const int32_t z = static_cast<int32_t>(zp->toInt64()[0]);
  emit(n, q ? LayerKind::kQuantize : LayerKind::kDequantize, {in(n, 0)}, outVal(n, n.outputs[0]),
       {package::floatParam(s), static_cast<uint32_t>(z)});
}

void registerQuantLowerings(LowerTable& t) {
  t[{"", "QuantizeLinear"}] = &Lowerer::quantizeNode;
  t[{"", "DequantizeLinear"}] = &Lowerer::quantizeNode;
}

}  // namespace npuc::codegen::detail
