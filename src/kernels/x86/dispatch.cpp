// Runtime kernel selection: the AVX2/FMA table when the CPU has both (checked once), else the portable one;
// forcePortableKernels() overrides for tests.
#include "kernels/gemm.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <atomic>

namespace npuc::kernels {

namespace detail {

namespace {

std::atomic<bool> g_force_portable{false};

bool cpuHasAvx2Fma() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

constexpr KernelTable kAvx2Table{"avx2_fma", f32_gemm__avx2_6x16, f32_gemm__avx2_6x8, f32_dwconv2d__avx2,
                                 f32_deconv__avx2};
constexpr KernelTable kPortableTable{"portable", f32_gemm__scalar_6x16, f32_gemm__scalar_6x8, f32_dwconv2d__scalar,
                                     f32_deconv__scalar};

}  // namespace

const KernelTable& activeKernels() {
  if (!g_force_portable.load(std::memory_order_relaxed) && cpuHasAvx2Fma()) return kAvx2Table;
  return kPortableTable;
}

}  // namespace detail

const char* sgemmVariant() { return detail::activeKernels().name; }

bool forcePortableKernels(bool on) { return detail::g_force_portable.exchange(on); }

}  // namespace npuc::kernels
