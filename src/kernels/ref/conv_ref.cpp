// Reference convolution and transposed convolution (1 to 3 spatial dims): the executable form of the
// numerics specification in kernels/conv.hpp. Plain loops; every fast variant is tested against these bits.
#include "kernels/conv.hpp"
#include "kernels/quant.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace npuc::kernels {

namespace {

// Spatial geometry padded to 3 dims (leading dims of size 1, stride 1, no padding).
struct Geometry3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, stride{1, 1, 1}, dil{1, 1, 1}, pad{0, 0, 0};
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kSize() const { return k[0] * k[1] * k[2]; }
};

template <class Shape>
Geometry3 toGeometry3(const Shape& s, const char* what) {
  const size_t r = s.in_spatial.size();
  if (r < 1 || r > 3 || s.out_spatial.size() != r || s.kernel.size() != r || s.stride.size() != r ||
      s.dilation.size() != r || s.pad_begin.size() != r) {
    fail(ErrorCode::kInvalidArgument, "{}: spatial rank must be 1..3 and consistent", what);
  }
  if (s.groups < 1 || s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0) {
    fail(ErrorCode::kInvalidArgument, "{}: channels {}->{} not divisible by groups {}", what, s.in_channels,
         s.out_channels, s.groups);
  }
  Geometry3 g;
  const size_t off = 3 - r;
  for (size_t i = 0; i < r; ++i) {
    g.in[off + i] = s.in_spatial[i];
    g.out[off + i] = s.out_spatial[i];
    g.k[off + i] = s.kernel[i];
    g.stride[off + i] = s.stride[i];
    g.dil[off + i] = s.dilation[i];
    g.pad[off + i] = s.pad_begin[i];
  }
  return g;
}

}  // namespace

namespace {

/// The reference convolution's walk, shared by the float and the int8 forms: for every output (image n, channel m,
/// index yi of y) in order, f(m, yi, taps), where taps(tap) calls tap(xi, wi) for every tap of the output in the
/// order of the sum — input channels of the group, then kernel positions row-major — with xi the index of x it
/// reads, or -1 for a tap in the padding, and wi the index of w.
template <class F>
void forEachConvOutput(const ConvShape& s, const Geometry3& g, F&& f) {
  const int64_t cg = s.in_channels / s.groups;
  const int64_t mg = s.out_channels / s.groups;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const int64_t grp = m / mg;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            auto taps = [&](auto&& tap) {
              for (int64_t cl = 0; cl < cg; ++cl) {
                const int64_t xc = (n * s.in_channels + grp * cg + cl) * g.inSize();
                const int64_t wc = (m * cg + cl) * g.kSize();
                for (int64_t kd = 0; kd < g.k[0]; ++kd)
                  for (int64_t kh = 0; kh < g.k[1]; ++kh)
                    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                      const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
                      const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
                      const int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dil[2];
                      const bool inside =
                          id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
                      tap(inside ? xc + (id * g.in[1] + ih) * g.in[2] + iw : int64_t{-1},
                          wc + (kd * g.k[1] + kh) * g.k[2] + kw);
                    }
              }
            };
            f(m, ((n * s.out_channels + m) * g.out[0] + od) * g.out[1] * g.out[2] + oh * g.out[2] + ow, taps);
          }
        }
      }
    }
  }
}

}  // namespace

void conv_ref(const ConvShape& s, const float* x, const float* w, const float* bias, const Activation& act,
              float* y) {
  forEachConvOutput(s, toGeometry3(s, "conv"), [&](int64_t m, int64_t yi, auto&& taps) {
    float acc = bias != nullptr ? bias[m] : 0.0f;
    // A tap in the padding is fma(w, +0.0f, acc) (docs/numerics.md).
    taps([&](int64_t xi, int64_t wi) { acc = std::fma(w[wi], xi >= 0 ? x[xi] : 0.0f, acc); });
    y[yi] = applyActivation(acc, act);
  });
}

void qconv_ref(const ConvShape& s, const int8_t* x, int32_t zx, const int8_t* w, const int32_t* bias,
               const QOutput& out, int8_t* y) {
  forEachConvOutput(s, toGeometry3(s, "qconv"), [&](int64_t m, int64_t yi, auto&& taps) {
    int64_t acc = bias != nullptr ? bias[m] : 0;  // exact; kept as int32 (the translator bounds K)
    taps([&](int64_t xi, int64_t wi) {  // a tap in the padding adds nothing: x = zx
      if (xi >= 0) acc += (static_cast<int32_t>(x[xi]) - zx) * static_cast<int32_t>(w[wi]);
    });
    y[yi] = requantizeValue(static_cast<int32_t>(acc), out.of(m), out.zero_point, out.lo, out.hi);
  });
}

void conv_transpose_ref(const ConvTransposeShape& s, const float* x, const float* w, const float* bias, float* y) {
  const Geometry3 g = toGeometry3(s, "conv_transpose");
  const int64_t cg = s.in_channels / s.groups;
  const int64_t mg = s.out_channels / s.groups;
  // Input index along one dim for output o and tap t, or -1 when the tap does not hit an input element.
  auto source = [&](int dim, int64_t o, int64_t t) -> int64_t {
    const int64_t num = o + g.pad[dim] - t * g.dil[dim];
    if (num < 0 || num % g.stride[dim] != 0) return -1;
    const int64_t i = num / g.stride[dim];
    return i < g.in[dim] ? i : -1;
  };
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.out_channels; ++m) {
      const int64_t grp = m / mg;
      const int64_t ml = m - grp * mg;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            float acc = bias != nullptr ? bias[m] : 0.0f;
            for (int64_t cl = 0; cl < cg; ++cl) {
              const int64_t c = grp * cg + cl;
              const float* xc = x + (n * s.in_channels + c) * g.inSize();
              const float* wc = w + (c * mg + ml) * g.kSize();
              for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                const int64_t id = source(0, od, kd);
                if (id < 0) continue;
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  const int64_t ih = source(1, oh, kh);
                  if (ih < 0) continue;
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t iw = source(2, ow, kw);
                    if (iw < 0) continue;
                    acc = std::fma(xc[(id * g.in[1] + ih) * g.in[2] + iw], wc[(kd * g.k[1] + kh) * g.k[2] + kw],
                                   acc);
                  }
                }
              }
            }
            y[((n * s.out_channels + m) * g.out[0] + od) * g.out[1] * g.out[2] + oh * g.out[2] + ow] = acc;
          }
        }
      }
    }
  }
}

}  // namespace npuc::kernels
