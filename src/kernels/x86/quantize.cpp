// QuantizeLinear / DequantizeLinear per tensor and MaxPool over int8 codes, fast (kernels/quant.hpp): the AVX-512
// loops where the CPU has AVX-512F/BW/VL, the AVX2 ones (the conversions) where it has AVX2, else the reference; element-wise or exact, so the split among threads
// cannot change a bit.
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "kernels/ref/parallel_units.hpp"
#include "kernels/x86/quant_x86.hpp"

#include <algorithm>
#include <vector>

namespace npuc::kernels {

namespace detail {

bool cpuHasAvx512bw() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}
bool cpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
}  // namespace detail

void quantizeLinearFast(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y, ThreadPool* pool) {
  const bool avx512 = detail::cpuHasAvx512bw();
  if (!avx512 && !detail::cpuHasAvx2()) return quantizeLinear(x, n, scale, zero_point, y, pool);
  detail::parallelUnits(pool, (n + 4095) / 4096, 4096, [&](int64_t c0, int64_t c1) {
    const int64_t i0 = c0 * 4096, i1 = std::min(n, c1 * 4096);
    if (avx512) detail::quantizeLinearAvx512(x + i0, i1 - i0, scale, zero_point, y + i0);
    else detail::quantizeLinearAvx2(x + i0, i1 - i0, scale, zero_point, y + i0);
  });
}

void dequantizeLinearFast(const int8_t* x, int64_t n, float scale, int32_t zero_point, float* y, ThreadPool* pool) {
  const bool avx512 = detail::cpuHasAvx512bw();
  if (!avx512 && !detail::cpuHasAvx2()) return dequantizeLinear(x, n, scale, zero_point, y, pool);
  detail::parallelUnits(pool, (n + 4095) / 4096, 4096, [&](int64_t c0, int64_t c1) {
    const int64_t i0 = c0 * 4096, i1 = std::min(n, c1 * 4096);
    if (avx512) detail::dequantizeLinearAvx512(x + i0, i1 - i0, scale, zero_point, y + i0);
    else detail::dequantizeLinearAvx2(x + i0, i1 - i0, scale, zero_point, y + i0);
  });
}

namespace detail {

bool maxPoolI8Flat(const Pool2dShape& s, MaxPoolI8Flat& f) {
  // (the output copy takes rows of at most 31 bytes; the plane bound keeps the buffer small)
  if (s.sh != 1 || s.sw != 1 || s.iw >= 32 || s.ow >= 32 || s.ih * s.iw > 4096 || s.kh * s.kw > 64) return false;
  f.pw = std::max(s.pl + s.iw, s.ow + (s.kw - 1) * s.dw);
  f.ph = std::max(s.pt + s.ih, s.oh + (s.kh - 1) * s.dh);
  f.nv = (s.oh * f.pw + 31) / 32;
  f.size = std::max(f.ph * f.pw, f.nv * 32 + (s.kh - 1) * s.dh * f.pw + (s.kw - 1) * s.dw);
  return true;
}

}  // namespace detail

void maxPool2dI8Fast(const Pool2dShape& s, const int8_t* x, int8_t* y, ThreadPool* pool) {
  if (detail::cpuHasAvx512bw()) return detail::maxPool2dI8Avx512(s, x, y, pool);
  if (!detail::cpuHasAvx2()) return maxPool2dI8(s, x, y, pool);
  const int64_t span = (s.ow - 1) * s.sw + (s.kw - 1) * s.dw + 1, width = std::max(s.pl + s.iw, span) + 128;
  detail::MaxPoolI8Flat flat;
  const bool is_flat = detail::maxPoolI8Flat(s, flat);
  const int64_t bytes = is_flat ? flat.size + flat.nv * 32 : s.oh * width;
  detail::parallelUnits(pool, s.planes, s.oh * s.ow * s.kh * s.kw, [&](int64_t p0, int64_t p1) {
    std::vector<int8_t> buf(static_cast<size_t>(bytes), int8_t{-128});  // (the padding: written once)
    detail::maxPool2dI8Avx2(s, x, y, p0, p1, width, buf.data(), is_flat ? &flat : nullptr);
  });
}

}  // namespace npuc::kernels
