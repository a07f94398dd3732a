// Engine kernels of the detection and sampling ops (NonMaxSuppression, ai.npuc.DetectionOutput, RoiAlign,
// GridSample, MaxUnpool): parameters read as the shape functions read them, the reference kernels
// (src/kernels/ref/detection_ref.cpp, sampling_ref.cpp) compute.
#include "engine/kernel.hpp"
#include "kernels/detection.hpp"
#include "kernels/sampling.hpp"
#include "ops/registry.hpp"

#include <algorithm>

namespace npuc::engine {

namespace {

/// The node's inputs as its shape function saw them (the parameters are read by the same functions).
ops::InferContext contextOf(const KernelCall& c, std::vector<ir::Type>& types, std::vector<const Tensor*>& vals) {
  for (const Tensor& t : c.in) {
    types.push_back(t.defined() ? ir::makeType(t.dtype(), t.shape()) : ir::Type{});
    vals.push_back(t.defined() ? &t : nullptr);
  }
  return ops::InferContext(c.node, c.opset, types, vals);
}

void roiAlignKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  kernels::RoiAlignParams p;
  p.images = x.dim(0), p.channels = x.dim(1), p.height = x.dim(2), p.width = x.dim(3);
  p.rois = c.input(1).dim(0);
  p.out_h = c.node.attrInt("output_height", 1), p.out_w = c.node.attrInt("output_width", 1);
  p.sampling_ratio = c.node.attrInt("sampling_ratio", 0);
  p.spatial_scale = c.node.attrFloat("spatial_scale", 1.0f);
  p.half_pixel = c.node.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  p.max_mode = c.node.attrString("mode", "avg") == "max";
  const std::vector<int64_t> batch = c.input(2).toInt64();  // (each checked by the kernel)
  Tensor& y = c.alloc(0);
  kernels::roiAlign(p, x.data<float>(), c.input(1).data<float>(), batch.data(), y.data<float>());
}

void gridSampleKernel(KernelCall& c) {
  using GS = kernels::GridSampleParams;
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  GS p;
  p.n = x.dim(0), p.channels = x.dim(1), p.in_h = x.dim(2), p.in_w = x.dim(3), p.out_h = y.dim(2), p.out_w = y.dim(3);
  const std::string mode = c.node.attrString("mode", "bilinear"), pad = c.node.attrString("padding_mode", "zeros");
  if (!kernels::gridSampleModes(mode, pad, p)) c.unsupported("mode '{}' / padding_mode '{}'", mode, pad);
  p.align_corners = c.node.attrInt("align_corners", 0) != 0;
  kernels::gridSample(p, x.data<float>(), c.input(1).data<float>(), y.data<float>());
}

void maxUnpoolKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  // The shape MaxPool's indices count in: the attributes' unpooled shape (output_shape may pad beyond it).
  const Shape from = ops::maxUnpoolPooledShape(c.node, x.shape(), y.shape());
  if (!kernels::maxUnpool(x.data<float>(), c.input(1).data<int64_t>(), x.numel(), y.data<float>(), y.shape(), from))
    c.error("an index of I is outside the unpooled shape {} or the output {}", shapeStr(from), shapeStr(y.shape()));
}

}  // namespace

void registerDetectionKernels(KernelRegistry& r) {
  r.addFn("RoiAlign", roiAlignKernel);
  r.addFn("GridSample", gridSampleKernel);
  r.addFn("MaxUnpool", maxUnpoolKernel);
  r.addFn("DetectionOutput", [](KernelCall& c) {
    std::vector<ir::Type> types;
    std::vector<const Tensor*> vals;
    ops::InferContext ctx = contextOf(c, types, vals);
    Tensor& y = c.alloc(0);
    kernels::ssdDetectionOutputRows(ops::ssdParams(ctx), c.input(0).data<float>(), c.input(1).data<float>(),
                                    c.input(2).data<float>(), y.data<float>());
  }, "ai.npuc");
  r.addFn("NonMaxSuppression", [](KernelCall& c) {
    std::vector<ir::Type> types;
    std::vector<const Tensor*> vals;
    ops::InferContext ctx = contextOf(c, types, vals);
    const kernels::NmsParams p = ops::nmsParams(ctx);
    const auto sel = kernels::nonMaxSuppression(p, c.input(0).data<float>(), c.input(1).data<float>());
    Tensor& y = c.alloc(0);
    if (y.numel() != static_cast<int64_t>(sel.size()) * 3) c.error("internal: {} boxes selected, {} inferred", sel.size(), y.dim(0));
    for (size_t i = 0; i < sel.size(); ++i)
      for (size_t k = 0; k < 3; ++k) y.data<int64_t>()[i * 3 + k] = sel[i][k];
  });
}

}  // namespace npuc::engine
