// recurrentFast (recurrent.hpp): the reference's expressions with the gate products as GEMMs. Per direction, the
// input products of every step and batch entry are one GEMM (X · Wᵀ); per step, the recurrent products of every
// batch entry are one GEMM with R packed once (R · hᵀ), and GRU's reset-gated product a second one. The GEMMs sum
// each output as the reference's dot does (fmaf from +0, k ascending: gemm.hpp), so the bits are the reference's.
#include "kernels/gemm.hpp"
#include "kernels/quant.hpp"
#include "kernels/recurrent.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace npuc::kernels {

namespace {

/// v[j] = a(v[j]) for j < n: Sigmoid and Tanh over the array (sigmoidFast / tanhFast: their bits, vectorised on
/// AVX-512), others element by element.
void activate(const RnnActivation& a, float* v, int64_t n) {
  if (a.kind == RnnActivation::Kind::kUnary && a.op == UnaryOp::kSigmoid) return sigmoidFast(v, v, n);
  if (a.kind == RnnActivation::Kind::kUnary && a.op == UnaryOp::kTanh) return tanhFast(v, v, n);
  for (int64_t j = 0; j < n; ++j) v[j] = a(v[j]);
}

}  // namespace

namespace detail {
void rnnGemvAvx512(const float* panels, int64_t K, int64_t N, const float* x, float* out);
void rnnGemvAvx2(const float* panels, int64_t width, int64_t K, int64_t N, const float* x, float* out);
std::unique_ptr<QRows> makeQRowsAvx512(const int8_t* m, int64_t rows, int64_t k);
std::unique_ptr<QRows> makeQRowsVnni(const int8_t* m, int64_t rows, int64_t k);
}  // namespace detail

/// Per direction: W ([G·H, input]), R ([G·H, H]) and, for GRU without linear_before_reset, R's h-gate rows; and for
/// a batch of one, R as panels of `panel` rows transposed ([panel][k][width], zeros past the last row) for the
/// matrix-vector product of every step: 128 rows where AVX-512 is active when packing (its kernel's sweep), else 64
/// (the AVX2 kernel's sweep: each panel read in order, once).
struct RnnPacked {
  std::vector<std::unique_ptr<PackedA>> w, r, rh;
  std::vector<std::vector<float>> r_panels;
  int64_t panel = 128;
};

void RnnPackedDeleter::operator()(RnnPacked* p) const { delete p; }

RnnPackedPtr packRecurrent(const RnnShape& s, const float* w, const float* r) {
  RnnPackedPtr p(new RnnPacked);
  const int64_t G = rnnGates(s.cell), H = s.hidden, GH = G * H;
  for (int d = 0; d < s.dirs; ++d) {
    p->w.push_back(s.input > 0 && GH > 0 ? std::make_unique<PackedA>(GH, s.input, w + d * GH * s.input, s.input, false) : nullptr);
    p->r.push_back(H > 0 ? std::make_unique<PackedA>(GH, H, r + d * GH * H, H, false) : nullptr);
    p->rh.push_back(s.cell == RnnCell::kGru && !s.linear_before_reset && H > 0
                        ? std::make_unique<PackedA>(H, H, r + d * GH * H + 2 * H * H, H, false)
                        : nullptr);
    std::vector<float> panels;
    if (s.batch == 1 && s.cell == RnnCell::kLstm) {
      const int64_t w = p->panel = detail::activeAvx512() ? 128 : 64, n_panels = (GH + w - 1) / w;
      panels.assign(static_cast<size_t>(n_panels * H * w), 0.0f);
      for (int64_t row = 0; row < GH; ++row)
        for (int64_t k = 0; k < H; ++k)
          panels[static_cast<size_t>(((row / w) * H + k) * w + row % w)] = r[(d * GH + row) * H + k];
    }
    p->r_panels.push_back(std::move(panels));
  }
  return p;
}

namespace {

class Direction {
 public:
  /// `q` (the int8 form): this direction's row sums of W, R and R's candidate rows (GRU) — `packed` is then unused.
  Direction(const RnnShape& s, const RnnTensors& t, int d, const RnnPacked* packed, ThreadPool* pool,
            const detail::QRows* const* q = nullptr)
      : s_(s), t_(t), d_(d), packed_(packed), q_(q), pool_(pool), G_(rnnGates(s.cell)), H_(s.hidden), B_(s.batch) {
    wb_ = t.b ? t.b + d * 2 * G_ * H_ : nullptr;
    rb_ = wb_ ? wb_ + G_ * H_ : nullptr;
    p_ = t.p ? t.p + d * 3 * H_ : nullptr;
    acts_ = &s.acts[static_cast<size_t>(d * rnnActivations(s.cell))];
    backwards_ = s.dirs == 2 ? d == 1 : s.reverse;
  }

  void run() {
    const int64_t GH = G_ * H_, T = s_.seq;
    // W · xᵀ for every row of X (rows (step, b), or (b, step) batch-major): xw_[gate row · rows + row].
    rows_ = T * B_;
    xw_.assign(static_cast<size_t>(rows_ * GH), 0.0f);
    if (q_) {  // the int8 form: each row of X's integer sums, scaled as the reference scales them
      sums_.assign(static_cast<size_t>(GH), 0);
      const float* ws = t_.w_scale + d_ * GH;
      for (int64_t col = 0; col < rows_; ++col) {
        q_[0]->sums(t_.xq + col * s_.input, t_.zx, sums_.data());
        for (int64_t row = 0; row < GH; ++row)
          xw_[static_cast<size_t>(row * rows_ + col)] = static_cast<float>(sums_[static_cast<size_t>(row)]) * (t_.sx * ws[row]);
      }
    } else if (rows_ > 0 && packed_->w[static_cast<size_t>(d_)]) {
      GemmArgs g;
      g.M = GH, g.N = rows_, g.K = s_.input;
      g.B = t_.x, g.ldb = s_.input, g.transB = true;
      g.C = xw_.data(), g.ldc = rows_;
      sgemm_packed(*packed_->w[static_cast<size_t>(d_)], g, pool_);
    }
    h_.assign(static_cast<size_t>(B_ * H_), 0.0f);
    c_.assign(h_.size(), 0.0f);
    for (int64_t b = 0; b < B_; ++b) {
      if (t_.h0) std::copy_n(t_.h0 + stateOffset(b), H_, h_.begin() + b * H_);
      if (t_.c0) std::copy_n(t_.c0 + stateOffset(b), H_, c_.begin() + b * H_);
    }
    hr_.assign(static_cast<size_t>(GH * B_), 0.0f);
    hr2_.assign(static_cast<size_t>(H_ * B_), 0.0f);
    tmp_.assign(h_.size(), 0.0f);
    tmp2_.assign(h_.size(), 0.0f);
    gates_.assign(static_cast<size_t>(B_ * GH), 0.0f);
    int64_t steps = 0;
    for (int64_t b = 0; b < B_; ++b) steps = std::max(steps, len(b));
    if (steps > 0 && H_ > 0 && q_) {
      for (int64_t i = 0; i < steps; ++i) {
        stateProducts(q_[1], 0, GH, h_.data(), hr_.data());
        switch (s_.cell) {
          case RnnCell::kRnn: rnnStep(i); break;
          case RnnCell::kGru: gruStep(i, nullptr); break;
          case RnnCell::kLstm: lstmStep(i); break;
        }
      }
    } else if (steps > 0 && H_ > 0) {
      const PackedA& packed_r = *packed_->r[static_cast<size_t>(d_)];
      const PackedA* packed_rh = packed_->rh[static_cast<size_t>(d_)].get();  // GRU: (r ⊙ h) · Rhᵀ
      const std::vector<float>& panels = packed_->r_panels[static_cast<size_t>(d_)];
      for (int64_t i = 0; i < steps; ++i) {
        if (!panels.empty() && B_ == 1) panelProducts(panels, packed_->panel, GH, h_.data(), hr_.data());
        else recurrentProducts(packed_r, GH, h_.data(), hr_.data());
        switch (s_.cell) {
          case RnnCell::kRnn: rnnStep(i); break;
          case RnnCell::kGru: gruStep(i, packed_rh); break;
          case RnnCell::kLstm: lstmStep(i); break;
        }
      }
    }
    for (int64_t b = 0; b < B_; ++b) {
      if (t_.y)
        for (int64_t step = len(b); step < T; ++step) std::fill_n(yAt(step, b), H_, 0.0f);
      if (t_.y_h) std::copy_n(h_.begin() + b * H_, H_, t_.y_h + stateOffset(b));
      if (t_.y_c) std::copy_n(c_.begin() + b * H_, H_, t_.y_c + stateOffset(b));
    }
  }

 private:
  int64_t len(int64_t b) const { return t_.seq_lens ? t_.seq_lens[b] : s_.seq; }
  int64_t stateOffset(int64_t b) const { return (s_.batch_major ? b * s_.dirs + d_ : d_ * B_ + b) * H_; }
  float* yAt(int64_t step, int64_t b) const {
    return t_.y + (s_.batch_major ? ((b * s_.seq + step) * s_.dirs + d_) : ((step * s_.dirs + d_) * B_ + b)) * H_;
  }
  /// Batch entry b's step at iteration i, or -1 when its sequence has ended.
  int64_t stepOf(int64_t i, int64_t b) const {
    const int64_t n = len(b);
    return i >= n ? -1 : backwards_ ? n - 1 - i : i;
  }
  /// Column of X's row (step, b) in xw_ (gate row g at xw_[g · rows_ + column]).
  int64_t xcol(int64_t step, int64_t b) const { return s_.batch_major ? b * s_.seq + step : step * B_ + b; }
  float xw(int64_t col, int64_t row) const { return xw_[static_cast<size_t>(row * rows_ + col)]; }
  float clip(float v) const { return s_.clip > 0.0f ? std::clamp(v, -s_.clip, s_.clip) : v; }
  /// out[row · B + b] = rows of `a` · state[b]ᵀ for every batch entry (a packed, `rows` × H).
  void recurrentProducts(const PackedA& a, int64_t rows, const float* state, float* out) const {
    GemmArgs g;
    g.M = rows, g.N = B_, g.K = H_;
    g.B = state, g.ldb = H_, g.transB = true;
    g.C = out, g.ldc = B_;
    sgemm_packed(a, g, pool_);
  }
  /// out[row] = R's row · state for a batch of one, from R's panels (packRecurrent): AVX-512 or AVX2 / FMA where the
  /// CPU has it, else a matrix-vector product per panel; each sums as the reference's dot.
  void panelProducts(const std::vector<float>& panels, int64_t width, int64_t rows, const float* state, float* out) const {
    if (detail::activeAvx512() && width == 128) return detail::rnnGemvAvx512(panels.data(), H_, rows, state, out);
    if (detail::activeAvx2()) return detail::rnnGemvAvx2(panels.data(), width, H_, rows, state, out);
    for (int64_t n0 = 0; n0 < rows; n0 += width) {
      GemmArgs g;
      g.M = 1, g.N = std::min<int64_t>(width, rows - n0), g.K = H_;
      g.A = state, g.lda = H_;
      g.B = panels.data() + (n0 / width) * H_ * width, g.ldb = width;
      g.C = out + n0, g.ldc = g.N;
      sgemm(g, nullptr);
    }
  }
  /// The int8 form: out[row · B + b] = the integer sum of rows [row0, row0 + rows) of R with each batch entry's state
  /// codes (state[b], in int8 at 1/127), scaled as the reference scales it.
  void stateProducts(const detail::QRows* q, int64_t row0, int64_t rows, const float* state, float* out) {
    codes_.resize(static_cast<size_t>(H_));
    sums_.resize(static_cast<size_t>(std::max(rows, G_ * H_)));
    const float* rs = t_.r_scale + d_ * G_ * H_ + row0;
    for (int64_t b = 0; b < B_; ++b) {
      for (int64_t k = 0; k < H_; ++k) codes_[static_cast<size_t>(k)] = rnnStateCode(state[b * H_ + k]);
      q->sums(codes_.data(), 0, sums_.data());
      for (int64_t row = 0; row < rows; ++row)
        out[row * B_ + b] = static_cast<float>(sums_[static_cast<size_t>(row)]) * (kRnnStateScale * rs[row]);
    }
  }
  /// The reference's pre(g, j): (x·Wᵀ + h·Rᵀ) + Wb + Rb.
  float pre(int64_t col, int64_t g, int64_t j, int64_t b) const {
    const int64_t row = g * H_ + j;
    float v = xw(col, row) + hr_[static_cast<size_t>(row * B_ + b)];
    if (wb_) v = (v + wb_[row]) + rb_[row];
    return v;
  }
  void store(int64_t step, int64_t b) {
    if (t_.y) std::copy_n(h_.begin() + b * H_, H_, yAt(step, b));
  }

  void rnnStep(int64_t i) {
    for (int64_t b = 0; b < B_; ++b) {
      const int64_t step = stepOf(i, b);
      if (step < 0) continue;
      const int64_t col = xcol(step, b);
      for (int64_t j = 0; j < H_; ++j) h_[static_cast<size_t>(b * H_ + j)] = acts_[0](clip(pre(col, 0, j, b)));
      store(step, b);
    }
  }

  void gruStep(int64_t i, const PackedA* packed_rh) {
    for (int64_t b = 0; b < B_; ++b) {
      const int64_t step = stepOf(i, b);
      if (step < 0) continue;
      const int64_t col = xcol(step, b);
      float* z = gates_.data() + b * 3 * H_;
      float* r = z + H_;
      for (int64_t j = 0; j < H_; ++j) {
        z[j] = acts_[0](clip(pre(col, 0, j, b)));
        r[j] = acts_[0](clip(pre(col, 1, j, b)));
        tmp_[static_cast<size_t>(b * H_ + j)] = r[j] * h_[static_cast<size_t>(b * H_ + j)];
      }
    }
    if (q_ && !s_.linear_before_reset) stateProducts(q_[2], 2 * H_, H_, tmp_.data(), hr2_.data());
    else if (packed_rh) recurrentProducts(*packed_rh, H_, tmp_.data(), hr2_.data());
    for (int64_t b = 0; b < B_; ++b) {
      const int64_t step = stepOf(i, b);
      if (step < 0) continue;
      const int64_t col = xcol(step, b);
      const float* z = gates_.data() + b * 3 * H_;
      const float* r = z + H_;
      for (int64_t j = 0; j < H_; ++j) {
        const int64_t row = 2 * H_ + j;
        float hh;
        if (s_.linear_before_reset) {
          float x = xw(col, row), hr = hr_[static_cast<size_t>(row * B_ + b)];
          if (wb_) x = x + wb_[row], hr = hr + rb_[row];
          hh = acts_[1](clip(x + r[j] * hr));
        } else {
          float v = xw(col, row) + hr2_[static_cast<size_t>(j * B_ + b)];
          if (wb_) v = (v + wb_[row]) + rb_[row];
          hh = acts_[1](clip(v));
        }
        float& h = h_[static_cast<size_t>(b * H_ + j)];
        h = (1.0f - z[j]) * hh + z[j] * h;
      }
      store(step, b);
    }
  }

  // The reference's expressions, each activation applied to a whole array (activate): the same values in the same
  // operations, so the same bits.
  void lstmStep(int64_t i) {
    for (int64_t b = 0; b < B_; ++b) {
      const int64_t step = stepOf(i, b);
      if (step < 0) continue;
      const int64_t col = xcol(step, b);
      float* gi = gates_.data() + b * 4 * H_;
      float* go = gi + H_;
      float* gf = go + H_;
      float* gc = gf + H_;
      float* c = c_.data() + b * H_;
      float* h = h_.data() + b * H_;
      float* o = tmp_.data() + b * H_;
      float* hc = tmp2_.data() + b * H_;
      for (int64_t j = 0; j < H_; ++j) {
        float vi = pre(col, 0, j, b), vf = pre(col, 2, j, b);
        if (p_) vi += p_[j] * c[j], vf += p_[2 * H_ + j] * c[j];
        gi[j] = clip(vi);
        gf[j] = clip(vf);
        gc[j] = clip(pre(col, 3, j, b));
        go[j] = pre(col, 1, j, b);
      }
      activate(acts_[0], gi, H_);
      if (s_.input_forget)
        for (int64_t j = 0; j < H_; ++j) gf[j] = 1.0f - gi[j];
      else
        activate(acts_[0], gf, H_);
      activate(acts_[1], gc, H_);
      for (int64_t j = 0; j < H_; ++j) {
        c[j] = gf[j] * c[j] + gi[j] * gc[j];
        float vo = go[j];
        if (p_) vo += p_[H_ + j] * c[j];
        o[j] = clip(vo);
        hc[j] = c[j];
      }
      activate(acts_[0], o, H_);
      activate(acts_[2], hc, H_);
      for (int64_t j = 0; j < H_; ++j) h[j] = o[j] * hc[j];
      store(step, b);
    }
  }

  const RnnShape& s_;
  const RnnTensors& t_;
  const int d_;
  const RnnPacked* packed_;
  const detail::QRows* const* q_;
  ThreadPool* pool_;
  int64_t rows_ = 0;
  const int64_t G_, H_, B_;
  const float *wb_, *rb_, *p_;
  const RnnActivation* acts_;
  bool backwards_ = false;
  std::vector<float> xw_, h_, c_, hr_, hr2_, tmp_, tmp2_, gates_;
  std::vector<int8_t> codes_;   // the int8 form: a state's codes
  std::vector<int32_t> sums_;   // and its integer sums
};

}  // namespace

void recurrentFast(const RnnShape& s, const RnnTensors& t, ThreadPool* pool, const RnnPacked* packed) {
  if (t.xq != nullptr) {  // the int8 form: the integer sums vectorised where the CPU can, the gates as the float form's
    rnnCheck(s, t);
    const QConvPath path = bestQConvPath();
    const detail::QRowsMaker make = path == QConvPath::kVnni || path == QConvPath::kAmx ? detail::makeQRowsVnni
                                    : detail::activeAvx512()                              ? detail::makeQRowsAvx512
                                                                                          : detail::makeQRowsRef;
    const int64_t G = rnnGates(s.cell), H = s.hidden;
    for (int d = 0; d < s.dirs; ++d) {
      const int8_t* r = t.rq + d * G * H * H;
      const std::unique_ptr<detail::QRows> q[3] = {make(t.wq + d * G * H * s.input, G * H, s.input), make(r, G * H, H),
                                                   s.cell == RnnCell::kGru ? make(r + 2 * H * H, H, H) : nullptr};
      const detail::QRows* ptrs[3] = {q[0].get(), q[1].get(), q[2].get()};
      Direction(s, t, d, nullptr, pool, ptrs).run();
    }
    return;
  }
  rnnCheck(s, t);
  RnnPackedPtr own;
  if (!packed) own = packRecurrent(s, t.w, t.r), packed = own.get();
  for (int d = 0; d < s.dirs; ++d) Direction(s, t, d, packed, pool).run();
}

}  // namespace npuc::kernels
