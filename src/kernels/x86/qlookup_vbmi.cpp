// The int8 look-up table on AVX-512 VBMI (kernels/quant.hpp, qlookup): per 64 codes, the index x + 128 (the sign bit
// flipped) picks from the table's first 128 bytes with one two-register byte permute and from its last 128 with
// another; the index's top bit chooses between them. The tail is the reference loop.
#include "kernels/quant.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <immintrin.h>

namespace npuc::kernels::detail {

void qlookupVbmi(int64_t n, const int8_t* x, const int8_t* table, int8_t* y) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64), t2 = _mm512_loadu_si512(table + 128),
                t3 = _mm512_loadu_si512(table + 192);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i idx = _mm512_xor_si512(_mm512_loadu_si512(x + i), flip);  // x + 128 as an unsigned byte
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1), hi = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi));
  }
  qlookup_ref(n - i, x + i, table, y + i);
}

}  // namespace npuc::kernels::detail
