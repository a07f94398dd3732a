// MaxPool over int8 codes, AVX2 (chosen at run time by kernels/x86/quantize.cpp's dispatch, which splits the planes
// among threads and owns the scratch row buffer): maxPool2dI8's bytes, the AVX-512 form (pool_i8_avx512.cpp) 32
// columns at a time. Rows first: the window's input rows reduced with vpmaxsb into a row padded with -128 on both
// sides (padding never wins); then columns: stride 1 reads the padded row at the taps' offsets, stride 2 the same
// with the outputs in the even bytes, other strides one by one. A row's last columns are one more vector ending at its
// end (overlapping the one before: the same bytes again), or byte by byte where the row is narrower than a vector,
// so no load passes the input and no store passes the row. Max is exact: any order, same bytes.
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

namespace {
inline int8_t max8(int8_t a, int8_t b) { return a > b ? a : b; }
}  // namespace

void maxPool2dI8Avx2(const Pool2dShape& s, const int8_t* x, int8_t* y, int64_t p0, int64_t p1, int64_t width, int8_t* buf) {
  const __m256i lowest = _mm256_set1_epi8(-128);
  const __m256i even = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1, 0, 2, 4, 6, 8, 10,
                                        12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  for (int64_t pl = p0; pl < p1; ++pl) {
    const int8_t* xp = x + pl * s.ih * s.iw;
    int8_t* yp = y + pl * s.oh * s.ow;
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      int8_t* r = buf + oy * width + s.pl;
      int64_t c = 0;
      for (int64_t next = 0; next < s.iw && s.iw >= 32; next += 32) {
        c = next + 32 <= s.iw ? next : s.iw - 32;
        __m256i m = lowest;
        for (int64_t i = 0; i < s.kh; ++i) {
          const int64_t iy = oy * s.sh - s.pt + i * s.dh;
          if (iy >= 0 && iy < s.ih)
            m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xp + iy * s.iw + c)));
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(r + c), m);
        c = s.iw;
      }
      for (; c < s.iw; ++c) {
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
      int64_t ox = 0;
      if (s.sw == 1) {
        for (int64_t next = 0; next < s.ow && s.ow >= 32; next += 32) {
          ox = next + 32 <= s.ow ? next : s.ow - 32;
          __m256i m = lowest;
          for (int64_t j = 0; j < s.kw; ++j)
            m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + ox + j * s.dw)));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + ox), m);
          ox = s.ow;
        }
      } else if (s.sw == 2) {
        // Column 2 ox + t is byte 2 ox + t of the row: the byte-wise max of the taps' 32-byte loads holds output ox
        // in its even byte (reads up to span + 32 bytes of the row: inside its padding).
        for (int64_t next = 0; next < s.ow && s.ow >= 16; next += 16) {
          ox = next + 16 <= s.ow ? next : s.ow - 16;
          __m256i m = lowest;
          for (int64_t j = 0; j < s.kw; ++j)
            m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * ox + j * s.dw)));
          const __m256i e = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(m, even), 0x08);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + ox), _mm256_castsi256_si128(e));
          ox = s.ow;
        }
      }
      for (; ox < s.ow; ++ox) {
        int8_t m = -128;
        for (int64_t j = 0; j < s.kw; ++j) m = max8(m, row[ox * s.sw + j * s.dw]);
        yr[ox] = m;
      }
    }
  }
}

}  // namespace npuc::kernels::detail
