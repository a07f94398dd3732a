// Lowering of the pre/post-processing nodes of a -prepost definition or an AIPP configuration (mirrors
// engine/ops_prepost.cpp; the ai.npuc ops prepost/graph.hpp inserts).
#include "codegen/lowerer.hpp"

#include "kernels/aipp.hpp"

#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace npuc::codegen::detail {

/// The pre/post-processing nodes of a -prepost definition (prepost/graph.hpp) on the vector engine.
void Lowerer::prePost(const ir::Node& n) {
  const std::string& op = n.op;
  if (op == "YuvToRgb") {
    emit(n, LayerKind::kYuvToRgb, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "format"), attrU32(n, "bgr")});
  } else if (op == "ToGray") {
    emit(n, LayerKind::kToGray, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "format")});
  } else if (op == "CropImage") {
    emit(n, LayerKind::kCrop, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "layout"), attrU32(n, "pos_y"), attrU32(n, "pos_x")});
  } else if (op == "ResizeHwc") {
    emit(n, LayerKind::kResizeHwc, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "alg")});
  } else if (op == "Normalize") {
    std::vector<float> add = n.attrFloats("add"), mul = n.attrFloats("mul");
    const Shape& xs = shapeOf(n, 0);
    size_t C = xs.empty() ? 0 : static_cast<size_t>(xs.back());
    if (add.size() != C || mul.size() != C) unsupported(n, "needs {} coefficients per list, has {} and {}", C, add.size(), mul.size());
    std::vector<uint32_t> p = {attrU32(n, "swap_rb")};
    for (float f : add) p.push_back(package::floatParam(f));
    for (float f : mul) p.push_back(package::floatParam(f));
    const ir::Node* fused = nullptr;
    int x;
    if (auto it = fused_cast_.find(n.inputs[0]); it != fused_cast_.end()) {
      x = it->second.first;
      fused = it->second.second;
    } else {
      x = in(n, 0);
    }
    LDesc& d = emit(n, LayerKind::kNormalize, {x}, outVal(n, n.outputs[0]), p);
    if (fused) {
      d.opexp = "Cast+" + d.opexp;
      d.onnx_nodes.insert(d.onnx_nodes.begin(), fused->name);
      fusions_.push_back({n.name,
                          "cast_any_to_fp16 fused into normalize: normalize reads the uint8 image (the same bits; one pass "
                          "instead of two)",
                          {fused->name}});
    }
  } else if (op == "Aipp") {
    // params: dynamic, the padding values of channels 0..3 (f32 bits), then a static block's bytes as little-endian words.
    bool dynamic = n.attrInt("dynamic", 0) != 0;
    std::vector<uint32_t> p = {dynamic ? 1u : 0u};
    for (float v : kernels::aippPaddingValues(n.attrFloat("padding_value", 0.f), n.attrFloats("padding_values"))) p.push_back(package::floatParam(v));
    std::vector<int> ins = {in(n, 0)};
    if (dynamic) {
      ins.push_back(in(n, 1));
    } else {
      std::vector<int64_t> bytes = n.attrInts("params");
      if (bytes.empty() || bytes.size() % 4) unsupported(n, "a static AIPP block of {} bytes (a multiple of 4 expected)", bytes.size());
      for (size_t i = 0; i < bytes.size(); i += 4) {
        uint32_t w = 0;
        for (size_t k = 0; k < 4; ++k) w |= static_cast<uint32_t>(bytes[i + k] & 0xFF) << (8 * k);
        p.push_back(w);
      }
    }
    emit(n, LayerKind::kAipp, ins, outVal(n, n.outputs[0]), p);
  } else if (op == "PostSoftmax") {
    emit(n, LayerKind::kPostSoftmax, {in(n, 0)}, outVal(n, n.outputs[0]));
  } else if (op == "ArgMinMax") {
    emit(n, LayerKind::kArgMinMax, {in(n, 0)}, outVal(n, n.outputs[0]), {attrU32(n, "layout"), attrU32(n, "axis"), attrU32(n, "mode")});
  } else {
    unsupported(n, "has no package form yet");
  }
}

void registerPrepostLowerings(LowerTable& t) {
  for (const char* op : {"YuvToRgb", "ToGray", "CropImage", "ResizeHwc", "Normalize", "Aipp", "PostSoftmax", "ArgMinMax"})
    t[{"ai.npuc", op}] = &Lowerer::prePost;
}

}  // namespace npuc::codegen::detail
