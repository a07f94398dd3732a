// What the TIDL guide's demos share (npuc tidl-classify, tidl-segment): the options that say where frames come from
// and how they are pre-processed, the package's runtime with tidl-import's recorded pre-processing as the default, and
// the frames themselves — pictures (one, a folder's by name, a .txt list) or a video clip (video_frames.hpp) — each
// pre-processed as the guide's preProcType table says and run, one after the other on one runtime (an int8-pow2
// package's dynamic quantization carried as through a clip).
#pragma once

#include "cli_args.hpp"

#include "npuc/runtime.hpp"

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

/// Each frame of -i, pre-processed, set as the input and run; then fn(the frame's name: the picture's path, or
/// "CLIP#i" for a video's frame i).
void forEachDemoFrame(Demo& d, const DemoOptions& o, const std::function<void(const std::string&)>& fn);

/// One entry a line (blank lines and '#' comments skipped, surrounding spaces dropped).
std::vector<std::string> readLines(const std::string& file, const char* what);

}  // namespace npuc::cli
