// The int8-pow2 convolution's sums on AVX-512 VNNI (kernels/pow2.hpp: fast::convSumsVnni): for 8-bit weights, vpdpbusd over
// an im2col of byte quads — the int8-affine VNNI form (qconv_vnni.cpp) without its requantization, as int8-pow2
// finishes a layer only once the whole frame's range is known. Exact integer sums: convAcc's numbers for any order
// or thread split.
#include "kernels/pow2.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quads_avx512.hpp"

#include <immintrin.h>

#include <algorithm>

namespace npuc::kernels::pow2 {

namespace {

constexpr int kRows = 4, kVecs = 4;  // the microkernel's block: 4 output channels x 64 outputs

struct Geometry {
  int64_t C, M, G, Cg, Mg, H, W, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, K, K4, P, P16;
  int64_t HP, WP;   // the padded plane every window reads
  bool direct;      // no window leaves the input (no padding: 1x1 convolutions and the like): the planes are x itself
};

Geometry geometryOf(const ConvShape& s) {
  Geometry g{};
  g.C = s.in_channels, g.M = s.out_channels, g.G = s.groups, g.Cg = g.C / g.G, g.Mg = g.M / g.G;
  g.H = s.in_spatial[0], g.W = s.in_spatial[1], g.OH = s.out_spatial[0], g.OW = s.out_spatial[1];
  g.KH = s.kernel[0], g.KW = s.kernel[1], g.SH = s.stride[0], g.SW = s.stride[1], g.DH = s.dilation[0], g.DW = s.dilation[1];
  g.PT = s.pad_begin[0], g.PL = s.pad_begin[1];
  g.K = g.Cg * g.KH * g.KW, g.K4 = (g.K + 3) / 4, g.P = g.OH * g.OW, g.P16 = (g.P + 15) / 16 * 16;
  g.HP = (g.OH - 1) * g.SH + (g.KH - 1) * g.DH + 1, g.WP = (g.OW - 1) * g.SW + (g.KW - 1) * g.DW + 1;
  g.direct = g.PT == 0 && g.PL == 0 && g.HP <= g.H && g.WP <= g.W;
  return g;
}

/// Group `grp`'s channels of one image as the planes the windows read (`stride` bytes apart, rows `rs` apart, bytes to
/// XOR with `flip` as they are cut into quads): the input itself where the geometry is direct, else offset planes
/// (detail::offsetPlane: the codes already XORed with the flip, the code 0's byte in the padding, 64 bytes of slack).
struct Planes {
  const uint8_t* p;
  int64_t stride, rs;
  uint8_t flip;
};
Planes planesOf(const Geometry& g, const uint8_t* xn, int64_t grp, uint8_t flip, uint8_t* buf) {
  if (g.direct) return {xn + grp * g.Cg * g.H * g.W, g.H * g.W, g.W, flip};
  const int64_t ps = g.HP * g.WP + 64;
  for (int64_t c = 0; c < g.Cg; ++c)
    detail::offsetPlane(buf + c * ps, reinterpret_cast<const int8_t*>(xn + (grp * g.Cg + c) * g.H * g.W), g.H, g.W, g.HP, g.WP,
                        g.PT, g.PL, flip, flip);
  return {buf, ps, g.WP, 0};
}
/// The bytes planesOf may write for one group.
size_t planeBytes(const Geometry& g) { return g.direct ? 0 : static_cast<size_t>(g.Cg * (g.HP * g.WP + 64)); }

/// The im2col of a group as byte quads, B4 [K4][P16][4]: byte j of quad q at output p is tap 4q + j's code as an
/// unsigned byte (x + 128 for signed codes: the XOR 0x80; the padding's code 0 alike), tap 4q's again past K (it meets
/// a zero weight); outputs past P are zero.
void buildQuads(const Geometry& g, const Planes& pl, uint8_t* b) {
  const __m128i f = _mm_set1_epi8(static_cast<char>(pl.flip));
  const bool contiguous = g.SH == 1 && g.SW == 1 && pl.rs == g.OW;  // (output rows end to end in the planes)
  for (int64_t q = 0; q < g.K4; ++q) {
    const uint8_t* plane[4];
    for (int j = 0; j < 4; ++j) {
      const int64_t k = 4 * q + j < g.K ? 4 * q + j : 4 * q;
      const int64_t c = k / (g.KH * g.KW), ky = k / g.KW % g.KH, kx = k % g.KW;
      plane[j] = pl.p + c * pl.stride + ky * g.DH * pl.rs + kx * g.DW;
    }
    uint8_t* dst = b + q * g.P16 * 4;
    if (contiguous) {
      detail::interleave4(plane[0], plane[1], plane[2], plane[3], g.P, 1, f, dst);
    } else {
      for (int64_t oy = 0; oy < g.OH; ++oy) {
        const int64_t off = oy * g.SH * pl.rs;
        detail::interleave4(plane[0] + off, plane[1] + off, plane[2] + off, plane[3] + off, g.OW, g.SW, f, dst + oy * g.OW * 4);
      }
    }
    std::fill(dst + g.P * 4, dst + g.P16 * 4, uint8_t{0});
  }
}

/// Sums of output channels [m0, m1) (global indices) over outputs [p0, p1) (p0 a multiple of 16) from a group's quads:
/// sums[m * P + p] = sum_q vpdpbusd(B4[q][p], A4[m][q]) - corr[m] (int32, wrapping: the true value fits).
void product(const Geometry& g, const uint8_t* b, const int32_t* a4, const int32_t* corr, int64_t m0, int64_t m1,
             int64_t p0, int64_t p1, int32_t* sums) {
  for (int64_t pb = p0; pb < p1; pb += 16 * kVecs) {
    const int64_t n = std::min<int64_t>(16 * kVecs, p1 - pb);
    const int vecs = static_cast<int>((n + 15) / 16);
    for (int64_t m = m0; m < m1; m += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, m1 - m));
      __m512i acc[kRows][kVecs];
      for (int r = 0; r < kRows; ++r)
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_si512();
      for (int64_t q = 0; q < g.K4; ++q) {
        const uint8_t* bq = b + (q * g.P16 + pb) * 4;
        __m512i bv[kVecs];
        for (int v = 0; v < kVecs; ++v) bv[v] = v < vecs ? _mm512_loadu_si512(bq + v * 64) : _mm512_setzero_si512();
        for (int r = 0; r < kRows; ++r) {
          if (r >= rows) break;
          const __m512i av = _mm512_set1_epi32(a4[(m + r) * g.K4 + q]);
          for (int v = 0; v < kVecs; ++v)
            if (v < vecs) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], bv[v], av);
        }
      }
      for (int r = 0; r < rows; ++r) {
        const __m512i cv = _mm512_set1_epi32(corr[m + r]);
        int32_t* out = sums + (m + r) * g.P + pb;
        for (int v = 0; v < vecs; ++v) {
          const int64_t left = n - 16 * v;
          const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
          _mm512_mask_storeu_epi32(out + 16 * v, mask, _mm512_sub_epi32(acc[r][v], cv));  // (modulo 2^32)
        }
      }
    }
  }
}

}  // namespace

namespace fast {

void convSumsVnni(const ConvShape& s, Codes x, const PackedWeights& packed, const int32_t* b0, int32_t* sums,
                  ThreadPool* pool) {
  const Geometry g = geometryOf(s);
  const uint8_t flip = x.is_signed ? 0x80 : 0x00;
  const int32_t* a4 = packed.a4.data();
  // Each channel's correction for the offset bytes (sum_k w (x + 128) - 128 sum_k w = sum_k w x) less its bias, in
  // int32 modulo 2^32 (the result fits).
  int32_t* const corr = reinterpret_cast<int32_t*>(detail::scratch(6, static_cast<size_t>(g.M) * 4));  // (read by the threads below)
  for (int64_t m = 0; m < g.M; ++m) {
    const int64_t c = (x.is_signed ? int64_t{128} * packed.wsum[static_cast<size_t>(m)] : 0) - (b0 != nullptr ? b0[m] : 0);
    corr[m] = static_cast<int32_t>(static_cast<uint32_t>(c));
  }
  const size_t b_bytes = static_cast<size_t>(g.K4 * g.P16 * 4);
  for (int64_t n = 0; n < s.batch; ++n) {
    const uint8_t* xn = x.p + n * g.C * g.H * g.W;
    int32_t* sn = sums + n * g.M * g.P;
    if (g.G >= 4 || g.Mg < 2 * kRows) {  // many groups (depthwise): whole groups per thread, each with its own im2col
      detail::parallelUnits(pool, g.G, g.Mg * g.K * g.P, [&](int64_t g0, int64_t g1) {
        uint8_t* b = detail::scratch(1, b_bytes);
        uint8_t* planes = detail::scratch(0, planeBytes(g));
        for (int64_t grp = g0; grp < g1; ++grp) {
          buildQuads(g, planesOf(g, xn, grp, flip, planes), b);
          product(g, b, a4, corr, grp * g.Mg, (grp + 1) * g.Mg, 0, g.P, sn);
        }
      });
      continue;
    }
    // Few groups: one im2col per group, then blocks of (4 channels, 64 outputs) among the threads.
    uint8_t* const shared = detail::scratch(1, b_bytes);  // (the calling thread's: the threads below only read it)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      buildQuads(g, planesOf(g, xn, grp, flip, detail::scratch(0, planeBytes(g))), shared);
      const int64_t rblocks = (g.Mg + kRows - 1) / kRows, pblocks = (g.P + 16 * kVecs - 1) / (16 * kVecs);
      detail::parallelUnits(pool, rblocks * pblocks, kRows * g.K * 16 * kVecs, [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t rb = u % rblocks, p0 = u / rblocks * 16 * kVecs;
          const int64_t m0 = grp * g.Mg + rb * kRows, m1 = std::min(grp * g.Mg + g.Mg, m0 + kRows);
          product(g, shared, a4, corr, m0, m1, p0, std::min(g.P, p0 + 16 * kVecs), sn);
        }
      });
    }
  }
}

}  // namespace fast

}  // namespace npuc::kernels::pow2
