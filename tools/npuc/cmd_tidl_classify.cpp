// `npuc tidl-classify`: the TIDL guide's classification demo (tidl_classification, §3.15.1.3) on npuc packages — a list
// of every class's label (-l), the subset whose detections count (-s), pictures in (-i: one, a folder, or a .txt list)
// or a video clip (decoded by OpenCV's VideoCapture where npuc is built with it; cameras are not read), each
// frame pre-processed as the guide's preProcType
// says (the import tool's table) and run frame after frame on one runtime (the dynamic quantization carried as in a
// video), the top classes and the decision printed: the best class if it is a permitted one scoring at least the
// threshold (and, with --stable N, the same in the last N frames: the demo's ShowRegion takes 3), else none — the last
// decision kept, as the demo keeps its last class string.
#include "cli_common.hpp"
#include "tidl_frames.hpp"
#include "video_frames.hpp"

#include "npuc/error.hpp"
#include "npuc/io.hpp"
#include "npuc/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>
#include <sstream>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

struct ClassifyOptions {
  std::string package, labels, classes, input;
  int pre_proc_type = -1, top = 5, threads = 1, stable = 1;  // (-1: not given)
  int64_t max_frames = 0;                        // a video's frames read (0: all)
  double threshold = 0;
  std::vector<double> mean, scale;
};

/// One entry a line (listLines: blank lines and '#' comments skipped, surrounding spaces dropped).
std::vector<std::string> readLines(const std::string& file, const char* what) {
  return listLines(readFileText(file, 16u << 20, what));
}

/// The pictures of -i: a picture, the pictures of a folder (by name), or a .txt list (paths relative to it).
std::vector<fs::path> pictures(const std::string& input) {
  std::error_code ec;
  std::vector<fs::path> out;
  if (fs::is_directory(input, ec)) {
    for (const auto& e : fs::directory_iterator(input, ec)) {
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (e.is_regular_file(ec) && (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".pgm" || ext == ".ppm"))
        out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    if (out.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("-i {}: no pictures in the folder (PNG, JPEG, BMP, PGM, PPM)", input));
    return out;
  }
  if (fs::path(input).extension() == ".txt") {
    for (const std::string& l : readLines(input, "a list of pictures")) {
      const fs::path p(l);
      out.push_back(p.is_absolute() ? p : fs::path(input).parent_path() / p);
    }
    if (out.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("-i {}: the list names no picture", input));
    return out;
  }
  out.push_back(input);
  return out;
}

int classify(ClassifyOptions o) {
  std::map<std::string, std::string> ref;  // (tidl-import's reference: how its calibration pictures were pre-processed)
  Runtime rt(packageFolder(o.package, "package", &ref), {o.threads, false});
  auto numbers = [](const std::string& s) {
    std::vector<double> v;
    std::istringstream in(s);
    for (double x; in >> x;) v.push_back(x);
    return v;
  };
  if (o.pre_proc_type < 0) {  // (the import's pre-processing unless told otherwise; else the guide's default 0)
    o.pre_proc_type = ref.count("preProcType") ? std::stoi(ref.at("preProcType")) : 0;
    if (o.mean.empty() && ref.count("inMean")) o.mean = numbers(ref.at("inMean"));
    if (o.scale.empty() && ref.count("inScale")) o.scale = numbers(ref.at("inScale"));
  }
  if (rt.inputs().size() != 1 || rt.outputs().empty())
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: a classification package has one input, it has {}", o.package, rt.inputs().size()));
  const RuntimeTensor& in = rt.inputs()[0];
  if (in.shape.size() != 4 || in.shape[0] != 1)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: the input '{}' is {}, not [1, C, H, W]", o.package, in.name, shapeStr(in.shape)));
  const std::vector<std::string> labels = o.labels.empty() ? std::vector<std::string>{} : readLines(o.labels, "a list of labels");
  std::set<std::string> permitted;
  for (const std::string& c : o.classes.empty() ? std::vector<std::string>{} : readLines(o.classes, "a list of classes")) {
    if (std::find(labels.begin(), labels.end(), c) == labels.end())
      throw Error(ErrorCode::kInvalidArgument, fmt::format("-s {}: '{}' is not a label of -l {}", o.classes, c, o.labels));
    permitted.insert(c);
  }
  const std::string out_name = rt.outputs()[0].name;
  std::string last = "none";
  std::vector<std::string> recent;  // the last frames' passing classes ("" where none passed)
  auto decide = [&](const std::string& frame, Tensor x) {
    rt.setInput(in.name, std::move(x));
    rt.run();
    warnClippedInputs(rt, "npuc tidl-classify");
    const Tensor y = rt.outputFloat(out_name);
    const float* s = y.data<float>();
    const int64_t n = y.numel();
    if (!labels.empty() && static_cast<int64_t>(labels.size()) != n)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("-l {}: {} labels for the output '{}' of {} classes", o.labels, labels.size(), out_name, n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const int64_t k = std::min<int64_t>(o.top, n);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
    auto name = [&](int64_t c) { return labels.empty() ? std::to_string(c) : labels[static_cast<size_t>(c)]; };
    std::string tops;
    for (int64_t i = 0; i < k; ++i) tops += fmt::format("{}{} {:.4g}", i ? ", " : "", name(order[static_cast<size_t>(i)]), s[order[static_cast<size_t>(i)]]);
    const int64_t best = order[0];
    const bool pass = s[best] >= o.threshold && (permitted.empty() || permitted.count(name(best)));
    // (the demo's ShowRegion: a decision only when the same one passed in the last --stable frames)
    recent.push_back(pass ? name(best) : std::string());
    if (recent.size() > static_cast<size_t>(o.stable)) recent.erase(recent.begin());
    const bool ok = pass && recent.size() == static_cast<size_t>(o.stable) &&
                    std::all_of(recent.begin(), recent.end(), [&](const std::string& r) { return r == recent.back(); });
    if (ok) last = name(best);
    fmt::print("{}: top-{}: {}; decision: {}\n", frame, k, tops, ok ? name(best) : fmt::format("none (kept: {})", last));
  };
  if (isVideoFile(o.input)) {  // frame after frame as decoded: "clip.mp4#0", "clip.mp4#1", ...
    forEachVideoFrame(o.input, o.max_frames, [&](int64_t i, const uint8_t* bgr, int64_t h, int64_t w) {
      const std::string frame = fmt::format("{}#{}", o.input, i);
      decide(frame, tidlPreprocessFrame(bgr, h, w, frame, o.pre_proc_type, in.shape[1], in.shape[2], in.shape[3], o.mean, o.scale));
    });
    return 0;
  }
  for (const fs::path& p : pictures(o.input))
    decide(p.string(), tidlPreprocessPicture(p, o.pre_proc_type, in.shape[1], in.shape[2], in.shape[3], o.mean, o.scale));
  return 0;
}

}  // namespace

void addTidlClassify(Command& app, Action& run) {
  auto* c = app.subcommand("tidl-classify", "The TIDL guide's classification demo (tidl_classification) on a package: pictures in, "
                                                 "top classes and decisions out");
  auto o = std::make_shared<ClassifyOptions>();
  c->option("package", o->package, "The package folder, or tidl-import's reference at outputNetFile")->required();
  c->option("-i,--input", o->input, "A picture, a folder of pictures (by name), a .txt list of them, or a video clip (.mp4, "
                                     ".avi, .mkv, .mov, .webm, .mjpg; decoded by OpenCV where npuc is built with its videoio): "
                                     "the frames")->required();
  c->option("--frames", o->max_frames, "A video: the first N frames (default: all)")->range(int64_t{1}, int64_t{1} << 40);
  c->option("-l,--labels", o->labels, "The label of every class, one a line (the demo's imagenet.txt); default: class numbers");
  c->option("-s,--classes", o->classes, "The permitted classes, one a line (the demo's classlist.txt; labels of -l): a detection "
                                             "of another class is no decision");
  c->option("--preProcType,--pre-proc-type", o->pre_proc_type, "The guide's pre-processing of each picture (the import tool's "
                                                                   "table: 0..6, 256 with --inMean / --inScale; default: the "
                                                                   "import's, as its package reference records it, else 0)");
  c->option("--inMean,--in-mean", o->mean, "preProcType 256: per channel")->expected(1, 4);
  c->option("--inScale,--in-scale", o->scale, "preProcType 256: per channel")->expected(1, 4);
  c->option("--top", o->top, "Classes printed per picture (default 5)")->range(1, 100000);
  c->option("--stable", o->stable, "A decision only when the same class passed in the last N frames (the demo's ShowRegion: "
                                   "3; default 1, every frame on its own)")->range(1, 1000);
  c->option("--threshold", o->threshold, "A decision needs at least this score (the output's own units; default 0)");
  c->option("-t,--threads", o->threads, "Threads of the simulated device")->range(1, 256);
  c->callback([o, &run] { run = [o] { return classify(*o); }; });  // (a copy: classify fills what the reference gives)
}

}  // namespace npuc::cli
