// The int8-affine convolution, fast: qconv_ref's bits (see kernels/quant.hpp). Portable C++ written so that the
// compiler vectorises the inner loop across output columns; the accumulation is exact integer arithmetic, so the
// order of the taps and the split of the output channels among threads cannot change a bit.
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/qconv_vnni.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

#include <algorithm>
#include <vector>

namespace npuc::kernels {

using detail::parallelUnits;

// The baseline path's tap loop (kernels/x86/qconv_tap.inc), compiled here for the baseline instruction set and in
// qconv_tap_avx2.cpp with AVX2 (the same source, 256-bit there; chosen at run time).
#define NPUC_QCONV_TAP_FLAT accumulateTapFlatBaseline
#include "kernels/x86/qconv_tap.inc"
#undef NPUC_QCONV_TAP_FLAT

QConvPath bestQConvPath() {
  static const QConvPath best = [] {
    __builtin_cpu_init();
    if (cpuHasQConvPath(QConvPath::kAmx)) return QConvPath::kAmx;
    if (cpuHasQConvPath(QConvPath::kVnni)) return QConvPath::kVnni;
    return cpuHasQConvPath(QConvPath::kAvx2) ? QConvPath::kAvx2 : QConvPath::kBaseline;
  }();
  return best;
}

bool cpuHasQConvPath(QConvPath path) {
  switch (path) {
    case QConvPath::kBaseline: return true;
    case QConvPath::kAvx2: return __builtin_cpu_supports("avx2");
    case QConvPath::kVnni:
      return detail::cpuHasAvx512bw() && __builtin_cpu_supports("avx512vnni");
    case QConvPath::kAmx:
      return cpuHasQConvPath(QConvPath::kVnni) && detail::amxInt8Usable();
  }
  return false;
}

const char* qconvPathName(QConvPath path) {
  switch (path) {
    case QConvPath::kBaseline: return "baseline";
    case QConvPath::kAvx2: return "avx2";
    case QConvPath::kVnni: return "avx512_vnni";
    case QConvPath::kAmx: return "avx512_amx";
  }
  return "?";
}

namespace {
/// y[i] = requantizeValue(acc[i], mm, …), i < n: the AVX2 row kernel where `avx2` (the CPU has it) and mm has no left
/// shift, the scalar primitive otherwise.
void requantizeRow(const int32_t* acc, int64_t n, const Multiplier& mm, const QOutput& out, int8_t* y, bool avx2) {
  if (avx2 && mm.shift <= 0) return requantizeRowAvx2(acc, n, mm.m, -mm.shift, out.zero_point, out.lo, out.hi, y);
  for (int64_t i = 0; i < n; ++i) y[i] = requantizeValue(acc[i], mm, out.zero_point, out.lo, out.hi);
}

/// The per-call paths (the weights are re-read on each run).
void qconvPath(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y, ThreadPool* pool, bool avx2);

/// The padded plane covers every tap of every output; a window far wider than the input (huge kernels or dilations,
/// allowed by the format) would make it enormous: the reference walks such shapes without one.
bool planeIsReasonable(const ConvShape& s) {
  if (s.in_spatial.size() != 2) return false;
  const int64_t HP = std::max<int64_t>((s.out_spatial[0] - 1) * s.stride[0] + (s.kernel[0] - 1) * s.dilation[0] + 1, 1);
  const int64_t WP = std::max<int64_t>((s.out_spatial[1] - 1) * s.stride[1] + (s.kernel[1] - 1) * s.dilation[1] + 1, 1);
  return HP * WP <= 4 * s.in_spatial[0] * s.in_spatial[1] + 65536;
}
}  // namespace

struct QConv::Impl {
  ConvShape shape;
  const int8_t* w;
  const int32_t* bias;
  int32_t zx;
  QOutput out;
  bool fast = false;            // else qconv_ref
  detail::QConvVnniPlan vnni;   // the VNNI and AMX paths' packed weights
};

QConv::QConv(const ConvShape& s, const int8_t* w, const int32_t* bias, int32_t zx, QOutput out, QConvPath path)
    : impl_(std::make_unique<Impl>()), path_(path) {
  if (!cpuHasQConvPath(path)) path_ = path = bestQConvPath();
  impl_->shape = s;
  impl_->w = w;
  impl_->bias = bias;
  impl_->zx = zx;
  impl_->fast = planeIsReasonable(s);
  if (impl_->fast && (path == QConvPath::kVnni || path == QConvPath::kAmx))
    impl_->vnni = detail::planQConvVnni(s, w, bias, zx, out, path == QConvPath::kAmx);
  impl_->out = std::move(out);
}

QConv::~QConv() = default;

void QConv::run(const int8_t* x, int8_t* y, ThreadPool* pool) const {
  const Impl& p = *impl_;
  if (!p.fast) return qconv_ref(p.shape, x, p.zx, p.w, p.bias, p.out, y);
  if (path_ == QConvPath::kVnni || path_ == QConvPath::kAmx) return detail::qconvVnni(p.vnni, x, y, pool);
  qconvPath(p.shape, x, p.zx, p.w, p.bias, p.out, y, pool, path_ == QConvPath::kAvx2);
}

void qconv(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias, const QOutput& out,
           int8_t* y, ThreadPool* pool) {
  QConv(s, w, bias, zx, out).run(x, y, pool);
}

namespace {
void qconvPath(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y, ThreadPool* pool, bool avx2) {
  const int64_t C = s.in_channels, M = s.out_channels, G = s.groups, cg = C / G, mg = M / G;
  const int64_t H = s.in_spatial[0], W = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
  const int64_t KH = s.kernel[0], KW = s.kernel[1], SH = s.stride[0], SW = s.stride[1], DH = s.dilation[0],
                DW = s.dilation[1], PT = s.pad_begin[0], PL = s.pad_begin[1];
  // The padded plane covers every tap of every output: rows [-PT, (OH-1)*SH + (KH-1)*DH - PT], same for columns.
  const int64_t HP = std::max<int64_t>((OH - 1) * SH + (KH - 1) * DH + 1, 1), WP = std::max<int64_t>((OW - 1) * SW + (KW - 1) * DW + 1, 1);
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  const auto flat_tap = has_avx2 ? accumulateTapFlatAvx2 : accumulateTapFlatBaseline;
  std::vector<int16_t> xq;  // the baseline path's phase planes (strided convolutions)
  std::vector<int16_t> b2;
  std::vector<int32_t> a2;
  // (+ slack: a flat tap reads up to (KW - 1) * DW elements past its plane's last row, for discarded columns)
  std::vector<int16_t> xp(static_cast<size_t>(C * HP * WP + (KW - 1) * DW + 16));
  std::vector<int32_t> acc_all(static_cast<size_t>(avx2 ? M * OH * OW : 0));
  // Phase planes (the baseline path, below): the padded plane split by stride phase.
  const int64_t HPp = (HP + SH - 1) / SH, WPp = (WP + SW - 1) / SW, phases = SH * SW;
  // Each tap's offset in its channel's phase planes, once per layer (not per output channel: the divisions cost
  // more than the sums of a small map).
  std::vector<int64_t> tap_off(static_cast<size_t>(avx2 ? 0 : cg * KH * KW));
  for (int64_t cl = 0; cl < cg && !avx2; ++cl)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t th = kh * DH, tw = kw * DW;  // the tap's offset in the padded plane
        tap_off[static_cast<size_t>((cl * KH + kh) * KW + kw)] =
            cl * phases * HPp * WPp + ((th % SH) * SW + tw % SW) * HPp * WPp + (th / SH) * WPp + tw / SW;
      }
  for (int64_t n = 0; n < s.batch; ++n) {
    const int8_t* xn = x + n * C * H * W;
    for (int64_t c = 0; c < C; ++c) {  // x - zx inside the input, 0 (= x at the zero point) in the padding
      int16_t* pc = xp.data() + c * HP * WP;
      // Each row: zeros, then the input's columns [q0, q1) of the plane, then zeros.
      const int64_t q0 = std::clamp<int64_t>(PL, 0, WP), q1 = std::clamp<int64_t>(PL + W, q0, WP);
      for (int64_t r = 0; r < HP; ++r) {
        int16_t* row = pc + r * WP;
        const int64_t ih = r - PT;
        if (ih < 0 || ih >= H) {
          std::fill(row, row + WP, int16_t{0});
          continue;
        }
        std::fill(row, row + q0, int16_t{0});
        const int8_t* src = xn + (c * H + ih) * W;  // column q of the plane is input column q - PL
        for (int64_t q = q0; q < q1; ++q) row[q] = static_cast<int16_t>(src[q - PL] - zx);
        std::fill(row + q1, row + WP, int16_t{0});
      }
    }
    if (avx2) {
      // im2col in pairs of k (B2 [K2, P, 2]), the weights as int16 pairs (A2 [mg, K2]), an exact int32 product.
      const int64_t K = cg * KH * KW, K2 = (K + 1) / 2, P = OH * OW;
      b2.assign(static_cast<size_t>(K2 * P * 2), 0);
      a2.assign(static_cast<size_t>(mg * K2), 0);
      for (int64_t grp = 0; grp < G; ++grp) {
        auto tapPlane = [&](int64_t k) {  // the plane of tap k, read at (oy * SH, ox * SW)
          const int64_t cl = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
          return xp.data() + (grp * cg + cl) * HP * WP + kh * DH * WP + kw * DW;
        };
        for (int64_t k = 0; k < K; k += 2) {  // two taps at once: rows interleaved into their pairs
          const int16_t* p0 = tapPlane(k);
          const int16_t* p1 = k + 1 < K ? tapPlane(k + 1) : nullptr;
          int16_t* dst = b2.data() + (k / 2 * P) * 2;
          for (int64_t oy = 0; oy < OH; ++oy) {
            const int16_t* r0 = p0 + oy * SH * WP;
            int16_t* d = dst + oy * OW * 2;
            if (p1 && SW == 1) {
              const int16_t* r1 = p1 + oy * SH * WP;
              for (int64_t ox = 0; ox < OW; ++ox) d[2 * ox] = r0[ox], d[2 * ox + 1] = r1[ox];
            } else {
              for (int64_t ox = 0; ox < OW; ++ox) d[2 * ox] = r0[ox * SW];
              if (p1)
                for (int64_t ox = 0; ox < OW; ++ox) d[2 * ox + 1] = p1[oy * SH * WP + ox * SW];
            }
          }
        }
        for (int64_t ml = 0; ml < mg; ++ml)
          for (int64_t k = 0; k < K; k += 2) {
            const int8_t* wm = w + (grp * mg + ml) * K;
            const uint32_t lo = static_cast<uint16_t>(static_cast<int16_t>(wm[k]));
            const uint32_t hi = k + 1 < K ? static_cast<uint16_t>(static_cast<int16_t>(wm[k + 1])) : 0u;
            a2[static_cast<size_t>(ml * K2 + k / 2)] = static_cast<int32_t>(lo | (hi << 16));
          }
        int32_t* c = acc_all.data() + grp * mg * P;
        for (int64_t ml = 0; ml < mg; ++ml) std::fill(c + ml * P, c + (ml + 1) * P, bias != nullptr ? bias[grp * mg + ml] : 0);
        parallelUnits(pool, mg, K * P, [&](int64_t m0, int64_t m1) { qgemmPairsAvx2(m0, m1, P, K2, a2.data(), b2.data(), c); });
      }
      parallelUnits(pool, M, OH * OW, [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
          requantizeRow(acc_all.data() + m * OH * OW, OH * OW, out.of(m), out, y + (n * M + m) * OH * OW, true);
        }
      });
      continue;
    }
    // Phase planes: the padded plane split by stride phase, phase (ph, pw) holding rows ph, ph + SH, … and columns
    // pw, pw + SW, …, so every tap reads its phase plane at stride 1 and accumulates over it flat (outputs at every
    // phase-plane column, those past OW discarded). Stride 1 has one phase: the padded plane itself.
    const bool phased = phases > 1;
    if (phased) {
      xq.assign(static_cast<size_t>(C * phases * HPp * WPp + (KW - 1) * DW + 16), 0);
      parallelUnits(pool, C, HP * WP, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c)
          for (int64_t ph = 0; ph < SH; ++ph)
            for (int64_t pw = 0; pw < SW; ++pw) {
              int16_t* dst = xq.data() + ((c * SH + ph) * SW + pw) * HPp * WPp;
              const int16_t* src = xp.data() + c * HP * WP;
              for (int64_t r = 0; r * SH + ph < HP; ++r)
                for (int64_t q = 0; q * SW + pw < WP; ++q) dst[r * WPp + q] = src[(r * SH + ph) * WP + q * SW + pw];
            }
      });
    }
    const int16_t* planes = phased ? xq.data() : xp.data();
    parallelUnits(pool, M, cg * KH * KW * OH * OW, [&](int64_t m0, int64_t m1) {
      std::vector<int32_t> acc(static_cast<size_t>(OH * WPp));  // outputs at every phase-plane column
      for (int64_t m = m0; m < m1; ++m) {
        std::fill(acc.begin(), acc.end(), bias != nullptr ? bias[m] : 0);
        const int64_t grp = m / mg;
        const int16_t* tap_src[4];
        int32_t tap_w[4];
        int taps = 0;  // taps gathered, accumulated four at a time
        const int16_t* pg = planes + grp * cg * phases * HPp * WPp;
        const int8_t* wm = w + m * cg * KH * KW;
        for (int64_t t = 0; t < cg * KH * KW; ++t) {
          const int32_t wv = wm[t];
          if (wv == 0) continue;  // adds nothing
          tap_src[taps] = pg + tap_off[static_cast<size_t>(t)];
          tap_w[taps] = wv;
          if (++taps == 4) {
            flat_tap(acc.data(), tap_src, tap_w, taps, OH * WPp);
            taps = 0;
          }
        }
        if (taps > 0) flat_tap(acc.data(), tap_src, tap_w, taps, OH * WPp);
        int8_t* ym = y + (n * M + m) * OH * OW;
        for (int64_t oy = 0; oy < OH; ++oy)  // (as the tap loop: the AVX2 build where the CPU has it)
          requantizeRow(acc.data() + oy * WPp, OW, out.of(m), out, ym + oy * OW, has_avx2);
      }
    });
  }
}

}  // namespace

}  // namespace npuc::kernels
