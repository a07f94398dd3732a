// Sliding-window geometry for Conv, ConvTranspose and pooling.
#include "ops/window.hpp"

#include "ops/shape_util.hpp"
#include "support/error.hpp"

namespace npuc::ops {

namespace {
std::vector<int64_t> perDim(const ir::Node& n, const char* name, size_t rank, int64_t def) {
  auto v = n.attrInts(name);
  if (v.empty()) return std::vector<int64_t>(rank, def);
  if (v.size() != rank)
    fail(ErrorCode::kInvalidInput, "{}: attribute '{}' has {} values, expected {}", n.label(), name, v.size(), rank);
  for (int64_t x : v)
    if (x <= 0) fail(ErrorCode::kInvalidInput, "{}: attribute '{}' must be positive, got {}", n.label(), name, x);
  return v;
}
}  // namespace

Window resolveWindow(const ir::Node& n, const std::vector<int64_t>& in_spatial, std::vector<int64_t> kernel,
                     bool ceil_mode) {
  size_t r = in_spatial.size();
  Window w;
  w.in = in_spatial;
  if (kernel.empty()) kernel = n.attrInts("kernel_shape");
  auto ks = n.attrInts("kernel_shape");
  if (!ks.empty() && ks != kernel)
    fail(ErrorCode::kInvalidInput, "{}: kernel_shape {} does not match the weights' {}", n.label(),
         shapeStr(ks), shapeStr(kernel));
  if (kernel.size() != r)
    fail(ErrorCode::kInvalidInput, "{}: kernel has {} dims but the input has {} spatial dims", n.label(),
         kernel.size(), r);
  for (int64_t k : kernel)
    if (k <= 0) fail(ErrorCode::kInvalidInput, "{}: kernel size must be positive, got {}", n.label(), k);
  w.kernel = kernel;
  w.stride = perDim(n, "strides", r, 1);
  w.dilation = perDim(n, "dilations", r, 1);
  auto pads = n.attrInts("pads");
  if (pads.empty()) pads.assign(2 * r, 0);
  if (pads.size() != 2 * r)
    fail(ErrorCode::kInvalidInput, "{}: attribute 'pads' has {} values, expected {}", n.label(), pads.size(), 2 * r);
  for (int64_t p : pads)
    if (p < 0) fail(ErrorCode::kInvalidInput, "{}: negative pad {}", n.label(), p);
  std::string ap = n.attrString("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER")
    fail(ErrorCode::kInvalidInput, "{}: unknown auto_pad '{}'", n.label(), ap);
  w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<long>(r));
  w.pad_end.assign(pads.begin() + static_cast<long>(r), pads.end());
  for (size_t i = 0; i < r; ++i) {
    autoPad(ap, in_spatial[i], kernel[i], w.stride[i], w.dilation[i], w.pad_begin[i], w.pad_end[i]);
    int64_t o = windowOutput(in_spatial[i], kernel[i], w.stride[i], w.dilation[i], w.pad_begin[i], w.pad_end[i],
                             ceil_mode);
    if (o <= 0)
      fail(ErrorCode::kInvalidInput, "{}: window {} (dilation {}) does not fit spatial dim {} of size {} with pads {}+{}",
           n.label(), kernel[i], w.dilation[i], i, in_spatial[i], w.pad_begin[i], w.pad_end[i]);
    w.out.push_back(o);
  }
  return w;
}

Window resolveTransposedWindow(const ir::Node& n, const std::vector<int64_t>& in_spatial, std::vector<int64_t> kernel) {
  size_t r = in_spatial.size();
  Window w;
  w.in = in_spatial;
  w.kernel = kernel;
  if (kernel.size() != r)
    fail(ErrorCode::kInvalidInput, "{}: kernel has {} dims but the input has {} spatial dims", n.label(), kernel.size(), r);
  w.stride = perDim(n, "strides", r, 1);
  w.dilation = perDim(n, "dilations", r, 1);
  auto opad = n.attrInts("output_padding");
  if (opad.empty()) opad.assign(r, 0);
  auto oshape = n.attrInts("output_shape");
  auto pads = n.attrInts("pads");
  std::string ap = n.attrString("auto_pad", "NOTSET");
  if (pads.empty()) pads.assign(2 * r, 0);
  if (pads.size() != 2 * r || opad.size() != r)
    fail(ErrorCode::kInvalidInput, "{}: pads/output_padding have the wrong number of values", n.label());
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  for (size_t i = 0; i < r; ++i) {
    int64_t eff = (kernel[i] - 1) * w.dilation[i] + 1;
    int64_t full = w.stride[i] * (in_spatial[i] - 1) + opad[i] + eff;
    int64_t out;
    if (!oshape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      out = !oshape.empty() ? oshape[oshape.size() - r + i] : in_spatial[i] * w.stride[i];
      int64_t total = std::max<int64_t>(0, full - out);
      bool upper = ap != "SAME_LOWER";
      w.pad_begin[i] = upper ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
    } else {
      w.pad_begin[i] = pads[i];
      w.pad_end[i] = pads[i + r];
      out = full - w.pad_begin[i] - w.pad_end[i];
    }
    if (out <= 0) fail(ErrorCode::kInvalidInput, "{}: output spatial dim {} would be {}", n.label(), i, out);
    w.out.push_back(out);
  }
  return w;
}

}  // namespace npuc::ops
