// The int8 look-up table on AVX2 (kernels/quant.hpp, qlookup; chosen at run time by kernels/x86/qlookup.cpp where the
// CPU has AVX2 but not AVX-512 VBMI): qlookup_ref's bytes, 32 codes at a time with byte shuffles. The table's index
// is u = x + 128. Each half of the table (u < 128, u >= 128) is eight 16-byte blocks; a block's vpshufb of index
// u - 16 h gives block h's entry where u lies in it, 0 where u - 16 h is negative (bit 7 set) and block h's entry at
// u's low bits where u lies further up, so the blocks are XOR-ed as differences (block h XOR block h - 1): their XOR
// up to u's block telescopes to that block's entry. vpblendvb picks the half by u's bit 7.
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

void qlookupAvx2(int64_t n, const int8_t* x, const int8_t* table, int8_t* y) {
  __m256i diff[2][8];  // [half][block]: block h of the half XOR block h - 1 (block 0 as it is), in both lanes
  for (int half = 0; half < 2; ++half)
    for (int h = 0; h < 8; ++h) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 128 * half + 16 * h));
      const __m128i prev = h == 0 ? _mm_setzero_si128() : _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 128 * half + 16 * (h - 1)));
      diff[half][h] = _mm256_broadcastsi128_si256(_mm_xor_si128(b, prev));
    }
  const __m256i bias = _mm256_set1_epi8(-128), step = _mm256_set1_epi8(16), low7 = _mm256_set1_epi8(0x7f);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), bias);  // x + 128
    __m256i r[2];
    for (int half = 0; half < 2; ++half) {
      __m256i idx = _mm256_and_si256(u, low7);  // u within its half: 0..127
      __m256i acc = _mm256_shuffle_epi8(diff[half][0], idx);
      for (int h = 1; h < 8; ++h) {
        idx = _mm256_sub_epi8(idx, step);
        acc = _mm256_xor_si256(acc, _mm256_shuffle_epi8(diff[half][h], idx));
      }
      r[half] = acc;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_blendv_epi8(r[0], r[1], u));
  }
  for (; i < n; ++i) y[i] = table[static_cast<uint8_t>(x[i] + 128)];
}

}  // namespace npuc::kernels::detail
