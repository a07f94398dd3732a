// Portable GEMM microkernels f32_gemm__scalar_6x16 / _6x8: the same tile contract as the AVX2 kernel, with
// std::fma (exact), for CPUs without AVX2/FMA and for tests that force the portable path.
#include "kernels/x86/kernel_table.hpp"

#include <cmath>

namespace npuc::kernels::detail {

namespace {

template <int64_t kCols>
void tile(const MicroArgs& p, const float* a_panel, float* c, const float* bias) {
  float acc[kMR][kCols];
  for (int64_t i = 0; i < kMR; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      switch (p.init) {
        case TileInit::kZero: acc[i][j] = 0.0f; break;
        case TileInit::kRowBias: acc[i][j] = bias[i]; break;
        case TileInit::kColBias: acc[i][j] = bias[j]; break;
        case TileInit::kLoadC: acc[i][j] = c[i * p.ldc + j]; break;
      }
    }
  }
  for (int64_t k = 0; k < p.kc; ++k) {
    const float* a = a_panel + k * kMR;
    const float* b = p.b_off != nullptr ? p.b + p.b_off[k] : p.b + k * kNR;  // direct B: shifted rows
    for (int64_t i = 0; i < kMR; ++i) {
      for (int64_t j = 0; j < kCols; ++j) acc[i][j] = std::fma(a[i], b[j], acc[i][j]);
    }
  }
  for (int64_t i = 0; i < kMR; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      c[i * p.ldc + j] = p.act != nullptr ? applyActivation(acc[i][j], *p.act) : acc[i][j];
    }
  }
}

template <int64_t kCols>
void tiles(const MicroArgs& p) {
  for (int64_t i = 0; i < p.panels; ++i) {
    tile<kCols>(p, p.a + i * p.a_stride, p.c + i * kMR * p.ldc,
                p.init == TileInit::kRowBias ? p.bias + i * kMR : p.bias);
  }
}

}  // namespace

void f32_gemm__scalar_6x16(const MicroArgs& p) { tiles<kNR>(p); }
void f32_gemm__scalar_6x8(const MicroArgs& p) { tiles<8>(p); }

}  // namespace npuc::kernels::detail

namespace npuc::kernels::detail {

void f32_gemv_packed__scalar(const float* a, int64_t panels, int64_t K, const float* x, const float* init,
                             float* out) {
  for (int64_t p = 0; p < panels; ++p) {
    const float* ap = a + p * K * kMR;
    float acc[kMR];
    for (int64_t i = 0; i < kMR; ++i) acc[i] = init != nullptr ? init[p * kMR + i] : 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t i = 0; i < kMR; ++i) acc[i] = std::fma(ap[k * kMR + i], x[k], acc[i]);
    }
    for (int64_t i = 0; i < kMR; ++i) out[p * kMR + i] = acc[i];
  }
}

void f32_gemv_row__scalar(const float* x, const float* B, int64_t ldb, int64_t K, int64_t N, const float* init,
                          float init0, float* out) {
  for (int64_t n = 0; n < N; ++n) out[n] = init != nullptr ? init[n] : init0;
  for (int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    for (int64_t n = 0; n < N; ++n) out[n] = std::fma(x[k], b[n], out[n]);
  }
}

}  // namespace npuc::kernels::detail

namespace npuc::kernels::detail {

void f32_gemm_cols__scalar(const MicroArgs& p) {
  for (int64_t pi = 0; pi < p.panels; ++pi) {
    const int64_t mr = pi + 1 == p.panels ? p.mr_last : kMR;
    const float* a = p.a + pi * p.a_stride;
    for (int64_t i = 0; i < mr; ++i) {
      float* c = p.c + (pi * kMR + i) * p.ldc;
      for (int64_t j = 0; j < p.nr; ++j) {
        float acc = 0.0f;
        switch (p.init) {
          case TileInit::kZero: break;
          case TileInit::kRowBias: acc = p.bias[pi * kMR + i]; break;
          case TileInit::kColBias: acc = p.bias[j]; break;
          case TileInit::kLoadC: acc = c[j]; break;
        }
        for (int64_t k = 0; k < p.kc; ++k) acc = std::fma(a[k * kMR + i], p.b[k * kNR + j], acc);
        c[j] = p.act != nullptr ? applyActivation(acc, *p.act) : acc;
      }
    }
  }
}

}  // namespace npuc::kernels::detail
