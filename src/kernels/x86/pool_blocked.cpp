// Pools over channel-blocked tensors (kernels/layers.hpp: pool2dBlocked8, globalPoolBlocked8): the work split into
// block rows / blocks across the threads, each computed by the table's kernel (pool_blocked_impl.inc).
#include "kernels/layers.hpp"
#include "kernels/x86/gemm_driver.hpp"
#include "kernels/x86/kernel_table.hpp"
#include "support/error.hpp"

namespace npuc::kernels {

void pool2dBlocked8(const Pool2dShape& s, bool max, const float* x, float* y, ThreadPool* pool) {
  if (s.planes % 8 != 0) fail(ErrorCode::kInternal, "pool2dBlocked8: {} planes are not whole blocks of 8", s.planes);
  detail::PoolBlockedArgs a;
  a.x = x, a.y = y;
  a.ih = s.ih, a.iw = s.iw, a.oh = s.oh, a.ow = s.ow, a.kh = s.kh, a.kw = s.kw, a.sh = s.sh, a.sw = s.sw;
  a.dh = s.dh, a.dw = s.dw, a.pt = s.pt, a.pl = s.pl, a.pb = s.pb, a.pr = s.pr;
  a.max = max, a.count_include_pad = s.count_include_pad, a.pad_value = s.pad_value;
  const detail::PoolBlockedKernel kern = detail::activeKernels().pool_blocked8;
  detail::runTasks(pool, s.planes / 8 * s.oh, [&](int64_t r0, int64_t r1) { kern(a, r0, r1); }, 4);
}

void globalPoolBlocked8(bool max, int64_t planes, int64_t size, const float* x, float* y, ThreadPool* pool) {
  if (planes % 8 != 0) fail(ErrorCode::kInternal, "globalPoolBlocked8: {} planes are not whole blocks of 8", planes);
  const detail::GlobalPoolBlockedKernel kern = detail::activeKernels().global_pool_blocked8;
  detail::runTasks(pool, planes / 8, [&](int64_t b0, int64_t b1) { kern(max, size, x, y, b0, b1); }, 4);
}

}  // namespace npuc::kernels
