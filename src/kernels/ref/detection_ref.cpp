// NonMaxSuppression (detection.hpp), as ONNX specifies it and ONNX Runtime computes it.
#include "kernels/detection.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <utility>
#include <numeric>

namespace npuc::kernels {

namespace {

struct Box {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
  float area() const { return (y2 - y1) * (x2 - x1); }
};

Box boxAt(const float* b, bool center) {
  if (center) {
    const float hw = b[2] / 2.0f, hh = b[3] / 2.0f;
    return {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

/// IoU(a, b) > threshold; a box without area suppresses nothing.
bool suppresses(const Box& a, const Box& b, float threshold) {
  const float iy1 = std::max(a.y1, b.y1), ix1 = std::max(a.x1, b.x1);
  const float iy2 = std::min(a.y2, b.y2), ix2 = std::min(a.x2, b.x2);
  const float inter = std::max(iy2 - iy1, 0.0f) * std::max(ix2 - ix1, 0.0f);
  if (inter <= 0.0f) return false;
  const float area_a = a.area(), area_b = b.area();
  if (area_a <= 0.0f || area_b <= 0.0f) return false;
  const float uni = area_a + area_b - inter;
  if (uni <= 0.0f) return false;
  return inter / uni > threshold;
}

}  // namespace

std::vector<std::array<int64_t, 3>> nonMaxSuppression(const NmsParams& p, const float* boxes, const float* scores) {
  std::vector<std::array<int64_t, 3>> out;
  if (p.max_per_class <= 0) return out;
  std::vector<int64_t> order;
  std::vector<Box> kept;
  for (int64_t b = 0; b < p.batches; ++b) {
    const float* bb = boxes + b * p.boxes * 4;
    for (int64_t c = 0; c < p.classes; ++c) {
      const float* sc = scores + (b * p.classes + c) * p.boxes;
      order.clear();
      for (int64_t i = 0; i < p.boxes; ++i)
        if (!p.has_score_threshold || sc[i] > p.score_threshold) order.push_back(i);
      // (a NaN score ranks last: the order stays a strict weak one)
      auto key = [&](int64_t i) { return std::isnan(sc[i]) ? -std::numeric_limits<float>::infinity() : sc[i]; };
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key(x) > key(y); });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
        const Box box = boxAt(bb + i * 4, p.center_point_box);
        if (std::any_of(kept.begin(), kept.end(), [&](const Box& k) { return suppresses(k, box, p.iou_threshold); }))
          continue;
        kept.push_back(box);
        out.push_back({b, c, i});
      }
    }
  }
  return out;
}

namespace {

struct NBox {
  float xmin, ymin, xmax, ymax;
};

float nboxSize(const NBox& b) { return b.xmax < b.xmin || b.ymax < b.ymin ? 0.0f : (b.xmax - b.xmin) * (b.ymax - b.ymin); }

float jaccard(const NBox& a, const NBox& b) {
  if (b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin) return 0.0f;
  const float w = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  const float h = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  if (!(w > 0.0f && h > 0.0f)) return 0.0f;
  const float inter = w * h;
  return inter / (nboxSize(a) + nboxSize(b) - inter);
}

NBox decode(const SsdParams& p, const float* pb, const float* var, const float* l) {
  using Code = SsdParams::Code;
  float v[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  if (!p.variance_in_target) std::copy_n(var, 4, v);
  if (p.code == Code::kCorner) return {pb[0] + v[0] * l[0], pb[1] + v[1] * l[1], pb[2] + v[2] * l[2], pb[3] + v[3] * l[3]};
  const float pw = pb[2] - pb[0], ph = pb[3] - pb[1];
  if (p.code == Code::kCornerSize)
    return {pb[0] + v[0] * l[0] * pw, pb[1] + v[1] * l[1] * ph, pb[2] + v[2] * l[2] * pw, pb[3] + v[3] * l[3] * ph};
  const float pcx = (pb[0] + pb[2]) / 2.0f, pcy = (pb[1] + pb[3]) / 2.0f;
  const float cx = v[0] * l[0] * pw + pcx, cy = v[1] * l[1] * ph + pcy;
  const float w = std::exp(v[2] * l[2]) * pw, h = std::exp(v[3] * l[3]) * ph;
  return {cx - w / 2.0f, cy - h / 2.0f, cx + w / 2.0f, cy + h / 2.0f};
}

/// Caffe's ApplyNMSFast over one class's scores.
std::vector<int64_t> nmsFast(const SsdParams& p, const std::vector<NBox>& boxes, const float* scores, int64_t stride) {
  std::vector<std::pair<float, int64_t>> cand;
  for (int64_t i = 0; i < p.priors; ++i)
    if (scores[i * stride] > p.confidence_threshold) cand.emplace_back(scores[i * stride], i);
  std::stable_sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (p.top_k > -1 && p.top_k < static_cast<int64_t>(cand.size())) cand.resize(static_cast<size_t>(p.top_k));
  std::vector<int64_t> kept;
  float threshold = p.nms_threshold;
  for (const auto& [score, idx] : cand) {
    bool keep = true;
    for (int64_t k : kept)
      if (jaccard(boxes[static_cast<size_t>(idx)], boxes[static_cast<size_t>(k)]) > threshold) {
        keep = false;
        break;
      }
    if (!keep) continue;
    kept.push_back(idx);
    if (p.eta < 1.0f && threshold > 0.5f) threshold *= p.eta;
  }
  return kept;
}

}  // namespace

std::vector<std::array<float, 7>> ssdDetectionOutput(const SsdParams& p, const float* loc, const float* conf,
                                                     const float* prior) {
  const int64_t loc_classes = p.share_location ? 1 : p.classes;
  std::vector<std::array<float, 7>> out;
  for (int64_t img = 0; img < p.images; ++img) {
    const float* cf = conf + img * p.priors * p.classes;
    std::map<int64_t, std::vector<int64_t>> kept;  // label -> indices, in order
    std::vector<std::vector<NBox>> per_class(static_cast<size_t>(loc_classes));
    for (int64_t lc = 0; lc < loc_classes; ++lc) {
      if (!p.share_location && lc == p.background) continue;
      auto& b = per_class[static_cast<size_t>(lc)];
      b.resize(static_cast<size_t>(p.priors));
      for (int64_t i = 0; i < p.priors; ++i)
        b[static_cast<size_t>(i)] = decode(p, prior + i * 4, prior + (p.priors + i) * 4, loc + ((img * p.priors + i) * loc_classes + lc) * 4);
    }
    int64_t count = 0;
    for (int64_t c = 0; c < p.classes; ++c) {
      if (c == p.background) continue;
      const auto& b = per_class[static_cast<size_t>(p.share_location ? 0 : c)];
      kept[c] = nmsFast(p, b, cf + c, p.classes);
      count += static_cast<int64_t>(kept[c].size());
    }
    if (p.keep_top_k > -1 && count > p.keep_top_k) {
      std::vector<std::pair<float, std::pair<int64_t, int64_t>>> all;
      for (const auto& [c, idx] : kept)
        for (int64_t i : idx) all.push_back({cf[i * p.classes + c], {c, i}});
      std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      all.resize(static_cast<size_t>(p.keep_top_k));
      kept.clear();
      for (const auto& [score, ci] : all) kept[ci.first].push_back(ci.second);
    }
    // The image's detections by descending score (OpenCV's order; Caffe groups them by class first), equal scores
    // by class, then in their class's order.
    std::vector<std::array<float, 7>> rows;
    for (const auto& [c, idx] : kept)
      for (int64_t i : idx) {
        const NBox& b = per_class[static_cast<size_t>(p.share_location ? 0 : c)][static_cast<size_t>(i)];
        rows.push_back({static_cast<float>(img), static_cast<float>(c), cf[i * p.classes + c], b.xmin, b.ymin, b.xmax, b.ymax});
      }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a[2] > b[2]; });
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

int64_t ssdOutputRows(const SsdParams& p) {
  const int64_t fg = p.classes - (p.background >= 0 && p.background < p.classes ? 1 : 0);
  return p.images * (p.keep_top_k > 0 ? p.keep_top_k : p.priors * std::max<int64_t>(fg, 0));
}

void ssdDetectionOutputRows(const SsdParams& p, const float* loc, const float* conf, const float* prior, float* y) {
  const auto det = ssdDetectionOutput(p, loc, conf, prior);
  const int64_t rows = ssdOutputRows(p);
  std::fill_n(y, rows * 7, 0.0f);
  for (size_t i = 0; i < det.size() && static_cast<int64_t>(i) < rows; ++i) std::copy(det[i].begin(), det[i].end(), y + i * 7);
}

}  // namespace npuc::kernels
