// recurrentFast (the gate products as GEMMs) gives the reference's bits: every cell, direction, layout, sequence
// length, initial state, peephole, clip and GRU's both reset forms, for each instruction set the CPU has and 1 to 3
// threads. And the reference itself against hand-computed one-step values.
#include "kernels/gemm.hpp"
#include "kernels/recurrent.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace npuc;
using namespace npuc::kernels;

namespace {

struct Case {
  RnnCell cell;
  int dirs;
  bool reverse, batch_major, lens, states, peep, bias;
  float clip;
  bool lbr, input_forget;
};

struct Buffers {
  std::vector<float> x, w, r, b, h0, c0, p, y, yh, yc;
  std::vector<int32_t> lens;
};

RnnShape shapeOf(const Case& c, int64_t seq, int64_t batch, int64_t input, int64_t hidden) {
  RnnShape s;
  s.cell = c.cell, s.dirs = c.dirs, s.reverse = c.reverse, s.batch_major = c.batch_major;
  s.seq = seq, s.batch = batch, s.input = input, s.hidden = hidden;
  s.clip = c.clip, s.linear_before_reset = c.lbr, s.input_forget = c.input_forget;
  for (int d = 0; d < c.dirs; ++d)
    for (int a = 0; a < rnnActivations(c.cell); ++a) {
      RnnActivation act;
      act.op = a == 0 && c.cell != RnnCell::kRnn ? UnaryOp::kSigmoid : UnaryOp::kTanh;
      if (d == 1 && a == 0 && c.cell == RnnCell::kRnn) act.kind = RnnActivation::Kind::kScaledTanh, act.alpha = 0.9f, act.beta = 1.1f;
      s.acts.push_back(act);
    }
  return s;
}

RnnTensors tensorsOf(const Case& c, const RnnShape& s, Buffers& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  auto fill = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    for (float& f : v) f = u(rng);
  };
  const int64_t G = rnnGates(s.cell), H = s.hidden;
  fill(m.x, static_cast<size_t>(s.seq * s.batch * s.input));
  fill(m.w, static_cast<size_t>(s.dirs * G * H * s.input));
  fill(m.r, static_cast<size_t>(s.dirs * G * H * H));
  fill(m.b, static_cast<size_t>(s.dirs * 2 * G * H));
  fill(m.h0, static_cast<size_t>(s.dirs * s.batch * H));
  fill(m.c0, m.h0.size());
  fill(m.p, static_cast<size_t>(s.dirs * 3 * H));
  m.y.assign(static_cast<size_t>(s.seq * s.dirs * s.batch * H), -7.0f);
  m.yh.assign(m.h0.size(), -7.0f);
  m.yc.assign(m.h0.size(), -7.0f);
  m.lens.resize(static_cast<size_t>(s.batch));
  for (int64_t b = 0; b < s.batch; ++b) m.lens[static_cast<size_t>(b)] = static_cast<int32_t>((b * 3 + 1) % (s.seq + 1));
  RnnTensors t;
  t.x = m.x.data(), t.w = m.w.data(), t.r = m.r.data();
  if (c.bias) t.b = m.b.data();
  if (c.lens) t.seq_lens = m.lens.data();
  if (c.states) t.h0 = m.h0.data(), t.c0 = s.cell == RnnCell::kLstm ? m.c0.data() : nullptr;
  if (c.peep && s.cell == RnnCell::kLstm) t.p = m.p.data();
  t.y = m.y.data(), t.y_h = m.yh.data();
  if (s.cell == RnnCell::kLstm) t.y_c = m.yc.data();
  return t;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(Recurrent, FastIsTheReferenceBitForBit) {
  const Case cases[] = {
      {RnnCell::kLstm, 1, false, false, false, false, false, false, 0, false, false},
      {RnnCell::kLstm, 2, false, true, true, true, true, true, 0, false, false},
      {RnnCell::kLstm, 1, true, false, true, true, true, true, 0.5f, false, true},
      {RnnCell::kGru, 2, false, false, true, true, false, true, 0, false, false},
      {RnnCell::kGru, 1, true, true, false, true, false, true, 0, true, false},
      {RnnCell::kGru, 2, false, false, true, false, false, false, 0.3f, true, false},
      {RnnCell::kRnn, 2, false, true, true, true, false, true, 0, false, false},
      {RnnCell::kRnn, 1, true, false, false, false, false, true, 0.4f, false, false},
  };
  // seq, batch, input, hidden; batch 1 with 4 · 37 = 148 gate rows: an LSTM's products from R's 128-row panels, the
  // last one partial.
  const int64_t dims[][4] = {{5, 3, 4, 6}, {1, 1, 3, 17}, {7, 2, 33, 40}, {6, 1, 5, 37}};
  const char* isas[] = {"portable", "avx2", "avx512"};
  int n = 0;
  for (const Case& c : cases)
    for (const auto& d : dims) {
      RnnShape s = shapeOf(c, d[0], d[1], d[2], d[3]);
      Buffers ref, fast;
      recurrent(s, tensorsOf(c, s, ref, 11), nullptr);
      for (const char* isa : isas)
        for (int threads : {1, 2, 3}) {
          const char* prev = forceKernelIsa(isa);
          recurrentFast(s, tensorsOf(c, s, fast, 11), &ThreadPool::shared(threads));
          forceKernelIsa(prev);
          SCOPED_TRACE(testing::Message() << "case " << (&c - cases) << " dims " << d[0] << "x" << d[1] << "x" << d[2]
                                          << "x" << d[3] << " " << isa << " threads " << threads);
          EXPECT_TRUE(sameBits(ref.y, fast.y));
          EXPECT_TRUE(sameBits(ref.yh, fast.yh));
          EXPECT_TRUE(sameBits(ref.yc, fast.yc));
          ++n;
        }
    }
  EXPECT_EQ(n, 8 * 4 * 3 * 3);
}

// One LSTM step from zero states, by hand: i = σ(x·wi), o = σ(x·wo), f unused (C = 0), c̃ = tanh(x·wc), C = i·c̃,
// H = o·tanh(C).
TEST(Recurrent, OneLstmStepByHand) {
  RnnShape s = shapeOf({RnnCell::kLstm, 1, false, false, false, false, false, false, 0, false, false}, 1, 1, 2, 1);
  const float x[2] = {0.5f, -1.0f}, w[8] = {1, 2, 0.5f, 0.5f, -1, 1, 2, -2}, r[4] = {0, 0, 0, 0};
  float y = 0, yh = 0, yc = 0;
  RnnTensors t;
  t.x = x, t.w = w, t.r = r, t.y = &y, t.y_h = &yh, t.y_c = &yc;
  recurrent(s, t, nullptr);
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const double i = sig(0.5 - 2.0), o = sig(0.25 - 0.5), c = i * std::tanh(1.0 + 2.0);
  EXPECT_NEAR(yc, c, 1e-6);
  EXPECT_NEAR(y, o * std::tanh(c), 1e-6);
  EXPECT_EQ(y, yh);
}
