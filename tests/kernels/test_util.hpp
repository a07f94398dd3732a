// Helpers shared by the kernel tests: seeded random data, bit comparison, variant/thread/blocking sweeps.
#pragma once

#include "kernels/gemm.hpp"
#include "support/thread_pool.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace npuc::kernels::test {

inline std::vector<float> randomFloats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline int64_t randomInt(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// Index of the first element whose bits differ, or -1.
inline int64_t firstBitMismatch(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<int64_t>(i);
  }
  return -1;
}

/// Each epilogue activation (kNumActivations of them), by i modulo that count.
constexpr int kNumActivations = 8;
inline Activation activationFor(int i) {
  switch (i % kNumActivations) {
    case 1: return {ActKind::kRelu, 0.0f, 0.0f};
    case 2: return {ActKind::kClip, -0.25f, 0.5f};
    case 3: return {ActKind::kLeakyRelu, 0.1f, 0.0f};
    case 4: return {ActKind::kHardSwish, 0.0f, 0.0f};
    case 5: return {ActKind::kHardSigmoid, 0.2f, 0.5f};
    case 6: return {ActKind::kHardSigmoidMul, 1.0f / 6.0f, 0.5f};
    case 7: return {ActKind::kHardSigmoid, 0.2f, 0.0f};  // (a tiny negative x: +0, not -0)
    default: return {};
  }
}

/// Restores the kernel selection and blocking when a test ends.
struct VariantGuard {
  const char* isa = forceKernelIsa("auto");
  GemmBlocking blocking = gemmBlocking();
  VariantGuard() { forceKernelIsa(isa); }
  ~VariantGuard() {
    forceKernelIsa(isa);
    setGemmBlocking(blocking);
  }
};

/// One fast-path configuration: variant, thread count, blocking.
struct Config {
  const char* isa;  // for forceKernelIsa (an ISA the CPU lacks falls back to the widest it has)
  int threads;
  GemmBlocking blocking;
  std::string name() const {
    return std::string(isa) + " threads=" + std::to_string(threads) +
           " kc=" + std::to_string(blocking.kc) + " mc=" + std::to_string(blocking.mc) +
           " nc=" + std::to_string(blocking.nc);
  }
};

/// The configurations every sweep runs: default blocking and a tiny one (many k-, m- and n-blocks), on the
/// AVX-512 and AVX2 paths at 1, 2, 3 (and 4) threads and on the portable path.
inline std::vector<Config> sweepConfigs(const GemmBlocking& defaults, bool include_portable = true) {
  const GemmBlocking tiny{5, 12, 32};
  std::vector<Config> c;
  for (const char* isa : {"avx512", "avx2"}) {
    for (int t : {1, 2, 3}) {
      c.push_back({isa, t, defaults});
      c.push_back({isa, t, tiny});
    }
    c.push_back({isa, 4, defaults});
  }
  if (include_portable) {
    c.push_back({"portable", 1, defaults});
    c.push_back({"portable", 3, tiny});
  }
  return c;
}

inline ThreadPool* poolFor(int threads) { return threads > 1 ? &ThreadPool::shared(threads) : nullptr; }

}  // namespace npuc::kernels::test
