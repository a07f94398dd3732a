// RNN, GRU and LSTM: the scalar reference (recurrent.hpp). One unit of work is one (direction, batch entry): its
// steps run in order, each gate's products summed in ascending index order in float32.
#include "kernels/recurrent.hpp"

#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace npuc::kernels {

int rnnGates(RnnCell c) { return c == RnnCell::kRnn ? 1 : c == RnnCell::kGru ? 3 : 4; }
int rnnActivations(RnnCell c) { return c == RnnCell::kRnn ? 1 : c == RnnCell::kGru ? 2 : 3; }

float RnnActivation::operator()(float x) const {
  switch (kind) {
    case Kind::kAffine: return alpha * x + beta;
    case Kind::kScaledTanh: return alpha * std::tanh(beta * x);
    case Kind::kUnary: break;
  }
  return unaryScalar(op, x, alpha, beta);
}

namespace {

/// Σ_k a[k]·m[k], k ascending, one fmaf per term from +0 (the GEMM's specification, gemm.hpp: the fast form's
/// gate products are GEMMs).
inline float dot(const float* a, const float* m, int64_t n) {
  float acc = 0.0f;
  for (int64_t k = 0; k < n; ++k) acc = std::fma(a[k], m[k], acc);
  return acc;
}


/// One (direction, batch entry): its steps in order. recurrentFast (x86/recurrent.cpp) computes the same
/// expressions, the products as GEMMs.
class Unit {
 public:
  /// `q`: the int8 form's row sums of this direction's W, R and R's candidate rows (GRU), or null.
  Unit(const RnnShape& s, const RnnTensors& t, int d, int64_t b, const detail::QRows* const* q = nullptr)
      : s_(s), t_(t), d_(d), b_(b), H_(s.hidden), q_(q) {
    const int64_t G = rnnGates(s.cell);
    q8_ = t.xq != nullptr;
    if (q8_) {
      ws_ = t.w_scale + d * G * H_;
      rs_ = t.r_scale + d * G * H_;
      qh_.assign(static_cast<size_t>(H_), 0);
      qt_.assign(static_cast<size_t>(H_), 0);
      xs_.assign(static_cast<size_t>(G * H_), 0);
      hs_.assign(static_cast<size_t>(G * H_), 0);
      ts_.assign(static_cast<size_t>(H_), 0);
    } else {
      w_ = t.w + d * G * H_ * s.input;
      r_ = t.r + d * G * H_ * H_;
    }
    wb_ = t.b ? t.b + d * 2 * G * H_ : nullptr;
    rb_ = wb_ ? wb_ + G * H_ : nullptr;
    p_ = t.p ? t.p + d * 3 * H_ : nullptr;
    acts_ = &s.acts[static_cast<size_t>(d * rnnActivations(s.cell))];
    h_.assign(static_cast<size_t>(H_), 0.0f);
    c_.assign(static_cast<size_t>(H_), 0.0f);
    if (t.h0) std::copy_n(t.h0 + stateOffset(), H_, h_.begin());
    if (t.c0) std::copy_n(t.c0 + stateOffset(), H_, c_.begin());
    gates_.assign(static_cast<size_t>(G * H_), 0.0f);
    tmp_.assign(static_cast<size_t>(H_), 0.0f);
  }

  void run() {
    const int64_t len = t_.seq_lens ? t_.seq_lens[b_] : s_.seq;
    const bool backwards = s_.dirs == 2 ? d_ == 1 : s_.reverse;
    if (t_.y)
      for (int64_t step = len; step < s_.seq; ++step) std::fill_n(yAt(step), H_, 0.0f);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t step = backwards ? len - 1 - i : i;
      const int64_t at = (s_.batch_major ? (b_ * s_.seq + step) : (step * s_.batch + b_)) * s_.input;
      const void* x = q8_ ? static_cast<const void*>(t_.xq + at) : static_cast<const void*>(t_.x + at);
      if (q8_) {  // the step's integer sums, every row at once: x's, then the state's
        quantize(h_.data(), qh_.data());
        const int64_t G = rnnGates(s_.cell);
        (void)G;
        q_[0]->sums(static_cast<const int8_t*>(x), t_.zx, xs_.data());
        q_[1]->sums(qh_.data(), 0, hs_.data());
      }
      switch (s_.cell) {
        case RnnCell::kRnn: rnnStep(x); break;
        case RnnCell::kGru: gruStep(x); break;
        case RnnCell::kLstm: lstmStep(x); break;
      }
      if (t_.y) std::copy(h_.begin(), h_.end(), yAt(step));
    }
    if (t_.y_h) std::copy(h_.begin(), h_.end(), t_.y_h + stateOffset());
    if (t_.y_c) std::copy(c_.begin(), c_.end(), t_.y_c + stateOffset());
  }

 private:
  int64_t stateOffset() const { return (s_.batch_major ? b_ * s_.dirs + d_ : d_ * s_.batch + b_) * H_; }
  float* yAt(int64_t step) const {
    return t_.y + (s_.batch_major ? ((b_ * s_.seq + step) * s_.dirs + d_) : ((step * s_.dirs + d_) * s_.batch + b_)) * H_;
  }
  float clip(float v) const { return s_.clip > 0.0f ? std::clamp(v, -s_.clip, s_.clip) : v; }
  void quantize(const float* h, int8_t* q) const {
    for (int64_t j = 0; j < H_; ++j) q[j] = rnnStateCode(h[j]);
  }
  /// x·W_rowᵀ (the int8 form: the step's integer sum, scaled once).
  float xProduct(int64_t row, const void* x) const {
    if (!q8_) return dot(static_cast<const float*>(x), w_ + row * s_.input, s_.input);
    return static_cast<float>(xs_[static_cast<size_t>(row)]) * (t_.sx * ws_[row]);
  }
  /// h·R_rowᵀ (the int8 form: q, h's codes; the state's sum of the step, or GRU's reset-gated state's).
  float hProduct(int64_t row, const float* h, const int8_t* q) const {
    if (!q8_) return dot(h, r_ + row * H_, H_);
    const int32_t acc = q == qh_.data() ? hs_[static_cast<size_t>(row)] : ts_[static_cast<size_t>(row - 2 * H_)];
    return static_cast<float>(acc) * (kRnnStateScale * rs_[row]);
  }
  /// Gate g's input of unit j: (x·W_gjᵀ + h·R_gjᵀ) + Wb + Rb (h: the previous state, or `hr` given; q: its codes).
  float pre(int64_t g, int64_t j, const void* x, const float* h, const int8_t* q) const {
    const int64_t row = g * H_ + j;
    float v = xProduct(row, x) + hProduct(row, h, q);
    if (wb_) v = (v + wb_[row]) + rb_[row];
    return v;
  }

  void rnnStep(const void* x) {
    for (int64_t j = 0; j < H_; ++j) gates_[static_cast<size_t>(j)] = acts_[0](clip(pre(0, j, x, h_.data(), qh_.data())));
    std::copy_n(gates_.begin(), H_, h_.begin());
  }

  // z, r, h: z = f(x·Wzᵀ + h·Rzᵀ + Wbz + Rbz), r likewise; h̃ = g(x·Whᵀ + (r ⊙ h)·Rhᵀ + Wbh + Rbh), or with
  // linear_before_reset g(x·Whᵀ + Wbh + r ⊙ (h·Rhᵀ + Rbh)); H = (1 − z) ⊙ h̃ + z ⊙ h.
  void gruStep(const void* x) {
    float* z = gates_.data();
    float* r = z + H_;
    float* hh = r + H_;
    for (int64_t j = 0; j < H_; ++j) {
      z[j] = acts_[0](clip(pre(0, j, x, h_.data(), qh_.data())));
      r[j] = acts_[0](clip(pre(1, j, x, h_.data(), qh_.data())));
    }
    const int64_t row0 = 2 * H_;
    if (s_.linear_before_reset) {
      for (int64_t j = 0; j < H_; ++j) {
        const int64_t row = row0 + j;
        float xw = xProduct(row, x), hr = hProduct(row, h_.data(), qh_.data());
        if (wb_) xw = xw + wb_[row], hr = hr + rb_[row];
        hh[j] = acts_[1](clip(xw + r[j] * hr));
      }
    } else {
      for (int64_t j = 0; j < H_; ++j) tmp_[static_cast<size_t>(j)] = r[j] * h_[static_cast<size_t>(j)];
      if (q8_) {  // the reset-gated state's codes, and their sums with the candidate's rows
        quantize(tmp_.data(), qt_.data());
        q_[2]->sums(qt_.data(), 0, ts_.data());
      }
      for (int64_t j = 0; j < H_; ++j) hh[j] = acts_[1](clip(pre(2, j, x, tmp_.data(), qt_.data())));
    }
    for (int64_t j = 0; j < H_; ++j) {
      const float hp = h_[static_cast<size_t>(j)];
      h_[static_cast<size_t>(j)] = (1.0f - z[j]) * hh[j] + z[j] * hp;
    }
  }

  // i, o, f, c (ONNX's order in W, R, B); peepholes i, o, f. i = f(… + Pi ⊙ C), f = f(… + Pf ⊙ C) (or 1 − i with
  // input_forget), c̃ = g(…), C' = f ⊙ C + i ⊙ c̃, o = f(… + Po ⊙ C'), H = o ⊙ h(C').
  void lstmStep(const void* x) {
    float* gi = gates_.data();
    float* go = gi + H_;
    float* gf = go + H_;
    float* gc = gf + H_;
    for (int64_t j = 0; j < H_; ++j) {
      const float c = c_[static_cast<size_t>(j)];
      float vi = pre(0, j, x, h_.data(), qh_.data()), vf = pre(2, j, x, h_.data(), qh_.data());
      if (p_) vi += p_[j] * c, vf += p_[2 * H_ + j] * c;
      gi[j] = acts_[0](clip(vi));
      gf[j] = s_.input_forget ? 1.0f - gi[j] : acts_[0](clip(vf));
      gc[j] = acts_[1](clip(pre(3, j, x, h_.data(), qh_.data())));
      go[j] = pre(1, j, x, h_.data(), qh_.data());
    }
    for (int64_t j = 0; j < H_; ++j) {
      const size_t u = static_cast<size_t>(j);
      c_[u] = gf[j] * c_[u] + gi[j] * gc[j];
      float vo = go[j];
      if (p_) vo += p_[H_ + j] * c_[u];
      h_[u] = acts_[0](clip(vo)) * acts_[2](c_[u]);
    }
  }

  const RnnShape& s_;
  const RnnTensors& t_;
  const int d_;
  const int64_t b_, H_;
  const float *w_ = nullptr, *r_ = nullptr, *wb_, *rb_, *p_;
  bool q8_ = false;
  const float *ws_ = nullptr, *rs_ = nullptr;
  const RnnActivation* acts_;
  std::vector<float> h_, c_, gates_, tmp_;
  std::vector<int8_t> qh_, qt_;  // the int8 form: the state's codes, and GRU's reset-gated state's
  std::vector<int32_t> xs_, hs_, ts_;  // the int8 form: the step's integer sums of x, of the state, of GRU's r ⊙ h
  const detail::QRows* const* q_;
};

}  // namespace

namespace {
class QRowsRef : public detail::QRows {
 public:
  QRowsRef(const int8_t* m, int64_t rows, int64_t k) : m_(m), rows_(rows), k_(k) {}
  void sums(const int8_t* v, int32_t z, int32_t* out) const override {
    for (int64_t r = 0; r < rows_; ++r) {
      int32_t acc = 0;
      for (int64_t k = 0; k < k_; ++k) acc += (static_cast<int32_t>(v[k]) - z) * static_cast<int32_t>(m_[r * k_ + k]);
      out[r] = acc;
    }
  }

 private:
  const int8_t* m_;
  int64_t rows_, k_;
};
}  // namespace

std::unique_ptr<detail::QRows> detail::makeQRowsRef(const int8_t* m, int64_t rows, int64_t k) {
  return std::make_unique<QRowsRef>(m, rows, k);
}

void detail::recurrentQ8(const RnnShape& s, const RnnTensors& t, ThreadPool* pool, QRowsMaker make) {
  rnnCheck(s, t);
  const int64_t G = rnnGates(s.cell), H = s.hidden;
  // Per direction: W's rows, R's rows, R's candidate rows (GRU's reset-gated product), made once for every batch entry.
  std::vector<std::unique_ptr<detail::QRows>> q;
  std::vector<const detail::QRows*> ptrs;
  for (int d = 0; d < s.dirs; ++d) {
    const int8_t* w = t.wq + d * G * H * s.input;
    const int8_t* r = t.rq + d * G * H * H;
    q.push_back(make(w, G * H, s.input));
    q.push_back(make(r, G * H, H));
    q.push_back(s.cell == RnnCell::kGru ? make(r + 2 * H * H, H, H) : nullptr);
    for (size_t k = q.size() - 3; k < q.size(); ++k) ptrs.push_back(q[k].get());
  }
  const int64_t units = s.dirs * s.batch;
  auto work = [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; ++u) {
      const int d = static_cast<int>(u / s.batch);
      Unit(s, t, d, u % s.batch, ptrs.data() + 3 * d).run();
    }
  };
  if (pool && units > 1) pool->parallelFor(units, work, 1);
  else work(0, units);
}

int8_t rnnStateCode(float v) {
  if (std::isnan(v)) return 0;
  return static_cast<int8_t>(std::clamp(std::nearbyint(v * 127.0f), -127.0f, 127.0f));
}

void rnnCheck(const RnnShape& s, const RnnTensors& t) {
  if (s.dirs != 1 && s.dirs != 2) fail(ErrorCode::kInvalidArgument, "recurrent: {} directions", s.dirs);
  if (s.acts.size() != static_cast<size_t>(s.dirs * rnnActivations(s.cell)))
    fail(ErrorCode::kInvalidArgument, "recurrent: {} activations for {} direction(s)", s.acts.size(), s.dirs);
  if (t.seq_lens)
    for (int64_t b = 0; b < s.batch; ++b)
      if (t.seq_lens[b] < 0 || t.seq_lens[b] > s.seq)
        fail(ErrorCode::kInvalidInput, "sequence_lens[{}] = {} is outside [0, {}] (the sequence's length)", b,
             t.seq_lens[b], s.seq);
}

void recurrent(const RnnShape& s, const RnnTensors& t, ThreadPool* pool) {
  if (t.xq != nullptr) return detail::recurrentQ8(s, t, pool, detail::makeQRowsRef);
  rnnCheck(s, t);
  const int64_t units = s.dirs * s.batch;
  auto work = [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; ++u) Unit(s, t, static_cast<int>(u / s.batch), u % s.batch).run();
  };
  if (pool && units > 1)
    pool->parallelFor(units, work, 1);
  else
    work(0, units);
}

}  // namespace npuc::kernels
