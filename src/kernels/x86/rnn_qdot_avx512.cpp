// The int8 recurrent form's integer sums (recurrent.hpp: detail::QRows) on AVX-512 without VNNI (compiled with
// -mavx512f -mavx512bw): per row Σ (v[k] − z) · m[k], v widened to int16 once per call, m 32 bytes at a time widened
// to int16, pairs multiplied and added into int32 (vpmaddwd: exact, |(v − z) · m| ≤ 255 · 127), the lanes added at the
// end. Integer sums: the reference's values, whatever the order.
// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/recurrent.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <cstring>

namespace npuc::kernels::detail {

namespace {

class QRowsAvx512 : public QRows {
 public:
  QRowsAvx512(const int8_t* m, int64_t rows, int64_t k) : m_(m), rows_(rows), k_(k) {}
  void sums(const int8_t* v, int32_t z, int32_t* out) const override {
    const int64_t chunks = (k_ + 31) / 32;
    int16_t* const vs = reinterpret_cast<int16_t*>(int8Scratch(8, static_cast<size_t>(chunks * 32) * 2));
    std::memset(vs, 0, static_cast<size_t>(chunks * 32) * 2);
    for (int64_t k = 0; k < k_; ++k) vs[k] = static_cast<int16_t>(v[k] - z);
    const __mmask32 tail = k_ % 32 == 0 ? ~__mmask32{0} : (__mmask32{1} << (k_ % 32)) - 1;
    for (int64_t r = 0; r < rows_; ++r) {
      const int8_t* mr = m_ + r * k_;
      __m512i acc = _mm512_setzero_si512();
      for (int64_t c = 0; c < chunks; ++c) {
        const __mmask32 msk = c + 1 == chunks ? tail : ~__mmask32{0};
        const __m512i mv = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(msk, mr + 32 * c));
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(mv, _mm512_loadu_si512(vs + 32 * c)));
      }
      out[r] = _mm512_reduce_add_epi32(acc);
    }
  }

 private:
  const int8_t* m_;
  int64_t rows_, k_;
};

}  // namespace

std::unique_ptr<QRows> makeQRowsAvx512(const int8_t* m, int64_t rows, int64_t k) { return std::make_unique<QRowsAvx512>(m, rows, k); }

}  // namespace npuc::kernels::detail
