// AVX2 rows of yuvToRgbFast (x86/prepost_fast.cpp): 8 pixels (4 pairs) per step, the reference's integer
// arithmetic (ref/prepost_ref.cpp: yuvPixelToRgb) in 32-bit lanes, so every byte is the reference's. Compiled with
// -mavx2; called only when the CPU has it.
#include "kernels/ref/yuv_layout.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

int64_t yuvRowAvx2(const uint8_t* src, int64_t size, int64_t yrow_off, int64_t crow_off, const YuvLayoutDesc& d, int64_t pairs,
                   bool bgr, uint8_t* out) {
  // Gather masks (relative to the step's first pair): pixel i takes Y at (i/2)*y_pair + (i odd ? y1 : y0); pair j
  // takes U and V at j*c_pair from their own bases. All indices stay below 16 for 4 pairs.
  alignas(16) int8_t ym[16], cm[16];
  for (int i = 0; i < 16; ++i) ym[i] = cm[i] = -1;
  for (int i = 0; i < 8; ++i) ym[i] = static_cast<int8_t>((i / 2) * d.y_pair + (i % 2 ? d.y1 : d.y0));
  for (int j = 0; j < 4; ++j) cm[j] = static_cast<int8_t>(j * d.c_pair);  // one sample per pair (duplicated below)
  const __m128i ymask = _mm_load_si128(reinterpret_cast<const __m128i*>(ym)), cmask = _mm_load_si128(reinterpret_cast<const __m128i*>(cm));
  const __m256i k16 = _mm256_set1_epi32(16), k128 = _mm256_set1_epi32(128), zero = _mm256_setzero_si256();
  const __m256i cy = _mm256_set1_epi32(kCY), cvr = _mm256_set1_epi32(kCVR), cvg = _mm256_set1_epi32(kCVG), cug = _mm256_set1_epi32(kCUG),
                cub = _mm256_set1_epi32(kCUB), half = _mm256_set1_epi32(1 << (kShift - 1));
  // RGB24 interleave of 8 pixels from first = [a0..a7 g0..g7] and third = [c0..c7] (a, c = r, b or b, r).
  const __m128i m0a = _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
  const __m128i m0c = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  const __m128i m1a = _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i m1c = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  auto pack8 = [](__m256i v) {  // 8 int32 -> 8 uint8, saturating like sat8 (through int16, which holds every value)
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packus_epi16(w, w);
  };
  int64_t k = 0;
  for (; k + 4 <= pairs; k += 4) {
    const int64_t yo = yrow_off + k * d.y_pair, uo = crow_off + d.u + k * d.c_pair, vo = crow_off + d.v + k * d.c_pair;
    if (yo + 16 > size || uo + 16 > size || vo + 16 > size) break;  // the last loads would pass the frame's end
    __m128i yb = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + yo)), ymask);
    __m128i ub = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + uo)), cmask);
    __m128i vb = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + vo)), cmask);
    // Pixels 2j and 2j+1 share chroma j: duplicate the 4 chroma samples.
    const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, -1, -1, -1, -1, -1, -1, -1, -1);
    ub = _mm_shuffle_epi8(ub, dup);
    vb = _mm_shuffle_epi8(vb, dup);
    __m256i y = _mm256_cvtepu8_epi32(yb), u = _mm256_sub_epi32(_mm256_cvtepu8_epi32(ub), k128),
            v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(vb), k128);
    __m256i c = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_max_epi32(_mm256_sub_epi32(y, k16), zero), cy), half);
    __m256i r = _mm256_srai_epi32(_mm256_add_epi32(c, _mm256_mullo_epi32(cvr, v)), kShift);
    __m256i g = _mm256_srai_epi32(_mm256_add_epi32(c, _mm256_add_epi32(_mm256_mullo_epi32(cvg, v), _mm256_mullo_epi32(cug, u))), kShift);
    __m256i b = _mm256_srai_epi32(_mm256_add_epi32(c, _mm256_mullo_epi32(cub, u)), kShift);
    __m128i r8 = pack8(r), g8 = pack8(g), b8 = pack8(b);
    __m128i a = bgr ? b8 : r8, cc = bgr ? r8 : b8;
    __m128i ag = _mm_unpacklo_epi64(a, g8);
    __m128i o0 = _mm_or_si128(_mm_shuffle_epi8(ag, m0a), _mm_shuffle_epi8(cc, m0c));
    __m128i o1 = _mm_or_si128(_mm_shuffle_epi8(ag, m1a), _mm_shuffle_epi8(cc, m1c));
    uint8_t* o = out + k * 6;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), o0);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(o + 16), o1);
  }
  return k;
}

/// The column pass of resizeHwcFast (bilinear uint8): out[i] = sat8((((q0 * (t0[i] >> 4)) >> 16) +
/// ((q1 * (t1[i] >> 4)) >> 16) + 2) >> 2), the reference's fixed point, 8 values per step; n a multiple of 8.
void resizeColumnAvx2(const int32_t* t0, const int32_t* t1, int32_t q0, int32_t q1, int64_t n, uint8_t* out) {
  const __m256i w0 = _mm256_set1_epi32(q0), w1 = _mm256_set1_epi32(q1), two = _mm256_set1_epi32(2);
  for (int64_t i = 0; i < n; i += 8) {
    __m256i a = _mm256_srai_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t0 + i)), 4);
    __m256i b = _mm256_srai_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t1 + i)), 4);
    __m256i v = _mm256_add_epi32(_mm256_srai_epi32(_mm256_mullo_epi32(w0, a), 16), _mm256_srai_epi32(_mm256_mullo_epi32(w1, b), 16));
    v = _mm256_srai_epi32(_mm256_add_epi32(v, two), 2);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(w, w));
  }
}

}  // namespace npuc::kernels::detail
