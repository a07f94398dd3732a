// SSD's layers (the Caffe fork Wei Liu's SSD adds, which TIDL's JDetNet uses): PriorBox as a constant computed at
// import, DetectionOutput as ai.npuc.DetectionOutput.
#include "frontend/caffe/importer.hpp"

#include "support/log.hpp"

#include <cmath>

namespace npuc::caffe_io {

namespace {

/// Caffe's aspect ratios of a PriorBox: 1, then each given ratio not yet present (within 1e-6), and its inverse
/// with flip.
std::vector<float> aspectRatios(const caffe::PriorBoxParameter& p) {
  std::vector<float> ars{1.0f};
  for (float ar : p.aspect_ratio()) {
    if (!(ar > 0.0f)) fail(ErrorCode::kInvalidInput, "aspect_ratio {} must be positive", ar);
    if (std::any_of(ars.begin(), ars.end(), [&](float e) { return std::fabs(ar - e) < 1e-6f; })) continue;
    ars.push_back(ar);
    if (p.flip()) ars.push_back(1.0f / ar);
  }
  return ars;
}

}  // namespace

void Importer::priorBox(const caffe::LayerParameter& l) {
  expectBottoms(l, 2, 2);
  expectTops(l, 1);
  const caffe::PriorBoxParameter& p = l.prior_box_param();
  const Shape fm = shapeOf(bottom(l, 0)), img = shapeOf(bottom(l, 1));
  if (fm.size() != 4 || img.size() != 4)
    fail(ErrorCode::kInvalidInput, "bottoms must be 4-D (a feature map and the image), got {} and {}", shapeStr(fm), shapeStr(img));
  if (p.min_size_size() == 0) fail(ErrorCode::kInvalidInput, "prior_box_param needs at least one min_size");
  if (p.max_size_size() > 0 && p.max_size_size() != p.min_size_size())
    fail(ErrorCode::kInvalidInput, "{} max_size values for {} min_size values (one each, or none)", p.max_size_size(), p.min_size_size());
  for (int s = 0; s < p.min_size_size(); ++s) {
    if (!(p.min_size(s) > 0.0f)) fail(ErrorCode::kInvalidInput, "min_size {} must be positive", p.min_size(s));
    if (p.max_size_size() > 0 && !(p.max_size(s) > p.min_size(s)))
      fail(ErrorCode::kInvalidInput, "max_size {} must be larger than its min_size {}", p.max_size(s), p.min_size(s));
  }
  if (p.variance_size() != 0 && p.variance_size() != 1 && p.variance_size() != 4)
    fail(ErrorCode::kInvalidInput, "{} variance values: give 1 (for all four coordinates) or 4", p.variance_size());
  if (p.has_img_size() && (p.has_img_h() || p.has_img_w())) fail(ErrorCode::kInvalidInput, "gives both img_size and img_h / img_w");
  if (p.has_step() && (p.has_step_h() || p.has_step_w())) fail(ErrorCode::kInvalidInput, "gives both step and step_h / step_w");
  const std::vector<float> ars = aspectRatios(p);
  const int64_t H = fm[2], W = fm[3];
  const int64_t img_h = p.has_img_size() ? p.img_size() : p.img_h() ? p.img_h() : img[2];
  const int64_t img_w = p.has_img_size() ? p.img_size() : p.img_w() ? p.img_w() : img[3];
  if (img_h <= 0 || img_w <= 0) fail(ErrorCode::kInvalidInput, "the image size {}x{} is not a size", img_w, img_h);
  const float step_h = p.has_step() ? p.step() : p.step_h() > 0 ? p.step_h() : static_cast<float>(img_h) / static_cast<float>(H);
  const float step_w = p.has_step() ? p.step() : p.step_w() > 0 ? p.step_w() : static_cast<float>(img_w) / static_cast<float>(W);
  const int64_t priors = static_cast<int64_t>(ars.size()) * p.min_size_size() + p.max_size_size();
  const int64_t dim = H * W * priors * 4;
  if (product({H, W, priors, 8}) > kMaxElements) fail(ErrorCode::kInvalidInput, "{} prior boxes are more than a network holds", H * W * priors);
  std::vector<float> out(static_cast<size_t>(2 * dim));
  size_t k = 0;
  auto push = [&](double cx, double cy, double bw, double bh) {
    const double v[4] = {(cx - bw / 2.0) / static_cast<double>(img_w), (cy - bh / 2.0) / static_cast<double>(img_h),
                         (cx + bw / 2.0) / static_cast<double>(img_w), (cy + bh / 2.0) / static_cast<double>(img_h)};
    for (double x : v) out[k++] = static_cast<float>(p.clip() ? std::min(std::max(x, 0.0), 1.0) : x);
  };
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w) {
      const float cx = (static_cast<float>(w) + p.offset()) * step_w, cy = (static_cast<float>(h) + p.offset()) * step_h;
      for (int s = 0; s < p.min_size_size(); ++s) {
        const float mn = p.min_size(s);
        push(cx, cy, mn, mn);
        if (p.max_size_size() > 0) {
          const double side = std::sqrt(static_cast<double>(mn) * p.max_size(s));
          push(cx, cy, side, side);
        }
        for (float ar : ars) {
          if (std::fabs(ar - 1.0f) < 1e-6f) continue;
          push(cx, cy, mn * std::sqrt(ar), mn / std::sqrt(ar));
        }
      }
    }
  for (int64_t i = 0; i < H * W * priors; ++i)
    for (int c = 0; c < 4; ++c)
      out[k++] = p.variance_size() == 0 ? 0.1f : p.variance(p.variance_size() == 1 ? 0 : c);
  ir::ValueId v = constant(l, "priors", Tensor::fromVector<float>({1, 2, dim}, out));
  node("Identity", l.name(), {v}, {bindTop(l.top(0))});
}

void Importer::detectionOutput(const caffe::LayerParameter& l) {
  expectBottoms(l, 3, 3);
  expectTops(l, 1);
  const caffe::DetectionOutputParameter& p = l.detection_output_param();
  if (!p.has_num_classes()) fail(ErrorCode::kInvalidInput, "detection_output_param needs num_classes");
  if (p.visualize()) log::info("caffe", "layer '{}': visualize is ignored (npuc returns the detections)", l.name());
  std::map<std::string, ir::Attr> attrs{
      {"num_classes", int64_t{p.num_classes()}},
      {"share_location", int64_t{p.share_location()}},
      {"background_label_id", int64_t{p.background_label_id()}},
      {"code_type", static_cast<int64_t>(p.code_type())},
      {"variance_encoded_in_target", int64_t{p.variance_encoded_in_target()}},
      {"keep_top_k", int64_t{p.keep_top_k()}},
      {"nms_threshold", p.nms_param().nms_threshold()},
      {"top_k", int64_t{p.nms_param().has_top_k() ? p.nms_param().top_k() : -1}},
      {"eta", p.nms_param().eta()}};
  if (p.has_confidence_threshold()) attrs["confidence_threshold"] = p.confidence_threshold();
  std::vector<ir::ValueId> ins = bottoms(l);
  ir::Node& n = g_->addNode("DetectionOutput", l.name(), std::move(ins), {bindTop(l.top(0))}, "ai.npuc");
  n.attrs = std::move(attrs);
  ops::inferNodeTypes(*g_, n.id);
}

}  // namespace npuc::caffe_io
