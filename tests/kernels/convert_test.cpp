// The buffer conversions of fp16 packages: the fast variant gives the scalar specification's bits for every
// float16 (exhaustively), for float32 edge cases (subnormals, rounding ties, overflow, Inf, NaN payloads) and
// random values, with each fused activation, at every ISA cap and thread count.
#include "kernels/convert.hpp"
#include "kernels/gemm.hpp"
#include "support/fp16.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace npuc;

namespace {

std::vector<float> edgeFloats() {
  std::vector<float> v;
  auto bits = [&](uint32_t u) { v.push_back(bitsFloat(u)); v.push_back(bitsFloat(u | 0x80000000u)); };
  for (uint32_t u : {0x0u, 0x1u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x38800000u, 0x387fffffu, 0x387fe000u,
                     0x387ff000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, 0x47800000u, 0x7f7fffffu,
                     0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fa00000u, 0x7fffffffu, 0x3f801000u, 0x3f803000u,
                     0x3f801001u, 0x3f802fffu})
    bits(u);
  // every rounding boundary between consecutive halfs in a few binades, and the subnormal range
  for (uint32_t h = 0; h < 0x7c00u; h += 37) {
    uint32_t f = floatBits(halfToFloat(static_cast<uint16_t>(h)));
    for (int d : {-1, 0, 1}) bits(f + 0x1000u + static_cast<uint32_t>(d));
  }
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) v.push_back(bitsFloat(any(rng)));
  std::normal_distribution<float> nd(0.0f, 100.0f);
  for (int i = 0; i < 100000; ++i) v.push_back(nd(rng));
  return v;
}

class Convert : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { prev_ = kernels::forceKernelIsa(GetParam()); }
  void TearDown() override { kernels::forceKernelIsa(prev_); }
  const char* prev_ = nullptr;
};

TEST_P(Convert, HalfToFloatEveryValue) {
  std::vector<uint16_t> h(65536 + 7);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> ref(h.size()), fast(h.size());
  kernels::f16ToF32_ref(h.data(), ref.data(), static_cast<int64_t>(h.size()));
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::fill(fast.begin(), fast.end(), 0.0f);
    kernels::f16ToF32(h.data(), fast.data(), static_cast<int64_t>(h.size()), &pool);
    ASSERT_EQ(std::memcmp(ref.data(), fast.data(), ref.size() * 4), 0) << threads << " threads";
  }
  for (size_t i = 0; i < 65536; ++i) ASSERT_EQ(floatBits(ref[i]), floatBits(halfToFloat(static_cast<uint16_t>(i))));
}

TEST_P(Convert, FloatToHalfEdgesAndRandomWithActivations) {
  std::vector<float> x = edgeFloats();
  std::vector<uint16_t> ref(x.size()), fast(x.size());
  kernels::Activation acts[4];
  acts[1].kind = kernels::ActKind::kRelu;
  acts[2].kind = kernels::ActKind::kClip, acts[2].a = -1.5f, acts[2].b = 6.0f;
  acts[3].kind = kernels::ActKind::kLeakyRelu, acts[3].a = 0.1f;
  for (const auto& act : acts) {
    kernels::f32ToF16_ref(x.data(), ref.data(), static_cast<int64_t>(x.size()), act);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      kernels::f32ToF16(x.data(), fast.data(), static_cast<int64_t>(x.size()), act, &pool);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(ref[i], fast[i]) << "x bits 0x" << std::hex << floatBits(x[i]) << " act " << static_cast<int>(act.kind);
    }
  }
  // The specification itself on known values.
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bffu);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00u);
  EXPECT_EQ(floatToHalf(bitsFloat(0x33000000u)), 0x0000u);  // 2^-25: tie to even -> 0
  EXPECT_EQ(floatToHalf(bitsFloat(0x33000001u)), 0x0001u);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00u);         // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01u);
}

INSTANTIATE_TEST_SUITE_P(Isa, Convert, ::testing::Values("portable", "avx2", "auto"));

}  // namespace
