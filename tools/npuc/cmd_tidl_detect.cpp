// `npuc tidl-detect`: the TIDL guide's object detection demo (ssd_multibox, §3.15.1.3: -p the detection threshold) on
// npuc packages — pictures or a video clip in (tidl_demo.hpp), each frame's detections printed: an SSD's
// DetectionOutput rows [image, label, score, xmin, ymin, xmax, ymax] (coordinates relative to the picture, 0..1) whose
// score is at least -p, in the output's order (by score), with the box also in the network input's pixels.
#include "cli_common.hpp"
#include "tidl_demo.hpp"

#include "npuc/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

namespace npuc::cli {

namespace {

struct DetectOptions : DemoOptions {
  double threshold = 0.5;
  std::string draw;
};

/// A box's 2-pixel outline in `c`, corners (x0, y0), (x1, y1) in pixels (clamped to the picture).
void drawBox(DemoPicture& p, double x0, double y0, double x1, double y1, std::array<uint8_t, 3> c) {
  auto px = [&](double v, int64_t n) { return std::clamp<int64_t>(static_cast<int64_t>(std::lround(v)), 0, n - 1); };
  const int64_t l = px(x0, p.w), t = px(y0, p.h), r = px(x1, p.w), b = px(y1, p.h);
  auto set = [&](int64_t x, int64_t y) {
    if (x >= l && x <= r && y >= t && y <= b) std::copy(c.begin(), c.end(), p.rgb.begin() + (y * p.w + x) * 3);
  };
  for (int64_t k = 0; k < 2; ++k) {
    for (int64_t x = l; x <= r; ++x) set(x, t + k), set(x, b - k);
    for (int64_t y = t; y <= b; ++y) set(l + k, y), set(r - k, y);
  }
}

int detect(DetectOptions o) {
  Demo d = openDemo(o, "detection");
  const std::string& out_name = d.out_name;
  const double H = static_cast<double>(d.in.shape[2]), W = static_cast<double>(d.in.shape[3]);
  if (!o.draw.empty()) makeOutputFolder(o.draw, "--draw");
  forEachDemoFrame(d, o, [&](const std::string& frame, const std::function<DemoPicture()>& picture) {
    warnClippedInputs(*d.rt, "npuc tidl-detect");
    const Tensor y = d.rt->outputFloat(out_name);
    if (y.shape().empty() || y.shape().back() != 7)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("output '{}' is {}: a detection package writes DetectionOutput's rows "
                                                           "[..., 7] (image, label, score, xmin, ymin, xmax, ymax)", out_name,
                                                           shapeStr(y.shape())));
    const float* r = y.data<float>();
    DemoPicture pic;
    if (!o.draw.empty()) pic = picture();
    std::string found;
    int n = 0;
    for (int64_t i = 0; i < y.numel() / 7; ++i, r += 7) {
      if (!(r[2] >= o.threshold) || r[2] <= 0) continue;  // (the rows after the detections are zeros)
      const auto label = static_cast<int64_t>(r[1]);
      if (!d.labels.empty() && (label < 0 || static_cast<size_t>(label) >= d.labels.size()))
        throw Error(ErrorCode::kInvalidArgument, fmt::format("-l {}: {} labels, a detection of label {}", o.labels, d.labels.size(), label));
      found += fmt::format("\n  {} {:.4f} [{:.4f}, {:.4f}, {:.4f}, {:.4f}] ({:.1f}, {:.1f}, {:.1f}, {:.1f} px)", d.name(label), r[2],
                           r[3], r[4], r[5], r[6], r[3] * W, r[4] * H, r[5] * W, r[6] * H);
      ++n;
      if (!o.draw.empty()) drawBox(pic, r[3] * static_cast<double>(pic.w), r[4] * static_cast<double>(pic.h), r[5] * static_cast<double>(pic.w),
                                   r[6] * static_cast<double>(pic.h), vocColour(label));
    }
    if (!o.draw.empty()) writePicturePng((std::filesystem::path(o.draw) / (frameStem(frame) + ".png")).string(), pic);
    fmt::print("{}: {} detection(s) scoring {} or more{}\n", frame, n, o.threshold, found);
  });
  return 0;
}

}  // namespace

void addTidlDetect(Command& app, Action& run) {
  auto* c = app.subcommand("tidl-detect", "The TIDL guide's object detection demo (ssd_multibox) on a package: pictures or a video "
                                               "clip in, each frame's detections above the threshold out");
  auto o = std::make_shared<DetectOptions>();
  addDemoOptions(c, *o);
  c->option("-p,--threshold", o->threshold, "Detections scoring at least this (the demo's -p; default 0.5)")->range(0.0, 1.0);
  c->option("--draw", o->draw, "Also each frame as decoded with its detections' boxes drawn (2-pixel outlines in Pascal VOC's "
                               "colour of the label), FRAME.png in this folder");
  c->callback([o, &run] { run = [o] { return detect(*o); }; });
}

}  // namespace npuc::cli
