// Runtime kernel selection: the widest ISA the CPU has (AVX-512F+VL+BW, then AVX2/FMA, checked once), else the
// portable table; forceKernelIsa() / forcePortableKernels() cap the choice for tests and benchmarks.
#include "kernels/gemm.hpp"
#include "kernels/x86/kernel_table.hpp"

#include <atomic>
#include <cpuid.h>
#include <cstring>

namespace npuc::kernels {

namespace detail {

namespace {

enum Isa : int { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kAuto = 3 };

std::atomic<int> g_isa_cap{kAuto};

int cpuIsa() {
  static const int isa = [] {
    __builtin_cpu_init();
    // The AVX2 kernels also use F16C (float16 tensors of fp16 packages); every AVX2 CPU has it.
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);  // (clang's __builtin_cpu_supports lacks "f16c")
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c)) return kPortable;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
      return kAvx512;
    return kAvx2;
  }();
  return isa;
}

// The matrix-vector kernels are memory-bound: the AVX-512 table keeps the AVX2 ones.
constexpr KernelTable kAvx512Table{.name = "avx512",
                                   .gemm = f32_gemm__avx512_6x16,
                                   .gemm_x2 = f32_gemm__avx512_6x32,
                                   .gemm_n8 = f32_gemm__avx2_6x8,
                                   .dwconv_pack8 = f32_dwconv_pack8__avx2,
                                   .dwconv_block8 = f32_dwconv_block8__avx2,
                                   .dwconv_in_place = f32_dwconv_in_place__avx512,
                                   .deconv = f32_deconv__avx2,
                                   .conv_oc = f32_conv_oc__avx512,
                                   .conv_oc_all = true,
                                   .conv_oc_blocked = f32_conv_oc__avx2,
                                   .pack_b_blocked8 = f32_pack_b_blocked8__avx2,
                                   .gemm_cols = f32_gemm_cols__avx2,
                                   .gemv_packed = f32_gemv_packed__avx2,
                                   .gemv_row = f32_gemv_row__avx2,
                                   .pool_plane = f32_pool_plane__avx512,
                                   .pool_in_place = f32_pool_in_place__avx512,
                                   .pool_blocked8 = f32_pool_blocked8__avx2,
                                   .global_pool_blocked8 = f32_global_pool_blocked8__avx2,
                                   .rows_tail = true,
                                   .half_b = true,
                                   .half_c = true};
constexpr KernelTable kAvx2Table{.name = "avx2_fma",
                                 .gemm = f32_gemm__avx2_6x16,
                                 .gemm_n8 = f32_gemm__avx2_6x8,
                                 .dwconv_pack8 = f32_dwconv_pack8__avx2,
                                 .dwconv_block8 = f32_dwconv_block8__avx2,
                                 .deconv = f32_deconv__avx2,
                                 .conv_oc = f32_conv_oc__avx2,
                                 .conv_oc_blocked = f32_conv_oc__avx2,
                                 .pack_b_blocked8 = f32_pack_b_blocked8__avx2,
                                 .gemm_cols = f32_gemm_cols__avx2,
                                 .gemv_packed = f32_gemv_packed__avx2,
                                 .gemv_row = f32_gemv_row__avx2,
                                 .pool_plane = f32_pool_plane__avx2,
                                 .pool_in_place = f32_pool_in_place__avx2,
                                 .pool_blocked8 = f32_pool_blocked8__avx2,
                                 .global_pool_blocked8 = f32_global_pool_blocked8__avx2};
constexpr KernelTable kPortableTable{.name = "portable",
                                     .gemm = f32_gemm__scalar_6x16,
                                     .gemm_n8 = f32_gemm__scalar_6x8,
                                     .dwconv = f32_dwconv2d__scalar,
                                     .deconv = f32_deconv__scalar,
                                     .gemm_cols = f32_gemm_cols__scalar,
                                     .gemv_packed = f32_gemv_packed__scalar,
                                     .gemv_row = f32_gemv_row__scalar,
                                     .pool_plane = f32_pool_plane__scalar,
                                     .pool_blocked8 = f32_pool_blocked8__scalar,
                                     .global_pool_blocked8 = f32_global_pool_blocked8__scalar};

const char* isaName(int isa) {
  switch (isa) {
    case kPortable: return "portable";
    case kAvx2: return "avx2";
    case kAvx512: return "avx512";
    default: return "auto";
  }
}

}  // namespace

namespace {
int activeIsa() {
  const int cap = g_isa_cap.load(std::memory_order_relaxed);
  return cpuIsa() < cap ? cpuIsa() : cap;
}
}  // namespace

bool activeF16c() { return activeIsa() >= kAvx2; }
bool activeAvx512() { return activeIsa() >= kAvx512; }
bool activeAvx2() { return activeIsa() >= kAvx2; }

const KernelTable& activeKernels() {
  switch (activeIsa()) {
    case kAvx512: return kAvx512Table;
    case kAvx2: return kAvx2Table;
    default: return kPortableTable;
  }
}

}  // namespace detail

const char* sgemmVariant() { return detail::activeKernels().name; }

bool forcePortableKernels(bool on) {
  return detail::g_isa_cap.exchange(on ? detail::kPortable : detail::kAuto) == detail::kPortable;
}

const char* forceKernelIsa(const char* isa) {
  int cap = detail::kAuto;
  if (isa != nullptr) {
    if (std::strcmp(isa, "portable") == 0) cap = detail::kPortable;
    if (std::strcmp(isa, "avx2") == 0) cap = detail::kAvx2;
    if (std::strcmp(isa, "avx512") == 0) cap = detail::kAvx512;
  }
  return detail::isaName(detail::g_isa_cap.exchange(cap));
}

}  // namespace npuc::kernels
