// Pooling over 1 to 3 spatial dims, tap by tap (kernels/layers.hpp: poolNd): the engine's pooling where the 2-D
// kernels do not apply, and the pool_nd layer kind.
#include "kernels/layers.hpp"

#include "kernels/ref/parallel_units.hpp"
#include "support/error.hpp"

#include <limits>

namespace npuc::kernels {

void poolNd(const PoolNdShape& s, const float* x, float* y, int64_t* indices, ThreadPool* pool) {
  const size_t r = s.kernel.size();
  if (r < 1 || r > 3 || s.in.size() != r || s.out.size() != r || s.stride.size() != r || s.dilation.size() != r ||
      s.pad_begin.size() != r || s.pad_end.size() != r)
    fail(ErrorCode::kInvalidArgument, "poolNd: {} spatial dims (1 to 3, every list of that length)", r);
  int64_t in_plane = 1, out_plane = 1, ntaps = 1;
  int64_t in_strides[3] = {1, 1, 1};
  for (size_t i = r; i-- > 0;) {
    in_strides[i] = in_plane;
    in_plane *= s.in[i];
    out_plane *= s.out[i];
    ntaps *= s.kernel[i];
  }
  const float ninf = -std::numeric_limits<float>::infinity();
  const bool use_pad_value = s.max && s.pad_value > ninf;
  detail::parallelUnits(pool, s.planes, out_plane * ntaps, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* xp = x + pl * in_plane;
      float* yp = y + pl * out_plane;
      for (int64_t o = 0; o < out_plane; ++o) {
        int64_t origin[3], rem = o;
        for (size_t i = r; i-- > 0;) {
          origin[i] = (rem % s.out[i]) * s.stride[i] - s.pad_begin[i];
          rem /= s.out[i];
        }
        // Each tap: its offset in the plane, or -1 outside the input; and whether it lies in the padded region.
        float m = ninf, sum = 0.0f;
        int64_t arg = -1, cnt = 0;
        bool any = false;  // max: the first counted tap is always taken
        int64_t k[3] = {0, 0, 0};
        for (int64_t t = 0; t < ntaps; ++t) {
          int64_t off = 0;
          bool inside = true, in_padded = true;
          for (size_t i = 0; i < r; ++i) {
            const int64_t pos = origin[i] + k[i] * s.dilation[i];
            if (pos < 0 || pos >= s.in[i]) inside = false;
            if (pos < -s.pad_begin[i] || pos >= s.in[i] + s.pad_end[i]) in_padded = false;
            off += pos * in_strides[i];
          }
          if (!inside) off = -1;
          if (s.max) {
            if (off >= 0 || (use_pad_value && in_padded)) {
              const float v = off >= 0 ? xp[off] : s.pad_value;
              if (v > m || !any) m = v, arg = off, any = true;
            }
          } else if (off >= 0) {
            sum += xp[off];
            ++cnt;
          } else if (s.count_include_pad && in_padded) {
            ++cnt;
          }
          for (size_t i = r; i-- > 0;) {
            if (++k[i] < s.kernel[i]) break;
            k[i] = 0;
          }
        }
        if (s.max) {
          yp[o] = m;
          if (indices) indices[pl * out_plane + o] = pl * in_plane + (arg < 0 ? 0 : arg);
        } else {
          yp[o] = cnt ? sum / static_cast<float>(cnt) : 0.0f;
        }
      }
    }
  });
}

}  // namespace npuc::kernels
