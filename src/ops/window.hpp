// Geometry of sliding-window ops (Conv, ConvTranspose, pooling) resolved from ONNX attributes: kernel, strides,
// dilations, explicit pads (auto_pad applied) and output sizes. Shared by the schemas and the engine's kernels.
#pragma once

#include "ir/graph.hpp"
#include "support/tensor.hpp"

#include <vector>

namespace npuc::ops {

struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end, in, out;
  int rank() const { return static_cast<int>(kernel.size()); }
};

/// Conv / pooling window over input spatial dims `in_spatial`. `kernel` comes from the weights for Conv
/// (pass empty to read 'kernel_shape'). Throws kInvalidInput naming the node on bad attributes.
Window resolveWindow(const ir::Node& n, const std::vector<int64_t>& in_spatial, std::vector<int64_t> kernel,
                     bool ceil_mode);

/// A pooling node's window (MaxPool, AveragePool, LpPool and npuc's integer pools: 'kernel_shape', its 'ceil_mode')
/// over an input x of shape [N, C, spatial…].
inline Window resolvePoolWindow(const ir::Node& n, const Shape& x) {
  return resolveWindow(n, std::vector<int64_t>(x.begin() + 2, x.end()), {}, n.attrInt("ceil_mode", 0) != 0);
}

/// ConvTranspose geometry (output_padding / output_shape / auto_pad resolved); `kernel` from the weights.
Window resolveTransposedWindow(const ir::Node& n, const std::vector<int64_t>& in_spatial, std::vector<int64_t> kernel);

}  // namespace npuc::ops
