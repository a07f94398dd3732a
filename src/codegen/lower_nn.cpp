// Lowering of the neural-network ops (mirrors engine/ops_nn.cpp): Conv / ConvTranspose, Gemm / MatMul, pooling,
// BatchNormalization, InstanceNormalization, LRN, Softmax, and the recurrent RNN / GRU / LSTM.
#include "codegen/lowerer.hpp"

#include "ops/einsum.hpp"
#include "ops/recurrent.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::codegen::detail {

/// Window value i (0 = H, 1 = W) of a 1-D or 2-D window; a 1-D window has H = one_d.
int64_t Lowerer::hw(const std::vector<int64_t>& v, int i, int64_t one_d, bool one) {
  return one ? (i == 0 ? one_d : v[0]) : v[static_cast<size_t>(i)];
}

/// NC(W) -> NC1W views for 1-D windows.
Shape Lowerer::as4d(Shape s) {
  if (s.size() == 3) s.insert(s.begin() + 2, 1);
  return s;
}

void Lowerer::conv(const ir::Node& n) {
  bool tr = n.op == "ConvTranspose";
  const Shape& xs = shapeOf(n, 0);
  if (xs.size() != 4 && xs.size() != 3) unsupported(n, "{}-D convolution has no package form (1-D and 2-D)", xs.size() - 2);
  const Tensor* w = constIn(n, 1);  // (null: weights the model computes, read by the layer when it runs)
  if (n.hasInput(2) && !constIn(n, 2)) unsupported(n, "bias must be a constant");
  const Shape& wsh = shapeOf(n, 1);
  Shape wshape = as4d(wsh);
  std::vector<int64_t> ks(wsh.begin() + 2, wsh.end());
  std::vector<int64_t> spatial(xs.begin() + 2, xs.end());
  ops::Window win = tr ? ops::resolveTransposedWindow(n, spatial, ks) : ops::resolveWindow(n, spatial, ks, false);
  auto at = [one = xs.size() == 3](const std::vector<int64_t>& v, int i, int64_t one_d) { return hw(v, i, one_d, one); };
  int64_t g = n.attrInt("group", 1);
  std::vector<uint32_t> p = {u32(g), u32(at(win.kernel, 0, 1)), u32(at(win.kernel, 1, 1)), u32(at(win.stride, 0, 1)),
                             u32(at(win.stride, 1, 1)), u32(at(win.dilation, 0, 1)), u32(at(win.dilation, 1, 1)),
                             u32(at(win.pad_begin, 0, 0)), u32(at(win.pad_begin, 1, 0))};
  int x = in(n, 0);
  int wv = w ? weightVal(g_.value(n.inputs[1]).name, wshape, floatBytes(*w, false), ft_) : in(n, 1);
  std::vector<int> ins = {x, wv};
  if (const Tensor* b = constIn(n, 2)) ins.push_back(weightVal(g_.value(n.inputs[2]).name, b->shape(), floatBytes(*b, true), ElemType::kF32));
  ir::ValueId outv = n.outputs[0];
  LDesc probe;
  bool epilogue = actFromAttrs(n, probe);
  int out = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", g_.value(outv).type.shape);
  LDesc& d = emit(n, tr ? LayerKind::kConvTranspose : LayerKind::kConv, ins, out, p);
  d.act = probe.act;
  d.act_a = probe.act_a;
  d.act_b = probe.act_b;
  d.views = {as4d(xs), wshape};
  if (ins.size() == 3) d.views.push_back(vals_[static_cast<size_t>(ins[2])].shape);
  d.views.push_back(as4d(g_.value(outv).type.shape));
  if (!epilogue) trailingActivation(n, out, outVal(n, outv));
}

void Lowerer::gemm(const ir::Node& n) {
  bool mm = n.op == "MatMul";
  const Shape& as = shapeOf(n, 0);
  const Tensor* w = constIn(n, 1);
  // Anything but (a batch of) matrices times one constant matrix is the matmul kind (attention's products).
  if (mm && (!w || w->rank() != 2 || as.size() < 2)) return matmul(n);
  if (!mm && (!w || w->rank() != 2 || ops::attrInt(n, "transA") || ops::attrFloat(n, "alpha") != 1.0f ||
              (n.hasInput(2) && ops::attrFloat(n, "beta") != 1.0f)))
    return gemmGeneral(n);
  if (!w || w->rank() != 2) unsupported(n, "the second operand must be a constant matrix");
  // A MatMul of a batch of matrices ([..., M, K]) by one constant matrix is one tall product [(... * M), K]: every
  // output element is the same dot product over K, so the bits are the engine's (its paths agree bit for bit).
  const bool tall = mm && as.size() > 2;
  if (as.size() != 2 && !tall) unsupported(n, "the first operand must be a matrix (got rank {})", as.size());
  if (!mm && (ops::attrInt(n, "transA") || ops::attrFloat(n, "alpha") != 1.0f || (n.hasInput(2) && ops::attrFloat(n, "beta") != 1.0f)))
    unsupported(n, "Gemm with transA, alpha != 1 or beta != 1 has no package form");
  bool transB = !mm && ops::attrInt(n, "transB");
  int64_t K = as.back(), N = transB ? w->dim(0) : w->dim(1);
  int64_t rows = 1;  // M of the (tall) product
  for (size_t i = 0; i + 1 < as.size(); ++i) rows *= as[i];
  if ((transB ? w->dim(1) : w->dim(0)) != K) unsupported(n, "operand shapes {} and {} do not multiply", shapeStr(as), shapeStr(w->shape()));
  std::vector<float> wt(static_cast<size_t>(N * K));
  std::vector<double> wd;
  const float* wf = nullptr;
  if (w->dtype() == DType::kF32) wf = w->data<float>();
  else wd = w->toDouble();
  auto wat = [&](int64_t i) { return wf ? wf[i] : static_cast<float>(wd[static_cast<size_t>(i)]); };
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t k = 0; k < K; ++k) wt[static_cast<size_t>(nn * K + k)] = transB ? wat(nn * K + k) : wat(k * N + nn);
  int x = in(n, 0);
  int wv = weightVal(g_.value(n.inputs[1]).name, {N, K}, floatBytes(*w, false, &wt), ft_);
  std::vector<int> ins = {x, wv};
  int c_add = -1;  // a C the engine adds after the product (not an [N] bias): a separate Add
  if (!mm && n.hasInput(2)) {
    const Tensor* c = constIn(n, 2);
    if (!c) unsupported(n, "C must be a constant");
    std::vector<double> cv = c->toDouble();
    // Exactly where the engine starts its accumulators at C: C of shape [N] or [1, N] (per column), or [M, 1]
    // with M = 1 (one value for the row); any other C is added after the product.
    const Shape& csh = c->shape();
    int64_t M = as[0];
    bool col = csh == Shape{N} || csh == Shape{1, N};
    bool row = !col && csh == Shape{M, 1};
    if (row && M != 1) unsupported(n, "C of shape [M, 1] with M > 1 has no package form");
    if (col || row) {
      std::vector<float> bias(static_cast<size_t>(N));
      for (int64_t i = 0; i < N; ++i) bias[static_cast<size_t>(i)] = static_cast<float>(cv[static_cast<size_t>(col ? i : 0)]);
      ins.push_back(weightVal(g_.value(n.inputs[2]).name, {N}, floatBytes(*c, true, &bias), ElemType::kF32));
    } else {
      c_add = in(n, 2);
    }
  }
  ir::ValueId outv = n.outputs[0];
  LDesc probe;
  bool epilogue = actFromAttrs(n, probe);
  const Shape& ys = g_.value(outv).type.shape;
  if (c_add >= 0) {  // y = act(A*B + C): the product, then a broadcasting Add carrying the activation
    int prod = tempVal(n.name + "/product", ys);
    emit(n, LayerKind::kGemm, ins, prod);
    int sum = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", ys);
    LDesc& a = emit(n, LayerKind::kBinary, {prod, c_add}, sum, {0});
    a.name = n.name + "/add_C";
    a.act = probe.act, a.act_a = probe.act_a, a.act_b = probe.act_b;
    if (!epilogue) trailingActivation(n, sum, outVal(n, outv));
    return;
  }
  int out = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", ys);
  LDesc& d = emit(n, LayerKind::kGemm, ins, out);
  if (tall) d.views = {{rows, K}, {N, K}, {rows, N}};
  d.act = probe.act;
  d.act_a = probe.act_a;
  d.act_b = probe.act_b;
  if (!epilogue) trailingActivation(n, out, outVal(n, outv));
}

/// Gemm beyond "x times constant weights plus bias": transA, alpha, beta, or B an activation. As the engine
/// computes it: the product (a matmul layer; transposed operands through transpose layers, a constant B transposed
/// here), then y * alpha (a binary layer), then + beta * C (C scaled here when constant, by a binary layer when
/// not), the fused activation on the last layer.
void Lowerer::gemmGeneral(const ir::Node& n) {
  const Shape &as = shapeOf(n, 0), &bs = shapeOf(n, 1);
  if (as.size() != 2 || bs.size() != 2) unsupported(n, "Gemm operands must be matrices");
  const bool ta = ops::attrInt(n, "transA"), tb = ops::attrInt(n, "transB");
  const float alpha = ops::attrFloat(n, "alpha"), beta = ops::attrFloat(n, "beta");
  const int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], N = tb ? bs[0] : bs[1];
  auto transposed = [&](int v, const Shape& s, const char* what) {
    int t = tempVal(fmt::format("{}/{}", n.name, what), {s[1], s[0]});
    emit(n, LayerKind::kTranspose, {v}, t, {1u, 0u}).name = fmt::format("{}/{}", n.name, what);
    return t;
  };
  int a = in(n, 0);
  if (ta) a = transposed(a, as, "transA");
  int b;
  if (const Tensor* w = constIn(n, 1); w && tb) {  // a constant B^T: transposed once, here
    std::vector<double> wd = w->toDouble();
    std::vector<float> bt(static_cast<size_t>(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) bt[static_cast<size_t>(k * N + j)] = static_cast<float>(wd[static_cast<size_t>(j * K + k)]);
    b = weightVal(g_.value(n.inputs[1]).name + "/transposed", {K, N}, floatBytes(*w, false, &bt), ft_);
  } else {
    b = in(n, 1);
    if (tb) b = transposed(b, bs, "transB");
  }
  const ir::ValueId outv = n.outputs[0];
  const Shape& ys = g_.value(outv).type.shape;
  LDesc probe;
  const bool epilogue = actFromAttrs(n, probe);
  const bool scale = alpha != 1.0f;
  const ir::Value* cv = n.hasInput(2) && beta != 0.0f ? &g_.value(n.inputs[2]) : nullptr;
  // As the engine: "+ C" with C per column ([N], [1, N]) or per row ([M, 1]) starts the sums (a bias).
  uint32_t bias_kind = 0;
  int bias = -1;
  if (cv && alpha == 1.0f && beta == 1.0f) {
    const Shape& cs = cv->type.shape;
    bias_kind = (cs == Shape{N} || cs == Shape{1, N}) && N > 0 ? 1 : cs == Shape{M, 1} && M > 0 ? 2 : 0;
    if (bias_kind) {
      const int64_t len = bias_kind == 1 ? N : M;
      if (cv->isConstant()) {
        bias = weightVal(cv->name, {len}, floatBytes(*cv->constant, true), ElemType::kF32);
      } else {
        bias = in(n, 2);
      }
      cv = nullptr;
    }
  }
  // The layers in order; the last one writes the output and carries the activation.
  int steps = 1 + (scale ? 1 : 0) + (cv ? 1 : 0) + (cv && !cv->isConstant() && beta != 1.0f ? 1 : 0);
  auto next = [&](const char* what) {
    return --steps == 0 && epilogue ? outVal(n, outv) : tempVal(fmt::format("{}/{}", n.name, what), ys);
  };
  auto finish = [&](LDesc& d) {
    if (steps) return;
    d.act = probe.act, d.act_a = probe.act_a, d.act_b = probe.act_b;
    if (!epilogue) trailingActivation(n, d.out, outVal(n, outv));
  };
  int y = next("product");
  std::vector<int> ins = {a, b};
  if (bias >= 0) ins.push_back(bias);
  LDesc& p = emit(n, LayerKind::kMatMul, ins, y, {bias_kind});
  p.views = {{M, K}, {K, N}};
  if (bias >= 0) p.views.push_back({bias_kind == 1 ? N : M});
  p.views.push_back({M, N});
  finish(p);
  if (scale) {
    Tensor t(DType::kF32, {});
    t.data<float>()[0] = alpha;
    int av = weightVal(n.name + "/alpha", {}, floatBytes(t, false), ft_);
    int ya = next("alpha");
    LDesc& d = emit(n, LayerKind::kBinary, {y, av}, ya, {binaryCode("Mul")});
    d.name = n.name + "/alpha";
    y = ya;
    finish(d);
  }
  if (cv) {
    int c;
    if (cv->isConstant()) {  // beta * C, each element one float multiply as in the engine
      std::vector<double> cd = cv->constant->toDouble();
      std::vector<float> sc(cd.size());
      for (size_t i = 0; i < cd.size(); ++i) sc[i] = beta == 1.0f ? static_cast<float>(cd[i]) : beta * static_cast<float>(cd[i]);
      c = weightVal(cv->name + "/scaled", cv->type.shape, floatBytes(*cv->constant, false, &sc), ft_);
    } else {
      c = in(n, 2);
      if (beta != 1.0f) {
        Tensor t(DType::kF32, {});
        t.data<float>()[0] = beta;
        int bv = weightVal(n.name + "/beta", {}, floatBytes(t, false), ft_);
        int cb = tempVal(n.name + "/beta_C", cv->type.shape);
        --steps;
        emit(n, LayerKind::kBinary, {c, bv}, cb, {binaryCode("Mul")}).name = n.name + "/beta";
        c = cb;
      }
    }
    int yc = next("add_C");
    LDesc& d = emit(n, LayerKind::kBinary, {y, c}, yc, {binaryCode("Add")});
    d.name = n.name + "/add_C";
    finish(d);
  }
}

/// MatMul of two operands that are not (a batch of matrices) x (one constant matrix): one product per batch, the
/// batch dims broadcast. A 1-D operand is viewed as a matrix ([1, K] or [K, 1]), as ONNX defines.
void Lowerer::matmul(const ir::Node& n) {
  Shape sa = shapeOf(n, 0), sb = shapeOf(n, 1);
  if (sa.empty() || sb.empty()) unsupported(n, "MatMul of a scalar");
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), yv;
  if (!ops::broadcastShapes(ba, bb, yv)) unsupported(n, "batch dims {} and {} do not broadcast", shapeStr(ba), shapeStr(bb));
  yv.push_back(sa[sa.size() - 2]);
  yv.push_back(sb.back());
  // The references carry every operand at the output's rank (leading 1s): the kernel broadcasts by dims.
  while (sa.size() < yv.size()) sa.insert(sa.begin(), 1);
  while (sb.size() < yv.size()) sb.insert(sb.begin(), 1);
  if (yv.size() > package::kMaxRank) unsupported(n, "rank {} above {}", yv.size(), package::kMaxRank);
  int a = in(n, 0), b = in(n, 1);
  ir::ValueId outv = n.outputs[0];
  LDesc probe;
  bool epilogue = actFromAttrs(n, probe);
  const Shape& ys = g_.value(outv).type.shape;
  int out = epilogue ? outVal(n, outv) : tempVal(n.name + "/pre_act", ys);
  LDesc& d = emit(n, LayerKind::kMatMul, {a, b}, out, {0u});
  d.views = {sa, sb, yv};
  d.act = probe.act;
  d.act_a = probe.act_a;
  d.act_b = probe.act_b;
  if (!epilogue) trailingActivation(n, out, outVal(n, outv));
}

void Lowerer::pool(const ir::Node& n) {
  const Shape& xs = shapeOf(n, 0);
  // Integer values other than the numerics' codes (a MaxPool over uint8 or 16-bit data): the engine runs it.
  const DType xt = g_.value(n.inputs[0]).type.dtype;
  const NumericsTraits& nt = numericsTraits(t_.numerics);
  if (isInteger(xt) && !(xt == DType::kI8 && (nt.affine_codes || nt.pow2_codes)) && !(xt == DType::kU8 && nt.pow2_codes))
    unsupported(n, "{} over {} values has no package form", n.op, dtypeName(xt));
  const bool indices = n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue &&
                       (uses_.count(n.outputs[1]) || is_output_.count(n.outputs[1]));
  if (xs.size() != 5 && !indices) return (void)poolLayer(n, {in(n, 0)});
  // 3-D windows and MaxPool's Indices: a pool_nd layer, tap by tap (the engine's kernel for them).
  if (xs.size() < 3 || xs.size() > 5) unsupported(n, "{}-D pooling has no package form (1-D to 3-D)", xs.size() - 2);
  if (indices && n.attrInt("storage_order", 0) != 0) unsupported(n, "column-major indices (storage_order 1) have no package form");
  const ops::Window w = ops::resolvePoolWindow(n, xs);
  const bool max = n.op == "MaxPool";
  std::vector<uint32_t> p = {max ? 1u : 0u, u32(n.attrInt("count_include_pad", 0) != 0),
                             max ? package::floatParam(n.attrFloat("pad_value", -INFINITY)) : package::floatParam(-INFINITY)};
  for (const std::vector<int64_t>* f : {&w.kernel, &w.stride, &w.dilation, &w.pad_begin, &w.pad_end}) {
    p.push_back(0), p.push_back(0);  // N, C
    for (int64_t v : *f) p.push_back(u32(v));
  }
  LDesc& d = emit(n, LayerKind::kPoolNd, {in(n, 0)}, outVal(n, n.outputs[0]), p);
  if (indices) d.more_outs = {outVal(n, n.outputs[1])};
}

LDesc& Lowerer::poolLayer(const ir::Node& n, std::vector<int> inputs) {
  const Shape& xs = shapeOf(n, 0);
  if (xs.size() != 4 && xs.size() != 3) unsupported(n, "{}-D pooling has no package form (1-D and 2-D)", xs.size() - 2);
  if (n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue) unsupported(n, "the MaxPool indices output has no package form");
  ops::Window w = ops::resolvePoolWindow(n, xs);
  auto at = [one = xs.size() == 3](const std::vector<int64_t>& v, int i, int64_t one_d) { return hw(v, i, one_d, one); };
  std::vector<uint32_t> p = {u32(at(w.kernel, 0, 1)),    u32(at(w.kernel, 1, 1)),    u32(at(w.stride, 0, 1)),
                             u32(at(w.stride, 1, 1)),    u32(at(w.dilation, 0, 1)),  u32(at(w.dilation, 1, 1)),
                             u32(at(w.pad_begin, 0, 0)), u32(at(w.pad_begin, 1, 0)), u32(at(w.pad_end, 0, 0)),
                             u32(at(w.pad_end, 1, 0)),   u32(n.attrInt("count_include_pad", 0) != 0),
                             n.op == "MaxPool" ? package::floatParam(n.attrFloat("pad_value", -INFINITY)) : 0u};
  LDesc& d = emit(n, n.op == "MaxPool" ? LayerKind::kMaxPool : LayerKind::kAvgPool, inputs, outVal(n, n.outputs[0]), p);
  d.views = {as4d(xs)};
  for (size_t k = 1; k < inputs.size(); ++k) d.views.push_back(vals_[static_cast<size_t>(inputs[k])].shape);  // (the int8 form's table)
  d.views.push_back(as4d(g_.value(n.outputs[0]).type.shape));
  return d;
}

void Lowerer::softmax(const ir::Node& n) {
  const Shape& s = shapeOf(n, 0);
  int64_t r = static_cast<int64_t>(s.size());
  if (r == 0) unsupported(n, "softmax of a scalar has no package form");
  int64_t axis = n.attrInt("axis", g_.opset < 13 ? 1 : -1);
  if (axis < 0) axis += r;
  uint32_t kind = n.op == "Softmax" ? 0 : n.op == "LogSoftmax" ? 1 : 2;
  Shape view = s;
  if (g_.opset < 13) {  // coerced to 2-D: [prod(dims < axis), prod(dims >= axis)], softmax on axis 1
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i)];
    view = {outer, inner};
    axis = 1;
  }
  LDesc& d = emit(n, LayerKind::kSoftmax, {in(n, 0)}, outVal(n, n.outputs[0]), {kind, static_cast<uint32_t>(axis)});
  d.views = {view, view};
}

void Lowerer::batchNorm(const ir::Node& n) {
  for (int i = 1; i < 5; ++i)
    if (!constIn(n, i)) unsupported(n, "scale, bias, mean and variance must be constants");
  if (n.outputs.size() > 1) unsupported(n, "training-mode outputs have no package form");
  std::vector<double> sc = constIn(n, 1)->toDouble(), bi = constIn(n, 2)->toDouble(), me = constIn(n, 3)->toDouble(),
                      va = constIn(n, 4)->toDouble();
  double eps = ops::attrFloat(n, "epsilon");
  std::vector<float> a(sc.size()), b(sc.size());
  for (size_t c = 0; c < sc.size(); ++c) {  // as the reference engine computes them
    double k = sc[c] / std::sqrt(va[c] + eps);
    a[c] = static_cast<float>(k);
    b[c] = static_cast<float>(bi[c] - me[c] * k);
  }
  int64_t C = static_cast<int64_t>(a.size());
  int x = in(n, 0);
  int av = weightVal(n.name + "/scale", {C}, floatBytes(Tensor(), true, &a), ElemType::kF32);
  int bv = weightVal(n.name + "/shift", {C}, floatBytes(Tensor(), true, &b), ElemType::kF32);
  emit(n, LayerKind::kChannelAffine, {x, av, bv}, outVal(n, n.outputs[0]));
}

void Lowerer::globalPool(const ir::Node& n) {
  int x = in(n, 0);
  emit(n, n.op == "GlobalAveragePool" ? LayerKind::kGlobalAvgPool : LayerKind::kGlobalMaxPool, {x}, outVal(n, n.outputs[0]));
}

void Lowerer::lrn(const ir::Node& n) {
  int64_t size = n.attrInt("size", 1);
  emit(n, LayerKind::kLrn, {in(n, 0)}, outVal(n, n.outputs[0]),
       {static_cast<uint32_t>(size), package::floatParam(ops::attrFloat(n, "alpha")),
        package::floatParam(ops::attrFloat(n, "beta")), package::floatParam(ops::attrFloat(n, "bias"))});
}

/// InstanceNormalization: scale and bias constants (float32 weights) or activations.
void Lowerer::instanceNorm(const ir::Node& n) {
  const Shape& xs = shapeOf(n, 0);
  if (xs.size() < 2 || xs.size() > package::kMaxRank) unsupported(n, "rank {} (2 to {})", xs.size(), package::kMaxRank);
  std::vector<int> ins = {in(n, 0)};
  for (int i = 1; i <= 2; ++i) {
    if (const Tensor* c = constIn(n, i)) {
      ins.push_back(weightVal(g_.value(n.inputs[static_cast<size_t>(i)]).name, {xs[1]}, floatBytes(*c, true), ElemType::kF32));
    } else {
      ins.push_back(in(n, i));
    }
  }
  emit(n, LayerKind::kInstanceNorm, ins, outVal(n, n.outputs[0]), {package::floatParam(ops::attrFloat(n, "epsilon"))});
}

/// ai.npuc.DetectionOutput (Caffe SSD): loc and conf as they are, the priors (a constant after resolve) float32 weights.
void Lowerer::detectionOutput(const ir::Node& n) {
  std::vector<ir::Type> types;
  for (int i = 0; i < 3; ++i) types.push_back(g_.value(n.inputs[static_cast<size_t>(i)]).type);
  ops::InferContext ctx(n, g_.opset, types, {nullptr, nullptr, nullptr});
  const kernels::SsdParams p = ops::ssdParams(ctx);
  const Tensor* priors = constIn(n, 2);
  if (!priors) unsupported(n, "the prior boxes must be a constant (Caffe's PriorBox layers are) to have a package form");
  std::vector<int> ins{in(n, 0), in(n, 1),
                       weightVal(g_.value(n.inputs[2]).name, priors->shape(), floatBytes(*priors, true), ElemType::kF32)};
  emit(n, LayerKind::kDetectionOutput, ins, outVal(n, n.outputs[0]), package::ssdParams(p));
}

/// Einsum of two operands (ops::einsumPlan, the engine's plan): transposes into [batch, M, K] and [batch, K, N] where
/// the letters are not in that order already, a matmul layer, a transpose into the output's letter order.
void Lowerer::einsum(const ir::Node& n) {
  if (n.numInputs() != 2) unsupported(n, "Einsum of {} operands has no package form (two)", n.numInputs());
  ops::EinsumPlan p;
  std::string why;
  if (!ops::einsumPlan(n.attrString("equation", ""), shapeOf(n, 0), shapeOf(n, 1), &p, &why)) unsupported(n, "{}", why);
  for (const Shape* s : {&p.a_t, &p.b_t, &p.prod})
    if (s->size() > package::kMaxRank) unsupported(n, "rank {} above {}", s->size(), package::kMaxRank);
  auto identity = [](const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  };
  auto transposed = [&](int v, const std::vector<int64_t>& perm, const Shape& to, const char* what) {
    if (identity(perm)) return v;
    int t = tempVal(fmt::format("{}/{}", n.name, what), to);
    std::vector<uint32_t> pw(perm.begin(), perm.end());
    emit(n, LayerKind::kTranspose, {v}, t, pw).name = fmt::format("{}/{}", n.name, what);
    return t;
  };
  const int a = transposed(in(n, 0), p.perm_a, p.a_t, "a_transposed");
  const int b = transposed(in(n, 1), p.perm_b, p.b_t, "b_transposed");
  const bool direct = identity(p.perm_y);
  const int prod = direct ? outVal(n, n.outputs[0]) : tempVal(n.name + "/product", p.prod);
  LDesc& d = emit(n, LayerKind::kMatMul, {a, b}, prod, {0u});
  d.views = {{p.batch, p.M, p.K}, {p.batch, p.K, p.N}, {p.batch, p.M, p.N}};
  if (!direct) {
    std::vector<uint32_t> pw(p.perm_y.begin(), p.perm_y.end());
    emit(n, LayerKind::kTranspose, {prod}, outVal(n, n.outputs[0]), pw).name = n.name + "/to_output";
  }
}

/// RNN / GRU / LSTM: one recurrent layer. W, R, B and P become one float input [W | R | B | P] (a descriptor holds 8
/// references: x, the weights, sequence_lens, initial_h, initial_c and three outputs): a weight when all are constants,
/// else a concat layer of their flat views. The attributes are ops::rnnShape's, as the engine reads them.
void Lowerer::recurrent(const ir::Node& n) {
  const kernels::RnnShape s = ops::rnnShape(n, shapeOf(n, 0), shapeOf(n, 2).at(2));
  const bool lstm = s.cell == kernels::RnnCell::kLstm;
  uint32_t present_in = 0, present_out = 0;
  std::vector<int> parts = {1, 2};
  if (n.hasInput(3)) parts.push_back(3), present_in |= package::kRnnInB;
  if (lstm && n.hasInput(7)) parts.push_back(7), present_in |= package::kRnnInP;
  int64_t total = 0;
  bool constant = true;
  for (int i : parts) total += shapeNumel(shapeOf(n, i)), constant = constant && constIn(n, i);
  int weights;
  if (constant) {
    std::vector<float> all;
    for (int i : parts)
      for (double v : constIn(n, i)->toDouble()) all.push_back(static_cast<float>(v));
    weights = weightVal(n.name + "/weights", {total}, floatBytes(*constIn(n, 1), false, &all), ft_);
  } else {
    std::vector<int> ins;
    for (int i : parts) ins.push_back(in(n, i));
    weights = tempVal(n.name + "/weights", {total});
    LDesc& c = emit(n, LayerKind::kConcat, ins, weights, {0u});
    c.name = n.name + "/weights";
    for (int i : parts) c.views.push_back({shapeNumel(shapeOf(n, i))});
    c.views.push_back({total});
  }
  std::vector<int> ins = {in(n, 0), weights};
  if (n.hasInput(4)) ins.push_back(intIn(n, 4)), present_in |= package::kRnnInSeqLens;
  if (n.hasInput(5)) ins.push_back(in(n, 5)), present_in |= package::kRnnInH0;
  if (lstm && n.hasInput(6)) ins.push_back(in(n, 6)), present_in |= package::kRnnInC0;
  std::vector<int> outs;
  for (size_t o = 0; o < n.outputs.size() && o < (lstm ? 3u : 2u); ++o) {
    const ir::ValueId v = n.outputs[o];
    if (v == ir::kNoValue || (!uses_.count(v) && !is_output_.count(v))) continue;  // an unused output takes no memory
    outs.push_back(outVal(n, v));
    present_out |= 1u << o;
  }
  if (outs.empty()) unsupported(n, "none of its outputs is used");
  LDesc& d = emit(n, LayerKind::kRecurrent, ins, outs[0], package::rnnParams(s, present_in, present_out));
  d.more_outs.assign(outs.begin() + 1, outs.end());
}

/// ai.npuc QRecurrent: the recurrent layer's int8 form — x int8, int8 [W | R], float32 [B | P | W's scales | R's scales |
/// sx | zx] (weights), then the optional inputs.
void Lowerer::qrecurrent(const ir::Node& n) {
  const kernels::RnnShape s = ops::rnnShape(n, shapeOf(n, 0), shapeOf(n, 2).at(2));
  const bool lstm = s.cell == kernels::RnnCell::kLstm;
  uint32_t present_in = package::kRnnInInt8, present_out = 0;
  const Tensor *w = constIn(n, 1), *r = constIn(n, 2), *sc = constIn(n, 8);
  if (!w || !r || !sc) unsupported(n, "its weights and scales must be constants");
  std::vector<uint8_t> codes(static_cast<const uint8_t*>(w->raw()), static_cast<const uint8_t*>(w->raw()) + w->nbytes());
  codes.insert(codes.end(), static_cast<const uint8_t*>(r->raw()), static_cast<const uint8_t*>(r->raw()) + r->nbytes());
  std::vector<float> tail;
  for (int i : {3, 7})
    if (n.hasInput(i) && (i == 3 || lstm)) {
      const Tensor* t = constIn(n, i);
      if (!t) unsupported(n, "its B and P must be constants in the int8 form");
      for (double v : t->toDouble()) tail.push_back(static_cast<float>(v));
      present_in |= i == 3 ? package::kRnnInB : package::kRnnInP;
    }
  for (double v : sc->toDouble()) tail.push_back(static_cast<float>(v));
  tail.push_back(n.attrFloat("x_scale", 1.0f));
  tail.push_back(static_cast<float>(n.attrInt("x_zero_point", 0)));
  std::vector<uint8_t> tail_bytes(tail.size() * 4);
  std::memcpy(tail_bytes.data(), tail.data(), tail_bytes.size());
  const Shape codes_shape{static_cast<int64_t>(codes.size())}, tail_shape{static_cast<int64_t>(tail.size())};  // (before the moves)
  const int wi = weightVal(n.name + "/W_R_int8", codes_shape, std::move(codes), ElemType::kI8);
  const int wf = weightVal(n.name + "/scales", tail_shape, std::move(tail_bytes), ElemType::kF32);
  std::vector<int> ins = {in(n, 0), wi, wf};
  if (n.hasInput(4)) ins.push_back(intIn(n, 4)), present_in |= package::kRnnInSeqLens;
  if (n.hasInput(5)) ins.push_back(in(n, 5)), present_in |= package::kRnnInH0;
  if (lstm && n.hasInput(6)) ins.push_back(in(n, 6)), present_in |= package::kRnnInC0;
  std::vector<int> outs;
  for (size_t o = 0; o < n.outputs.size() && o < (lstm ? 3u : 2u); ++o) {
    const ir::ValueId v = n.outputs[o];
    if (v == ir::kNoValue || (!uses_.count(v) && !is_output_.count(v))) continue;
    outs.push_back(outVal(n, v));
    present_out |= 1u << o;
  }
  if (outs.empty()) unsupported(n, "none of its outputs is used");
  LDesc& d = emit(n, LayerKind::kRecurrent, ins, outs[0], package::rnnParams(s, present_in, present_out));
  d.more_outs.assign(outs.begin() + 1, outs.end());
}

/// Det: a det layer.
void detNode(Lowerer& L, const ir::Node& n) { L.emit(n, LayerKind::kDet, {L.in(n, 0)}, L.outVal(n, n.outputs[0])); }

void registerNnLowerings(LowerTable& t) {
  t[{"", "Det"}] = detNode;
  takeTypedValues(t, {"MaxPool", "RNN", "GRU", "LSTM"});
  for (const char* d : {"", "ai.npuc"}) {
    t[{d, "Conv"}] = &Lowerer::conv;
    t[{d, "ConvTranspose"}] = &Lowerer::conv;
    t[{d, "Gemm"}] = &Lowerer::gemm;
    t[{d, "MatMul"}] = &Lowerer::gemm;
    t[{d, "MaxPool"}] = &Lowerer::pool;
  }
  t[{"", "AveragePool"}] = &Lowerer::pool;
  t[{"", "GlobalAveragePool"}] = &Lowerer::globalPool;
  t[{"", "GlobalMaxPool"}] = &Lowerer::globalPool;
  t[{"", "BatchNormalization"}] = &Lowerer::batchNorm;
  t[{"", "InstanceNormalization"}] = &Lowerer::instanceNorm;
  t[{"", "LRN"}] = &Lowerer::lrn;
  t[{"ai.npuc", "DetectionOutput"}] = &Lowerer::detectionOutput;
  t[{"", "Einsum"}] = &Lowerer::einsum;
  for (const char* op : {"RNN", "GRU", "LSTM"}) t[{"", op}] = &Lowerer::recurrent;
  t[{"ai.npuc", "QRecurrent"}] = &Lowerer::qrecurrent;
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) t[{"", op}] = &Lowerer::softmax;
}

}  // namespace npuc::codegen::detail
