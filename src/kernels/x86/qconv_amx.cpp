// The int8 convolution's AMX product (-mamx-tile -mamx-int8; chosen at run time by kernels/x86/qconv.cpp as the
// path "avx512_amx"): the VNNI path (qconv_vnni.cpp) with its register microkernel replaced by tile products.
//
// TDPBSUD multiplies a tile of signed bytes A [16 rows][64 bytes] by a tile of unsigned bytes B [16 rows][16 x 4
// bytes] and adds to a tile of int32 C [16][16]: C[i][j] += sum over the 64 bytes k of A[i][k] * B[k / 4][4 j + k % 4].
// Those are exactly the VNNI path's operands as they lie: A = the packed weights (rows = output channels, quads of
// consecutive taps; zero-padded here to 16 rows and a multiple of 16 quads, QConvVnniPlan::a16), B = the im2col of
// unsigned quads B4 [K4][pixels] (16 pixels per tile row), and C[channel][pixel] is the microkernel's sum of
// products. The sums are exact int32 arithmetic (the validated bound keeps them in range), so the tile order and
// the blocking cannot change a bit; the requantization is the microkernel's, on the sums stored from the tiles.
#include "kernels/x86/qconv_vnni.hpp"
#include "kernels/x86/quant_avx512.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace npuc::kernels::detail {

namespace {

/// The tile configuration every product uses: tiles 0-3 the sums C (2 x 2 blocks of 16 channels x 16 pixels),
/// 4-5 two A blocks, 6-7 two B blocks; each 16 rows of 64 bytes (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) colsb[t] = 64, rows[t] = 16;
  }
};

/// MT x PT blocks (1 or 2 each) of 16 channels x 16 pixels: channels [m, m + 16 MT) (rows of a16), pixels
/// [p, p + 16 PT) of B (quad rows `bstride` int32 apart); sums over every quad chunk, then requantized.
template <int MT, int PT>
void tileBlock(const QConvVnniPlan& plan, int64_t m, int64_t mend, const int32_t* b, int64_t bstride, int64_t n,
               int8_t* y, int64_t ystride) {
  const int64_t K16 = plan.k16, astride = K16 * 4, bbytes = bstride * 4;
  const int32_t* a = plan.a16.data() + m * K16;
  _tile_zero(0);
  if (PT > 1) _tile_zero(1);
  if (MT > 1) _tile_zero(2);
  if (MT > 1 && PT > 1) _tile_zero(3);
  for (int64_t k = 0; k < K16; k += 16) {
    _tile_loadd(4, a + k, astride);
    if (MT > 1) _tile_loadd(5, a + 16 * K16 + k, astride);
    _tile_loadd(6, b + k * bstride, bbytes);
    if (PT > 1) _tile_loadd(7, b + k * bstride + 16, bbytes);
    _tile_dpbsud(0, 4, 6);
    if (PT > 1) _tile_dpbsud(1, 4, 7);
    if (MT > 1) _tile_dpbsud(2, 5, 6);
    if (MT > 1 && PT > 1) _tile_dpbsud(3, 5, 7);
  }
  alignas(64) int32_t c[4][16][16];
  _tile_stored(0, c[0], 64);
  if (PT > 1) _tile_stored(1, c[1], 64);
  if (MT > 1) _tile_stored(2, c[2], 64);
  if (MT > 1 && PT > 1) _tile_stored(3, c[3], 64);
  for (int mt = 0; mt < MT; ++mt)
    for (int pt = 0; pt < PT; ++pt) {
      const int cols = static_cast<int>(std::min<int64_t>(16, n - 16 * pt));
      if (cols <= 0) continue;
      for (int i = 0; i < 16; ++i) {
        const int64_t ch = m + 16 * mt + i;
        if (ch >= mend) break;
        const ChannelRequant& rq = plan.rq[static_cast<size_t>(ch)];
        const __m512i acc = _mm512_add_epi32(_mm512_load_si512(c[2 * mt + pt][i]), _mm512_set1_epi32(plan.bias[static_cast<size_t>(ch)]));
        requantizeStore(acc, rq.mul, rq.once, plan.out.zero_point, plan.out.lo, plan.out.hi, y + (ch - m) * ystride + 16 * pt, cols);
      }
    }
}

}  // namespace

bool amxInt8Usable() {
  static const bool usable = [] {
#if defined(__linux__) && defined(__x86_64__)
    // NPUC_NO_AMX=1: never ask. (Asking changes the whole process: Linux then requires larger signal stacks of it,
    // which a host process with its own small sigaltstack may not expect.)
    if (const char* no = std::getenv("NPUC_NO_AMX"); no != nullptr && *no != '\0' && std::strcmp(no, "0") != 0) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(d & (1u << 24)) || !(d & (1u << 25))) return false;  // AMX-TILE, AMX-INT8
    __cpuid(1, a, b, c, d);
    if (!(c & (1u << 27))) return false;  // OSXSAVE
    // The OS must enable the tile state (XCR0 bits 17 and 18) and grant this process its use.
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return usable;
}

void qproductAmx(const QConvVnniPlan& plan, int64_t m0, int64_t m1, const int32_t* b, int64_t bstride, int64_t n,
                 int8_t* y, int64_t ystride) {
  static const TileConfig config;
  _tile_loadconfig(&config);  // (each call: the configuration is the thread's, and others may load their own)
  for (int64_t p = 0; p < n; p += 32) {
    const int64_t np = std::min<int64_t>(32, n - p);
    for (int64_t m = m0; m < m1; m += 32) {
      int8_t* const ym = y + (m - m0) * ystride + p;
      const bool two_m = m1 - m > 16, two_p = np > 16;
      if (two_m && two_p) tileBlock<2, 2>(plan, m, m1, b + p, bstride, np, ym, ystride);
      else if (two_m) tileBlock<2, 1>(plan, m, m1, b + p, bstride, np, ym, ystride);
      else if (two_p) tileBlock<1, 2>(plan, m, m1, b + p, bstride, np, ym, ystride);
      else tileBlock<1, 1>(plan, m, m1, b + p, bstride, np, ym, ystride);
    }
  }
  _tile_release();  // (back to the initial state: the OS need not save this thread's tiles)
}

}  // namespace npuc::kernels::detail
