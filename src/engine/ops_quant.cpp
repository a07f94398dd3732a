// Kernels of ONNX's linear quantization ops, with ONNX's semantics: QuantizeLinear divides in float32 and rounds
// half to even (the default rounding mode), then adds the zero point and saturates; DequantizeLinear computes
// (x - zero_point) * scale in float32. Per tensor, or per axis with a 1-D scale.
#include "engine/conv_geometry.hpp"
#include "engine/kernel.hpp"
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

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

/// Element i of a float32 / float16 tensor as float.
struct FloatReader {
  const float* f = nullptr;
  const uint16_t* h = nullptr;
  explicit FloatReader(const Tensor& t) {
    if (t.dtype() == DType::kF16) h = static_cast<const uint16_t*>(t.raw());
    else f = t.data<float>();
  }
  float operator()(int64_t i) const { return f ? f[i] : halfToFloat(h[i]); }
};

template <typename Q>
void quantizeTo(const Tensor& x, Q* y, const ChannelOf& ch, const std::vector<float>& scale, const std::vector<int64_t>& zp) {
  constexpr float lo = std::is_same_v<Q, uint8_t> ? 0.0f : -128.0f, hi = std::is_same_v<Q, uint8_t> ? 255.0f : 127.0f;
  FloatReader in(x);
  for (int64_t i = 0; i < x.numel(); ++i) {
    size_t k = ch(i);
    float q = std::nearbyint(in(i) / scale[k]);  // half to even
    q = std::isnan(q) ? 0.0f : q;
    y[i] = static_cast<Q>(std::clamp(q + static_cast<float>(zp[k]), lo, hi));
  }
}

void quantizeLinear(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<float> scale = floats(c.input(1));
  std::vector<int64_t> zp = c.has(2) ? c.input(2).toInt64() : std::vector<int64_t>(scale.size(), 0);
  Tensor& y = c.alloc(0);
  ChannelOf ch(c, x, static_cast<int64_t>(scale.size()));
  if (y.dtype() == DType::kI8 && x.dtype() == DType::kF32 && scale.size() == 1)  // the package kernel (same bits)
    kernels::quantizeLinear(x.data<float>(), x.numel(), scale[0], static_cast<int32_t>(zp[0]), y.data<int8_t>(), c.pool);
  else if (y.dtype() == DType::kU8) quantizeTo(x, y.data<uint8_t>(), ch, scale, zp);
  else quantizeTo(x, y.data<int8_t>(), ch, scale, zp);
}

template <typename Q>
void dequantizeFrom(const Q* x, Tensor& y, const ChannelOf& ch, const std::vector<float>& scale, const std::vector<int64_t>& zp) {
  float* f = y.dtype() == DType::kF16 ? nullptr : y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    size_t k = ch(i);
    float v = static_cast<float>(static_cast<int64_t>(x[i]) - zp[k]) * scale[k];
    if (f) f[i] = v;
    else static_cast<uint16_t*>(y.raw())[i] = floatToHalf(v);
  }
}

void dequantizeLinear(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<float> scale = floats(c.input(1));
  std::vector<int64_t> zp = c.has(2) ? c.input(2).toInt64() : std::vector<int64_t>(scale.size(), 0);
  Tensor& y = c.alloc(0);
  ChannelOf ch(c, x, static_cast<int64_t>(scale.size()));
  if (x.dtype() == DType::kI8 && y.dtype() == DType::kF32 && scale.size() == 1) {  // the package kernel (same bits)
    kernels::dequantizeLinear(x.data<int8_t>(), x.numel(), scale[0], static_cast<int32_t>(zp[0]), y.data<float>(), c.pool);
    return;
  }
  switch (x.dtype()) {
    case DType::kI8: dequantizeFrom(x.data<int8_t>(), y, ch, scale, zp); break;
    case DType::kU8: dequantizeFrom(x.data<uint8_t>(), y, ch, scale, zp); break;
    default: dequantizeFrom(x.data<int32_t>(), y, ch, scale, zp); break;
  }
}

/// DynamicQuantizeLinear, ONNX's formulas in float32: the range [min(x, 0), max(x, 0)] over 255 steps, the zero
/// point rounded half to even and saturated, then QuantizeLinear's rounding. An all-zero x (a zero range) gives scale
/// 0, zero point 0 and codes 0.
void dynamicQuantizeLinear(KernelCall& c) {
  const Tensor& x = c.input(0);
  const float* xs = x.data<float>();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (!std::isfinite(xs[i]))
      fail(ErrorCode::kInvalidInput, "{}: x holds {}: its range, and so its scale, are undefined", c.node.label(),
           std::isnan(xs[i]) ? "NaN" : "an infinity");
    lo = std::min(lo, xs[i]);
    hi = std::max(hi, xs[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  if (!std::isfinite(scale))
    fail(ErrorCode::kInvalidInput, "{}: x spans [{}, {}], a range beyond float32: its scale is undefined", c.node.label(), lo, hi);
  const float zp = scale > 0 ? std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f)) : 0.0f;
  Tensor& y = c.alloc(0);
  uint8_t* ys = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i)
    ys[i] = scale > 0 ? static_cast<uint8_t>(std::clamp(std::nearbyint(xs[i] / scale) + zp, 0.0f, 255.0f)) : uint8_t{0};
  c.alloc(1).data<float>()[0] = scale;
  c.alloc(2).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

/// Element i of an int8 / uint8 tensor, widened.
int32_t int8At(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kU8 ? static_cast<int32_t>(t.data<uint8_t>()[i]) : static_cast<int32_t>(t.data<int8_t>()[i]);
}

/// A zero point input (absent: 0) as one value per index (a per-tensor one repeated `n` times).
std::vector<int32_t> zeroPoints(const KernelCall& c, int i, int64_t n) {
  std::vector<int32_t> z(static_cast<size_t>(n), 0);
  if (!c.has(i)) return z;
  const Tensor& t = c.input(i);
  for (int64_t k = 0; k < n; ++k) z[static_cast<size_t>(k)] = int8At(t, t.numel() == 1 ? 0 : k);
  return z;
}

/// MatMulInteger: per output, the exact sum over k of (a - za[row]) (b - zb[col]), stored as int32; batch dims
/// broadcast numpy-style.
void matMulInteger(KernelCall& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  Tensor& y = c.alloc(0);
  const int64_t M = a.dim(a.rank() - 2), K = a.dim(a.rank() - 1), N = b.dim(b.rank() - 1), R = y.rank() - 2;
  const std::vector<int32_t> za = zeroPoints(c, 2, M), zb = zeroPoints(c, 3, N);
  // The offset of batch b_idx's matrix in an operand of shape s (its batch dims right-aligned, broadcast where 1).
  auto offsetIn = [&](const Tensor& t, int64_t b_idx) {
    int64_t off = 0, stride = t.dim(t.rank() - 2) * t.dim(t.rank() - 1);
    for (int64_t d = R - 1, td = t.rank() - 3; d >= 0; --d, --td) {
      const int64_t i = b_idx % y.dim(static_cast<int>(d));
      b_idx /= y.dim(static_cast<int>(d));
      if (td < 0) continue;
      const int64_t n = t.dim(static_cast<int>(td));
      if (n != 1) off += i * stride;
      stride *= n;
    }
    return off;
  };
  int32_t* out = y.data<int32_t>();
  const int64_t batches = y.numel() / std::max<int64_t>(M * N, 1);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ao = offsetIn(a, bi), bo = offsetIn(b, bi);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += int64_t{int8At(a, ao + i * K + k) - za[static_cast<size_t>(i)]} * (int8At(b, bo + k * N + j) - zb[static_cast<size_t>(j)]);
        out[(bi * M + i) * N + j] = static_cast<int32_t>(acc);
      }
  }
}

/// ConvInteger (2-D): per output, the exact sum of (x - zx) (w - zw[m]) over the window's taps inside the input (the
/// padding adds 0), stored as int32.
void convInteger(KernelCall& c) {
  const Tensor &x = c.input(0), &w = c.input(1);
  Tensor& y = c.alloc(0);
  const ops::Window win = ops::resolveWindow(c.node, {x.dim(2), x.dim(3)}, {w.dim(2), w.dim(3)}, false);
  const int64_t B = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), M = w.dim(0), G = c.node.attrInt("group", 1);
  const int64_t cg = C / G, mg = M / G, KH = w.dim(2), KW = w.dim(3), OH = y.dim(2), OW = y.dim(3);
  const int32_t zx = zeroPoints(c, 2, 1)[0];
  const std::vector<int32_t> zw = zeroPoints(c, 3, M);
  int32_t* out = y.data<int32_t>();
  for (int64_t n = 0; n < B; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t acc = 0;
          for (int64_t cl = 0; cl < cg; ++cl) {
            const int64_t ci = m / mg * cg + cl;
            for (int64_t ky = 0; ky < KH; ++ky) {
              const int64_t iy = oy * win.stride[0] - win.pad_begin[0] + ky * win.dilation[0];
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t ix = ox * win.stride[1] - win.pad_begin[1] + kx * win.dilation[1];
                if (ix < 0 || ix >= W) continue;
                acc += int64_t{int8At(x, ((n * C + ci) * H + iy) * W + ix) - zx} *
                       (int8At(w, ((m * cg + cl) * KH + ky) * KW + kx) - zw[static_cast<size_t>(m)]);
              }
            }
          }
          out[((n * M + m) * OH + oy) * OW + ox] = static_cast<int32_t>(acc);
        }
}

kernels::QOutput qconvOutput(const ir::Node& n) {
  kernels::QOutput out;
  out.zero_point = static_cast<int32_t>(n.attrInt("y_zero_point", 0));
  out.lo = static_cast<int32_t>(n.attrInt("y_min", -128));
  out.hi = static_cast<int32_t>(n.attrInt("y_max", 127));
  auto m = n.attrInts("multipliers"), sh = n.attrInts("shifts");
  for (size_t i = 0; i < m.size(); ++i)
    out.multiplier.push_back({static_cast<int32_t>(m[i]), static_cast<int32_t>(sh[i])});
  return out;
}

/// ai.npuc QConv: the int8-affine convolution of docs/numerics.md (kernels::qconv: qconv_ref's bits, which the
/// package's conv layer in int8 form runs too).
void qconv(KernelCall& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  Tensor& y = c.alloc(0);
  std::vector<int64_t> sp(x.shape().begin() + 2, x.shape().end()), ks(w.shape().begin() + 2, w.shape().end());
  ops::Window win = ops::resolveWindow(c.node, sp, ks, false);
  auto s = geometryOf<kernels::ConvShape>(c, x, win);
  s.out_channels = w.dim(0);
  kernels::QOutput out = qconvOutput(c.node);
  kernels::qconv(s, x.data<int8_t>(), static_cast<int32_t>(c.node.attrInt("x_zero_point", 0)), w.data<int8_t>(),
                 c.has(2) ? c.input(2).data<int32_t>() : nullptr, out, y.data<int8_t>(), c.pool);
}

/// The parameters of an ai.npuc QAdd node (validated by its schema).
kernels::QAddParams qaddParamsOf(const ir::Node& n) {
  kernels::QAddParams p;
  p.za = static_cast<int32_t>(n.attrInt("a_zero_point", 0));
  p.zb = static_cast<int32_t>(n.attrInt("b_zero_point", 0));
  p.zy = static_cast<int32_t>(n.attrInt("y_zero_point", 0));
  p.lo = static_cast<int32_t>(n.attrInt("y_min", -128));
  p.hi = static_cast<int32_t>(n.attrInt("y_max", 127));
  auto m = n.attrInts("multipliers");
  p.ma = static_cast<int32_t>(m[0]);
  p.mb = static_cast<int32_t>(m[1]);
  p.shift = static_cast<int32_t>(n.attrInt("shift", 1));
  return p;
}

/// ai.npuc QAdd: the int8-affine addition (kernels::qadd: qadd_ref's bits, as the package's int8 binary layer).
void qadd(KernelCall& c) {
  const Tensor& a = c.input(0);
  Tensor& y = c.alloc(0);
  kernels::qadd(a.numel(), a.data<int8_t>(), c.input(1).data<int8_t>(), qaddParamsOf(c.node), y.data<int8_t>(), c.pool);
}

kernels::QMatMulParams qmatmulParamsOf(const ir::Node& n);  // (below)

/// ai.npuc QMul: the int8-affine product of two tensors (kernels::qmul, as the package's int8 binary Mul; its
/// parameters are a QMatMul's).
void qmul(KernelCall& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  Tensor& y = c.alloc(0);
  const int64_t inner = b.numel() > 0 ? a.numel() / b.numel() : 1;
  kernels::qmul(a.numel(), inner, a.data<int8_t>(), b.data<int8_t>(), qmatmulParamsOf(c.node), y.data<int8_t>(), c.pool);
}

/// ai.npuc QLookup: an element-wise function of int8 codes as its table (kernels::qlookup, as the package's int8
/// unary layer).
void qlookup(KernelCall& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  const std::vector<int64_t> t = c.node.attrInts("table");
  if (t.size() != 256) c.unsupported("QLookup's table holds {} values (256)", t.size());
  int8_t table[256];
  for (size_t i = 0; i < 256; ++i) table[i] = static_cast<int8_t>(t[i]);
  kernels::qlookup(x.numel(), x.data<int8_t>(), table, y.data<int8_t>(), c.pool);
}

/// ai.npuc QGlobalAvgPool: the int8-affine global average pooling (kernels::qglobalAvgPool, as the package's int8
/// global_avg_pool layer).
void qglobalAvgPool(KernelCall& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  kernels::QGlobalAvgPoolParams p;
  p.zx = static_cast<int32_t>(c.node.attrInt("x_zero_point", 0));
  p.zy = static_cast<int32_t>(c.node.attrInt("y_zero_point", 0));
  p.lo = static_cast<int32_t>(c.node.attrInt("y_min", -128));
  p.hi = static_cast<int32_t>(c.node.attrInt("y_max", 127));
  p.mul = {static_cast<int32_t>(c.node.attrInt("multiplier", 0)), static_cast<int32_t>(c.node.attrInt("shift", 0))};
  const int64_t planes = x.dim(0) * x.dim(1);
  kernels::qglobalAvgPool(planes, planes ? x.numel() / planes : 0, x.data<int8_t>(), p, y.data<int8_t>(), c.pool);
}

/// ai.npuc QAvgPool: the int8-affine windowed average pooling (kernels::qavgPool2d, as the package's int8 avg_pool
/// layer).
void qavgPool(KernelCall& c) {
  const Tensor& x = c.input(0);
  if (x.rank() != 3 && x.rank() != 4) c.unsupported("int8 AveragePool is 1-D or 2-D");
  const ops::Window w = ops::resolvePoolWindow(c.node, x.shape());
  kernels::Pool2dShape s = pool2dShape(w, x.dim(0) * x.dim(1));
  s.count_include_pad = c.node.attrInt("count_include_pad", 0) != 0;
  kernels::QAvgPoolParams p;
  p.zx = static_cast<int32_t>(c.node.attrInt("x_zero_point", 0));
  p.zy = static_cast<int32_t>(c.node.attrInt("y_zero_point", 0));
  p.lo = static_cast<int32_t>(c.node.attrInt("y_min", -128));
  p.hi = static_cast<int32_t>(c.node.attrInt("y_max", 127));
  const std::vector<int64_t> m = c.node.attrInts("multipliers"), sh = c.node.attrInts("shifts");
  for (size_t i = 0; i < m.size() && i < sh.size(); ++i) p.mul.push_back({static_cast<int32_t>(m[i]), static_cast<int32_t>(sh[i])});
  Tensor& y = c.alloc(0);
  kernels::qavgPool2d(s, x.data<int8_t>(), p, y.data<int8_t>(), c.pool);
}

/// The parameters of an ai.npuc QMatMul node (validated by its schema).
kernels::QMatMulParams qmatmulParamsOf(const ir::Node& n) {
  kernels::QMatMulParams p;
  p.za = static_cast<int32_t>(n.attrInt("a_zero_point", 0));
  p.zb = static_cast<int32_t>(n.attrInt("b_zero_point", 0));
  p.zy = static_cast<int32_t>(n.attrInt("y_zero_point", 0));
  p.lo = static_cast<int32_t>(n.attrInt("y_min", -128));
  p.hi = static_cast<int32_t>(n.attrInt("y_max", 127));
  p.mul = {static_cast<int32_t>(n.attrInt("multiplier", 0)), static_cast<int32_t>(n.attrInt("shift", 0))};
  return p;
}

/// ai.npuc QMatMul: the int8-affine product of two activations (kernels::qmatmul: qmatmul_ref's bits, as the
/// package's int8 matmul layer).
void qmatmul(KernelCall& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& y = c.alloc(0);
  kernels::MatMulBatches mb;
  std::string why;
  if (!kernels::matmulBatches(a.shape(), b.shape(), y.shape(), &mb, &why)) c.unsupported("{}", why);
  kernels::qmatmul(mb, a.data<int8_t>(), b.data<int8_t>(), qmatmulParamsOf(c.node), y.data<int8_t>(), c.pool);
}

}  // namespace

void registerQuantKernels(KernelRegistry& r) {
  r.addFn("QuantizeLinear", quantizeLinear);
  r.addFn("DequantizeLinear", dequantizeLinear);
  r.addFn("DynamicQuantizeLinear", dynamicQuantizeLinear);
  r.addFn("MatMulInteger", matMulInteger);
  r.addFn("ConvInteger", convInteger);
  r.addFn("QConv", qconv, "ai.npuc");
  r.addFn("QAdd", qadd, "ai.npuc");
  r.addFn("QMatMul", qmatmul, "ai.npuc");
  r.addFn("QGlobalAvgPool", qglobalAvgPool, "ai.npuc");
  r.addFn("QLookup", qlookup, "ai.npuc");
  r.addFn("QMul", qmul, "ai.npuc");
  r.addFn("QAvgPool", qavgPool, "ai.npuc");
}

}  // namespace npuc::engine
