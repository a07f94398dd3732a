#include "prepost/graph.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace npuc::prepost {

namespace {

class Builder {
 public:
  Builder(ir::Graph& g, const PrePost& pp) : g_(g), pp_(pp) {}

  /// A node with one output. `exact` marks the output as a pre/post value, stored as typed (ir::Value::exact_type);
  /// the bridges on the body side of a model output are body values (the target's float numerics).
  ir::ValueId node(const std::string& op, const std::string& domain, std::vector<ir::ValueId> ins,
                   const std::string& out_name, std::map<std::string, ir::Attr> attrs = {}, bool exact = true) {
    ir::Value& ov = g_.addValue(g_.uniqueValueName(out_name));
    ov.exact_type = exact;
    ir::ValueId out = ov.id;
    ir::Node& n = g_.addNode(op, g_.uniqueValueName(out_name + "/" + op), std::move(ins), {out}, domain);
    n.attrs = std::move(attrs);
    return out;
  }
  ir::ValueId constI64(const std::string& name, const std::vector<int64_t>& v) {
    return g_.addConstant(g_.uniqueValueName(name), Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v)).id;
  }
  ir::ValueId reshape(ir::ValueId x, const std::vector<int64_t>& shape, const std::string& name, bool exact = true) {
    return node("Reshape", "", {x, constI64(name + "_shape", shape)}, name, {}, exact);
  }
  ir::ValueId cast(ir::ValueId x, DType to, const std::string& name) {
    int64_t onnx = to == DType::kF16 ? 10 : to == DType::kF32 ? 1 : to == DType::kU8 ? 2 : 0;
    if (!onnx) fail(ErrorCode::kUnsupported, "{}: no cast to {}", pp_.source, dtypeName(to));
    return node("Cast", "", {x}, name, {{"to", ir::Attr(onnx)}});
  }

  /// One operation of an entry: x (typed as op.in) -> value typed as op.out.
  ir::ValueId op(const Operation& o, ir::ValueId x, const std::string& base) {
    using A = ir::Attr;
    switch (o.kind) {
      case OpKind::kTranspose: {
        auto& p = std::get<TransposeParams>(o.params);
        std::vector<int64_t> perm = p.is_chw2hwc ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{2, 0, 1};
        return node("Transpose", "", {x}, base + "_transpose", {{"perm", A(perm)}});
      }
      case OpKind::kConvYuv2Rgb: {
        auto& p = std::get<ConvYuv2RgbParams>(o.params);
        return node("YuvToRgb", "ai.npuc", {x}, base + "_yuv2rgb",
                    {{"format", A(static_cast<int64_t>(p.din_yuv_format))},
                     {"bgr", A(int64_t{p.dout_rgb_format == RgbFormat::kBGR})},
                     {"height", A(o.out.height())},
                     {"width", A(o.out.width())}});
      }
      case OpKind::kConvX2Gray: {
        auto& p = std::get<ConvX2GrayParams>(o.params);
        return node("ToGray", "ai.npuc", {x}, base + "_gray",
                    {{"format", A(static_cast<int64_t>(p.din_format))}, {"height", A(o.out.height())}, {"width", A(o.out.width())}});
      }
      case OpKind::kCrop: {
        auto& p = std::get<CropParams>(o.params);
        return node("CropImage", "ai.npuc", {x}, base + "_crop",
                    {{"layout", A(int64_t{p.data_format == Order::kCHW})},
                     {"pos_y", A(p.pos_y)},
                     {"pos_x", A(p.pos_x)},
                     {"out_height", A(p.out_height)},
                     {"out_width", A(p.out_width)}});
      }
      case OpKind::kResizeHwc: {
        auto& p = std::get<ResizeHwcParams>(o.params);
        return node("ResizeHwc", "ai.npuc", {x}, base + "_resize",
                    {{"alg", A(int64_t{p.alg == ResizeAlg::kBilinear})}, {"out_height", A(p.out_height)}, {"out_width", A(p.out_width)}});
      }
      case OpKind::kCastAnyToFp16: return o.in.type == ElemType::kF16 ? x : cast(x, DType::kF16, base + "_cast_fp16");
      case OpKind::kNormalize: {
        auto& p = std::get<NormalizeParams>(o.params);
        std::vector<float> add(p.cof_add.begin(), p.cof_add.end()), mul(p.cof_mul.begin(), p.cof_mul.end());
        return node("Normalize", "ai.npuc", {x}, base + "_normalize",
                    {{"add", A(add)}, {"mul", A(mul)}, {"swap_rb", A(int64_t{p.swap_rb})}});
      }
      case OpKind::kMemcopy: return node("Identity", "", {x}, base + "_memcopy");
      case OpKind::kSoftmax: {
        auto& p = std::get<SoftmaxParams>(o.params);
        return node("PostSoftmax", "ai.npuc", {x}, base + "_softmax", {{"fp32_out", A(int64_t{p.dout_format == ElemType::kF32})}});
      }
      case OpKind::kCastFp16Fp32: {
        auto& p = std::get<CastFp16Fp32Params>(o.params);
        return cast(x, p.mode == CastMode::kFp16ToFp32 ? DType::kF32 : DType::kF16, base + "_cast");
      }
      case OpKind::kArgMinMax: {
        auto& p = std::get<ArgMinMaxParams>(o.params);
        return node("ArgMinMax", "ai.npuc", {x}, base + "_argminmax",
                    {{"layout", A(int64_t{p.din_format == Order::kCHW})},
                     {"axis", A(static_cast<int64_t>(p.axis))},
                     {"mode", A(int64_t{p.mode == ArgMode::kArgMin})},
                     {"out_type", A(int64_t{p.dout_type == ElemType::kU16})}});
      }
    }
    fail(ErrorCode::kInternal, "unknown pre/post operation");
  }

  std::vector<Boundary> run() {
    std::vector<ir::ValueId> new_inputs = g_.inputs();
    for (const Process& p : pp_.preprocess) {
      const TensorDecl* in = pp_.findInputToPre(p.src);
      if (!in) fail(ErrorCode::kInvalidInput, "{}: preprocess source '{}' is not in input_to_pre", pp_.source, p.src);
      auto model_in = std::find_if(g_.inputs().begin(), g_.inputs().end(), [&](ir::ValueId v) { return g_.value(v).name == p.dest; });
      if (model_in == g_.inputs().end())
        fail(ErrorCode::kInvalidInput, "{}: preprocess dest '{}' is not an input of the model", pp_.source, p.dest);
      ir::ValueId body_in = *model_in;
      if (g_.findValue(p.src)) fail(ErrorCode::kInvalidInput, "{}: input_to_pre name '{}' is already a value of the model", pp_.source, p.src);
      ir::Value& src = g_.addValue(p.src, ir::makeType(in->type, in->shape));
      src.exact_type = true;
      src.layout = layoutOf(in->order);
      ir::ValueId x = src.id;
      for (const Operation& o : p.operations) {
        x = op(o, x, p.dest + "/pre");
        g_.value(x).layout = layoutOf(o.out.order);
      }
      // Bridge: the pre result (the declared order, HWC) to the model's input layout and type.
      const ir::Type& mt = g_.value(body_in).type;
      const TensorDecl* body = pp_.findInputToBody(p.dest);
      bool channel_last = false;
      if (body) {
        Boundary b{true, p.dest, g_.value(x).name, body->order, body->shape, false};
        if (mt.shape.size() == 4 && body->shape.size() == 3 && body->order != Order::kC) {
          std::optional<bool> last = modelTensorIsChannelLast(mt.shape, *body, feedsTranspose(body_in, {0, 3, 1, 2}));
          b.channel_last = last.value_or(false);
          // [H, W, C] -> [C, H, W] for a channel-first model, [C, H, W] -> [H, W, C] for a channel-last one (neither
          // reading fits under -NotCheckSizeONNXvsYAML: the data stays as declared, and the reshape names the sizes).
          if (!last) {
          } else if (!b.channel_last && body->order == Order::kHWC)
            x = node("Transpose", "", {x}, p.dest + "/pre_to_nchw", {{"perm", ir::Attr(std::vector<int64_t>{2, 0, 1})}});
          else if (b.channel_last && body->order == Order::kCHW)
            x = node("Transpose", "", {x}, p.dest + "/pre_to_nhwc", {{"perm", ir::Attr(std::vector<int64_t>{1, 2, 0})}});
        }
        channel_last = b.channel_last;
        boundaries_.push_back(b);
      }
      ir::ValueId shaped = reshape(x, mt.shape, p.dest + "/pre_shaped");
      const ir::Layout model_layout = channel_last ? ir::Layout::kNhwc : ir::Layout::kModel;
      g_.value(shaped).layout = g_.value(body_in).layout = model_layout;
      // The last bridge node writes the model's input value itself, so the body is unchanged.
      int64_t to = mt.dtype == DType::kF32 ? 1 : mt.dtype == DType::kF16 ? 10 : 0;
      if (!to) fail(ErrorCode::kUnsupported, "{}: model input '{}' is {}; pre-processing feeds float inputs", pp_.source, p.dest, dtypeName(mt.dtype));
      g_.addNode("Cast", g_.uniqueValueName(p.dest + "/pre_cast"), {shaped}, {body_in}).attrs["to"] = ir::Attr(to);
      *std::find(new_inputs.begin(), new_inputs.end(), body_in) = g_.findValue(p.src).value();
    }
    g_.inputs() = new_inputs;

    std::map<std::string, ir::ValueId> results;  // post dests, and shape_post pieces
    std::vector<ir::ValueId> consumed;            // model outputs that feed post-processing
    // A model output to the declared output_from_body layout and type (the body side of the bridge is body values).
    auto bridgeOut = [&](ir::ValueId x, const TensorDecl& ob) {
      consumed.push_back(x);
      const ir::Type& mt = g_.value(x).type;
      Boundary b{false, ob.name, "", ob.order, ob.shape, false};
      if (mt.shape.size() == 4 && ob.shape.size() == 3 && ob.order != Order::kC) {
        std::optional<bool> last = modelTensorIsChannelLast(mt.shape, ob, producedByTranspose(x, {0, 2, 3, 1}));
        b.channel_last = last.value_or(false);
        if (b.channel_last) g_.value(x).layout = ir::Layout::kNhwc;
        // [N, C, H, W] -> [N, H, W, C] for an HWC declaration of a channel-first output; [N, H, W, C] ->
        // [N, C, H, W] for a CHW declaration of a channel-last one; otherwise the order is already the declared one.
        if (!last) {
        } else if (!b.channel_last && ob.order == Order::kHWC)
          x = node("Transpose", "", {x}, ob.name + "/post_to_nhwc", {{"perm", ir::Attr(std::vector<int64_t>{0, 2, 3, 1})}}, false);
        else if (b.channel_last && ob.order == Order::kCHW)
          x = node("Transpose", "", {x}, ob.name + "/post_to_nchw", {{"perm", ir::Attr(std::vector<int64_t>{0, 3, 1, 2})}}, false);
      }
      x = reshape(x, ob.shape, ob.name + "/post_shaped", false);
      g_.value(x).layout = layoutOf(ob.order);
      x = cast(x, ob.type, ob.name + "/post_cast");
      g_.value(x).layout = layoutOf(ob.order);
      b.prepost_value = g_.value(x).name;
      boundaries_.push_back(b);
      return x;
    };
    auto modelOutput = [&](const std::string& name) -> std::optional<ir::ValueId> {
      auto it = std::find_if(g_.outputs().begin(), g_.outputs().end(), [&](ir::ValueId v) { return g_.value(v).name == name; });
      if (it == g_.outputs().end()) return std::nullopt;
      return *it;
    };
    // shape_post: the body output split along its channel axis (the last of HWC or C) into the named pieces.
    for (const TensorDecl& ob : pp_.output_from_body) {
      if (ob.shape_post.empty()) continue;
      auto mo = modelOutput(ob.name);
      if (!mo) fail(ErrorCode::kInvalidInput, "{}: output_from_body '{}' is not a model output", pp_.source, ob.name);
      ir::ValueId whole = bridgeOut(*mo, ob);
      const int64_t axis = static_cast<int64_t>(ob.shape.size()) - 1;
      int64_t start = 0;
      for (const ShapePost& piece : ob.shape_post) {
        int64_t len = piece.shape.empty() ? 0 : piece.shape.back();
        if (g_.findValue(piece.name))
          fail(ErrorCode::kInvalidInput, "{}: shape_post piece '{}' is already a value of the model", pp_.source, piece.name);
        ir::ValueId v;
        if (g_.opset >= 10) {
          v = node("Slice", "", {whole, constI64(piece.name + "_starts", {start}), constI64(piece.name + "_ends", {start + len}),
                                 constI64(piece.name + "_axes", {axis})},
                   piece.name);
        } else {
          v = node("Slice", "", {whole}, piece.name,
                   {{"starts", ir::Attr(std::vector<int64_t>{start})}, {"ends", ir::Attr(std::vector<int64_t>{start + len})},
                    {"axes", ir::Attr(std::vector<int64_t>{axis})}});
        }
        g_.value(v).layout = layoutOf(ob.order);
        results[piece.name] = v;
        start += len;
      }
    }
    for (const Process& p : pp_.postprocess) {
      ir::ValueId x;
      if (auto it = results.find(p.src); it != results.end()) {
        x = it->second;
      } else {
        const TensorDecl* ob = pp_.findOutputFromBody(p.src);
        auto model_out = modelOutput(p.src);
        if (!ob || !model_out)
          fail(ErrorCode::kInvalidInput, "{}: postprocess source '{}' is neither a model output nor an earlier dest", pp_.source, p.src);
        x = bridgeOut(*model_out, *ob);
      }
      for (const Operation& o : p.operations) {
        x = op(o, x, p.dest + "/post");
        g_.value(x).layout = layoutOf(o.out.order);
      }
      if (g_.findValue(p.dest)) fail(ErrorCode::kInvalidInput, "{}: postprocess dest '{}' is already a value of the model", pp_.source, p.dest);
      ir::Layout l = g_.value(x).layout;
      x = node("Identity", "", {x}, p.dest);  // named exactly p.dest (checked free above)
      g_.value(x).layout = l;
      results[p.dest] = x;
    }
    std::vector<ir::ValueId> outs;
    for (ir::ValueId v : g_.outputs())
      if (std::find(consumed.begin(), consumed.end(), v) == consumed.end()) outs.push_back(v);
    for (const TensorDecl& d : pp_.output_from_post)
      if (auto it = results.find(d.name); it != results.end()) outs.push_back(it->second);
    g_.outputs() = outs;
    g_.topoSort();
    ops::inferShapes(g_);
    std::stable_partition(boundaries_.begin(), boundaries_.end(), [](const Boundary& b) { return b.input; });
    return boundaries_;
  }

 private:
  /// Every reader of the model input `v` is a Transpose by `perm` (a channel-last export's boundary transpose).
  bool feedsTranspose(ir::ValueId v, const std::vector<int64_t>& perm) const { return ir::onlyFeedsTransposeBy(g_, v, perm); }
  bool producedByTranspose(ir::ValueId v, const std::vector<int64_t>& perm) const {
    ir::NodeId p = g_.value(v).producer;
    return p != ir::kNoNode && ir::isTransposeBy(g_.node(p), perm);
  }

  ir::Graph& g_;
  const PrePost& pp_;
  std::vector<Boundary> boundaries_;
};

}  // namespace

std::vector<Boundary> insertPrePost(ir::Graph& g, const PrePost& pp) { return Builder(g, pp).run(); }

std::optional<bool> modelTensorIsChannelLast(const std::vector<int64_t>& m, const TensorDecl& d, bool transposed_at_boundary) {
  if (m.size() != 4 || d.shape.size() != 3 || d.order == Order::kC) return std::nullopt;
  const int64_t c = d.order == Order::kHWC ? d.shape[2] : d.shape[0];
  const int64_t h = d.order == Order::kHWC ? d.shape[0] : d.shape[1];
  const int64_t w = d.order == Order::kHWC ? d.shape[1] : d.shape[2];
  auto fits = [](int64_t model, int64_t decl) { return model <= 0 || model == decl; };  // unknown dims fit
  const bool nchw = fits(m[1], c) && fits(m[2], h) && fits(m[3], w);
  const bool nhwc = fits(m[1], h) && fits(m[2], w) && fits(m[3], c);
  if (!nchw && !nhwc) return std::nullopt;
  return nhwc && (!nchw || transposed_at_boundary);
}

ir::Layout layoutOf(Order o) {
  switch (o) {
    case Order::kHWC: return ir::Layout::kHwc;
    case Order::kCHW: return ir::Layout::kChw;
    case Order::kC: return ir::Layout::kFlat;
  }
  return ir::Layout::kModel;
}

}  // namespace npuc::prepost
