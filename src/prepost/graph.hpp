// Pre/post-processing as ordinary graph nodes: a validated definition is inserted in front of the model's inputs and
// behind its outputs, so the reference engine runs the whole pipeline (camera frame in, post-processed result out)
// and the translator sees one graph.
#pragma once

#include "ir/graph.hpp"
#include "prepost/prepost.hpp"

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
void insertPrePost(ir::Graph& g, const PrePost& pp);

}  // namespace npuc::prepost
