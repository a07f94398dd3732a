// The int8-pow2 reference (kernels/pow2.hpp): the specification of TIDL-style fixed point in npuc.
#include "kernels/pow2.hpp"

#include "kernels/ref/parallel_units.hpp"

#include <algorithm>
#include <cmath>
#include <bit>
#include <limits>

namespace npuc::kernels::pow2 {

namespace {
using i128 = __int128;

int32_t floatWord(float f) { return std::bit_cast<int32_t>(f); }
float wordFloat(int32_t w) { return std::bit_cast<float>(w); }
/// floor(num / den), den > 0.
i128 floorDiv(i128 num, i128 den) {
  i128 q = num / den;
  if ((num % den) != 0 && num < 0) --q;
  return q;
}
int32_t saturate(i128 v, bool is_signed) {
  return static_cast<int32_t>(std::clamp<i128>(v, codeMin(is_signed), codeMax(is_signed)));
}
constexpr size_t kOutWords = 8;
}  // namespace

std::string checkOptions(const Options& o) {
  if (o.round_add < 0 || o.round_add > 100) return "quantRoundAdd " + std::to_string(o.round_add) + " is outside 0..100";
  if (o.history1 < 0 || o.history1 > 100) return "quantHistoryParam1 " + std::to_string(o.history1) + " is outside 0..100";
  if (o.history2 < 0 || o.history2 > 100) return "quantHistoryParam2 " + std::to_string(o.history2) + " is outside 0..100";
  if (o.margin < 0 || o.margin > 1000) return "quantMargin " + std::to_string(o.margin) + " is outside 0..1000";
  if (o.boot_frames < 0 || o.boot_frames > 1000000) return "boot frames " + std::to_string(o.boot_frames) + " is outside 0..1000000";
  return "";
}

std::vector<int32_t> encodeTable(const Table& t) {
  std::vector<int32_t> w;
  w.push_back(static_cast<int32_t>(t.in_slots.size()));
  w.insert(w.end(), t.in_slots.begin(), t.in_slots.end());
  const OutSpec& o = t.out;
  w.insert(w.end(), {o.slot, o.is_signed ? 1 : 0, static_cast<int32_t>(o.act), floatWord(o.clip_lo), floatWord(o.clip_hi),
                     floatWord(o.init_lo), floatWord(o.init_hi), o.fixed_q});
  w.push_back(t.qw);
  w.push_back(t.qb);
  return w;
}

std::string decodeTable(const int32_t* w, size_t n, Table* t) {
  if (n < 1 || w[0] < 0 || w[0] > 8) return "the table's input count must be in 0..8";
  const size_t k = static_cast<size_t>(w[0]);
  if (n != 1 + k + kOutWords + 2) return "the table has " + std::to_string(n) + " words, expected " + std::to_string(1 + k + kOutWords + 2);
  t->in_slots.assign(w + 1, w + 1 + k);
  const int32_t* o = w + 1 + k;
  t->out.slot = o[0];
  if (o[1] != 0 && o[1] != 1) return "the signed flag must be 0 or 1";
  t->out.is_signed = o[1] == 1;
  if (o[2] < 0 || o[2] > 2) return "unknown activation code " + std::to_string(o[2]);
  t->out.act = static_cast<Act>(o[2]);
  t->out.clip_lo = wordFloat(o[3]);
  t->out.clip_hi = wordFloat(o[4]);
  t->out.init_lo = wordFloat(o[5]);
  t->out.init_hi = wordFloat(o[6]);
  t->out.fixed_q = o[7];
  t->qw = o[8];
  t->qb = o[9];
  for (float f : {t->out.clip_lo, t->out.clip_hi, t->out.init_lo, t->out.init_hi})
    if (!std::isfinite(f)) return "a clip bound or calibrated range is not finite";
  if (t->out.act == Act::kClip && !(t->out.clip_lo <= t->out.clip_hi)) return "the clip's low bound is above its high bound";
  if (!(t->out.init_lo <= t->out.init_hi)) return "the calibrated range's low end is above its high end";
  if (t->out.fixed_q != kNoFixedQ && (t->out.fixed_q < kMinQ || t->out.fixed_q > kMaxQ))
    return "fixed q " + std::to_string(t->out.fixed_q) + " is outside [" + std::to_string(kMinQ) + ", " + std::to_string(kMaxQ) + "]";
  for (int32_t q : {t->qw, t->qb})
    if (q < kMinQ || q > kMaxQ) return "weight / bias q " + std::to_string(q) + " is outside [" + std::to_string(kMinQ) + ", " + std::to_string(kMaxQ) + "]";
  for (int32_t s : t->in_slots)
    if (s < 0) return "an input slot is negative";
  if (t->out.slot < -1) return "the output slot is below -1";
  return "";
}

int qForMagnitude(double m, double limit) {
  if (!(m > 0)) return kMaxQ;
  int q = kMaxQ;
  while (q > kMinQ && std::ldexp(m, q) > limit) --q;  // ldexp is exact: the comparison is too
  return q;
}

int qForRange(double lo, double hi, bool is_signed, int margin) {
  const double m = is_signed ? std::max(std::fabs(lo), std::fabs(hi)) : std::max(hi, 0.0);
  return qForMagnitude(m * (1.0 + margin / 100.0), is_signed ? 127.0 : 255.0);
}

Slot makeSlot(const OutSpec& o, const Options& opt) {
  Slot s;
  s.is_signed = o.is_signed;
  s.fixed_q = o.fixed_q;
  s.init_lo = s.lo = o.init_lo;
  s.init_hi = s.hi = o.init_hi;
  s.q = o.fixed_q != kNoFixedQ ? o.fixed_q : qForRange(s.lo, s.hi, s.is_signed, opt.margin);
  return s;
}

int updateSlot(Slot& s, double lo, double hi, const Options& opt) {
  if (s.fixed_q != kNoFixedQ || !opt.dynamic) return s.q;
  const double w = s.frames < opt.boot_frames ? opt.history1 : opt.history2;
  s.lo = (w * s.lo + (100.0 - w) * lo) / 100.0;
  s.hi = (w * s.hi + (100.0 - w) * hi) / 100.0;
  ++s.frames;
  s.q = qForRange(s.lo, s.hi, s.is_signed, opt.margin);
  return s.q;
}

int32_t requant(int64_t acc, int a, int64_t S, int round_add, bool is_signed) {
  a = std::clamp(a, -100, 40);  // above 40 every non-zero acc saturates, as it would at any larger a
  const i128 up = a > 0 ? (i128{1} << a) : 1, down = a < 0 ? (i128{1} << -a) : 1;
  const i128 num = i128{acc} * up * 100 + i128{round_add} * S * down;
  return saturate(floorDiv(num, i128{100} * S * down), is_signed);
}

int64_t biasAt(int32_t bias, int qb, int qacc, int round_add) {
  const int a = qacc - qb;
  const i128 lim = i128{1} << 47;
  if (a >= 0) return static_cast<int64_t>(std::clamp<i128>(i128{bias} << std::min(a, 60), -lim, lim));
  const int r = std::min(-a, 100);
  const i128 down = i128{1} << r;
  return static_cast<int64_t>(floorDiv(i128{bias} * 100 + i128{round_add} * down, 100 * down));
}

void convAcc(const ConvShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb, int round_add,
             int64_t* acc, ThreadPool* pool) {
  const int64_t N = s.batch, C = s.in_channels, M = s.out_channels, G = s.groups;
  const int64_t Cg = C / G, Mg = M / G;
  const size_t rank = s.in_spatial.size();
  int64_t in_sz = 1, out_sz = 1, k_sz = 1;
  for (size_t d = 0; d < rank; ++d) {
    in_sz *= s.in_spatial[d];
    out_sz *= s.out_spatial[d];
    k_sz *= s.kernel[d];
  }
  const int qacc = x.q + qw;
  detail::parallelUnits(pool, N * M, out_sz * Cg * k_sz, [&](int64_t u0, int64_t u1) {
    std::vector<int64_t> o(rank), t(rank);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / M, m = u % M, g = m / Mg;
      const int64_t b0 = bias ? biasAt(bias[m], qb, qacc, round_add) : 0;
      const int16_t* wm = w + m * Cg * k_sz;
      int64_t* am = acc + u * out_sz;
      for (int64_t op = 0; op < out_sz; ++op) {
        for (int64_t r = op, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
          o[static_cast<size_t>(d)] = r % s.out_spatial[static_cast<size_t>(d)];
          r /= s.out_spatial[static_cast<size_t>(d)];
        }
        int64_t sum = b0;
        for (int64_t c = 0; c < Cg; ++c) {
          const uint8_t* xc = x.p + ((n * C) + g * Cg + c) * in_sz;
          const int16_t* wc = wm + c * k_sz;
          for (int64_t kt = 0; kt < k_sz; ++kt) {
            int64_t off = 0;
            bool inside = true;
            for (int64_t r = kt, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
              const size_t du = static_cast<size_t>(d);
              const int64_t tap = r % s.kernel[du];
              r /= s.kernel[du];
              const int64_t i = o[du] * s.stride[du] - s.pad_begin[du] + tap * s.dilation[du];
              if (i < 0 || i >= s.in_spatial[du]) inside = false;
              t[du] = i;
            }
            if (!inside) continue;
            for (size_t d = 0; d < rank; ++d) off = off * s.in_spatial[d] + t[d];
            sum += static_cast<int64_t>(codeAt(xc, off, x.is_signed)) * wc[kt];
          }
        }
        am[op] = sum;
      }
    }
  });
}

FinishPlan planFinish(int64_t mn, int64_t mx, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt) {
  FinishPlan p;
  // The activation's bounds in accumulator units (S * 2^qacc per real unit).
  p.lo = std::numeric_limits<int64_t>::min(), p.hi = std::numeric_limits<int64_t>::max();
  if (o.act == Act::kRelu) p.lo = 0;
  if (o.act == Act::kClip) {
    auto bound = [&](float f, bool up) {
      const double v = std::ldexp(static_cast<double>(f), std::clamp(qacc, -200, 200)) * static_cast<double>(S);
      const double r = up ? std::ceil(v) : std::floor(v);
      return static_cast<int64_t>(std::clamp(r, -0x1p62, 0x1p62));
    };
    p.lo = bound(o.clip_lo, true);
    p.hi = bound(o.clip_hi, false);
    if (p.hi < p.lo) p.hi = p.lo;  // no accumulator value lies in [clip_lo, clip_hi]: every output is ceil(clip_lo · 2^qacc · S)
  }
  // The range after the activation: the clamp is monotonic, so it is the clamped range of the accumulators.
  mn = n == 0 ? 0 : std::clamp(mn, p.lo, p.hi);
  mx = n == 0 ? 0 : std::clamp(mx, p.lo, p.hi);
  auto real = [&](int64_t a) { return std::ldexp(static_cast<double>(a), -qacc) / static_cast<double>(S); };
  p.qy = updateSlot(slot, real(mn), real(mx), opt);
  p.a = p.qy - qacc;
  p.S = S;
  p.round_add = opt.round_add;
  p.is_signed = o.is_signed;
  p.cmin = codeMin(o.is_signed), p.cmax = codeMax(o.is_signed);
  p.hoisted = S == 1 && p.a >= -62;
  if (p.hoisted && p.a <= 0) {
    // requant's right shift, hoisted out of the loop: floor(acc / 2^s + R/100) = (acc + floor(R 2^s / 100)) >> s,
    // as acc is an integer (flooring the added fraction first changes nothing), clamped: requant's numbers.
    p.sh = -p.a;
    p.add = static_cast<int64_t>((static_cast<i128>(opt.round_add) << p.sh) / 100);
    p.alo = std::max(p.lo, std::numeric_limits<int64_t>::min() / 2);
    p.ahi = std::min(p.hi, std::numeric_limits<int64_t>::max() / 2);
  } else if (p.hoisted) {
    // A left shift (the output finer than the accumulators): floor(acc 2^a + R/100) = (acc << a) + floor(R/100),
    // exact; an |acc| of 512 or more saturates for any a >= 1, so the clamp to [-512, 512] (after the activation's:
    // clamps onto nested intervals compose) keeps the shift in range without changing a code; requant takes a above
    // 40 as 40.
    p.lsh = std::min(p.a, 40);
    p.add = opt.round_add / 100;
    p.alo = std::clamp<int64_t>(p.lo, -512, 512);
    p.ahi = std::clamp<int64_t>(p.hi, -512, 512);
  }
  return p;
}

namespace {
/// FinishPlan::code, inlined into the loops of this file.
inline uint8_t codeOf(const FinishPlan& p, int64_t acc) {
  if (p.hoisted) return static_cast<uint8_t>(std::clamp(((std::clamp(acc, p.alo, p.ahi) << p.lsh) + p.add) >> p.sh, p.cmin, p.cmax));
  return static_cast<uint8_t>(requant(std::clamp(acc, p.lo, p.hi), p.a, p.S, p.round_add, p.is_signed));
}
}  // namespace

uint8_t FinishPlan::code(int64_t acc) const { return codeOf(*this, acc); }

namespace {
/// finish for either accumulator type (the same numbers for the same values).
template <class T>
int finishT(const T* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y) {
  int64_t mn = std::numeric_limits<int64_t>::max(), mx = std::numeric_limits<int64_t>::min();
  for (int64_t i = 0; i < n; ++i) {
    mn = std::min<int64_t>(mn, acc[i]);
    mx = std::max<int64_t>(mx, acc[i]);
  }
  const FinishPlan p = planFinish(mn, mx, n, qacc, S, o, slot, opt);
  for (int64_t i = 0; i < n; ++i) y[i] = codeOf(p, acc[i]);
  return p.qy;
}
}  // namespace

int finish(const int64_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
           uint8_t* y) {
  return finishT(acc, n, qacc, S, o, slot, opt, y);
}

int finish(const int32_t* acc, int64_t n, int qacc, int64_t S, const OutSpec& o, Slot& slot, const Options& opt,
           uint8_t* y) {
  return finishT(acc, n, qacc, S, o, slot, opt, y);
}

int add(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y, std::vector<int64_t>& scratch) {
  const int Q = std::max(a.q, b.q);
  if (scratch.size() < static_cast<size_t>(n)) scratch.resize(static_cast<size_t>(n));  // (grows only)
  for (int64_t i = 0; i < n; ++i)
    scratch[static_cast<size_t>(i)] = (static_cast<int64_t>(codeAt(a.p, i, a.is_signed)) << (Q - a.q)) +
                                      (static_cast<int64_t>(codeAt(b.p, i, b.is_signed)) << (Q - b.q));
  return finish(scratch.data(), n, Q, 1, o, slot, opt, y);
}

int maximum(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
            std::vector<int64_t>& scratch) {
  const int Q = std::max(a.q, b.q);
  if (scratch.size() < static_cast<size_t>(n)) scratch.resize(static_cast<size_t>(n));  // (grows only)
  for (int64_t i = 0; i < n; ++i)
    scratch[static_cast<size_t>(i)] = std::max(static_cast<int64_t>(codeAt(a.p, i, a.is_signed)) << (Q - a.q),
                                               static_cast<int64_t>(codeAt(b.p, i, b.is_signed)) << (Q - b.q));
  return finish(scratch.data(), n, Q, 1, o, slot, opt, y);
}

int multiply(Codes a, Codes b, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
             std::vector<int64_t>& scratch) {
  if (scratch.size() < static_cast<size_t>(n)) scratch.resize(static_cast<size_t>(n));  // (grows only)
  for (int64_t i = 0; i < n; ++i)
    scratch[static_cast<size_t>(i)] = static_cast<int64_t>(codeAt(a.p, i, a.is_signed)) * codeAt(b.p, i, b.is_signed);
  return finish(scratch.data(), n, a.q + b.q, 1, o, slot, opt, y);
}

int prelu(Codes x, const int16_t* slope, int64_t outer, int64_t channels, int64_t inner, int qs, const OutSpec& o, Slot& slot,
          const Options& opt, uint8_t* y, std::vector<int64_t>& scratch) {
  const int64_t n = outer * channels * inner;
  if (scratch.size() < static_cast<size_t>(n)) scratch.resize(static_cast<size_t>(n));  // (grows only)
  int64_t i = 0;
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t k = 0; k < inner; ++k, ++i) {
        const int64_t v = codeAt(x.p, i, x.is_signed);
        scratch[static_cast<size_t>(i)] = v >= 0 ? v * (int64_t{1} << qs) : v * slope[c];
      }
  return finish(scratch.data(), n, x.q + qs, 1, o, slot, opt, y);
}

int concat(const std::vector<Codes>& ins, const std::vector<int64_t>& chunks, int64_t outer, const OutSpec& o, Slot& slot,
           const Options& opt, uint8_t* y, std::vector<int64_t>& scratch) {
  int Q = kMinQ;
  int64_t per = 0;  // output elements per outer index
  for (size_t k = 0; k < ins.size(); ++k) Q = std::max(Q, ins[k].q), per += chunks[k];
  const int64_t n = outer * per;
  if (scratch.size() < static_cast<size_t>(n)) scratch.resize(static_cast<size_t>(n));  // (grows only)
  int64_t at = 0;
  for (int64_t i = 0; i < outer; ++i)
    for (size_t k = 0; k < ins.size(); ++k)
      for (int64_t j = 0; j < chunks[k]; ++j)
        scratch[static_cast<size_t>(at++)] = static_cast<int64_t>(codeAt(ins[k].p, i * chunks[k] + j, ins[k].is_signed)) << (Q - ins[k].q);
  return finish(scratch.data(), n, Q, 1, o, slot, opt, y);
}

int globalAvgPool(Codes x, int64_t planes, int64_t size, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
                  std::vector<int64_t>& scratch) {
  if (scratch.size() < static_cast<size_t>(planes)) scratch.resize(static_cast<size_t>(planes));  // (grows only)
  for (int64_t p = 0; p < planes; ++p) {
    int64_t s = 0;
    for (int64_t i = 0; i < size; ++i) s += codeAt(x.p, p * size + i, x.is_signed);
    scratch[static_cast<size_t>(p)] = s;
  }
  return finish(scratch.data(), planes, x.q, std::max<int64_t>(size, 1), o, slot, opt, y);
}

namespace {
/// Taps of a window along one axis that count in the divisor: those inside [lo, hi) of the window starting at `at`.
int64_t tapsIn(int64_t at, int64_t k, int64_t d, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t i = 0; i < k; ++i) n += at + i * d >= lo && at + i * d < hi;
  return n;
}
}  // namespace

int64_t avgPoolDivisor(const Pool2dShape& s) {
  // The count is a product of a row and a column count; each depends on its own output index only.
  auto common = [&](int64_t outs, int64_t stride, int64_t pad, int64_t pad_end, int64_t in, int64_t k, int64_t d) -> int64_t {
    const int64_t lo = s.count_include_pad ? -pad : 0, hi = s.count_include_pad ? in + pad_end : in;
    const int64_t first = outs > 0 ? tapsIn(-pad, k, d, lo, hi) : 0;
    for (int64_t o = 1; o < outs; ++o)
      if (tapsIn(o * stride - pad, k, d, lo, hi) != first) return 0;
    return first;
  };
  return common(s.oh, s.sh, s.pt, s.pb, s.ih, s.kh, s.dh) * common(s.ow, s.sw, s.pl, s.pr, s.iw, s.kw, s.dw);
}

int avgPool(const Pool2dShape& s, Codes x, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y,
            std::vector<int64_t>& scratch) {
  const int64_t n = s.planes * s.oh * s.ow;
  if (scratch.size() < static_cast<size_t>(n)) scratch.resize(static_cast<size_t>(n));  // (grows only)
  for (int64_t pl = 0; pl < s.planes; ++pl)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        int64_t acc = 0;
        for (int64_t i = 0; i < s.kh; ++i) {
          const int64_t iy = oy * s.sh - s.pt + i * s.dh;
          if (iy < 0 || iy >= s.ih) continue;
          for (int64_t j = 0; j < s.kw; ++j) {
            const int64_t ix = ox * s.sw - s.pl + j * s.dw;
            if (ix >= 0 && ix < s.iw) acc += codeAt(x.p, (pl * s.ih + iy) * s.iw + ix, x.is_signed);
          }
        }
        scratch[static_cast<size_t>((pl * s.oh + oy) * s.ow + ox)] = acc;
      }
  return finish(scratch.data(), n, x.q, std::max<int64_t>(avgPoolDivisor(s), 1), o, slot, opt, y);
}

void globalMaxPool(const uint8_t* x, bool is_signed, int64_t planes, int64_t size, uint8_t* y, ThreadPool* pool) {
  detail::parallelUnits(pool, planes, size, [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      int32_t m = codeMin(is_signed);
      for (int64_t i = 0; i < size; ++i) m = std::max(m, codeAt(x, pl * size + i, is_signed));
      y[pl] = static_cast<uint8_t>(m);
    }
  });
}

void convTransposeAcc(const ConvTransposeShape& s, Codes x, const int16_t* w, int qw, const int32_t* bias, int qb,
                      int round_add, int64_t* acc) {
  const int64_t N = s.batch, C = s.in_channels, M = s.out_channels, G = s.groups, Cg = C / G, Mg = M / G;
  const int64_t IH = s.in_spatial[0], IW = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
  const int64_t KH = s.kernel[0], KW = s.kernel[1], plane = OH * OW;
  const int qacc = x.q + qw;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      std::fill_n(acc + (n * M + m) * plane, plane, bias ? biasAt(bias[m], qb, qacc, round_add) : 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t m0 = c / Cg * Mg;
      for (int64_t iy = 0; iy < IH; ++iy)
        for (int64_t ix = 0; ix < IW; ++ix) {
          const int64_t v = codeAt(x.p, ((n * C + c) * IH + iy) * IW + ix, x.is_signed);
          if (v == 0) continue;
          for (int64_t ml = 0; ml < Mg; ++ml) {
            const int16_t* wk = w + (c * Mg + ml) * KH * KW;
            int64_t* a = acc + (n * M + m0 + ml) * plane;
            for (int64_t ky = 0; ky < KH; ++ky) {
              const int64_t oy = iy * s.stride[0] - s.pad_begin[0] + ky * s.dilation[0];
              if (oy < 0 || oy >= OH) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t ox = ix * s.stride[1] - s.pad_begin[1] + kx * s.dilation[1];
                if (ox >= 0 && ox < OW) a[oy * OW + ox] += v * wk[ky * KW + kx];
              }
            }
          }
        }
    }
}

void resizeAcc(const std::vector<ResizeTaps>& taps, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& y_shape,
               Codes x, int64_t* acc) {
  const size_t r = x_shape.size();
  std::vector<std::vector<int64_t>> wi(r);  // each axis's weights at 2^-kResizeF
  for (size_t a = 0; a < r; ++a)
    for (double w : taps[a].w) wi[a].push_back(static_cast<int64_t>(std::llround(std::ldexp(w, kResizeF))));
  std::vector<int64_t> ist(r, 1), idx(r, 0);
  for (size_t i = r; i-- > 1;) ist[i - 1] = ist[i] * x_shape[i];
  int64_t n = 1;
  for (int64_t d : y_shape) n *= d;
  std::vector<int> tap(r, 0);
  for (int64_t o = 0; o < n; ++o) {
    int64_t sum = 0;
    std::fill(tap.begin(), tap.end(), 0);
    for (;;) {  // every combination of the axes' taps (first axis outermost)
      int64_t w = 1, off = 0;
      for (size_t a = 0; a < r; ++a) {
        const size_t j = static_cast<size_t>(idx[a]) * static_cast<size_t>(taps[a].k) + static_cast<size_t>(tap[a]);
        w *= wi[a][j];
        off += taps[a].idx[j] * ist[a];
      }
      if (w != 0) sum += w * codeAt(x.p, off, x.is_signed);
      size_t a = r;
      while (a-- > 0 && ++tap[a] == taps[a].k) tap[a] = 0;
      if (a == static_cast<size_t>(-1)) break;
    }
    acc[o] = sum;
    for (size_t a = r; a-- > 0;) {  // the next output's coordinates
      if (++idx[a] < y_shape[a]) break;
      idx[a] = 0;
    }
  }
}

void softmax(Codes x, int64_t outer, int64_t len, int64_t inner, int round_add, uint8_t* y) {
  int64_t E[256];  // exp(-d 2^-q) at 2^-16 for each difference d of two 8-bit codes
  for (int d = 0; d < 256; ++d) E[d] = static_cast<int64_t>(std::nearbyint(std::ldexp(std::exp(-std::ldexp(static_cast<double>(d), -x.q)), 16)));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      const int64_t base = o * len * inner + k;
      int32_t m = codeMin(x.is_signed);
      for (int64_t i = 0; i < len; ++i) m = std::max(m, codeAt(x.p, base + i * inner, x.is_signed));
      int64_t sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += E[m - codeAt(x.p, base + i * inner, x.is_signed)];
      for (int64_t i = 0; i < len; ++i)
        y[base + i * inner] = static_cast<uint8_t>(requant(E[m - codeAt(x.p, base + i * inner, x.is_signed)], kSoftmaxQ, sum, round_add, false));
    }
}

void maxPool(const Pool2dShape& s, const uint8_t* x, bool is_signed, uint8_t* y, ThreadPool* pool) {
  detail::parallelUnits(pool, s.planes, s.oh * s.ow * s.kh * s.kw, [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const uint8_t* xp = x + pl * s.ih * s.iw;
      uint8_t* yp = y + pl * s.oh * s.ow;
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          int32_t m = codeMin(is_signed);
          for (int64_t i = 0; i < s.kh; ++i) {
            const int64_t iy = oy * s.sh - s.pt + i * s.dh;
            if (iy < 0 || iy >= s.ih) continue;
            for (int64_t j = 0; j < s.kw; ++j) {
              const int64_t ix = ox * s.sw - s.pl + j * s.dw;
              if (ix >= 0 && ix < s.iw) m = std::max(m, codeAt(xp, iy * s.iw + ix, is_signed));
            }
          }
          yp[oy * s.ow + ox] = static_cast<uint8_t>(m);
        }
    }
  });
}

int quantize(const float* x, int64_t n, const OutSpec& o, Slot& slot, const Options& opt, uint8_t* y) {
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) {
      mn = std::min(mn, static_cast<double>(x[i]));
      mx = std::max(mx, static_cast<double>(x[i]));
    }
  if (mn > mx) mn = mx = 0;
  const int qy = updateSlot(slot, mn, mx, opt);
  const double r = opt.round_add / 100.0;
  const double lo = codeMin(o.is_signed), hi = codeMax(o.is_signed);
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::isnan(x[i]) ? 0.0 : std::clamp(std::floor(std::ldexp(static_cast<double>(x[i]), qy) + r), lo, hi);
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
  return qy;
}

void dequantize(Codes x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::ldexp(static_cast<float>(codeAt(x.p, i, x.is_signed)), -x.q);
}

}  // namespace npuc::kernels::pow2
