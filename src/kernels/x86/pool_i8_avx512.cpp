// MaxPool over int8 codes, AVX-512BW (chosen at run time by kernels/x86/quantize.cpp's dispatch): maxPool2dI8's
// bytes. Rows first: the window's input rows reduced with vpmaxsb, 64 columns at a time, into a row padded with -128
// on both sides (padding never wins); then columns: stride 1 reads the padded row at the taps' offsets, stride 2 the
// same as 16-bit words whose low bytes are the outputs (vpmovwb), other strides gather. Max is exact, so any order gives the same bytes.
#include "kernels/x86/quant_avx512.hpp"
#include "kernels/x86/quant_x86.hpp"
#include "kernels/ref/parallel_units.hpp"

#include <algorithm>
#include <cstring>

namespace npuc::kernels::detail {

namespace {

inline __mmask64 first(int64_t n) { return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1; }

}  // namespace

void maxPool2dI8Avx512(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool) {
  // A padded row: pl columns of -128, the input's iw, then enough -128 for the last window and a vector's overrun.
  const int64_t span = (s.ow - 1) * s.sw + (s.kw - 1) * s.dw + 1;
  const int64_t width = std::max(s.pl + s.iw, span) + 128;
  parallelUnits(pool, s.planes, s.oh * s.ow * s.kh * s.kw, [&](int64_t p0, int64_t p1) {
    // Every output row's reduced row first, then the columns: a column load right after the (masked, unaligned)
    // stores it overlaps would wait for them to retire instead of taking their data forwarded.
    int8_t* const buf = reinterpret_cast<int8_t*>(int8Scratch(7, static_cast<size_t>(s.oh * width)));  // (this worker's)
    std::memset(buf, 0x80, static_cast<size_t>(s.oh * width));  // -128: the padding
    const __m512i lowest = _mm512_set1_epi8(-128);
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int8_t* xp = x + pl * s.ih * s.iw;
      int8_t* yp = y + pl * s.oh * s.ow;
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        int8_t* r = buf + oy * width + s.pl;
        for (int64_t c = 0; c < s.iw; c += 64) {
          const __mmask64 k = first(s.iw - c);
          __m512i m = lowest;
          for (int64_t i = 0; i < s.kh; ++i) {
            const int64_t iy = oy * s.sh - s.pt + i * s.dh;
            if (iy >= 0 && iy < s.ih) m = _mm512_max_epi8(m, _mm512_maskz_loadu_epi8(k, xp + iy * s.iw + c));
          }
          _mm512_mask_storeu_epi8(r + c, k, m);
        }
      }
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        const int8_t* row = buf + oy * width;
        int8_t* yr = yp + oy * s.ow;
        if (s.sw == 1) {
          for (int64_t ox = 0; ox < s.ow; ox += 64) {
            __m512i m = lowest;
            for (int64_t j = 0; j < s.kw; ++j) m = _mm512_max_epi8(m, _mm512_loadu_si512(row + ox + j * s.dw));
            _mm512_mask_storeu_epi8(yr + ox, first(s.ow - ox), m);
          }
        } else if (s.sw == 2) {
          // Column 2 ox + t is the low byte of the 16-bit word ox of the row read from byte t: the byte-wise max of
          // the taps' loads holds every output in a word's low byte, packed 32 at a time (vpmovwb). (Reads up to
          // span + 64 bytes of the row: inside its padding.)
          for (int64_t ox = 0; ox < s.ow; ox += 32) {
            __m512i m = lowest;
            for (int64_t j = 0; j < s.kw; ++j) m = _mm512_max_epi8(m, _mm512_loadu_si512(row + 2 * ox + j * s.dw));
            _mm256_mask_storeu_epi8(yr + ox, static_cast<__mmask32>(first(std::min<int64_t>(32, s.ow - ox))), _mm512_cvtepi16_epi8(m));
          }
        } else {
          for (int64_t ox = 0; ox < s.ow; ++ox) {
            int8_t m = -128;
            for (int64_t j = 0; j < s.kw; ++j) m = std::max(m, row[ox * s.sw + j * s.dw]);
            yr[ox] = m;
          }
        }
      }
    }
  });
}

}  // namespace npuc::kernels::detail
