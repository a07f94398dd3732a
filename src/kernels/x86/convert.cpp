// Dispatch of the buffer conversions (F16C when the CPU has it and the ISA cap allows AVX2, else the reference) and
// of the exact-mode convolution (the reference's loops compiled with hardware FMA when the CPU has it).
#include "kernels/convert.hpp"

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"
#include "kernels/x86/gemm_driver.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "support/thread_pool.hpp"

#include <algorithm>

namespace npuc::kernels {

void conv_rows_fma(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act, float* y);

void conv_exact(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act, float* y,
                ThreadPool* pool) {
  static const bool fma = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  }();
  auto one = [&](const ConvShape& t, const float* xt, const float* wt, const float* bt, float* yt) {
    if (t.in_spatial.size() > 2) conv_ref(t, xt, wt, bt, act, yt);
    else if (fma) conv_rows_fma(t, xt, wt, bt, act, yt);
    else conv_rows_ref(t, xt, wt, bt, act, yt);
  };
  const int threads = pool != nullptr ? pool->size() : 1;
  const int64_t cg = s.groups > 0 ? s.in_channels / s.groups : 0, mg = s.groups > 0 ? s.out_channels / s.groups : 0;
  if (threads <= 1 || s.batch * s.out_channels <= 1) {
    one(s, x, w, bias, y);
    return;
  }
  // Tasks: (image, group, a run of the group's output channels), each one call on a one-image, one-group shape.
  // Every output is computed by the same loops whatever the split, so the bits do not depend on it.
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (size_t d = 0; d < s.in_spatial.size(); ++d) {
    in_plane *= s.in_spatial[d], out_plane *= s.out_spatial[d], taps *= s.kernel[d];
  }
  const int64_t outer = s.batch * s.groups;
  const int64_t chunk = std::clamp<int64_t>(detail::ceilDiv(outer * mg, 8 * threads), 1, mg);
  const int64_t per_group = detail::ceilDiv(mg, chunk);
  ConvShape t = s;
  t.batch = 1;
  t.groups = 1;
  t.in_channels = cg;
  detail::runTasks(pool, outer * per_group, [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t o = task / per_group, b = o / s.groups, grp = o % s.groups;
      const int64_t m0 = task % per_group * chunk, m1 = std::min(mg, m0 + chunk);
      ConvShape u = t;
      u.out_channels = m1 - m0;
      const int64_t m = grp * mg + m0;
      one(u, x + (b * s.in_channels + grp * cg) * in_plane, w + m * cg * taps, bias != nullptr ? bias + m : nullptr,
          y + (b * s.out_channels + m) * out_plane);
    }
  }, 8);
}

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
