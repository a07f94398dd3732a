// Byte quads for vpdpbusd (four consecutive taps of one output in one int32 lane): the padded planes the windows read
// and four byte rows interleaved, shared by the int8 VNNI convolutions and products (qconv_vnni.cpp, qmatmul_vnni.cpp: int8-affine;
// pow2_conv_vnni.cpp: int8-pow2), with their per-thread scratch. Include only from files
// compiled with AVX-512F/BW/VL (*_vnni.cpp). The functions have internal linkage: each file keeps its own copy, so no
// copy built for one instruction set can stand in for another's.
#pragma once

// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace npuc::kernels::detail {

/// A grow-only scratch buffer of the calling thread (slot 0: the offset planes or the depthwise form's quad planes, 1:
/// an im2col; the others: quant_x86.hpp, int8Scratch): reused from run to run, so a layer does not pay for fresh
/// pages (and the page-fault lock they share between threads) on every call. (The buffers live in a baseline file:
/// a container's members instantiated here could be the copy the whole program runs.)
static inline uint8_t* scratch(int slot, size_t bytes) { return int8Scratch(slot, bytes); }

/// One row of an offset plane: columns [q0, q1) are src[q] XOR `flip` (0x80: + 128 for an int8), the others `pad`;
/// src null for a row wholly in the padding. Plain loops (the compiler vectorises the XOR): AVX-512 masked stores here, read back soon
/// after by overlapping loads, measured several times slower.
static inline void offsetRow(uint8_t* row, const int8_t* src, int64_t wp, int64_t q0, int64_t q1, uint8_t pad, uint8_t flip) {
  if (src == nullptr) {
    std::memset(row, pad, static_cast<size_t>(wp));
    return;
  }
  for (int64_t q = 0; q < q0; ++q) row[q] = pad;
  for (int64_t q = q0; q < q1; ++q) row[q] = static_cast<uint8_t>(src[q] ^ flip);
  for (int64_t q = q1; q < wp; ++q) row[q] = pad;
}

/// A whole offset plane (the im2col's, with at least 64 bytes of slack after it; offsetRow's bytes): the
/// masks of each 64-column block are the same for every row, so a row is one masked load, a XOR, a blend and an
/// unmasked store per block (a store running past its row is overwritten by the next row, or lands in the slack).
static inline void offsetPlane(uint8_t* plane, const int8_t* xc, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t pt,
                               int64_t pl, uint8_t pad, uint8_t flip_byte) {
  const int64_t q0 = std::clamp<int64_t>(pl, 0, wp), q1 = std::clamp<int64_t>(pl + w, q0, wp);
  const __m512i padv = _mm512_set1_epi8(static_cast<char>(pad)), flip = _mm512_set1_epi8(static_cast<char>(flip_byte));
  const int64_t blocks = (wp + 63) / 64;
  __mmask64 in[8] = {};  // (planes wider than 512 columns take offsetRow)
  if (blocks > 8) {
    for (int64_t r = 0; r < hp; ++r)
      offsetRow(plane + r * wp, r - pt < 0 || r - pt >= h ? nullptr : xc + (r - pt) * w - pl, wp, q0, q1, pad, flip_byte);
    return;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t q = b * 64, n = std::min<int64_t>(64, wp - q);
    if (q1 > q && q0 < q + n) {
      const int64_t lo = std::max(q0, q) - q, hi = std::min(q1, q + n) - q;
      in[b] = (hi == 64 ? ~__mmask64{0} : (__mmask64{1} << hi) - 1) & ~((__mmask64{1} << lo) - 1);
    }
  }
  for (int64_t r = 0; r < hp; ++r) {
    uint8_t* row = plane + r * wp;
    const int64_t ih = r - pt;
    if (ih < 0 || ih >= h) {
      for (int64_t b = 0; b < blocks; ++b) _mm512_storeu_si512(row + b * 64, padv);
      continue;
    }
    // (plane column q is input column q - pl; the address is formed in integers: it may lie before the plane's start)
    const uintptr_t src = reinterpret_cast<uintptr_t>(xc) + static_cast<uintptr_t>(ih * w - pl);
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512i v = _mm512_maskz_loadu_epi8(in[b], reinterpret_cast<const void*>(src + static_cast<uintptr_t>(b * 64)));
      _mm512_storeu_si512(row + b * 64, _mm512_mask_blend_epi8(in[b], padv, _mm512_xor_si512(v, flip)));
    }
  }
}

/// 16 (or the first n) pixels of four rows as quads at d (4 n bytes; masked stores for a tail).
static inline void storeQuads(__m128i a, __m128i b, __m128i c, __m128i e, uint8_t* d, int64_t n) {
  const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
  const __m128i ce0 = _mm_unpacklo_epi8(c, e), ce1 = _mm_unpackhi_epi8(c, e);
  const __m128i q[4] = {_mm_unpacklo_epi16(ab0, ce0), _mm_unpackhi_epi16(ab0, ce0), _mm_unpacklo_epi16(ab1, ce1),
                        _mm_unpackhi_epi16(ab1, ce1)};
  for (int k = 0; k < 4; ++k) {
    const int64_t bytes = std::clamp<int64_t>(4 * n - 16 * k, 0, 16);
    if (bytes == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * k), q[k]);
    else if (bytes > 0) _mm_mask_storeu_epi8(d + 16 * k, static_cast<__mmask16>((1u << bytes) - 1u), q[k]);
  }
}

/// 16 (or the first n) bytes r[i * step], i < n, each XORed with `flip`: step 1 a plain load, step 2 the even bytes
/// of 32 (vpmovwb), others gathered. Masked loads read nothing past the last byte asked for.
static inline __m128i loadRow(const uint8_t* r, int64_t step, int64_t n, __m128i flip) {
  __m128i v;
  if (step == 1) {
    v = n >= 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r))
                : _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << n) - 1u), r);
  } else if (step == 2) {
    // (bytes 0 .. 2m - 2 for m = min(n, 16): never the byte after the last tap, which may lie past the tensor)
    const __m256i w = _mm256_maskz_loadu_epi8(static_cast<__mmask32>((uint64_t{1} << (2 * std::min<int64_t>(n, 16) - 1)) - 1u), r);
    v = _mm256_cvtepi16_epi8(w);
  } else {
    alignas(16) uint8_t t[16] = {};
    for (int64_t i = 0; i < std::min<int64_t>(n, 16); ++i) t[i] = r[i * step];
    v = _mm_load_si128(reinterpret_cast<const __m128i*>(t));
  }
  return _mm_xor_si128(v, flip);
}

/// An int8 row of K bytes as unsigned quads (x + 128: XOR 0x80) into q, zero from byte K up to 4 * k4 (quads past the
/// row meet zero weights); returns the sum of the unsigned bytes (sum x + 128 K).
static inline uint64_t unsignedQuadRow(const int8_t* x, int64_t K, int64_t k4, uint8_t* q) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)), zero = _mm512_setzero_si512();
  __m512i sad = zero;
  for (int64_t c = 0; 64 * c < K; ++c) {
    const int64_t n = std::min<int64_t>(64, K - 64 * c), room = std::min<int64_t>(64, 4 * k4 - 64 * c);
    const __mmask64 in = n == 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
    const __m512i v = _mm512_maskz_mov_epi8(in, _mm512_xor_si512(_mm512_maskz_loadu_epi8(in, x + 64 * c), flip));
    sad = _mm512_add_epi64(sad, _mm512_sad_epu8(v, zero));
    _mm512_mask_storeu_epi8(q + 64 * c, room == 64 ? ~__mmask64{0} : (__mmask64{1} << room) - 1, v);
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(sad));
}

/// Interleaves four byte rows into quads: d[4 i + j] = r_j[i * step] ^ flip, i < n.
static inline void interleave4(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2, const uint8_t* r3, int64_t n, int64_t step,
                 __m128i flip, uint8_t* d) {
  int64_t i = 0;
  if (step == 1) {
    // 64 pixels at a time: the unpacks work within 128-bit lanes (lane L of q[k] holds pixels 16 L + 4 k .. + 3),
    // then a 4 x 4 transpose of the lanes puts 16 consecutive pixels in each stored vector.
    const __m512i f = _mm512_broadcast_i32x4(flip);
    for (; i + 64 <= n; i += 64) {
      const __m512i a = _mm512_xor_si512(_mm512_loadu_si512(r0 + i), f), b = _mm512_xor_si512(_mm512_loadu_si512(r1 + i), f);
      const __m512i c = _mm512_xor_si512(_mm512_loadu_si512(r2 + i), f), e = _mm512_xor_si512(_mm512_loadu_si512(r3 + i), f);
      const __m512i ab0 = _mm512_unpacklo_epi8(a, b), ab1 = _mm512_unpackhi_epi8(a, b);
      const __m512i ce0 = _mm512_unpacklo_epi8(c, e), ce1 = _mm512_unpackhi_epi8(c, e);
      const __m512i q0 = _mm512_unpacklo_epi16(ab0, ce0), q1 = _mm512_unpackhi_epi16(ab0, ce0);
      const __m512i q2 = _mm512_unpacklo_epi16(ab1, ce1), q3 = _mm512_unpackhi_epi16(ab1, ce1);
      // t0 = lanes (q0.0, q0.1, q1.0, q1.1), t1 = (q2.0, q2.1, q3.0, q3.1), t2, t3 the same of lanes 2 and 3.
      const __m512i t0 = _mm512_shuffle_i64x2(q0, q1, _MM_SHUFFLE(1, 0, 1, 0)), t1 = _mm512_shuffle_i64x2(q2, q3, _MM_SHUFFLE(1, 0, 1, 0));
      const __m512i t2 = _mm512_shuffle_i64x2(q0, q1, _MM_SHUFFLE(3, 2, 3, 2)), t3 = _mm512_shuffle_i64x2(q2, q3, _MM_SHUFFLE(3, 2, 3, 2));
      _mm512_storeu_si512(d + 4 * i, _mm512_shuffle_i64x2(t0, t1, _MM_SHUFFLE(2, 0, 2, 0)));        // q0.0 q1.0 q2.0 q3.0
      _mm512_storeu_si512(d + 4 * i + 64, _mm512_shuffle_i64x2(t0, t1, _MM_SHUFFLE(3, 1, 3, 1)));   // q0.1 q1.1 q2.1 q3.1
      _mm512_storeu_si512(d + 4 * i + 128, _mm512_shuffle_i64x2(t2, t3, _MM_SHUFFLE(2, 0, 2, 0)));  // lane 2
      _mm512_storeu_si512(d + 4 * i + 192, _mm512_shuffle_i64x2(t2, t3, _MM_SHUFFLE(3, 1, 3, 1)));  // lane 3
    }
  }
  for (; i < n; i += 16) {
    const int64_t m = std::min<int64_t>(16, n - i), at = i * step;
    storeQuads(loadRow(r0 + at, step, m, flip), loadRow(r1 + at, step, m, flip), loadRow(r2 + at, step, m, flip),
               loadRow(r3 + at, step, m, flip), d + 4 * i, m);
  }
}

}  // namespace npuc::kernels::detail
