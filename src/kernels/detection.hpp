// Detection post-processing: ONNX's NonMaxSuppression. IR-free: the engine (and the op's shape function, whose
// output size depends on the data) call the same selection, and a package form can too.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace npuc::kernels {

struct NmsParams {
  int64_t batches = 0, classes = 0, boxes = 0;
  bool center_point_box = false;  // boxes as [x_center, y_center, width, height]; else two corners [y1, x1, y2, x2]
                                  // in either order
  int64_t max_per_class = 0;      // 0: nothing is selected
  float iou_threshold = 0.0f;     // a box whose IoU with a selected one is above this is suppressed
  bool has_score_threshold = false;
  float score_threshold = 0.0f;   // only boxes scoring above it are candidates
};

/// The selected (batch, class, box) triples, batch by batch and class by class, each class's in the order selected:
/// candidates by descending score (equal scores: lower box index first), a candidate kept when its IoU with every
/// box kept before it in its class is at most iou_threshold (a box of zero area suppresses nothing), until
/// max_per_class. boxes [batches, boxes, 4], scores [batches, classes, boxes], float32.
std::vector<std::array<int64_t, 3>> nonMaxSuppression(const NmsParams& p, const float* boxes, const float* scores);

/// Caffe SSD's DetectionOutput: prior boxes decoded by the location predictions, per image and class (background
/// skipped) the boxes scoring above confidence_threshold kept by greedy NMS (top_k candidates, Jaccard overlap of the
/// normalized boxes, adaptive threshold with eta), then the keep_top_k best of the image.
struct SsdParams {
  enum class Code : uint8_t { kCorner = 1, kCenterSize = 2, kCornerSize = 3 };
  int64_t images = 0, priors = 0, classes = 0;
  bool share_location = true;
  int64_t background = 0;        // -1: none
  Code code = Code::kCorner;
  bool variance_in_target = false;
  float confidence_threshold = -3.4028235e38f;  // Caffe's -FLT_MAX when not given
  float nms_threshold = 0.3f, eta = 1.0f;
  int64_t top_k = -1, keep_top_k = -1;
};
/// One detection: [image, label, score, xmin, ymin, xmax, ymax]. loc [images, priors, share_location ? 1 : classes, 4]
/// (dx, dy, dw, dh or corner offsets), conf [images, priors, classes], prior [2, priors, 4]: boxes then variances.
/// Images in order, each image's detections by descending score (OpenCV's order; Caffe writes them class by class).
std::vector<std::array<float, 7>> ssdDetectionOutput(const SsdParams& p, const float* loc, const float* conf,
                                                     const float* prior);
/// The rows of the layer's output, a fixed size as OpenCV's dnn module gives it: images × keep_top_k rows (keep_top_k
/// <= 0: images × priors × the classes other than the background, every box that can be kept).
int64_t ssdOutputRows(const SsdParams& p);
/// y [ssdOutputRows(p), 7]: the detections, then rows of zeros (OpenCV's padding; Caffe's own layer sizes its output
/// to the detections instead).
void ssdDetectionOutputRows(const SsdParams& p, const float* loc, const float* conf, const float* prior, float* y);

}  // namespace npuc::kernels
