// `npuc tidl-detect`: the TIDL guide's object detection demo (ssd_multibox, §3.15.1.3: -p the detection threshold) on
// npuc packages — pictures or a video clip in (tidl_demo.hpp), each frame's detections printed: an SSD's
// DetectionOutput rows [image, label, score, xmin, ymin, xmax, ymax] (coordinates relative to the picture, 0..1) whose
// score is at least -p, in the output's order (by score), with the box also in the network input's pixels.
#include "cli_common.hpp"
#include "tidl_demo.hpp"

#include "npuc/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npuc::cli {

namespace {

struct DetectOptions : DemoOptions {
  double threshold = 0.5;
};

int detect(DetectOptions o) {
  Demo d = openDemo(o, "detection");
  const std::string& out_name = d.out_name;
  const double H = static_cast<double>(d.in.shape[2]), W = static_cast<double>(d.in.shape[3]);
  forEachDemoFrame(d, o, [&](const std::string& frame) {
    warnClippedInputs(*d.rt, "npuc tidl-detect");
    const Tensor y = d.rt->outputFloat(out_name);
    if (y.shape().empty() || y.shape().back() != 7)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("output '{}' is {}: a detection package writes DetectionOutput's rows "
                                                           "[..., 7] (image, label, score, xmin, ymin, xmax, ymax)", out_name,
                                                           shapeStr(y.shape())));
    const float* r = y.data<float>();
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
    }
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
  c->callback([o, &run] { run = [o] { return detect(*o); }; });
}

}  // namespace npuc::cli
