// The kernel-library geometry of a convolution-like node (shared by the float and the int8 kernels).
#pragma once

#include "engine/kernel.hpp"
#include "ops/window.hpp"

namespace npuc::engine {

/// ConvShape or ConvTransposeShape of a node's resolved window (out_channels left to the caller).
template <class Geometry>
Geometry geometryOf(const KernelCall& c, const Tensor& x, const ops::Window& win) {
  Geometry s;
  s.batch = x.dim(0);
  s.in_channels = x.dim(1);
  s.groups = c.node.attrInt("group", 1);
  s.in_spatial = win.in;
  s.out_spatial = win.out;
  s.kernel = win.kernel;
  s.stride = win.stride;
  s.dilation = win.dilation;
  s.pad_begin = win.pad_begin;
  return s;
}

}  // namespace npuc::engine
