// `npuc tidl-classify`: the TIDL guide's classification demo (tidl_classification, §3.15.1.3) on npuc packages — a list
// of every class's label (-l), the subset whose detections count (-s), pictures or a video clip in (tidl_demo.hpp), each
// frame run on one runtime, the top classes and the decision printed: the best class if it is a permitted one scoring
// at least the threshold (and, with --stable N, the same in the last N frames: the demo's ShowRegion takes 3), else
// none — the last decision kept, as the demo keeps its last class string.
#include "cli_common.hpp"
#include "tidl_demo.hpp"
#include "tidl_frames.hpp"

#include "npuc/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace npuc::cli {

namespace {

struct ClassifyOptions : DemoOptions {
  std::string classes;
  int top = 5, stable = 1;
  double threshold = 0;
};

int classify(ClassifyOptions o) {
  Demo d = openDemo(o, "classification");
  std::set<std::string> permitted;
  for (const std::string& c : o.classes.empty() ? std::vector<std::string>{} : readLines(o.classes, "a list of classes")) {
    if (std::find(d.labels.begin(), d.labels.end(), c) == d.labels.end())
      throw Error(ErrorCode::kInvalidArgument, fmt::format("-s {}: '{}' is not a label of -l {}", o.classes, c, o.labels));
    permitted.insert(c);
  }
  const std::string& out_name = d.out_name;
  std::string last = "none";
  std::vector<std::string> recent;  // the last frames' passing classes ("" where none passed)
  forEachDemoFrame(d, o, [&](const std::string& frame, const std::function<DemoPicture()>&) {
    warnClippedInputs(*d.rt, "npuc tidl-classify");
    const Tensor y = d.rt->outputFloat(out_name);
    const float* s = y.data<float>();
    const int64_t n = y.numel();
    if (!d.labels.empty() && static_cast<int64_t>(d.labels.size()) != n)
      throw Error(ErrorCode::kInvalidArgument, fmt::format("-l {}: {} labels for the output '{}' of {} classes", o.labels, d.labels.size(), out_name, n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const int64_t k = std::min<int64_t>(o.top, n);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
    std::string tops;
    for (int64_t i = 0; i < k; ++i) tops += fmt::format("{}{} {:.4g}", i ? ", " : "", d.name(order[static_cast<size_t>(i)]), s[order[static_cast<size_t>(i)]]);
    const int64_t best = order[0];
    const bool pass = s[best] >= o.threshold && (permitted.empty() || permitted.count(d.name(best)));
    // (the demo's ShowRegion: a decision only when the same one passed in the last --stable frames)
    recent.push_back(pass ? d.name(best) : std::string());
    if (recent.size() > static_cast<size_t>(o.stable)) recent.erase(recent.begin());
    const bool ok = pass && recent.size() == static_cast<size_t>(o.stable) &&
                    std::all_of(recent.begin(), recent.end(), [&](const std::string& r) { return r == recent.back(); });
    if (ok) last = d.name(best);
    fmt::print("{}: top-{}: {}; decision: {}\n", frame, k, tops, ok ? d.name(best) : fmt::format("none (kept: {})", last));
  });
  return 0;
}

}  // namespace

void addTidlClassify(Command& app, Action& run) {
  auto* c = app.subcommand("tidl-classify", "The TIDL guide's classification demo (tidl_classification) on a package: pictures or "
                                                 "a video clip in, top classes and decisions out");
  auto o = std::make_shared<ClassifyOptions>();
  addDemoOptions(c, *o);
  c->option("-s,--classes", o->classes, "The permitted classes, one a line (the demo's classlist.txt; labels of -l): a detection "
                                             "of another class is no decision");
  c->option("--top", o->top, "Classes printed per picture (default 5)")->range(1, 100000);
  c->option("--stable", o->stable, "A decision only when the same class passed in the last N frames (the demo's ShowRegion: "
                                   "3; default 1, every frame on its own)")->range(1, 1000);
  c->option("--threshold", o->threshold, "A decision needs at least this score (the output's own units; default 0)");
  c->callback([o, &run] { run = [o] { return classify(*o); }; });  // (a copy: classify fills what the reference gives)
}

}  // namespace npuc::cli
