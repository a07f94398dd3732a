// Dispatch of the buffer conversions (F16C when the CPU has it and the ISA cap allows AVX2, else the reference) and
// of the exact-mode convolution (the reference's loops compiled with hardware FMA when the CPU has it).
#include "kernels/convert.hpp"

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "support/thread_pool.hpp"

namespace npuc::kernels {

void conv_rows_fma(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act, float* y);

void conv_exact(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act, float* y) {
  static const bool fma = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  }();
  if (s.in_spatial.size() > 2) conv_ref(s, x, w, bias, act, y);
  else if (fma) conv_rows_fma(s, x, w, bias, act, y);
  else conv_rows_ref(s, x, w, bias, act, y);
}

namespace detail {
void f16ToF32__f16c(const uint16_t* x, float* y, int64_t n);
void f32ToF16__f16c(const float* x, uint16_t* y, int64_t n, const Activation& act);
}  // namespace detail

namespace {

// The AVX kernel tables require F16C (x86/dispatch.cpp); the ISA cap of tests and benchmarks applies.
bool useF16c() { return detail::activeF16c(); }

constexpr int64_t kGrain = 16384;  // elements per task: conversions are memory-bound

}  // namespace

void f16ToF32(const uint16_t* x, float* y, int64_t n, ThreadPool* pool) {
  auto body = [&](int64_t b, int64_t e) {
    if (useF16c()) detail::f16ToF32__f16c(x + b, y + b, e - b);
    else f16ToF32_ref(x + b, y + b, e - b);
  };
  if (pool && pool->size() > 1 && n > 2 * kGrain) pool->parallelFor(n, body, kGrain);
  else body(0, n);
}

void f32ToF16(const float* x, uint16_t* y, int64_t n, const Activation& act, ThreadPool* pool) {
  auto body = [&](int64_t b, int64_t e) {
    if (useF16c()) detail::f32ToF16__f16c(x + b, y + b, e - b, act);
    else f32ToF16_ref(x + b, y + b, e - b, act);
  };
  if (pool && pool->size() > 1 && n > 2 * kGrain) pool->parallelFor(n, body, kGrain);
  else body(0, n);
}

}  // namespace npuc::kernels
