// Kernels of neural-network ops. Conv, ConvTranspose, Gemm and MatMul run through the kernel library's packed,
// cache-blocked SIMD kernels (src/kernels/); 1-D/2-D and global pooling, the BatchNormalization affine map, LRN
// and Softmax through its layer kernels (kernels/layers.hpp, shared with the device runtime). N-D pooling (and
// MaxPool with indices) and InstanceNormalization are reference loops here, parallel over independent planes.
#include "engine/conv_geometry.hpp"
#include "engine/elementwise_util.hpp"
#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "kernels/typed.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "ops/einsum.hpp"
#include "ops/registry.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

namespace npuc::engine {

namespace {

std::vector<int64_t> spatialOf(const Shape& s) { return {s.begin() + 2, s.end()}; }

void needF32(const KernelCall& c, int i) {
  if (c.input(i).dtype() != DType::kF32)
    c.unsupported("input {} is {}; the reference engine runs this op in float32 only", i, dtypeName(c.input(i).dtype()));
}

const Tensor* constInput(const ir::Node& n, const ir::Graph& g, int i) {
  if (!n.hasInput(i)) return nullptr;
  const ir::Value& v = g.value(n.inputs[static_cast<size_t>(i)]);
  return v.constant ? &*v.constant : nullptr;
}

// ---------------------------------------------------------------------------------------------------------
// Conv: prepared once per input shape (weights packed); reused while the shape stays the same.
class ConvKernel : public Kernel {
 public:
  void run(KernelCall& c) override {
    needF32(c, 0);
    needF32(c, 1);
    const Tensor& x = c.input(0);
    const Tensor& w = c.input(1);
    const Tensor* b = c.has(2) ? &c.input(2) : nullptr;
    Tensor& y = c.alloc(0);
    std::lock_guard<std::mutex> lk(mu_);
    if (!conv_ || x.shape() != in_shape_ || w.raw() != w_ptr_) {
      ops::Window win = ops::resolveWindow(c.node, spatialOf(x.shape()), spatialOf(w.shape()), false);
      auto s = geometryOf<kernels::ConvShape>(c, x, win);
      s.out_channels = w.dim(0);
      conv_ = std::make_unique<kernels::Conv>(s, w.data<float>(), b ? b->data<float>() : nullptr, act_, layouts_);
      in_shape_ = x.shape();
      w_ptr_ = w.raw();
    }
    const kernels::Layouts l{c.blocked_in ? kernels::Layout::kBlocked8 : kernels::Layout::kPlanes,
                             c.blocked_out ? kernels::Layout::kBlocked8 : kernels::Layout::kPlanes};
    if (!c.residual.defined()) {
      conv_->run(x.data<float>(), y.data<float>(), c.pool, l);
      return;
    }
    if (c.residual.dtype() != DType::kF32 || c.residual.shape() != y.shape())
      c.error("the fused residual must be float32 of the output's shape {}", shapeStr(y.shape()));
    conv_->runAdd(x.data<float>(), c.residual.data<float>(), post_, y.data<float>(), c.pool, l);
  }
  bool blockInput() override {
    layouts_.x = kernels::Layout::kBlocked8;
    conv_.reset();
    return true;
  }
  bool blockOutput() override {
    layouts_.y = kernels::Layout::kBlocked8;
    conv_.reset();
    return true;
  }
  bool fuseActivation(const kernels::Activation& act) override {
    if (act_.kind != kernels::ActKind::kNone || residual_) return false;
    act_ = act;
    conv_.reset();
    return true;
  }
  bool fuseResidualAdd(const kernels::Activation& post) override {
    if (act_.kind != kernels::ActKind::kNone || residual_ || layouts_.y != kernels::Layout::kPlanes) return false;
    residual_ = true;
    post_ = post;
    return true;
  }

 private:
  kernels::Activation act_;
  bool residual_ = false;
  kernels::Activation post_;  // after the residual Add
  kernels::Layouts layouts_;  // what the engine planned (blockInput / blockOutput): the weights are packed for it
  std::mutex mu_;
  std::unique_ptr<kernels::Conv> conv_;
  Shape in_shape_;
  const void* w_ptr_ = nullptr;
};

void convTransposeKernel(KernelCall& c) {
  needF32(c, 0);
  needF32(c, 1);
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  ops::Window win = ops::resolveTransposedWindow(c.node, spatialOf(x.shape()), spatialOf(w.shape()));
  auto s = geometryOf<kernels::ConvTransposeShape>(c, x, win);
  s.out_channels = w.dim(1) * s.groups;
  Tensor& y = c.alloc(0);
  kernels::conv_transpose(s, x.data<float>(), w.data<float>(), c.has(2) ? c.input(2).data<float>() : nullptr,
                          y.data<float>(), c.pool);
}

// ---------------------------------------------------------------------------------------------------------
// Gemm / MatMul. When the right operand is a constant, it is packed once as the left operand of the
// transposed product (Y^T = B^T A^T); the reduction over k runs in the same order, so the bits are the same.
class MatMulKernel : public Kernel {
 public:
  MatMulKernel(const ir::Node& n, const ir::Graph& g) {
    bool gemm = n.op == "Gemm";
    trans_a_ = gemm && ops::attrInt(n, "transA");
    trans_b_ = gemm && ops::attrInt(n, "transB");
    alpha_ = gemm ? ops::attrFloat(n, "alpha") : 1.0f;
    beta_ = gemm ? ops::attrFloat(n, "beta") : 1.0f;
    const Tensor* b = constInput(n, g, 1);
    if (b && b->dtype() == DType::kF32 && b->rank() == 2) {
      int64_t K = trans_b_ ? b->dim(1) : b->dim(0);
      int64_t N = trans_b_ ? b->dim(0) : b->dim(1);
      // B^T as an [N, K] matrix: element (n, k) = B[k, n] (or B[n, k] when transB).
      packed_b_ = std::make_unique<kernels::PackedA>(N, K, b->data<float>(), b->dim(1), !trans_b_);
      packed_ptr_ = b->raw();
    }
  }

  void run(KernelCall& c) override {
    const Tensor& a = c.input(0);
    const Tensor& b = c.input(1);
    if (a.dtype() != DType::kF32 || b.dtype() != DType::kF32) {
      c.unsupported("{} runs in float32 only (got {} x {})", c.node.op, dtypeName(a.dtype()), dtypeName(b.dtype()));
    }
    Tensor& y = c.alloc(0);
    if (c.node.op == "Gemm") runGemm(c, a, b, y);
    else runMatMul(c, a, b, y);
  }

 private:
  // One 2-D product y[M,N] = A[M,K] * B[K,N] (+ bias), choosing the packed path when available.
  void product(KernelCall& c, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, bool ta, const float* B,
               int64_t ldb, bool tb, float* Y, const float* bias, kernels::BiasKind bk, bool packed_ok) {
    if (packed_ok && packed_b_) {
      // Y^T[N, M] = Bt[N, K] * A^T[K, M]
      std::vector<float> yt(static_cast<size_t>(N * M));
      kernels::GemmArgs g;
      g.M = N; g.N = M; g.K = K;
      g.B = A; g.ldb = lda; g.transB = !ta;
      g.C = yt.data(); g.ldc = M;
      g.bias = bias;
      g.bias_kind = bk == kernels::BiasKind::kPerCol ? kernels::BiasKind::kPerRow
                    : bk == kernels::BiasKind::kPerRow ? kernels::BiasKind::kPerCol : kernels::BiasKind::kNone;
      kernels::sgemm_packed(*packed_b_, g, c.pool);
      if (M == 1) {
        std::memcpy(Y, yt.data(), static_cast<size_t>(N) * sizeof(float));
      } else {
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) Y[m * N + n] = yt[static_cast<size_t>(n * M + m)];
      }
      return;
    }
    kernels::GemmArgs g;
    g.M = M; g.N = N; g.K = K;
    g.A = A; g.lda = lda; g.transA = ta;
    g.B = B; g.ldb = ldb; g.transB = tb;
    g.C = Y; g.ldc = N;
    g.bias = bias;
    g.bias_kind = bk;
    kernels::sgemm(g, c.pool);
  }

  void runGemm(KernelCall& c, const Tensor& a, const Tensor& b, Tensor& y) {
    int64_t M = trans_a_ ? a.dim(1) : a.dim(0);
    int64_t K = trans_a_ ? a.dim(0) : a.dim(1);
    int64_t N = trans_b_ ? b.dim(0) : b.dim(1);
    bool packed_ok = packed_b_ && b.raw() == packed_ptr_;
    const Tensor* cc = c.has(2) && beta_ != 0.0f ? &c.input(2) : nullptr;
    Tensor cf;
    if (cc && cc->dtype() != DType::kF32) cc = &(cf = castTensor(*cc, DType::kF32, c));
    // Bias folded into the accumulator when it is exactly "+ C" with C per column (the common Linear layer).
    bool bias_col = cc && alpha_ == 1.0f && beta_ == 1.0f &&
                    (cc->shape() == Shape{N} || cc->shape() == Shape{1, N}) && N > 0;
    bool bias_row = cc && !bias_col && alpha_ == 1.0f && beta_ == 1.0f && cc->shape() == Shape{M, 1} && M > 0;
    const float* bias = bias_col || bias_row ? cc->data<float>() : nullptr;
    auto bk = bias_col ? kernels::BiasKind::kPerCol : bias_row ? kernels::BiasKind::kPerRow : kernels::BiasKind::kNone;
    product(c, M, N, K, a.data<float>(), a.dim(1), trans_a_, b.data<float>(), b.dim(1), trans_b_, y.data<float>(),
            bias, bk, packed_ok);
    if (bias) return;
    float* py = y.data<float>();
    if (alpha_ != 1.0f)
      for (int64_t i = 0; i < M * N; ++i) py[i] *= alpha_;
    if (cc) {
      Tensor full(DType::kF32, {M, N});
      const float* pc = cc->data<float>();
      float* pf = full.data<float>();
      forEachBroadcast<1>(full.shape(), {&cc->shape()},
                          [&](int64_t o, std::array<int64_t, 1> off, std::array<int64_t, 1> st, int64_t n) {
                            for (int64_t i = 0; i < n; ++i) pf[o + i] = pc[off[0] + i * st[0]];
                          });
      for (int64_t i = 0; i < M * N; ++i) py[i] = py[i] + beta_ * pf[i];
    }
  }

  void runMatMul(KernelCall& c, const Tensor& a, const Tensor& b, Tensor& y) {
    Shape sa = a.shape(), sb = b.shape();
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
    Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), bo;
    ops::broadcastShapes(ba, bb, bo);
    int64_t batches = shapeNumel(bo);
    bool packed_ok = packed_b_ && b.raw() == packed_ptr_ && bb.empty();
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    if (batches == 1 || (packed_ok && ba.size() <= 1)) {
      // All batch rows of A can be one tall matrix when B is shared.
      if (bb.empty() || batches == 1) {
        product(c, M * shapeNumel(ba), N, K, pa, K, false, pb, N, false, py, nullptr, kernels::BiasKind::kNone, packed_ok);
        return;
      }
    }
    // General batched case: every output batch, its operands' batches broadcast (the package's matmul layer runs
    // this same kernel).
    kernels::MatMulBatches mb;
    std::string why;
    Shape sy = bo;
    sy.push_back(M), sy.push_back(N);
    Shape fa = ba, fb = bb;
    fa.push_back(M), fa.push_back(K), fb.push_back(K), fb.push_back(N);
    if (!kernels::matmulBatches(fa, fb, sy, &mb, &why)) c.error("{}", why);
    kernels::matmulBatched(mb, pa, pb, py, {}, c.pool);
  }

  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
  std::unique_ptr<kernels::PackedA> packed_b_;
  const void* packed_ptr_ = nullptr;
};

// ---------------------------------------------------------------------------------------------------------
// Pooling over N-D windows. Each (n, c) plane is independent.

/// MaxPool over int8 codes (an int8-affine graph's data movement: input and output share scale and zero point).
void maxPoolI8(KernelCall& c) {
  const Tensor& x = c.input(0);
  if (x.rank() != 3 && x.rank() != 4) c.unsupported("int8 MaxPool is 1-D or 2-D");
  if (c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoValue) c.unsupported("int8 MaxPool has no indices output");
  if (c.node.attrFloat("pad_value", -std::numeric_limits<float>::infinity()) != -std::numeric_limits<float>::infinity())
    c.unsupported("int8 MaxPool ignores its padding (no pad_value)");
  const ops::Window w = ops::resolvePoolWindow(c.node, x.shape());
  const kernels::Pool2dShape s = pool2dShape(w, x.dim(0) * x.dim(1));
  Tensor& y = c.alloc(0);
  kernels::maxPool2dI8Fast(s, x.data<int8_t>(), y.data<int8_t>(), c.pool);
}

/// MaxPool's indices with storage_order = 1: each plane's offset, then the spatial position in column-major order
/// (the first spatial dim fastest), from the row-major indices the kernels give.
void columnMajorIndices(const ops::Window& w, int64_t* idx, int64_t n) {
  int64_t plane = 1;
  for (int64_t d : w.in) plane *= d;
  for (int64_t i = 0; i < n; ++i) {
    // Coordinates from the last dim (row-major), each weighted by the product of the dims before it (column-major).
    int64_t r = idx[i] % plane, col = 0, before = plane;
    for (size_t k = w.in.size(); k-- > 0;) {
      before /= w.in[k];
      col += (r % w.in[k]) * before;
      r /= w.in[k];
    }
    idx[i] = idx[i] - idx[i] % plane + col;
  }
}

// A function kernel that reads KernelCall::blocked_in / blocked_out itself (the pools).
class BlockableFnKernel : public FnKernel {
 public:
  using FnKernel::FnKernel;
  bool blockInput() override { return true; }
  bool blockOutput() override { return true; }
};

void poolKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  bool is_max = c.node.op == "MaxPool";
  if (is_max && x.dtype() == DType::kI8) return maxPoolI8(c);
  // uint8 and 16-bit integers: every value is a float exactly, so the float kernel's maximum is theirs.
  const bool narrow_int = is_max && (x.dtype() == DType::kU8 || x.dtype() == DType::kI16 || x.dtype() == DType::kU16);
  if (!narrow_int) needF32(c, 0);
  if (x.rank() - 2 > 3) c.unsupported("pooling over more than 3 spatial dims is not supported");
  const ops::Window w = ops::resolvePoolWindow(c.node, x.shape());
  bool include_pad = c.node.attrInt("count_include_pad", 0) != 0;
  // ai.npuc.MaxPool: taps in the padding count as pad_value (a constant Pad folded in); -inf (and NaN) ignore them.
  const float ninf = -std::numeric_limits<float>::infinity();
  float pad_value = is_max ? c.node.attrFloat("pad_value", ninf) : ninf;
  Tensor& y = c.alloc(0);
  bool want_idx = is_max && c.node.outputs.size() > 1 && c.node.outputs[1] != ir::kNoValue;
  int64_t* pidx = want_idx ? c.alloc(1).data<int64_t>() : nullptr;
  const Tensor xf = narrow_int ? castTensor(x, DType::kF32, c) : x;
  Tensor yf = narrow_int ? Tensor(DType::kF32, y.shape()) : y;
  const float* px = xf.data<float>();
  float* py = yf.data<float>();
  int64_t planes = x.dim(0) * x.dim(1);
  const bool blocked = c.blocked_in || c.blocked_out;
  // In a channel-blocked chain (Engine::blockChannels): input and output blocked together; float32, 2-D, no indices,
  // channels a multiple of 8.
  if (blocked && (c.blocked_in != c.blocked_out || narrow_int || want_idx || w.rank() != 2 || x.dim(1) % 8 != 0))
    c.error("internal: a channel-blocked pool needs both sides blocked, float32, 2-D windows, no indices and whole "
            "blocks of 8 channels");
  if (!want_idx && (w.rank() == 1 || w.rank() == 2)) {
    // 1-D and 2-D pooling: the kernel library's row-at-a-time loops (1-D as H = 1), or its blocked ones.
    kernels::Pool2dShape s = pool2dShape(w, planes);
    s.count_include_pad = include_pad;
    s.pad_value = pad_value;
    if (blocked) kernels::pool2dBlocked8(s, is_max, px, py, c.pool);
    else if (is_max) kernels::maxPool2dFast(s, px, py, c.pool);
    else kernels::avgPool2dFast(s, px, py, c.pool);
  } else {
    // 3-D windows and MaxPool's Indices output: tap by tap (the pool_nd layer's kernel).
    kernels::PoolNdShape s;
    s.planes = planes;
    s.in = w.in, s.out = w.out, s.kernel = w.kernel, s.stride = w.stride, s.dilation = w.dilation;
    s.pad_begin = w.pad_begin, s.pad_end = w.pad_end;
    s.max = is_max, s.count_include_pad = include_pad, s.pad_value = pad_value;
    kernels::poolNd(s, px, py, pidx, c.pool);
    if (c.node.attrInt("storage_order", 0) != 0 && pidx) columnMajorIndices(w, pidx, y.numel());
  }
  if (narrow_int) kernels::castValues(DType::kF32, yf.raw(), y.dtype(), y.raw(), y.numel());
}

void globalPoolKernel(KernelCall& c) {
  needF32(c, 0);
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  int64_t planes = x.dim(0) * x.dim(1);
  int64_t size = planes ? x.numel() / planes : 0;
  const bool max = c.node.op == "GlobalMaxPool";
  if (c.blocked_in) {  // in a channel-blocked chain: y's one position per channel is the same in either layout
    if (planes % 8 != 0) c.error("internal: a channel-blocked global pool needs whole blocks of 8 channels");
    kernels::globalPoolBlocked8(max, planes, size, x.data<float>(), y.data<float>(), c.pool);
  } else if (max) {
    kernels::globalMaxPool(planes, size, x.data<float>(), y.data<float>(), c.pool);
  } else {
    kernels::globalAvgPool(planes, size, x.data<float>(), y.data<float>(), c.pool);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Normalisation.

void batchNormKernel(KernelCall& c) {
  needF32(c, 0);
  const Tensor& x = c.input(0);
  std::vector<double> scale = c.input(1).toDouble(), bias = c.input(2).toDouble(), mean = c.input(3).toDouble(),
                      var = c.input(4).toDouble();
  double eps = ops::attrFloat(c.node, "epsilon");
  int64_t C = x.dim(1), N = x.dim(0), inner = x.numel() / std::max<int64_t>(1, N * C);
  std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
  for (int64_t ch = 0; ch < C; ++ch) {
    size_t u = static_cast<size_t>(ch);
    double k = scale[u] / std::sqrt(var[u] + eps);
    a[u] = static_cast<float>(k);
    b[u] = static_cast<float>(bias[u] - mean[u] * k);
  }
  Tensor& y = c.alloc(0);
  kernels::channelAffine(N, C, inner, x.data<float>(), a.data(), b.data(), y.data<float>(), c.pool);
}

// Any einsum (ops::einsumTerms) as one loop over every label, in double: operands and output of any numeric type;
// each output element sums, in row-major order of the labels missing from the output, the products of the operands
// (a diagonal: a label twice in one term steps both of its dims).
void einsumGeneral(KernelCall& c, const ops::EinsumTerms& t) {
  std::string labels = t.out;  // the output's labels (outer loops), then the summed ones
  for (const std::string& term : t.in)
    for (char ch : term)
      if (labels.find(ch) == std::string::npos) labels += ch;
  const size_t L = labels.size(), n_out = t.out.size(), n_in = t.in.size();
  std::vector<int64_t> size(L);
  for (size_t k = 0; k < L; ++k) size[k] = t.dims.at(labels[k]);
  std::vector<std::vector<double>> vals(n_in);
  std::vector<std::vector<int64_t>> stride(n_in, std::vector<int64_t>(L, 0));  // 0: the operand lacks or broadcasts it
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor& x = c.input(static_cast<int>(i));
    vals[i] = x.toDouble();
    int64_t st = 1;
    for (int p = x.rank() - 1; p >= 0; --p) {
      const size_t k = labels.find(t.in[i][static_cast<size_t>(p)]);
      if (x.dim(p) != 1 || size[k] == 1) stride[i][k] += st;
      st *= x.dim(p);
    }
  }
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < L; ++k) (k < n_out ? outer : inner) *= size[k];
  std::vector<int64_t> idx(L, 0), off(n_in, 0);
  auto step = [&](size_t from, size_t to) {  // the odometer over labels [from, to): the last one fastest
    for (size_t k = to; k-- > from;) {
      for (size_t i = 0; i < n_in; ++i) off[i] += stride[i][k];
      if (++idx[k] < size[k]) return;
      for (size_t i = 0; i < n_in; ++i) off[i] -= stride[i][k] * size[k];
      idx[k] = 0;
    }
  };
  std::vector<double> y(static_cast<size_t>(outer));
  for (int64_t o = 0; o < outer; ++o) {
    double sum = 0;
    for (int64_t j = 0; j < inner; ++j) {
      double prod = 1;
      for (size_t i = 0; i < n_in; ++i) prod *= vals[i][static_cast<size_t>(off[i])];
      sum += prod;
      step(n_out, L);
    }
    y[static_cast<size_t>(o)] = sum;
    step(0, n_out);
  }
  Tensor& out = c.alloc(0);
  kernels::castValues(DType::kF64, y.data(), out.dtype(), out.raw(), outer);
}

// Einsum: of two float32 operands in the form of a batched product (ops::einsumPlan), transposes, the batched matmul
// kernel, a transpose — the layers the package lowers it to; any other einsum through the general loop.
void einsumKernel(KernelCall& c) {
  const std::string eq = c.node.attrString("equation", "");
  ops::EinsumPlan p;
  std::string why;
  if (c.in.size() != 2 || c.input(0).dtype() != DType::kF32 || c.input(1).dtype() != DType::kF32 ||
      !ops::einsumPlan(eq, c.input(0).shape(), c.input(1).shape(), &p, &why)) {
    std::vector<Shape> shapes;
    for (const Tensor& x : c.in) shapes.push_back(x.shape());
    ops::EinsumTerms t;
    if (!ops::einsumTerms(eq, shapes, &t, &why)) c.error("{}", why);
    return einsumGeneral(c, t);
  }
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor at(DType::kF32, p.a_t), bt(DType::kF32, p.b_t), prod(DType::kF32, p.prod);
  kernels::transpose(a.shape(), p.perm_a, sizeof(float), a.raw(), at.raw(), c.pool);
  kernels::transpose(b.shape(), p.perm_b, sizeof(float), b.raw(), bt.raw(), c.pool);
  kernels::MatMulBatches mb;
  if (!kernels::matmulBatches({p.batch, p.M, p.K}, {p.batch, p.K, p.N}, {p.batch, p.M, p.N}, &mb, &why)) c.error("{}", why);
  kernels::matmulBatched(mb, at.data<float>(), bt.data<float>(), prod.data<float>(), {}, c.pool);
  Tensor& y = c.alloc(0);
  kernels::transpose(p.prod, p.perm_y, sizeof(float), prod.raw(), y.raw(), c.pool);
}

// Det (kernels::determinants, in double), rounded once to the output's type.
void detKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  const int64_t m = x.dim(x.rank() - 1), mats = m != 0 ? x.numel() / (m * m) : 0;
  const std::vector<double> all = x.toDouble();
  std::vector<double> det(static_cast<size_t>(mats));
  kernels::determinants(mats, m, all.data(), det.data());
  Tensor& y = c.alloc(0);
  kernels::castValues(DType::kF64, det.data(), y.dtype(), y.raw(), mats);
}

void instanceNormKernel(KernelCall& c) {
  needF32(c, 0);
  const Tensor& x = c.input(0);
  Tensor scale = c.input(1), bias = c.input(2);
  if (scale.dtype() != DType::kF32) scale = castTensor(scale, DType::kF32, c);
  if (bias.dtype() != DType::kF32) bias = castTensor(bias, DType::kF32, c);
  int64_t C = x.dim(1), N = x.dim(0), inner = x.numel() / std::max<int64_t>(1, N * C);
  Tensor& y = c.alloc(0);
  // The package's instance_norm layer runs this same kernel.
  kernels::instanceNorm(N, C, inner, ops::attrFloat(c.node, "epsilon"), x.data<float>(), scale.data<float>(),
                        bias.data<float>(), y.data<float>(), c.pool);
}

void lrnKernel(KernelCall& c) {
  needF32(c, 0);
  const Tensor& x = c.input(0);
  int64_t size = c.node.attrInt("size", 1);
  float alpha = ops::attrFloat(c.node, "alpha"), beta = ops::attrFloat(c.node, "beta"),
        bias = ops::attrFloat(c.node, "bias");
  int64_t N = x.dim(0), C = x.dim(1), inner = x.numel() / std::max<int64_t>(1, N * C);
  if (size < 1) c.error("size must be >= 1, got {}", size);
  Tensor& y = c.alloc(0);
  kernels::lrn(N, C, inner, size, alpha, beta, bias, x.data<float>(), y.data<float>(), c.pool);
}

void softmaxKernel(KernelCall& c) {
  const Tensor& xin = c.input(0);
  Tensor x = xin.dtype() == DType::kF32 ? xin : castTensor(xin, DType::kF32, c);
  const Shape& s = x.shape();
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = c.node.attrInt("axis", c.opset < 13 ? 1 : -1);
  if (rank == 0) rank = 1;
  ops::normalizeAxis(axis, rank);
  int64_t outer = 1, len = 1, inner = 1;
  if (c.opset < 13) {
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) (i < axis ? outer : len) *= s[static_cast<size_t>(i)];
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
      (i < axis ? outer : i == axis ? len : inner) *= s[static_cast<size_t>(i)];
  }
  Tensor yf(DType::kF32, s);
  const std::string& op = c.node.op;
  kernels::SoftmaxKind kind = op == "Hardmax"      ? kernels::SoftmaxKind::kHardmax
                              : op == "LogSoftmax" ? kernels::SoftmaxKind::kLogSoftmax
                                                   : kernels::SoftmaxKind::kSoftmax;
  kernels::softmaxFast(kind, outer, len, inner, x.data<float>(), yf.data<float>(), c.pool);
  c.out[0] = xin.dtype() == DType::kF32 ? yf : castTensor(yf, xin.dtype(), c);
}

// ai.npuc.{Conv,ConvTranspose,Gemm,MatMul}: the ONNX kernel plus the activation in its attributes, in the Conv
// epilogue when the kernel library has it (Relu, Clip, LeakyRelu: same bits as a separate op), else after the op.
class FusedActivationKernel : public Kernel {
 public:
  FusedActivationKernel(std::unique_ptr<Kernel> inner, const ir::Node& n) : inner_(std::move(inner)) {
    std::string act = n.attrString("activation", "");
    float a = n.attrFloat("activation_alpha", 0.0f), b = n.attrFloat("activation_beta", 0.0f);
    if (act.empty()) return;
    kernels::Activation ka;
    if (act == "Relu") ka.kind = kernels::ActKind::kRelu;
    if (act == "Clip") ka = {kernels::ActKind::kClip, a, b};
    if (act == "LeakyRelu") ka = {kernels::ActKind::kLeakyRelu, a, 0.0f};
    if (act == "HardSwish") ka.kind = kernels::ActKind::kHardSwish;
    if (act == "HardSigmoid") ka = {kernels::ActKind::kHardSigmoid, a, b};
    if (ka.kind != kernels::ActKind::kNone && inner_->fuseActivation(ka)) return;
    post_ = activationFn(act, a, b);
  }
  void run(KernelCall& c) override {
    inner_->run(c);
    if (!post_) return;
    Tensor& y = c.out[0];
    if (y.dtype() != DType::kF32) c.unsupported("fused activations need float32 outputs");
    float* p = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = post_(p[i]);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  std::function<float(float)> post_;
};

}  // namespace

void registerNnKernels(KernelRegistry& r) {
  r.add("Conv", [](const ir::Node& n, const ir::Graph&) {
    return std::make_unique<FusedActivationKernel>(std::make_unique<ConvKernel>(), n);
  }, "ai.npuc");
  r.add("ConvTranspose", [](const ir::Node& n, const ir::Graph&) {
    return std::make_unique<FusedActivationKernel>(std::make_unique<FnKernel>(convTransposeKernel), n);
  }, "ai.npuc");
  for (const char* op : {"Gemm", "MatMul"})
    r.add(op, [](const ir::Node& n, const ir::Graph& g) {
      ir::Node plain = n;
      plain.domain.clear();  // the inner kernel reads the ONNX attributes only
      return std::make_unique<FusedActivationKernel>(std::make_unique<MatMulKernel>(plain, g), n);
    }, "ai.npuc");
  r.add("Conv", [](const ir::Node&, const ir::Graph&) { return std::make_unique<ConvKernel>(); });
  r.addFn("ConvTranspose", convTransposeKernel);
  for (const char* op : {"Gemm", "MatMul"})
    r.add(op, [](const ir::Node& n, const ir::Graph& g) { return std::make_unique<MatMulKernel>(n, g); });
  // Pools take channel-blocked tensors where Engine::blockChannels plans them (KernelCall::blocked_in / blocked_out).
  auto blockable = [](void (*fn)(KernelCall&)) {
    return [fn](const ir::Node&, const ir::Graph&) { return std::make_unique<BlockableFnKernel>(fn); };
  };
  r.add("MaxPool", blockable(poolKernel));
  r.add("MaxPool", blockable(poolKernel), "ai.npuc");
  r.add("AveragePool", blockable(poolKernel));
  r.add("GlobalAveragePool", blockable(globalPoolKernel));
  r.add("GlobalMaxPool", blockable(globalPoolKernel));
  r.addFn("BatchNormalization", batchNormKernel);
  r.addFn("InstanceNormalization", instanceNormKernel);
  r.addFn("Einsum", einsumKernel);
  r.addFn("Det", detKernel);
  r.addFn("LRN", lrnKernel);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) r.addFn(op, softmaxKernel);
}

}  // namespace npuc::engine
