// Pre/post-processing as ordinary graph nodes: a validated definition is inserted in front of the model's inputs and
// behind its outputs, so the reference engine runs the whole pipeline (camera frame in, post-processed result out)
// and the translator sees one graph.
#pragma once

#include "ir/graph.hpp"
#include "prepost/prepost.hpp"

#include <optional>

namespace npuc::prepost {

/// Inserts `pp` into `g` (a resolved model graph with static shapes):
///  - every preprocess entry: a new graph input named after its input_to_pre tensor (its declared type and shape,
///    HWC without N), the operations as nodes (ai.npuc YuvToRgb, ToGray, CropImage, ResizeHwc, Normalize; ONNX
///    Transpose, Cast, Identity), then a bridge to the model input it feeds (HWC → NCHW, the model's type);
///  - every postprocess entry: from a model output (bridged to the declared output_from_body layout and type) or
///    another entry's result, the operations (ONNX Transpose/Cast/Identity, ai.npuc PostSoftmax/ArgMinMax), ending in a
///    value named after its dest; the output_from_post tensors become the graph outputs.
/// A body output with shape_post pieces is bridged once and split along its channel axis by Slice nodes named after
/// the pieces, which post entries read. Model inputs / outputs the definition does not mention stay as they are.
/// Where the definition meets the model: a model input or output (in the model's own layout: NCHW, or channel-last
/// NHWC as a TensorFlow export has it, Appendix B) and the pre/post value holding the same numbers in the declared
/// order, shape and type. Which of the two layouts a rank-4 model tensor has is read from its shape; when both
/// readings fit (H = W = C), from the model's structure (a Transpose to/from channel-first at the boundary means
/// channel-last), else channel-first.
struct Boundary {
  bool input = false;         // input_to_body (pre result -> model input) or output_from_body (model output -> post)
  std::string declared;       // the declaration's name, which is the model value's
  std::string prepost_value;  // the value in the declared layout: the pre result, or the bridged model output
  Order order = Order::kHWC;
  std::vector<int64_t> shape;  // declared
  bool channel_last = false;   // the model's rank-4 tensor was read as NHWC
};

/// Returns the boundaries, inputs first.
std::vector<Boundary> insertPrePost(ir::Graph& g, const PrePost& pp);

/// Whether a rank-4 model tensor of `dims` is channel-last for the declaration `d` ([N, H, W, C] rather than
/// [N, C, H, W]); `transposed_at_boundary` is the structural hint used when the shape fits both readings. Empty when
/// neither reading fits (or the tensors are not an image and its rank-4 model tensor).
std::optional<bool> modelTensorIsChannelLast(const std::vector<int64_t>& dims, const TensorDecl& d, bool transposed_at_boundary);
/// The value's Layout for a pre/post order.
ir::Layout layoutOf(Order o);

}  // namespace npuc::prepost
