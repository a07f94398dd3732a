// The int8 recurrent form's integer sums (recurrent.hpp: detail::QRows) on AVX-512 VNNI, vectorised across rows:
// m packed once into blocks of 16 rows by 4 columns ([block][k / 4][16 rows][4]), v made unsigned (v + 128, one
// broadcast quad per 4 columns), vpdpbusd into 16 int32 row sums; then Σ (v − z) · m = Σ (v + 128) · m − (128 + z) ·
// Σ m (each row's sum of m kept from the packing). Exact in int32 (|v + 128| ≤ 255, |m| ≤ 127, k ≤ 65536): the
// reference's values.
// (GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized: GCC bug 105593, see quant_avx512.hpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/recurrent.hpp"

#include <cstring>
#include <memory>

namespace npuc::kernels::detail {

namespace {

class QRowsVnni : public QRows {
 public:
  QRowsVnni(const int8_t* m, int64_t rows, int64_t k)
      : rows_(rows), k_(k), k4_((k + 3) / 4), blocks_((rows + 15) / 16),
        packed_(new int8_t[static_cast<size_t>(blocks_ * k4_ * 64)]()), rowsum_(new int32_t[static_cast<size_t>(blocks_ * 16)]()) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const int8_t v = m[r * k + c];
        packed_[static_cast<size_t>(((r / 16) * k4_ + c / 4) * 64 + (r % 16) * 4 + c % 4)] = v;
        rowsum_[static_cast<size_t>(r)] += v;
      }
  }
  void sums(const int8_t* v, int32_t z, int32_t* out) const override {
    thread_local std::unique_ptr<uint8_t[]> u;
    thread_local size_t u_size = 0;
    if (u_size < static_cast<size_t>(k4_ * 4)) u.reset(new uint8_t[u_size = static_cast<size_t>(k4_ * 4)]);
    std::memset(u.get(), 128, static_cast<size_t>(k4_ * 4));  // (columns past k: their packed weights are 0)
    for (int64_t c = 0; c < k_; ++c) u[static_cast<size_t>(c)] = static_cast<uint8_t>(v[c] + 128);
    const __m512i corr = _mm512_set1_epi32(128 + z);
    constexpr int kChains = 8;  // row blocks summed side by side: independent vpdpbusd chains (its latency, not one chain)
    for (int64_t b0 = 0; b0 < blocks_; b0 += kChains) {
      const int nb = static_cast<int>(blocks_ - b0 < kChains ? blocks_ - b0 : kChains);
      __m512i acc[kChains];
      for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_si512();
      for (int64_t q = 0; q < k4_; ++q) {
        int32_t quad;
        std::memcpy(&quad, u.get() + 4 * q, 4);
        const __m512i bq = _mm512_set1_epi32(quad);
#pragma GCC unroll 8
        for (int i = 0; i < kChains; ++i)
          if (i < nb) acc[i] = _mm512_dpbusd_epi32(acc[i], bq, _mm512_loadu_si512(packed_.get() + ((b0 + i) * k4_ + q) * 64));
      }
      for (int i = 0; i < nb; ++i) {
        const int64_t b = b0 + i;
        const __m512i y = _mm512_sub_epi32(acc[i], _mm512_mullo_epi32(corr, _mm512_loadu_si512(rowsum_.get() + 16 * b)));
        const int64_t n = rows_ - 16 * b < 16 ? rows_ - 16 * b : 16;
        _mm512_mask_storeu_epi32(out + 16 * b, static_cast<__mmask16>((1u << n) - 1u), y);
      }
    }
  }

 private:
  int64_t rows_, k_, k4_, blocks_;
  // (arrays, not std::vector: a vector's out-of-line members instantiated in this AVX-512 file are weak symbols the
  // linker may pick for the whole program — the sanitizer build ran vector<int8_t>::assign's AVX-512 copy on an
  // AVX2-only CPU: SIGILL)
  std::unique_ptr<int8_t[]> packed_;
  std::unique_ptr<int32_t[]> rowsum_;
};

}  // namespace

std::unique_ptr<QRows> makeQRowsVnni(const int8_t* m, int64_t rows, int64_t k) { return std::make_unique<QRowsVnni>(m, rows, k); }

}  // namespace npuc::kernels::detail
