// The int8-affine convolution, fast: qconv_ref's bits (see kernels/quant.hpp). Portable C++ written so that the
// compiler vectorises the inner loop across output columns; the accumulation is exact integer arithmetic, so the
// order of the taps and the split of the output channels among threads cannot change a bit.
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/qconv_avx2.hpp"
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

namespace detail {
uint8_t* int8Scratch(int slot, size_t bytes) {
  thread_local std::vector<uint8_t> buffers[kInt8ScratchSlots];
  std::vector<uint8_t>& b = buffers[slot];
  // 64-byte aligned (std::vector gives 16): a vector load of a packed row never straddles two cache lines.
  if (b.size() < bytes + 64) b.resize(bytes + 64);
  const auto at = reinterpret_cast<uintptr_t>(b.data());
  return b.data() + (64 - at % 64) % 64;
}
}  // namespace detail

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
    case QConvPath::kAvx2: return detail::cpuHasAvx2();
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
               const QOutput& out, int8_t* y, ThreadPool* pool);

/// The AVX2 path's plan (kernels/x86/qconv_avx2.hpp) and the arrays it points into.
struct Avx2Plan {
  detail::QConvAvx2Plan p;
  std::vector<int64_t> tap_off;
  std::vector<int32_t> a, bias, mul, right, shift;
  std::vector<int8_t> w8;
};

/// Where tap (th, tw) — its row and column offsets in the padded plane — reads within its channel's phase planes (planes
/// of `plane` elements, rows of `wpp`: the padded plane split by stride phase), for the baseline and the AVX2 paths.
int64_t phaseTapOffset(int64_t th, int64_t tw, int64_t SH, int64_t SW, int64_t plane, int64_t wpp) {
  return ((th % SH) * SW + tw % SW) * plane + th / SH * wpp + tw / SW;
}

/// An int16 pair as one int32: lo in the low half.
int32_t pairOf(int32_t lo, int32_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
}

void planAvx2(Avx2Plan& A, const ConvShape& s, const int8_t* w, const int32_t* bias, int32_t zx, const QOutput& out) {
  using Form = detail::QConvAvx2Plan::Form;
  detail::QConvAvx2Plan& p = A.p;
  p.C = s.in_channels, p.M = s.out_channels, p.G = s.groups, p.H = s.in_spatial[0], p.W = s.in_spatial[1];
  p.OH = s.out_spatial[0], p.OW = s.out_spatial[1], p.KH = s.kernel[0], p.KW = s.kernel[1], p.SH = s.stride[0];
  p.SW = s.stride[1], p.DH = s.dilation[0], p.DW = s.dilation[1], p.PT = s.pad_begin[0], p.PL = s.pad_begin[1];
  p.zx = zx, p.zy = out.zero_point, p.lo = out.lo, p.hi = out.hi;
  const int64_t cg = p.C / p.G, mg = p.M / p.G;
  // The padded plane covers every tap of every output: rows [-PT, (OH-1)*SH + (KH-1)*DH - PT], same for columns.
  const int64_t HP = std::max<int64_t>((p.OH - 1) * p.SH + (p.KH - 1) * p.DH + 1, 1);
  const int64_t WP = std::max<int64_t>((p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1, 1);
  p.phases = p.SH * p.SW, p.hpp = (HP + p.SH - 1) / p.SH, p.wpp = (WP + p.SW - 1) / p.SW, p.plane = p.hpp * p.wpp;
  p.cstride = p.phases * p.plane + 16;
  p.flat = p.OH * p.wpp, p.slack = detail::kQConvAvx2Tile + (p.KW - 1) * p.DW + 32;
  p.k = cg * p.KH * p.KW, p.k2 = (p.k + 1) / 2;
  A.tap_off.assign(static_cast<size_t>(2 * p.k2), 0);
  for (int64_t t = 0; t < p.k; ++t) {
    const int64_t cl = t / (p.KH * p.KW), th = t / p.KW % p.KH * p.DH, tw = t % p.KW * p.DW;
    A.tap_off[static_cast<size_t>(t)] = cl * p.cstride + phaseTapOffset(th, tw, p.SH, p.SW, p.plane, p.wpp);
  }
  if (p.k % 2 != 0) A.tap_off.back() = A.tap_off.front();  // (its weight is 0)
  p.form = p.OH * p.OW == 1 && p.G == 1 ? Form::kGemv : cg == 1 && mg == 1 ? Form::kDepthwise : Form::kGemm;
  auto wpair = [&](int64_t m, int64_t t) {  // channel m's taps 2t, 2t + 1 (0 past k)
    const int8_t* wm = w + m * p.k;
    return pairOf(wm[2 * t], 2 * t + 1 < p.k ? wm[2 * t + 1] : 0);
  };
  const int64_t M8 = (p.M + 7) / 8 * 8;
  if (p.form == Form::kGemm) {
    p.panels = (mg + detail::kQConvAvx2Rows - 1) / detail::kQConvAvx2Rows;
    A.a.assign(static_cast<size_t>(p.G * p.panels * p.k2 * detail::kQConvAvx2Rows), 0);
    for (int64_t grp = 0; grp < p.G; ++grp)
      for (int64_t ml = 0; ml < mg; ++ml) {
        const int64_t panel = ml / detail::kQConvAvx2Rows, r = ml % detail::kQConvAvx2Rows;
        for (int64_t t = 0; t < p.k2; ++t)
          A.a[static_cast<size_t>(((grp * p.panels + panel) * p.k2 + t) * detail::kQConvAvx2Rows + r)] = wpair(grp * mg + ml, t);
      }
  } else if (p.form == Form::kDepthwise) {
    A.a.resize(static_cast<size_t>(p.M * p.k2));
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t t = 0; t < p.k2; ++t) A.a[static_cast<size_t>(m * p.k2 + t)] = wpair(m, t);
  } else {
    A.w8.assign(static_cast<size_t>(M8 * p.k2 * 2), 0);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t j = 0; j < p.k; ++j)
        A.w8[static_cast<size_t>(((m / 8 * p.k2 + j / 2) * 8 + m % 8) * 2 + j % 2)] = w[m * p.k + j];
  }
  A.bias.assign(static_cast<size_t>(M8), 0), A.mul.assign(static_cast<size_t>(M8), 0);
  A.right.assign(static_cast<size_t>(M8), 0), A.shift.assign(static_cast<size_t>(M8), 0);
  for (int64_t m = 0; m < p.M; ++m) {
    const auto i = static_cast<size_t>(m);
    const Multiplier& mm = out.of(m);
    A.bias[i] = bias != nullptr ? bias[m] : 0, A.mul[i] = mm.m, A.shift[i] = mm.shift;
    A.right[i] = mm.shift < 0 ? -mm.shift : 0;
  }
  p.tap_off = A.tap_off.data(), p.a = A.a.data(), p.w8 = A.w8.data(), p.bias = A.bias.data(), p.mul = A.mul.data();
  p.right = A.right.data(), p.shift = A.shift.data();
}

/// `n` int16 of the calling thread's int8Scratch slot (reused from run to run: no fresh pages per layer; what lies
/// past the planes is read only for outputs that are discarded).
int16_t* int16Scratch(int slot, int64_t n) {
  return reinterpret_cast<int16_t*>(detail::int8Scratch(slot, static_cast<size_t>(n) * sizeof(int16_t)));
}

/// The AVX2 path's run: per image, the phase planes then the product's units (kGemm), the channels (kDepthwise) or
/// the blocks of 8 channels (kGemv) on the pool.
void runAvx2(const Avx2Plan& A, const int8_t* x, int8_t* y, ThreadPool* pool, int64_t batch) {
  using Form = detail::QConvAvx2Plan::Form;
  const detail::QConvAvx2Plan& p = A.p;
  const int64_t T = detail::kQConvAvx2Tile;
  for (int64_t n = 0; n < batch; ++n) {
    const int8_t* xn = x + n * p.C * p.H * p.W;
    int8_t* yn = y + n * p.M * p.OH * p.OW;
    if (p.form == Form::kDepthwise) {
      parallelUnits(pool, p.C, p.k * p.flat, [&](int64_t c0, int64_t c1) {
        detail::qdwconvAvx2(p, xn, c0, c1, int16Scratch(1, p.cstride + p.slack), yn);  // (this worker's)
      });
    } else if (p.form == Form::kGemv) {
      std::vector<int32_t> xk(static_cast<size_t>(p.k2), 0);  // the one window's values (0 in the padding), in pairs
      std::vector<int32_t> v(static_cast<size_t>(2 * p.k2), 0);
      for (int64_t t = 0; t < p.k; ++t) {
        const int64_t c = t / (p.KH * p.KW), ih = t / p.KW % p.KH * p.DH - p.PT, iw = t % p.KW * p.DW - p.PL;
        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v[static_cast<size_t>(t)] = xn[(c * p.H + ih) * p.W + iw] - p.zx;
      }
      for (int64_t t = 0; t < p.k2; ++t) xk[static_cast<size_t>(t)] = pairOf(v[static_cast<size_t>(2 * t)], v[static_cast<size_t>(2 * t + 1)]);
      parallelUnits(pool, (p.M + 7) / 8, p.k * 8, [&](int64_t b0, int64_t b1) { detail::qgemvAvx2(p, xk.data(), b0, b1, yn); });
    } else {
      int16_t* const planes = int16Scratch(0, p.C * p.cstride + p.slack);  // (the calling thread's, read by all)
      parallelUnits(pool, p.C, p.phases * p.plane, [&](int64_t c0, int64_t c1) { detail::qconvAvx2Planes(p, xn, c0, c1, planes); });
      // units: (group, tile, chunk of panels); few tiles (small maps) split the panels too, so both threads work
      const int64_t tiles = (p.flat + T - 1) / T;
      const int64_t chunks = p.G * tiles >= 8 ? 1 : std::min<int64_t>(p.panels, (8 + p.G * tiles - 1) / (p.G * tiles));
      const int64_t work = p.k * T * (p.panels + chunks - 1) / chunks * detail::kQConvAvx2Rows;
      parallelUnits(pool, p.G * tiles * chunks, work, [&](int64_t u0, int64_t u1) {
        detail::qconvAvx2Units(p, planes, tiles, chunks, u0, u1, int16Scratch(1, p.k2 * T * 2), yn);  // (this worker's)
      });
    }
  }
}

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
  Avx2Plan avx2;                // the AVX2 path's
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
  if (impl_->fast && path == QConvPath::kAvx2) planAvx2(impl_->avx2, s, w, bias, zx, out);
  impl_->out = std::move(out);
}

QConv::~QConv() = default;

void QConv::run(const int8_t* x, int8_t* y, ThreadPool* pool) const {
  const Impl& p = *impl_;
  if (!p.fast) return qconv_ref(p.shape, x, p.zx, p.w, p.bias, p.out, y);
  if (path_ == QConvPath::kVnni || path_ == QConvPath::kAmx) return detail::qconvVnni(p.vnni, x, y, pool);
  if (path_ == QConvPath::kAvx2) return runAvx2(p.avx2, x, y, pool, p.shape.batch);
  qconvPath(p.shape, x, p.zx, p.w, p.bias, p.out, y, pool);
}

void qconv(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias, const QOutput& out,
           int8_t* y, ThreadPool* pool) {
  QConv(s, w, bias, zx, out).run(x, y, pool);
}

namespace {
void qconvPath(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y, ThreadPool* pool) {
  const int64_t C = s.in_channels, M = s.out_channels, G = s.groups, cg = C / G, mg = M / G;
  const int64_t H = s.in_spatial[0], W = s.in_spatial[1], OH = s.out_spatial[0], OW = s.out_spatial[1];
  const int64_t KH = s.kernel[0], KW = s.kernel[1], SH = s.stride[0], SW = s.stride[1], DH = s.dilation[0],
                DW = s.dilation[1], PT = s.pad_begin[0], PL = s.pad_begin[1];
  // The padded plane covers every tap of every output: rows [-PT, (OH-1)*SH + (KH-1)*DH - PT], same for columns.
  const int64_t HP = std::max<int64_t>((OH - 1) * SH + (KH - 1) * DH + 1, 1), WP = std::max<int64_t>((OW - 1) * SW + (KW - 1) * DW + 1, 1);
  const bool has_avx2 = detail::cpuHasAvx2();
  const auto flat_tap = has_avx2 ? accumulateTapFlatAvx2 : accumulateTapFlatBaseline;
  std::vector<int16_t> xq;  // the baseline path's phase planes (strided convolutions)
  // (+ slack: a flat tap reads up to (KW - 1) * DW elements past its plane's last row, for discarded columns)
  std::vector<int16_t> xp(static_cast<size_t>(C * HP * WP + (KW - 1) * DW + 16));
  // Phase planes (the baseline path, below): the padded plane split by stride phase.
  const int64_t HPp = (HP + SH - 1) / SH, WPp = (WP + SW - 1) / SW, phases = SH * SW;
  // Each tap's offset in its channel's phase planes, once per layer (not per output channel: the divisions cost
  // more than the sums of a small map).
  std::vector<int64_t> tap_off(static_cast<size_t>(cg * KH * KW));
  for (int64_t cl = 0; cl < cg; ++cl)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t th = kh * DH, tw = kw * DW;  // the tap's offset in the padded plane
        tap_off[static_cast<size_t>((cl * KH + kh) * KW + kw)] =
            cl * phases * HPp * WPp + phaseTapOffset(th, tw, SH, SW, HPp * WPp, WPp);
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
