// What the TIDL guide's demos share (npuc tidl-classify, tidl-segment): the options that say where frames come from
// and how they are pre-processed, the package's runtime with tidl-import's recorded pre-processing as the default, and
// the frames themselves — pictures (one, a folder's by name, a .txt list) or a video clip (video_frames.hpp) — each
// pre-processed as the guide's preProcType table says and run, one after the other on one runtime (an int8-pow2
// package's dynamic quantization carried as through a clip).
#pragma once

#include "cli_args.hpp"

#include "npuc/runtime.hpp"

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace npuc::cli {

struct DemoOptions {
  std::string package, input, labels, output;  // output: the one read (default: the package's first)
  int pre_proc_type = -1, threads = 1;  // (-1: the import's, else 0)
  int64_t max_frames = 0;               // a video's frames read (0: all)
  std::vector<double> mean, scale;
};

/// Declares package, -i, --frames, -l, --output, --preProcType, --inMean, --inScale and -t on `c`.
void addDemoOptions(Command* c, DemoOptions& o);

/// The package's runtime, its one [1, C, H, W] input (`what` names the demo in errors), the output read, -l's labels.
struct Demo {
  std::unique_ptr<Runtime> rt;
  RuntimeTensor in;
  std::string out_name;  // the output read (--output, checked; else the first)
  std::vector<std::string> labels;
  /// Class c's label, or its number without -l.
  std::string name(int64_t c) const;
};
Demo openDemo(DemoOptions& o, const char* what);

/// A frame as decoded (before the pre-processing): RGB, h x w, row-major — what the demos draw their results on.
struct DemoPicture {
  int64_t h = 0, w = 0;
  std::vector<uint8_t> rgb;
};
/// Each frame of -i, pre-processed, set as the input and run; then fn(the frame's name: the picture's path, or
/// "CLIP#i" for a video's frame i; and a function giving the frame as decoded).
using DemoFrameFn = std::function<void(const std::string&, const std::function<DemoPicture()>&)>;
void forEachDemoFrame(Demo& d, const DemoOptions& o, const DemoFrameFn& fn);

/// Pascal VOC's colour of class k (its segmentation masks' palette: the bits of k spread over R, G, B from the top bit
/// down): 0 black, 1 (128, 0, 0), 2 (0, 128, 0), …
std::array<uint8_t, 3> vocColour(int64_t k);
/// The picture as an RGB PNG at `png` (kIo naming it when it cannot be written).
void writePicturePng(const std::string& png, const DemoPicture& p);
/// The file name a frame's results take: a picture's stem, or CLIP_i for a video's frame CLIP#i.
std::string frameStem(const std::string& frame);

/// One entry a line (blank lines and '#' comments skipped, surrounding spaces dropped).
std::vector<std::string> readLines(const std::string& file, const char* what);

}  // namespace npuc::cli
