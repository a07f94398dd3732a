// The kernel-library geometry of a convolution-like or pooling node (shared by the float and the int8 kernels).
#pragma once

#include "engine/kernel.hpp"
#include "kernels/conv.hpp"
#include "kernels/layers.hpp"
#include "ops/window.hpp"

namespace npuc::engine {

/// ConvShape or ConvTransposeShape of a node over an input of shape x [N, C, spatial…] and its resolved window
/// (out_channels left to the caller).
template <class Geometry>
Geometry geometryOf(const ir::Node& n, const Shape& x, const ops::Window& win) {
  Geometry s;
  s.batch = x[0];
  s.in_channels = x[1];
  s.groups = n.attrInt("group", 1);
  s.in_spatial = win.in;
  s.out_spatial = win.out;
  s.kernel = win.kernel;
  s.stride = win.stride;
  s.dilation = win.dilation;
  s.pad_begin = win.pad_begin;
  return s;
}
template <class Geometry>
Geometry geometryOf(const KernelCall& c, const Tensor& x, const ops::Window& win) {
  return geometryOf<Geometry>(c.node, x.shape(), win);
}

/// The ConvShape of a Conv node over static shapes of its input x [N, C, spatial…] and weights w [M, C / group, k…]
/// (the engine's plans, before any run). Throws as resolveWindow on bad attributes.
inline kernels::ConvShape convShapeOf(const ir::Node& n, const Shape& x, const Shape& w) {
  const ops::Window win =
      ops::resolveWindow(n, std::vector<int64_t>(x.begin() + 2, x.end()), std::vector<int64_t>(w.begin() + 2, w.end()), false);
  kernels::ConvShape s = geometryOf<kernels::ConvShape>(n, x, win);
  s.out_channels = w[0];
  return s;
}

/// The kernel library's 2-D pooling geometry of a 1-D or 2-D window (1-D as H = 1).
inline kernels::Pool2dShape pool2dShape(const ops::Window& w, int64_t planes) {
  kernels::Pool2dShape s;
  s.planes = planes;
  const size_t v = w.rank() == 2 ? 1 : 0;  // the W dim
  if (w.rank() == 2) {
    s.ih = w.in[0], s.oh = w.out[0], s.kh = w.kernel[0], s.sh = w.stride[0], s.dh = w.dilation[0];
    s.pt = w.pad_begin[0], s.pb = w.pad_end[0];
  }
  s.iw = w.in[v], s.ow = w.out[v], s.kw = w.kernel[v], s.sw = w.stride[v], s.dw = w.dilation[v];
  s.pl = w.pad_begin[v], s.pr = w.pad_end[v];
  return s;
}

}  // namespace npuc::engine
