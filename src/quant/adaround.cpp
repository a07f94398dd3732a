// AdaRound: the Gram matrices of the layers' input patches and the rounding optimized on them (adaround.hpp).
#include "quant/adaround.hpp"

#include "kernels/gemm.hpp"
#include "ops/registry.hpp"
#include "ops/window.hpp"
#include "quant/bias_correction.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace npuc::quant {

namespace {

/// How a layer's input becomes patches: the window of a Conv (1-D / 2-D), or a Gemm's rows.
struct PatchShape {
  bool conv = false;
  int64_t groups = 1, Cg = 0, K = 0;
  ops::Window win;
};

std::optional<PatchShape> patchShape(const ir::Graph& g, const ir::Node& n) {
  if (!correctable(g, n)) return std::nullopt;
  const Tensor& w = *g.value(n.inputs[1]).constant;
  const ir::Type& x = g.value(n.inputs[0]).type;
  PatchShape p;
  if (n.op == "Conv") {
    if (!x.isStatic() || (x.shape.size() != 3 && x.shape.size() != 4) || static_cast<int>(x.shape.size()) != w.rank()) return std::nullopt;
    p.conv = true;
    p.groups = n.attrInt("group", 1);
    p.Cg = w.dim(1);
    p.K = w.numel() / w.dim(0);
    p.win = ops::resolveWindow(n, std::vector<int64_t>(x.shape.begin() + 2, x.shape.end()),
                               std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), false);
  } else {
    p.K = ops::attrInt(n, "transB") ? w.dim(1) : w.dim(0);
  }
  if (p.K > kAdaRoundMaxK || p.K < 1) return std::nullopt;
  return p;
}

/// Patches of one batch item of input x (its [C, spatial…] plane) at the chosen output positions, for group gi:
/// rows of K values (zero outside the input) appended to `out`.
void convPatches(const PatchShape& p, const float* x, const Shape& xs, int64_t gi, const std::vector<int64_t>& positions,
                 std::vector<float>& out) {
  const bool two = p.win.rank() == 2;
  const int64_t IH = two ? xs[2] : 1, IW = xs[two ? 3 : 2];
  const int64_t KH = two ? p.win.kernel[0] : 1, KW = p.win.kernel[two ? 1 : 0];
  const int64_t OW = p.win.out[two ? 1 : 0];
  const int64_t sh = two ? p.win.stride[0] : 1, sw = p.win.stride[two ? 1 : 0];
  const int64_t dh = two ? p.win.dilation[0] : 1, dw = p.win.dilation[two ? 1 : 0];
  const int64_t ph = two ? p.win.pad_begin[0] : 0, pw = p.win.pad_begin[two ? 1 : 0];
  for (int64_t pos : positions) {
    const int64_t oy = pos / OW, ox = pos % OW;
    for (int64_t c = 0; c < p.Cg; ++c) {
      const float* plane = x + (gi * p.Cg + c) * IH * IW;
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx) {
          const int64_t iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
          out.push_back(iy >= 0 && iy < IH && ix >= 0 && ix < IW ? plane[iy * IW + ix] : 0.0f);
        }
    }
  }
}

/// C [M, N] = A [M, K] (A^T of a [K, M] matrix when transA) times B [K, N], row-major (kernels::sgemm: the same bits for
/// any thread count).
void product(int64_t M, int64_t N, int64_t K, const float* A, bool transA, const float* B, float* C, ThreadPool* pool) {
  kernels::GemmArgs a;
  a.M = M;
  a.N = N;
  a.K = K;
  a.A = A;
  a.lda = transA ? M : K;
  a.transA = transA;
  a.B = B;
  a.ldb = N;
  a.C = C;
  a.ldc = N;
  kernels::sgemm(a, pool);
}

/// H += P^T P for `rows` patches of K values (P row-major), in float products summed into double.
void accumulate(std::vector<double>& H, const std::vector<float>& P, int64_t rows, int64_t K, std::vector<float>& tmp) {
  if (rows == 0) return;
  tmp.assign(static_cast<size_t>(K * K), 0.0f);
  product(K, K, rows, P.data(), true, P.data(), tmp.data(), nullptr);
  for (size_t i = 0; i < tmp.size(); ++i) H[i] += tmp[i];
}

/// The rectified sigmoid of AdaRound: h(V) = clip(σ(V) (ζ − γ) + γ, 0, 1), ζ = 1.1, γ = −0.1.
constexpr double kZeta = 1.1, kGamma = -0.1;
double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double softRound(double v) { return std::clamp(sigmoid(v) * (kZeta - kGamma) + kGamma, 0.0, 1.0); }

/// Δ H Δ^T of one row (code units).
double quadratic(const std::vector<double>& d, const double* H, int64_t K) {
  double s = 0;
  for (int64_t i = 0; i < K; ++i) {
    double r = 0;
    for (int64_t j = 0; j < K; ++j) r += H[i * K + j] * d[static_cast<size_t>(j)];
    s += d[static_cast<size_t>(i)] * r;
  }
  return s;
}

}  // namespace

InputGrams measureInputGrams(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples, int threads,
                             int64_t max_positions) {
  struct Layer {
    PatchShape p;
    std::string output;
  };
  std::map<ir::ValueId, std::vector<Layer>> readers;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (g.value(n.inputs[0]).isConstant()) continue;
    if (auto p = patchShape(g, n)) readers[n.inputs[0]].push_back({*p, g.value(n.outputs[0]).name});
  }
  InputGrams r;
  r.samples = samples.size();
  std::set<ir::ValueId> values;
  for (auto& [v, layers] : readers) {
    values.insert(v);
    for (const Layer& l : layers) {
      InputGram& gr = r.by_output[l.output];
      gr.groups = l.p.groups;
      gr.K = l.p.K;
      gr.H.assign(static_cast<size_t>(gr.groups * gr.K * gr.K), 0.0);
    }
  }
  std::vector<float> patches, tmp;
  observeValues(g, samples, threads, values, [&](ir::ValueId v, const Tensor& t) {
    if (t.dtype() != DType::kF32) fail(ErrorCode::kInternal, "value '{}' is not float32", g.value(v).name);
    for (const Layer& l : readers.at(v)) {
      InputGram& gr = r.by_output.at(l.output);
      const int64_t N = t.dim(0), per_item = t.numel() / std::max<int64_t>(1, N);
      if (!l.p.conv) {  // a Gemm: every row a patch
        patches.assign(t.data<float>(), t.data<float>() + t.numel());
        accumulate(gr.H, patches, t.numel() / gr.K, gr.K, tmp);
        gr.patches += t.numel() / gr.K;
        continue;
      }
      int64_t P = 1;
      for (int64_t o : l.p.win.out) P *= o;
      std::vector<int64_t> positions;
      const int64_t take = std::min(P, max_positions);
      for (int64_t i = 0; i < take; ++i) positions.push_back(i * P / take);
      for (int64_t b = 0; b < N; ++b)
        for (int64_t gi = 0; gi < gr.groups; ++gi) {
          patches.clear();
          convPatches(l.p, t.data<float>() + b * per_item, t.shape(), gi, positions, patches);
          std::vector<double> Hg(static_cast<size_t>(gr.K * gr.K), 0.0);
          accumulate(Hg, patches, take, gr.K, tmp);
          double* dst = gr.H.data() + gi * gr.K * gr.K;
          for (size_t i = 0; i < Hg.size(); ++i) dst[i] += Hg[i];
        }
      gr.patches += N * take;
    }
  });
  for (auto& [name, gr] : r.by_output)
    if (gr.patches > 0)
      for (double& h : gr.H) h /= static_cast<double>(gr.patches);
  return r;
}

LayerRounding adaRound(const float* w, int64_t rows, int64_t K, const std::vector<double>& step, double lim, const InputGram& gram,
                       const AdaRoundOptions& o, ThreadPool* pool) {
  if (gram.K != K || gram.groups < 1 || rows % gram.groups != 0 || (step.size() != 1 && static_cast<int64_t>(step.size()) != rows))
    fail(ErrorCode::kInternal, "AdaRound: {} rows of {} weights against a Gram matrix of {} groups of {}", rows, K, gram.groups, gram.K);
  LayerRounding res;
  res.codes.resize(static_cast<size_t>(rows * K));
  const size_t n = static_cast<size_t>(rows * K);
  // Per weight (row-major): its value in steps, its floor, whether both neighbours are codes (else it keeps the
  // nearest code), the nearest code, and Adam's state on V.
  std::vector<double> x(n), f(n), V(n), m(n, 0.0), v2(n, 0.0);
  std::vector<char> free(n);
  std::vector<int32_t> nearest(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double s = step[step.size() == 1 ? 0 : static_cast<size_t>(r)];
    for (int64_t k = 0; k < K; ++k) {
      const size_t i = static_cast<size_t>(r * K + k);
      x[i] = std::isfinite(w[i]) ? static_cast<double>(w[i]) / s : 0.0;
      f[i] = std::floor(x[i]);
      nearest[i] = static_cast<int32_t>(std::clamp(std::nearbyint(x[i]), -lim, lim));
      free[i] = f[i] >= -lim && f[i] + 1 <= lim;
      const double p = std::clamp((x[i] - f[i] - kGamma) / (kZeta - kGamma), 1e-6, 1 - 1e-6);
      V[i] = std::log(p / (1 - p));  // (h(V) starts at the fractional part)
    }
  }
  const int64_t per_group = rows / gram.groups;
  const int warm = static_cast<int>(o.warmup * o.iterations);
  std::vector<float> D(static_cast<size_t>(per_group * K)), G(D.size()), Hf(static_cast<size_t>(K * K));
  for (int64_t gi = 0; gi < gram.groups; ++gi) {
    const double* H = gram.H.data() + gi * K * K;
    double norm = 0;
    for (int64_t k = 0; k < K; ++k) norm += H[k * K + k];
    norm /= static_cast<double>(K);
    if (!(norm > 0)) continue;  // (an input that is all zero: nearest)
    for (size_t i = 0; i < Hf.size(); ++i) Hf[i] = static_cast<float>(H[i] / norm);
    const size_t base = static_cast<size_t>(gi * per_group * K);
    // Adam on V: the reconstruction error in units of one code step (Δ H Δ^T / mean diag H) plus the regularizer;
    // the group's rows at once (G = D H, one product per step, the same bits for any thread count).
    for (int it = 0; it < o.iterations; ++it) {
      for (size_t i = 0; i < D.size(); ++i) {
        const size_t j = base + i;
        D[i] = static_cast<float>((free[j] ? f[j] + softRound(V[j]) : nearest[j]) - x[j]);
      }
      product(per_group, K, K, D.data(), false, Hf.data(), G.data(), pool);
      const bool reg = it >= warm;
      const double rel = reg ? static_cast<double>(it - warm) / std::max(1, o.iterations - warm) : 0.0;
      const double beta = o.beta_end + (o.beta_start - o.beta_end) * (1 - rel);
      const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
      const double c1 = 1 - std::pow(b1, it + 1), c2 = 1 - std::pow(b2, it + 1);
      for (size_t i = 0; i < D.size(); ++i) {
        const size_t j = base + i;
        if (!free[j]) continue;
        const double sg = sigmoid(V[j]), raw = sg * (kZeta - kGamma) + kGamma;
        if (raw <= 0 || raw >= 1) continue;  // (clipped: no gradient)
        double gh = 2.0 * G[i];
        if (reg) {
          const double t = 2 * raw - 1;
          gh -= o.lambda * beta * std::pow(std::fabs(t), beta - 1) * (t > 0 ? 2.0 : -2.0);
        }
        const double gv = gh * sg * (1 - sg) * (kZeta - kGamma);
        m[j] = b1 * m[j] + (1 - b1) * gv;
        v2[j] = b2 * v2[j] + (1 - b2) * gv * gv;
        V[j] -= o.learning_rate * (m[j] / c1) / (std::sqrt(v2[j] / c2) + eps);
      }
    }
  }
  // The hard choice per row, kept only where it beats rounding to nearest on the row's own error (in double).
  std::vector<double> d(static_cast<size_t>(K));
  for (int64_t r = 0; r < rows; ++r) {
    const double s = step[step.size() == 1 ? 0 : static_cast<size_t>(r)];
    const double* H = gram.H.data() + (r / per_group) * K * K;
    const size_t b = static_cast<size_t>(r * K);
    for (int64_t k = 0; k < K; ++k) d[static_cast<size_t>(k)] = nearest[b + static_cast<size_t>(k)] - x[b + static_cast<size_t>(k)];
    const double e_near = quadratic(d, H, K);
    std::vector<int32_t> chosen(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) {
      const size_t i = b + static_cast<size_t>(k);
      chosen[static_cast<size_t>(k)] = free[i] ? static_cast<int32_t>(f[i]) + (softRound(V[i]) >= 0.5 ? 1 : 0) : nearest[i];
      d[static_cast<size_t>(k)] = chosen[static_cast<size_t>(k)] - x[i];
    }
    double e = quadratic(d, H, K);
    if (!(e < e_near)) {
      for (int64_t k = 0; k < K; ++k) chosen[static_cast<size_t>(k)] = nearest[b + static_cast<size_t>(k)];
      e = e_near;
    }
    for (int64_t k = 0; k < K; ++k) {
      res.codes[b + static_cast<size_t>(k)] = chosen[static_cast<size_t>(k)];
      res.changed += chosen[static_cast<size_t>(k)] != nearest[b + static_cast<size_t>(k)];
    }
    res.error_nearest += s * s * e_near;
    res.error += s * s * e;
  }
  return res;
}

AdaRoundResult adaRoundLayers(const ir::Graph& g, const InputGrams& grams, const StepsOf& steps, const AdaRoundOptions& o, int threads) {
  AdaRoundResult out;
  ThreadPool& pool = ThreadPool::shared(std::max(1, threads));
  auto columnsOf = [](const ir::Node& n) { return n.op == "Gemm" && !ops::attrInt(n, "transB"); };
  // A weight several layers read gets one rounding for all of them: its error summed over their patches, i.e. the
  // Gram matrices averaged weighted by their patch counts (layers of the same geometry of rows; others keep the first
  // layer's). `readers`: per weight, the layers with a Gram matrix, in order.
  std::map<std::string, std::vector<std::pair<const ir::Node*, const InputGram*>>> readers;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (!correctable(g, n)) continue;
    auto gi = grams.by_output.find(g.value(n.outputs[0]).name);
    if (gi != grams.by_output.end() && gi->second.patches > 0) readers[g.value(n.inputs[1]).name].push_back({&n, &gi->second});
  }
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (!correctable(g, n)) continue;
    const ir::Value& wv = g.value(n.inputs[1]);
    auto ri = readers.find(wv.name);
    if (ri == readers.end() || ri->second.front().first != &n) continue;  // (the weight's first reader rounds it)
    InputGram joint = *ri->second.front().second;
    int shared = 1;
    for (size_t k = 1; k < ri->second.size(); ++k) {
      const auto& [m, gm] = ri->second[k];
      if (columnsOf(*m) != columnsOf(n) || gm->K != joint.K || gm->groups != joint.groups) continue;
      const double a = static_cast<double>(joint.patches), b = static_cast<double>(gm->patches);
      for (size_t i = 0; i < joint.H.size(); ++i) joint.H[i] = (joint.H[i] * a + gm->H[i] * b) / (a + b);
      joint.patches += gm->patches;
      ++shared;
    }
    const InputGram* gram = &joint;
    const Tensor& w = *wv.constant;
    const std::optional<WeightSteps> st = steps(n, w);
    if (!st) continue;
    // Rows: the output channels (a Gemm without transB holds them as columns: transposed here and back).
    const bool columns = columnsOf(n);
    const int64_t rows = columns ? w.dim(1) : w.dim(0), K = w.numel() / rows;
    std::vector<float> rw(w.data<float>(), w.data<float>() + w.numel());
    if (columns)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < K; ++k) rw[static_cast<size_t>(r * K + k)] = w.data<float>()[k * rows + r];
    LayerRounding lr = adaRound(rw.data(), rows, K, st->step, st->lim, *gram, o, &pool);
    std::vector<int32_t> codes = lr.codes;
    if (columns)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < K; ++k) codes[static_cast<size_t>(k * rows + r)] = lr.codes[static_cast<size_t>(r * K + k)];
    out.codes[wv.name] = std::move(codes);
    out.notes[wv.name] = fmt::format("AdaRound: output error {:.3g} -> {:.3g} ({:+.0f} %), {} of {} codes changed{}", lr.error_nearest,
                                     lr.error, lr.error_nearest > 0 ? 100 * (lr.error / lr.error_nearest - 1) : 0.0, lr.changed,
                                     rows * K, shared > 1 ? fmt::format(" (one rounding for the {} layers reading it)", shared) : "");
  }
  return out;
}

}  // namespace npuc::quant
