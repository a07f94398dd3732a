// Schemas of detection and sampling ops: NonMaxSuppression, ai.npuc.DetectionOutput (Caffe SSD), RoiAlign,
// GridSample, MaxUnpool. NonMaxSuppression's output's size depends on the data: the shape function runs the
// selection itself (kernels::nonMaxSuppression, the engine's kernel) once boxes, scores and the limits are known, as
// NonZero's counts its non-zeros; before that the output's type is unknown.
#include "kernels/detection.hpp"
#include "ops/registry.hpp"

#include <algorithm>
#include <type_traits>

namespace npuc::ops {

namespace {

/// The scalar (or one-element) input i, or `def` when omitted.
template <typename T>
T scalarInput(InferContext& c, int i, T def, const char* what) {
  if (!c.hasInput(i)) return def;
  const Tensor& t = c.inputValue(i);
  if (t.numel() != 1) c.error("{} must hold one value, got shape {}", what, shapeStr(t.shape()));
  if constexpr (std::is_integral_v<T>)
    return t.toInt64()[0];  // exactly: INT64_MAX ("no limit", as torchvision exports it) is not a double
  else
    return static_cast<T>(t.toDouble()[0]);
}

}  // namespace

kernels::NmsParams nmsParams(InferContext& c) {
  const Shape& boxes = c.inputShape(0);
  const Shape& scores = c.inputShape(1);
  if (boxes.size() != 3 || boxes[2] != 4) c.error("boxes must be [batches, boxes, 4], got {}", shapeStr(boxes));
  if (scores.size() != 3 || scores[0] != boxes[0] || scores[2] != boxes[1])
    c.error("scores must be [{}, classes, {}], got {}", boxes[0], boxes[1], shapeStr(scores));
  for (int i : {0, 1})
    if (c.inputDType(i) != DType::kF32) c.unsupported("input {} is {}; NonMaxSuppression takes float32", i, dtypeName(c.inputDType(i)));
  kernels::NmsParams p;
  p.batches = boxes[0];
  p.boxes = boxes[1];
  p.classes = scores[1];
  const int64_t cpb = c.node().attrInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1) c.error("center_point_box {} is not 0 or 1", cpb);
  p.center_point_box = cpb == 1;
  p.max_per_class = scalarInput<int64_t>(c, 2, 0, "max_output_boxes_per_class");
  p.iou_threshold = scalarInput<float>(c, 3, 0.0f, "iou_threshold");
  if (!(p.iou_threshold >= 0.0f && p.iou_threshold <= 1.0f)) c.error("iou_threshold {} is outside [0, 1]", p.iou_threshold);
  p.has_score_threshold = c.hasInput(4);
  p.score_threshold = scalarInput<float>(c, 4, 0.0f, "score_threshold");
  return p;
}

Shape maxUnpoolPooledShape(const ir::Node& n, const Shape& x, const Shape& y) {
  const size_t sp = x.size() - 2;
  const auto k = n.attrInts("kernel_shape"), st = n.attrInts("strides", std::vector<int64_t>(sp, 1));
  const auto pads = n.attrInts("pads", std::vector<int64_t>(2 * sp, 0));
  Shape from{x[0], x[1]};
  for (size_t i = 0; i < sp; ++i)
    from.push_back(k.size() == sp && st.size() == sp && pads.size() == 2 * sp
                       ? (x[i + 2] - 1) * st[i] - pads[i] - pads[i + sp] + k[i]
                       : y[i + 2]);
  return from;
}

kernels::SsdParams ssdParams(InferContext& c) {
  const ir::Node& n = c.node();
  kernels::SsdParams p;
  for (int i : {0, 1, 2})
    if (c.inputDType(i) != DType::kF32) c.unsupported("input {} is {}; DetectionOutput takes float32", i, dtypeName(c.inputDType(i)));
  p.classes = n.attrInt("num_classes", 0);
  if (p.classes < 1) c.error("num_classes must be positive, got {}", p.classes);
  p.share_location = n.attrInt("share_location", 1) != 0;
  p.background = n.attrInt("background_label_id", 0);
  const int64_t code = n.attrInt("code_type", 1);
  if (code < 1 || code > 3) c.error("code_type {} is not CORNER (1), CENTER_SIZE (2) or CORNER_SIZE (3)", code);
  p.code = static_cast<kernels::SsdParams::Code>(code);
  p.variance_in_target = n.attrInt("variance_encoded_in_target", 0) != 0;
  if (n.hasAttr("confidence_threshold")) p.confidence_threshold = n.attrFloat("confidence_threshold", 0.0f);
  p.nms_threshold = n.attrFloat("nms_threshold", 0.3f);
  p.eta = n.attrFloat("eta", 1.0f);
  if (!(p.eta > 0.0f && p.eta <= 1.0f)) c.error("eta {} is outside (0, 1]", p.eta);
  p.top_k = n.attrInt("top_k", -1);
  p.keep_top_k = n.attrInt("keep_top_k", -1);
  const Shape& loc = c.inputShape(0);
  const Shape& conf = c.inputShape(1);
  const Shape& prior = c.inputShape(2);
  if (prior.size() != 3 || prior[0] != 1 || prior[1] != 2 || prior[2] % 4)
    c.error("priors must be [1, 2, 4·priors] (boxes, then variances), got {}", shapeStr(prior));
  p.priors = prior[2] / 4;
  p.images = loc.empty() ? 0 : loc[0];
  const int64_t loc_classes = p.share_location ? 1 : p.classes;
  auto perImage = [](const Shape& s) { return s.empty() ? 0 : shapeNumel(s) / std::max<int64_t>(s[0], 1); };
  if (perImage(loc) != p.priors * loc_classes * 4)
    c.error("the location predictions hold {} values an image; {} priors × {} × 4 = {} expected", perImage(loc), p.priors,
            loc_classes, p.priors * loc_classes * 4);
  if (conf.empty() || conf[0] != p.images || perImage(conf) != p.priors * p.classes)
    c.error("the confidences must hold {} images × {} priors × {} classes, got {}", p.images, p.priors, p.classes, shapeStr(conf));
  return p;
}

namespace {

void registerSamplingOps(Registry& r) {
  r.add(makeSchema("RoiAlign", 3, 3, "regions of interest pooled by bilinear samples (avg / max; opset 16 modes)",
                   [](InferContext& c) {
                     const Shape& x = c.inputShape(0);
                     const Shape& rois = c.inputShape(1);
                     const Shape& idx = c.inputShape(2);
                     if (x.size() != 4) c.error("X must be [N, C, H, W], got {}", shapeStr(x));
                     if (rois.size() != 2 || rois[1] != 4) c.error("rois must be [num_rois, 4], got {}", shapeStr(rois));
                     if (idx != Shape{rois[0]}) c.error("batch_indices must be [{}], got {}", rois[0], shapeStr(idx));
                     if (c.inputDType(0) != DType::kF32 || c.inputDType(1) != DType::kF32)
                       c.unsupported("RoiAlign takes float32 X and rois");
                     const std::string mode = c.node().attrString("mode", "avg");
                     if (mode != "avg" && mode != "max") c.error("mode '{}' is not avg or max", mode);
                     const std::string ctm = c.node().attrString("coordinate_transformation_mode", "half_pixel");
                     if (ctm != "half_pixel" && ctm != "output_half_pixel")
                       c.error("coordinate_transformation_mode '{}' is not half_pixel or output_half_pixel", ctm);
                     const int64_t oh = c.node().attrInt("output_height", 1), ow = c.node().attrInt("output_width", 1);
                     if (oh < 1 || ow < 1) c.error("output size {}x{} is not a size", ow, oh);
                     if (c.node().attrInt("sampling_ratio", 0) < 0) c.error("sampling_ratio must not be negative");
                     c.setOutput(0, DType::kF32, {rois[0], x[1], oh, ow});
                   })
            .withDefault("mode", std::string("avg")).withDefault("output_height", int64_t{1})
            .withDefault("output_width", int64_t{1}).withDefault("sampling_ratio", int64_t{0})
            .withDefault("spatial_scale", 1.0f).withDefault("coordinate_transformation_mode", std::string("half_pixel")));
  r.add(makeSchema("GridSample", 2, 2, "samples X at the grid's normalized positions (bilinear / nearest / bicubic)",
                   [](InferContext& c) {
                     const Shape& x = c.inputShape(0);
                     const Shape& g = c.inputShape(1);
                     if (x.size() != 4) c.error("X must be [N, C, H, W] (4-D), got {}", shapeStr(x));
                     if (g.size() != 4 || g[0] != x[0] || g[3] != 2) c.error("grid must be [{}, H_out, W_out, 2], got {}", x[0], shapeStr(g));
                     if (c.inputDType(0) != DType::kF32 || c.inputDType(1) != DType::kF32) c.unsupported("GridSample takes float32");
                     const std::string mode = c.node().attrString("mode", "bilinear");
                     if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.error("mode '{}' is not bilinear, nearest or bicubic", mode);
                     const std::string pad = c.node().attrString("padding_mode", "zeros");
                     if (pad != "zeros" && pad != "border" && pad != "reflection") c.error("padding_mode '{}' is not zeros, border or reflection", pad);
                     c.setOutput(0, DType::kF32, {x[0], x[1], g[1], g[2]});
                   })
            .withDefault("align_corners", int64_t{0}).withDefault("mode", std::string("bilinear"))
            .withDefault("padding_mode", std::string("zeros")));
  r.add(makeSchema("MaxUnpool", 2, 3, "MaxPool's values scattered back to their indices, zeros elsewhere", [](InferContext& c) {
    const Shape& x = c.inputShape(0);
    if (x.size() < 3) c.error("X must be at least 3-D, got {}", shapeStr(x));
    if (c.inputShape(1) != x) c.error("I must have X's shape {}, got {}", shapeStr(x), shapeStr(c.inputShape(1)));
    if (c.inputDType(1) != DType::kI64) c.error("I must be int64");
    if (c.inputDType(0) != DType::kF32) c.unsupported("MaxUnpool takes float32 X");
    Shape out;
    if (c.hasInput(2)) {
      out = c.inputInts(2);
      if (out.size() != x.size()) c.error("output_shape has {} dims, X {}", out.size(), x.size());
    } else {
      const size_t sp = x.size() - 2;
      const auto k = c.node().attrInts("kernel_shape"), st = c.node().attrInts("strides", std::vector<int64_t>(sp, 1));
      const auto pads = c.node().attrInts("pads", std::vector<int64_t>(2 * sp, 0));
      if (k.size() != sp || st.size() != sp || pads.size() != 2 * sp) c.error("kernel_shape, strides and pads must cover the {} spatial axes", sp);
      out = {x[0], x[1]};
      for (size_t i = 0; i < sp; ++i) out.push_back((x[i + 2] - 1) * st[i] - pads[i] - pads[i + sp] + k[i]);
    }
    for (int64_t d : out)
      if (d < 0) c.error("output shape {} is not a shape", shapeStr(out));
    c.setOutput(0, DType::kF32, out);
  }));
}

}  // namespace

void registerDetectionOps(Registry& r) {
  registerSamplingOps(r);
  {
    OpSchema s = makeSchema("DetectionOutput", 3, 3,
                            "Caffe SSD's detection output: decoded boxes, NMS per class, keep_top_k; [1, 1, images × "
                            "keep_top_k, 7], the detections then rows of zeros (OpenCV's form)",
                            [](InferContext& c) {
                              c.setOutput(0, DType::kF32, {1, 1, kernels::ssdOutputRows(ssdParams(c)), 7});
                            });
    s.domain = "ai.npuc";
    s.withDefault("share_location", int64_t{1}).withDefault("background_label_id", int64_t{0});  // (Caffe's defaults)
    r.add(s);
  }
  r.add(makeSchema("NonMaxSuppression", 2, 5,
                   "greedy selection of boxes by score per batch and class (data-dependent output: [selected, 3])",
                   [](InferContext& c) {
                     const kernels::NmsParams p = nmsParams(c);
                     const auto sel = kernels::nonMaxSuppression(p, c.inputValue(0).data<float>(), c.inputValue(1).data<float>());
                     c.setOutput(0, DType::kI64, {static_cast<int64_t>(sel.size()), 3});
                   })
            .withDefault("center_point_box", int64_t{0}));
}

}  // namespace npuc::ops
