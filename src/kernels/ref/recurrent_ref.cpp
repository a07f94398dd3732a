// RNN, GRU and LSTM: the scalar reference (recurrent.hpp). One unit of work is one (direction, batch entry): its
// steps run in order, each gate's products summed in ascending index order in float32.
#include "kernels/recurrent.hpp"

#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

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
  Unit(const RnnShape& s, const RnnTensors& t, int d, int64_t b) : s_(s), t_(t), d_(d), b_(b), H_(s.hidden) {
    const int64_t G = rnnGates(s.cell);
    w_ = t.w + d * G * H_ * s.input;
    r_ = t.r + d * G * H_ * H_;
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
      const float* x = t_.x + (s_.batch_major ? (b_ * s_.seq + step) : (step * s_.batch + b_)) * s_.input;
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
  /// Gate g's input of unit j: (x·W_gjᵀ + h·R_gjᵀ) + Wb + Rb (h: the previous state, or `hr` given).
  float pre(int64_t g, int64_t j, const float* x, const float* h) const {
    const int64_t row = g * H_ + j;
    float v = dot(x, w_ + row * s_.input, s_.input) + dot(h, r_ + row * H_, H_);
    if (wb_) v = (v + wb_[row]) + rb_[row];
    return v;
  }

  void rnnStep(const float* x) {
    for (int64_t j = 0; j < H_; ++j) gates_[static_cast<size_t>(j)] = acts_[0](clip(pre(0, j, x, h_.data())));
    std::copy_n(gates_.begin(), H_, h_.begin());
  }

  // z, r, h: z = f(x·Wzᵀ + h·Rzᵀ + Wbz + Rbz), r likewise; h̃ = g(x·Whᵀ + (r ⊙ h)·Rhᵀ + Wbh + Rbh), or with
  // linear_before_reset g(x·Whᵀ + Wbh + r ⊙ (h·Rhᵀ + Rbh)); H = (1 − z) ⊙ h̃ + z ⊙ h.
  void gruStep(const float* x) {
    float* z = gates_.data();
    float* r = z + H_;
    float* hh = r + H_;
    for (int64_t j = 0; j < H_; ++j) {
      z[j] = acts_[0](clip(pre(0, j, x, h_.data())));
      r[j] = acts_[0](clip(pre(1, j, x, h_.data())));
    }
    const int64_t row0 = 2 * H_;
    if (s_.linear_before_reset) {
      for (int64_t j = 0; j < H_; ++j) {
        const int64_t row = row0 + j;
        float xw = dot(x, w_ + row * s_.input, s_.input), hr = dot(h_.data(), r_ + row * H_, H_);
        if (wb_) xw = xw + wb_[row], hr = hr + rb_[row];
        hh[j] = acts_[1](clip(xw + r[j] * hr));
      }
    } else {
      for (int64_t j = 0; j < H_; ++j) tmp_[static_cast<size_t>(j)] = r[j] * h_[static_cast<size_t>(j)];
      for (int64_t j = 0; j < H_; ++j) hh[j] = acts_[1](clip(pre(2, j, x, tmp_.data())));
    }
    for (int64_t j = 0; j < H_; ++j) {
      const float hp = h_[static_cast<size_t>(j)];
      h_[static_cast<size_t>(j)] = (1.0f - z[j]) * hh[j] + z[j] * hp;
    }
  }

  // i, o, f, c (ONNX's order in W, R, B); peepholes i, o, f. i = f(… + Pi ⊙ C), f = f(… + Pf ⊙ C) (or 1 − i with
  // input_forget), c̃ = g(…), C' = f ⊙ C + i ⊙ c̃, o = f(… + Po ⊙ C'), H = o ⊙ h(C').
  void lstmStep(const float* x) {
    float* gi = gates_.data();
    float* go = gi + H_;
    float* gf = go + H_;
    float* gc = gf + H_;
    for (int64_t j = 0; j < H_; ++j) {
      const float c = c_[static_cast<size_t>(j)];
      float vi = pre(0, j, x, h_.data()), vf = pre(2, j, x, h_.data());
      if (p_) vi += p_[j] * c, vf += p_[2 * H_ + j] * c;
      gi[j] = acts_[0](clip(vi));
      gf[j] = s_.input_forget ? 1.0f - gi[j] : acts_[0](clip(vf));
      gc[j] = acts_[1](clip(pre(3, j, x, h_.data())));
      go[j] = pre(1, j, x, h_.data());
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
  const float *w_, *r_, *wb_, *rb_, *p_;
  const RnnActivation* acts_;
  std::vector<float> h_, c_, gates_, tmp_;
};

}  // namespace

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
