// Kernels of the pre/post-processing ops (domain ai.npuc: YuvToRgb, ToGray, CropImage, ResizeHwc, Normalize,
// ArgMinMax, PostSoftmax) over kernels/prepost.hpp, the numerics specification the device runtime shares.
#include "engine/kernel.hpp"
#include "kernels/aipp.hpp"
#include "kernels/prepost.hpp"

namespace npuc::engine {

namespace {

const uint8_t* u8(const Tensor& t) { return static_cast<const uint8_t*>(t.raw()); }
const uint16_t* u16(const Tensor& t) { return static_cast<const uint16_t*>(t.raw()); }

void yuvToRgbKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  int32_t f = static_cast<int32_t>(c.node.attrInt("format", 0));
  int64_t h = c.node.attrInt("height", 0), w = c.node.attrInt("width", 0);
  if (!kernels::isYuvFormat(f)) c.error("unknown YUV format code {}", f);
  auto fmt = static_cast<kernels::YuvFormat>(f);
  // A frame fills the start of its buffer: a 4:2:0 frame (1.5 bytes a pixel) is declared YUY2 [H, W, 2] or, for
  // IMC1 / IMC3, RGB [H, W, 3] (the manual's table), and the bytes after it are not read.
  if (x.numel() < kernels::yuvBufferSize(fmt, h, w))
    c.error("a {}x{} image in YUV format {} is {} bytes, the input holds only {}", h, w, f, kernels::yuvBufferSize(fmt, h, w),
            x.numel());
  Tensor& y = c.alloc(0);
  kernels::yuvToRgb(fmt, c.node.attrInt("bgr", 0) != 0, h, w, u8(x), static_cast<uint8_t*>(y.raw()), c.pool);
}

void toGrayKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  int32_t f = static_cast<int32_t>(c.node.attrInt("format", 0));
  int64_t h = c.node.attrInt("height", 0), w = c.node.attrInt("width", 0);
  if (!kernels::isGrayFormat(f)) c.error("unknown gray input format code {}", f);
  int64_t need = h * w * (f >= 4096 ? 3 : 2);
  if (x.numel() != need) c.error("a {}x{} image in format {} is {} bytes, the input has {}", h, w, f, need, x.numel());
  Tensor& y = c.alloc(0);
  kernels::toGray(static_cast<kernels::GrayFormat>(f), h, w, u8(x), static_cast<uint8_t*>(y.raw()), c.pool);
}

void cropKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  bool chw = c.node.attrInt("layout", 0) == 1;
  kernels::CropGeometry g;
  g.height = chw ? x.dim(1) : x.dim(0);
  g.width = chw ? x.dim(2) : x.dim(1);
  g.channels = chw ? x.dim(0) : x.dim(2);
  g.pos_y = c.node.attrInt("pos_y", 0);
  g.pos_x = c.node.attrInt("pos_x", 0);
  g.out_height = c.node.attrInt("out_height", 0);
  g.out_width = c.node.attrInt("out_width", 0);
  Tensor& y = c.alloc(0);
  kernels::crop(chw ? kernels::ImageLayout::kCHW : kernels::ImageLayout::kHWC, g, dtypeSize(x.dtype()), x.raw(), y.raw(), c.pool);
}

void resizeKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  kernels::ResizeGeometry g;
  g.in_height = x.dim(0);
  g.in_width = x.dim(1);
  g.channels = x.dim(2);
  g.out_height = c.node.attrInt("out_height", 0);
  g.out_width = c.node.attrInt("out_width", 0);
  auto alg = c.node.attrInt("alg", 0) == 1 ? kernels::ResizeAlg::kBilinear : kernels::ResizeAlg::kNearest;
  Tensor& y = c.alloc(0);
  if (x.dtype() == DType::kU8) kernels::resizeHwc(alg, g, u8(x), static_cast<uint8_t*>(y.raw()), c.pool);
  else kernels::resizeHwc(alg, g, u16(x), static_cast<uint16_t*>(y.raw()), c.pool);
}

void normalizeKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<float> add = c.node.attrFloats("add"), mul = c.node.attrFloats("mul");
  int64_t C = x.shape().back();
  Tensor& y = c.alloc(0);
  kernels::normalize(x.numel() / std::max<int64_t>(C, 1), C, c.node.attrInt("swap_rb", 0) != 0, add.data(), mul.data(), u16(x),
                     static_cast<uint16_t*>(y.raw()), c.pool);
}

void argMinMaxKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  bool chw = c.node.attrInt("layout", 0) == 1;
  int64_t H = chw ? x.dim(1) : x.dim(0), W = chw ? x.dim(2) : x.dim(1), C = chw ? x.dim(0) : x.dim(2);
  auto axis = static_cast<kernels::ArgAxis>(c.node.attrInt("axis", 0));
  auto mode = c.node.attrInt("mode", 0) == 1 ? kernels::ArgMode::kArgMin : kernels::ArgMode::kArgMax;
  auto layout = chw ? kernels::ImageLayout::kCHW : kernels::ImageLayout::kHWC;
  Tensor& y = c.alloc(0);
  if (y.dtype() == DType::kU8) kernels::argMinMax(layout, H, W, C, axis, mode, u16(x), static_cast<uint8_t*>(y.raw()), c.pool);
  else kernels::argMinMax(layout, H, W, C, axis, mode, u16(x), static_cast<uint16_t*>(y.raw()), c.pool);
}

void postSoftmaxKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.alloc(0);
  if (y.dtype() == DType::kF32) kernels::softmaxFp16(x.numel(), u16(x), y.data<float>(), c.pool);
  else kernels::softmaxFp16(x.numel(), u16(x), static_cast<uint16_t*>(y.raw()), c.pool);
}

/// The parameter block and setup of an ai.npuc.Aipp node (static: attribute 'params'; dynamic: input 1).
void aippKernel(KernelCall& c) {
  const Tensor& x = c.input(0);
  std::vector<uint8_t> block;
  if (c.node.attrInt("dynamic", 0)) {
    const Tensor& pb = c.input(1);
    block.assign(u8(pb), u8(pb) + pb.numel());
  } else {
    for (int64_t v : c.node.attrInts("params")) block.push_back(static_cast<uint8_t>(v));
  }
  Tensor& y = c.alloc(0);
  try {  // the kernel checks the block's rules
    const kernels::AippSetup s{c.node.attrInt("n", 1),     c.node.attrInt("channels", 3), c.node.attrInt("height", 0),
                               c.node.attrInt("width", 0), x.dim(1),
                               kernels::aippPaddingValues(c.node.attrFloat("padding_value", 0.f), c.node.attrFloats("padding_values"))};
    kernels::aipp(kernels::decodeAipp(block.data(), block.size()), s, u8(x), y.data<float>(), c.pool);
  } catch (const Error& e) {
    c.error("{}", e.what());
  }
}

}  // namespace

void registerPrePostKernels(KernelRegistry& r) {
  r.addFn("YuvToRgb", yuvToRgbKernel, "ai.npuc");
  r.addFn("ToGray", toGrayKernel, "ai.npuc");
  r.addFn("CropImage", cropKernel, "ai.npuc");
  r.addFn("ResizeHwc", resizeKernel, "ai.npuc");
  r.addFn("Normalize", normalizeKernel, "ai.npuc");
  r.addFn("ArgMinMax", argMinMaxKernel, "ai.npuc");
  r.addFn("PostSoftmax", postSoftmaxKernel, "ai.npuc");
  r.addFn("Aipp", aippKernel, "ai.npuc");
}

}  // namespace npuc::engine
