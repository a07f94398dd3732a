// MaxPool over int8 codes, AVX2 (chosen at run time by kernels/x86/quantize.cpp's dispatch, which splits the planes
// among threads and owns the scratch row buffer): maxPool2dI8's bytes, the AVX-512 form (pool_i8_avx512.cpp) in
// vectors of 32, 16 or 8 bytes, the widest that fits the row. Rows first: the window's input rows reduced with
// vpmaxsb into a row padded with -128 on both sides (padding never wins); then columns: stride 1 reads the padded row
// at the taps' offsets, stride 2 the same with the outputs in the even bytes, other strides one by one. A row's last
// columns are one more vector ending at its end (overlapping the one before: the same bytes again), or byte by byte
// where the row is narrower than 8, so no load passes the input and no store passes the row. Stride-1 pools on
// planes narrower than 32 bytes go flat instead (MaxPoolI8Flat, quant_x86.hpp: a padded copy of the plane, 32
// outputs per vector; the dispatch sizes the buffer, so nothing here instantiates a library template).
// Max is exact: any order, same bytes.
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {

inline int8_t max8(int8_t a, int8_t b) { return a > b ? a : b; }

/// Vectors of W bytes (32, 16 or 8: the low half of an SSE register).
template <int W>
struct Bytes {
  using V = __m128i;
  static V load(const int8_t* p) {
    return W == 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)) : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  }
  static void store(int8_t* p, V v) {
    if (W == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
    else _mm_storel_epi64(reinterpret_cast<__m128i*>(p), v);
  }
  static V max(V a, V b) { return _mm_max_epi8(a, b); }
  static V lowest() { return _mm_set1_epi8(-128); }
  /// The even bytes of 2W bytes at p (stride-2 outputs), as W bytes.
  static V evens(const int8_t* p) {
    const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
    if (W == 8) return _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), even);
    const __m128i a = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), even);
    const __m128i b = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)), even);
    return _mm_unpacklo_epi64(a, b);
  }
};
template <>
struct Bytes<32> {
  using V = __m256i;
  static V load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(int8_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V max(V a, V b) { return _mm256_max_epi8(a, b); }
  static V lowest() { return _mm256_set1_epi8(-128); }
};

/// fn(c) for c = 0, W, 2W, … over n >= W columns, the last one n - W (overlapping the one before it).
template <int W, class F>
void overlapping(int64_t n, F&& fn) {
  for (int64_t next = 0; next < n; next += W) fn(next + W <= n ? next : n - W);
}

/// Row oy's window rows reduced into r (the padded row at column 0 of the input), W columns at a time.
template <int W>
void reduceRows(const Pool2dShape& s, const int8_t* xp, int64_t oy, int8_t* r) {
  using B = Bytes<W>;
  overlapping<W>(s.iw, [&](int64_t c) {
    auto m = B::lowest();
    for (int64_t i = 0; i < s.kh; ++i) {
      const int64_t iy = oy * s.sh - s.pt + i * s.dh;
      if (iy >= 0 && iy < s.ih) m = B::max(m, B::load(xp + iy * s.iw + c));
    }
    B::store(r + c, m);
  });
}

/// Outputs [0, ow) of a reduced row, W at a time. Stride 1 reads the row at the taps' offsets; stride 2: column
/// 2 ox + t is byte 2 ox + t of the row, so the byte-wise max of the taps' 2W-byte loads holds output ox in its even
/// byte (reads up to span + 2W bytes of the row: inside its padding; W = 16 or 8).
template <int W, int S>
void columns(const Pool2dShape& s, const int8_t* row, int8_t* yr) {
  using B = Bytes<W>;
  overlapping<W>(s.ow, [&](int64_t ox) {
    auto m = B::lowest();
    for (int64_t j = 0; j < s.kw; ++j) {
      const int8_t* at = row + S * ox + j * s.dw;
      if constexpr (S == 1) m = B::max(m, B::load(at));
      else m = _mm_max_epi8(m, B::evens(at));
    }
    B::store(yr + ox, m);
  });
}

/// Copies n < 32 bytes with at most two overlapping loads and stores of 16, 8, 4 or 2 bytes (no byte outside
/// [src, src + n) read, none outside [dst, dst + n) written; memcpy's call was most of a 14x14 plane's time).
inline void copyShort(int8_t* dst, const int8_t* src, int64_t n) {
  auto two = [&](auto word) {
    using T = decltype(word);
    T a, b;
    __builtin_memcpy(&a, src, sizeof(T));
    __builtin_memcpy(&b, src + n - static_cast<int64_t>(sizeof(T)), sizeof(T));
    __builtin_memcpy(dst, &a, sizeof(T));
    __builtin_memcpy(dst + n - static_cast<int64_t>(sizeof(T)), &b, sizeof(T));
  };
  if (n >= 16) two(__m128i{});
  else if (n >= 8) two(uint64_t{});
  else if (n >= 4) two(uint32_t{});
  else if (n >= 2) two(uint16_t{});
  else if (n == 1) *dst = *src;
}

/// Stride 1 on planes narrower than a 32-byte vector (GoogLeNet's 14x14 and 7x7 branch pools; MaxPoolI8Flat): each
/// plane copied into the padded plane xp (all -128 where the input is not copied), then every output of the plane at
/// once, 32 at a time, into out (nv * 32 bytes; the columns ow >= out_w of each padded row are computed and dropped).
/// The row by row form spent most of its time on vectors of 8 bytes, and on rows narrower than 8 one byte at a time.
void maxPlanesFlat(const Pool2dShape& s, const MaxPoolI8Flat& f, const int8_t* x, int8_t* y, int64_t p0, int64_t p1,
                   int8_t* xp, int8_t* out) {
  const int64_t taps = s.kh * s.kw;
  int64_t off[64];
  for (int64_t i = 0; i < s.kh; ++i)
    for (int64_t j = 0; j < s.kw; ++j) off[i * s.kw + j] = i * s.dh * f.pw + j * s.dw;
  for (int64_t pl = p0; pl < p1; ++pl) {
    const int8_t* xs = x + pl * s.ih * s.iw;
    for (int64_t r = 0; r < s.ih; ++r) copyShort(xp + (s.pt + r) * f.pw + s.pl, xs + r * s.iw, s.iw);  // (pw >= pl + iw)
    for (int64_t v = 0; v < f.nv; ++v) {
      const int8_t* base = xp + v * 32;
      __m256i m = _mm256_set1_epi8(-128);
      for (int64_t t = 0; t < taps; ++t)
        m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + off[t])));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + v * 32), m);
    }
    int8_t* yp = y + pl * s.oh * s.ow;
    for (int64_t oh = 0; oh < s.oh; ++oh) copyShort(yp + oh * s.ow, out + oh * f.pw, s.ow);
  }
}

}  // namespace

void maxPool2dI8Avx2(const Pool2dShape& s, const int8_t* x, int8_t* y, int64_t p0, int64_t p1, int64_t width, int8_t* buf,
                     const MaxPoolI8Flat* flat) {
  if (flat != nullptr) return maxPlanesFlat(s, *flat, x, y, p0, p1, buf, buf + flat->size);
  for (int64_t pl = p0; pl < p1; ++pl) {
    const int8_t* xp = x + pl * s.ih * s.iw;
    int8_t* yp = y + pl * s.oh * s.ow;
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      int8_t* r = buf + oy * width + s.pl;
      if (s.iw >= 32) reduceRows<32>(s, xp, oy, r);
      else if (s.iw >= 16) reduceRows<16>(s, xp, oy, r);
      else if (s.iw >= 8) reduceRows<8>(s, xp, oy, r);
      else
        for (int64_t c = 0; c < s.iw; ++c) {
          int8_t m = -128;
          for (int64_t i = 0; i < s.kh; ++i) {
            const int64_t iy = oy * s.sh - s.pt + i * s.dh;
            if (iy >= 0 && iy < s.ih) m = max8(m, xp[iy * s.iw + c]);
          }
          r[c] = m;
        }
    }
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      const int8_t* row = buf + oy * width;
      int8_t* yr = yp + oy * s.ow;
      if (s.sw == 1 && s.ow >= 32) columns<32, 1>(s, row, yr);
      else if (s.sw == 1 && s.ow >= 16) columns<16, 1>(s, row, yr);
      else if (s.sw == 1 && s.ow >= 8) columns<8, 1>(s, row, yr);
      else if (s.sw == 2 && s.ow >= 16) columns<16, 2>(s, row, yr);
      else if (s.sw == 2 && s.ow >= 8) columns<8, 2>(s, row, yr);
      else if (s.sw == 2) {
        // Fewer than 8 outputs (GoogLeNet's 2x2 stride-2 pool to 7x7): one vector of 8 from the row's 16 + taps
        // bytes (inside its -128 margin of 128), the first ow stored.
        __m128i m = _mm_set1_epi8(-128);
        for (int64_t j = 0; j < s.kw; ++j) m = _mm_max_epi8(m, Bytes<8>::evens(row + j * s.dw));
        alignas(16) int8_t lanes[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(lanes), m);
        copyShort(yr, lanes, s.ow);
      } else
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          int8_t m = -128;
          for (int64_t j = 0; j < s.kw; ++j) m = max8(m, row[ox * s.sw + j * s.dw]);
          yr[ox] = m;
        }
    }
  }
}

}  // namespace npuc::kernels::detail
