// AVX2 packing of a pointwise product's B from a channel-blocked input (Layout::kBlocked8), compiled with -mavx2
// -mfma -mf16c: f32_pack_b_blocked8__avx2 (kernel_table.hpp, PackBlockedKernel). Eight positions of one 8-channel
// block are eight vectors; transposed in registers they are eight B rows of eight columns each, stored into the
// kNR-wide panels where the planes' packer (conv.cpp, scatterRow) puts the same values. Only values move: the
// product over the packed B is the one over planes, bit for bit.
#include "kernels/x86/kernel_table.hpp"
#include "kernels/x86/lanes_avx2.hpp"

#include <immintrin.h>

#include <algorithm>

namespace npuc::kernels::detail {

void f32_pack_b_blocked8__avx2(const PackBlockedArgs& p) {
  const int64_t kc = p.kc, nc = p.nc;
  const int64_t n8 = nc / 8 * 8;
  for (int64_t kl = 0; kl < kc;) {
    const int64_t k = p.k0 + kl;
    const int64_t l0 = k % 8, rows = std::min<int64_t>(8 - l0, kc - kl);  // lanes l0 .. l0 + rows - 1 of block k / 8
    const float* src = p.x + (k / 8) * 8 * p.hw + p.n0 * 8;
    for (int64_t n = 0; n < n8; n += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + (n + i) * 8);
      transpose8(r);  // r[l]: lane l of positions n .. n + 7
      float* d = p.dst + ((n / kNR) * kc + kl) * kNR + n % kNR;
      for (int64_t l = 0; l < rows; ++l) _mm256_storeu_ps(d + l * kNR, r[l0 + l]);
    }
    for (int64_t n = n8; n < nc; ++n) {
      float* d = p.dst + ((n / kNR) * kc + kl) * kNR + n % kNR;
      for (int64_t l = 0; l < rows; ++l) d[l * kNR] = src[n * 8 + l0 + l];
    }
    kl += rows;
  }
  // The last panel's columns past nc are zeros.
  if (const int64_t rem = nc % kNR; rem > 0) {
    float* d = p.dst + (nc / kNR) * kc * kNR;
    for (int64_t kl = 0; kl < kc; ++kl)
      for (int64_t j = rem; j < kNR; ++j) d[kl * kNR + j] = 0.0f;
  }
}

}  // namespace npuc::kernels::detail
