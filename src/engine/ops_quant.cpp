// Kernels of ONNX's linear quantization ops, with ONNX's semantics: QuantizeLinear divides in float32 and rounds
// half to even (the default rounding mode), then adds the zero point and saturates; DequantizeLinear computes
// (x - zero_point) * scale in float32. Per tensor, or per axis with a 1-D scale.
#include "engine/kernel.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "support/fp16.hpp"

#include <algorithm>
#include <cmath>

namespace npuc::engine {

namespace {

/// Element i's channel along `axis` for a per-axis scale of n values (0 for a per-tensor scale).
struct ChannelOf {
  int64_t inner = 1, n = 1;
  ChannelOf(const KernelCall& c, const Tensor& x, int64_t scales) : n(scales) {
    if (scales <= 1) return;
    int64_t axis = c.node.attrInt("axis", 1);
    ops::normalizeAxis(axis, x.rank());
    for (int i = static_cast<int>(axis) + 1; i < x.rank(); ++i) inner *= x.dim(i);
  }
  size_t operator()(int64_t i) const { return n <= 1 ? 0 : static_cast<size_t>((i / inner) % n); }
};

std::vector<float> floats(const Tensor& t) {
  std::vector<float> r;
  for (double d : t.toDouble()) r.push_back(static_cast<float>(d));
  return r;
}

void quantizeLinear(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<float> scale = floats(c.input(1));
  std::vector<int64_t> zp = c.has(2) ? c.input(2).toInt64() : std::vector<int64_t>(scale.size(), 0);
  Tensor& y = c.alloc(0);
  ChannelOf ch(c, x, static_cast<int64_t>(scale.size()));
  const bool u8 = y.dtype() == DType::kU8;
  const float lo = u8 ? 0.0f : -128.0f, hi = u8 ? 255.0f : 127.0f;
  std::vector<double> xs = x.toDouble();  // float32 or float16, exactly
  for (int64_t i = 0; i < x.numel(); ++i) {
    size_t k = ch(i);
    float q = std::nearbyint(static_cast<float>(xs[static_cast<size_t>(i)]) / scale[k]);  // half to even
    q = std::isnan(q) ? 0.0f : q;
    float v = std::clamp(q + static_cast<float>(zp[k]), lo, hi);
    if (u8) y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    else y.data<int8_t>()[i] = static_cast<int8_t>(v);
  }
}

void dequantizeLinear(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<float> scale = floats(c.input(1));
  std::vector<int64_t> zp = c.has(2) ? c.input(2).toInt64() : std::vector<int64_t>(scale.size(), 0);
  Tensor& y = c.alloc(0);
  ChannelOf ch(c, x, static_cast<int64_t>(scale.size()));
  std::vector<int64_t> xs = x.toInt64();
  for (int64_t i = 0; i < x.numel(); ++i) {
    size_t k = ch(i);
    float v = static_cast<float>(xs[static_cast<size_t>(i)] - zp[k]) * scale[k];
    if (y.dtype() == DType::kF16) y.data<uint16_t>()[i] = floatToHalf(v);
    else y.data<float>()[i] = v;
  }
}

}  // namespace

void registerQuantKernels(KernelRegistry& r) {
  r.addFn("QuantizeLinear", quantizeLinear);
  r.addFn("DequantizeLinear", dequantizeLinear);
}

}  // namespace npuc::engine
