// npuc bench: times the reference engine on a model, or the simulator on an object package (a folder with a
// manifest.json), the same way: median and min over K runs after warm-up.
#include "cli_common.hpp"

#include "npuc/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <cstdio>
#include <map>
#include <set>
#include <system_error>

namespace npuc::cli {

namespace {
// Per node: the median over runs; then totals per op type and the ten slowest nodes.
void printProfile(const std::vector<std::vector<NodeProfile>>& runs, const std::string& csv_path = "") {
  if (runs.empty()) return;
  size_t nodes = runs[0].size();
  std::vector<NodeProfile> med = runs[0];
  for (size_t i = 0; i < nodes; ++i) {
    std::vector<double> v;
    for (auto& r : runs) v.push_back(r[i].ms);
    std::sort(v.begin(), v.end());
    med[i].ms = v[v.size() / 2];
  }
  if (!csv_path.empty()) {
    std::string csv = "index,name,op,median_ms\n";
    for (size_t i = 0; i < med.size(); ++i) csv += fmt::format("{},{},{},{:.4f}\n", i, csvField(med[i].name), med[i].op, med[i].ms);
    std::FILE* f = std::fopen(csv_path.c_str(), "wb");
    if (!f || std::fwrite(csv.data(), 1, csv.size(), f) != csv.size()) {
      if (f) std::fclose(f);
      throw Error(ErrorCode::kIo, fmt::format("{}: cannot write", csv_path));
    }
    std::fclose(f);
  }
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (auto& n : med) {
    by_op[n.op].first += n.ms;
    by_op[n.op].second++;
    total += n.ms;
  }
  std::vector<std::pair<double, std::string>> ops;
  for (auto& [op, t] : by_op) ops.push_back({t.first, op});
  std::sort(ops.rbegin(), ops.rend());
  fmt::print("\nper op type (median run, {:.3f} ms in nodes):\n", total);
  for (auto& [t, op] : ops) fmt::print("  {:<24} {:>4} nodes {:>9.3f} ms {:>5.1f}%\n", op, by_op[op].second, t, 100 * t / total);
  std::sort(med.begin(), med.end(), [](auto& a, auto& b) { return a.ms > b.ms; });
  fmt::print("slowest nodes:\n");
  for (size_t i = 0; i < std::min<size_t>(10, med.size()); ++i)
    fmt::print("  {:<40} {:<16} {:>9.3f} ms\n", med[i].name.substr(0, 40), med[i].op, med[i].ms);
}
}  // namespace

struct Stats {
  double median, min, mean, max;
};
Stats stats(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  double median = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
  double mean = 0;
  for (double x : t) mean += x;
  return {median, t.front(), mean / static_cast<double>(t.size()), t.back()};
}

/// A seeded random input for a package: integer frames (camera inputs of pre-processing) get random bytes, float
/// inputs uniform [0, 1).
Tensor randomInput(const RuntimeTensor& in, uint32_t seed) {
  const bool bytes = in.dtype == DType::kU8;
  Tensor t(bytes ? DType::kU8 : DType::kF32, in.shape);
  uint32_t st = 0x9e3779b9u * seed;
  for (int64_t i = 0; i < t.numel(); ++i) {  // xorshift
    st ^= st << 13, st ^= st >> 17, st ^= st << 5;
    if (bytes) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(st >> 24);
    else t.data<float>()[i] = static_cast<float>(st >> 8) * 0x1p-24f;
  }
  return t;
}

/// Several packages at once, each on its own simulated core (a Runtime on its own thread, `threads` workers each):
/// every package runs `runs` frames of seeded random inputs; prints each one's time per frame while they share the
/// machine.
void benchConcurrent(const std::vector<std::string>& dirs, int threads, bool exact, int runs) {
  std::vector<Runtime> rts;
  for (const std::string& d : dirs) {
    rts.emplace_back(d, RuntimeOptions{threads, exact, false});
    uint32_t seed = 0;
    for (auto& in : rts.back().inputs()) {
      if (!in.aipp_for.empty())
        throw Error(ErrorCode::kInvalidArgument, fmt::format("--with: {} has a dynamic AIPP input ('{}'): not supported here", d, in.name));
      rts.back().setInput(in.name, randomInput(in, ++seed));
    }
    rts.back().run();  // (warm-up)
  }
  std::vector<double> ms(rts.size());
  std::vector<std::exception_ptr> errors(rts.size());
  const double t0 = nowMs();
  std::vector<std::thread> pool;
  std::exception_ptr not_started;
  try {
    for (size_t k = 0; k < rts.size(); ++k)
      pool.emplace_back([&, k] {
        try {
          const double a = nowMs();
          for (int i = 0; i < runs; ++i) rts[k].run();
          ms[k] = (nowMs() - a) / runs;
        } catch (...) {
          errors[k] = std::current_exception();
        }
      });
  } catch (const std::system_error& e) {  // (a thread the system cannot start: those started are joined first)
    not_started = std::make_exception_ptr(
        Error(ErrorCode::kIo, fmt::format("cannot start a thread for each of the {} packages ({} started): {}",
                                          rts.size(), pool.size(), e.what())));
  }
  for (auto& t : pool) t.join();
  if (not_started) std::rethrow_exception(not_started);
  const double wall = nowMs() - t0;
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  fmt::print("\nconcurrent: {} packages, one simulated core each ({} thread{} each), {} frames each, {:.1f} ms in all\n", rts.size(),
             threads, threads == 1 ? "" : "s", runs, wall);
  for (size_t k = 0; k < rts.size(); ++k)
    fmt::print("  {}: {:.3f} ms per frame ({:.1f} frames/s)\n", dirs[k], ms[k], 1000.0 / ms[k]);
}

/// Times a package on the simulator: seeded random inputs (uniform; random bytes for uint8 frames) unless --input gives them.
template <typename Opts>
int benchPackage(const Opts& o) {
  for (const std::string& d : o.with) Runtime check(d);  // (a bad --with package refused before any timing)
  double l0 = nowMs();
  Runtime rt(o.model, {o.threads, o.exact, o.profile});
  double l1 = nowMs();
  auto given = parseInputs(o.inputs);
  std::set<std::string> aipp_set;  // frame inputs whose dynamic AIPP block --aipp gives
  for (const auto& [name, block] : parseAippParams(o.aipp)) {
    rt.setDynamicAipp(name, block);
    aipp_set.insert(name);
  }
  uint32_t seed = 0;
  std::vector<std::pair<std::string, Tensor>> feeds;  // what --io copies in before every run
  for (auto& in : rt.inputs()) {
    auto it = given.find(in.name);
    if (it != given.end()) {
      rt.setInput(in.name, it->second);
      feeds.emplace_back(in.name, it->second);
      continue;
    }
    if (!in.aipp_for.empty()) {  // a dynamic AIPP parameter block: random bytes would be refused
      if (!aipp_set.count(in.aipp_for) && !aipp_set.count(in.name))
        throw Error(ErrorCode::kInvalidArgument, fmt::format("input '{}' is the dynamic AIPP parameter block of '{}': give it with "
                                                             "--aipp {}=params.bin|yaml", in.name, in.aipp_for, in.aipp_for));
      continue;
    }
    Tensor t = randomInput(in, ++seed);
    rt.setInput(in.name, t);
    feeds.emplace_back(in.name, t);
  }
  // One inference: with --io also its inputs copied in and its outputs read out as float32 (what an application
  // pays per call; the Python package's per-image cost is compared with this, tools/bench_python.py).
  auto once = [&] {
    if (o.io)
      for (auto& [name, t] : feeds) rt.setInput(name, t);
    rt.run();
    if (o.io)
      for (auto& out : rt.outputs()) (void)rt.outputFloat(out.name);
  };
  for (int i = 0; i < o.warmup; ++i) once();
  std::vector<double> times;
  std::vector<std::vector<NodeProfile>> profiles;
  for (int i = 0; i < o.runs; ++i) {
    double t0 = nowMs();
    once();
    times.push_back(nowMs() - t0);
    if (o.profile) {
      std::vector<NodeProfile> p;
      for (size_t k = 0; k < rt.layers().size(); ++k)
        p.push_back({rt.layers()[k].name, rt.layers()[k].kind + (rt.layers()[k].engine == "mac" ? " (mac)" : " (vector)"), rt.layerTimes()[k]});
      profiles.push_back(std::move(p));
    }
  }
  Stats s = stats(times);
  fmt::print("package: {} ({} {}, {} layers, {} mode)\nthreads: {}  runs: {}  warmup: {}\nload+prepare: {:.1f} ms\n", o.model,
             rt.target(), rt.numerics(), rt.layers().size(), o.exact ? "exact" : "fast", o.threads, o.runs, o.warmup, l1 - l0);
  const char* f = s.median < 0.1 ? "median: {:.4f} ms\nmin: {:.4f} ms\nmean: {:.4f} ms\nmax: {:.4f} ms\n"
                                  : "median: {:.3f} ms\nmin: {:.3f} ms\nmean: {:.3f} ms\nmax: {:.3f} ms\n";
  fmt::print(fmt::runtime(f), s.median, s.min, s.mean, s.max);
  if (o.profile) printProfile(profiles, o.profile_csv);
  if (!o.with.empty()) {
    std::vector<std::string> dirs = {o.model};
    dirs.insert(dirs.end(), o.with.begin(), o.with.end());
    benchConcurrent(dirs, o.threads, o.exact, o.runs);
  }
  if (o.pipeline) {
    // The package's layers groups as a pipeline of simulated cores (npuc::Pipeline): the same frames, each stage on
    // its own thread with o.threads workers.
    Pipeline pl(o.model, {o.threads, o.exact, false});
    std::vector<Tensor> frame;
    for (auto& in : pl.inputs()) {
      auto it = std::find_if(feeds.begin(), feeds.end(), [&](auto& f) { return f.first == in.name; });
      if (it == feeds.end())
        throw Error(ErrorCode::kInvalidArgument, fmt::format("--pipeline: input '{}' (a dynamic AIPP block) is not supported", in.name));
      frame.push_back(it->second);
    }
    (void)pl.run(std::vector<std::vector<Tensor>>(static_cast<size_t>(std::max(o.warmup, 1)), frame));
    (void)pl.run(std::vector<std::vector<Tensor>>(static_cast<size_t>(o.runs), frame));
    const double per = pl.wallMs() / o.runs;
    std::string groups;
    for (int g : pl.groups()) groups += (groups.empty() ? "groups " : ", ") + std::to_string(g);
    if (pl.groups().size() == 1 && pl.groups()[0] == 0) groups = "the package has no layers groups";
    fmt::print("\npipeline: {} stage{} ({}), {} frames: {:.3f} ms per frame ({:.1f} frames/s); one runtime: {:.3f} ms "
               "({:.1f} frames/s)\n", pl.groups().size(), pl.groups().size() == 1 ? "" : "s", groups, o.runs, per, 1000.0 / per,
               s.median, 1000.0 / s.median);
    for (size_t k = 0; k < pl.groups().size(); ++k)
      fmt::print("  stage {} ({}): {:.3f} ms per frame busy{}\n", k + 1,
                 pl.groups()[k] ? fmt::format("group {}", pl.groups()[k]) : std::string("all layers"), pl.stageMs()[k],
                 k == 0 ? std::string() : fmt::format(", {} bytes handed in per frame", pl.handoffBytes()[k]));
  }
  return 0;
}

void addBench(Command& app, Action& run) {
  auto* c = app.subcommand("bench", "Time a model on the reference engine (median and min latency)");
  addCustomOpOption(c);
  struct Opts {
    std::string model;
    std::vector<std::string> inputs, shapes, aipp, with;
    int threads = 1, runs = 20, warmup = 3;
    bool profile = false, exact = false, io = false, pipeline = false;
    std::string profile_csv;
  };
  auto o = std::make_shared<Opts>();
  c->option("model", o->model, "ONNX model, or a package folder (output/PREFIX) to time the simulator")->required();
  c->option("--input", o->inputs, "Input tensor: name=file.npy (others get seeded random data)");
  c->option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224");
  c->option("--aipp", o->aipp, "Packages with dynamic AIPP: name=params.bin|yaml, the parameter block (docs/aipp.md)");
  c->option("--threads,-t", o->threads, "Worker threads")->range(1, 256);
  c->option("--runs,-r", o->runs, "Timed runs")->range(1, 100000);
  c->option("--warmup", o->warmup, "Untimed warm-up runs")->range(0, 1000);
  c->flag("--profile", o->profile, "Also print time per op type and the slowest nodes (median run)");
  c->option("--profile-csv", o->profile_csv, "With --profile: every node's (layer's) median time to this CSV");
  c->flag("--exact", o->exact, "Packages: time the scalar reference kernels (the specification)");
  c->option("--with", o->with, "Packages: also run these packages at the same time as PKG, each on its own simulated core "
                                  "(a runtime on its own thread, seeded random inputs), and print each one's time per frame "
                                  "(repeatable)");
  c->flag("--pipeline", o->pipeline, "Packages with layers groups: also run the frames through a pipeline of simulated "
                                         "cores, one per group (npuc::Pipeline), and print its time per frame");
  c->flag("--io", o->io, "Packages: time each inference with its inputs copied in and its outputs read out as float32 "
                             "(what an application pays per call)");
  c->callback([o, &run] {
    run = [o] {
      if (std::filesystem::is_directory(o->model)) return benchPackage(*o);
      if (o->pipeline || !o->with.empty())
        throw Error(ErrorCode::kInvalidArgument, fmt::format("{} apply to packages (output/PREFIX folders), not to an ONNX model",
                                                             o->pipeline ? "--pipeline" : "--with"));
      auto inputs = parseInputs(o->inputs);
      double l0 = nowMs();
      Model m = loadForInputs(o->model, inputs, o->shapes);
      fillRandomInputs(m, inputs);
      Session s(m, o->threads, o->profile);
      double l1 = nowMs();
      std::vector<std::vector<NodeProfile>> profiles;
      for (int i = 0; i < o->warmup; ++i) s.run(inputs);
      std::vector<double> times;
      for (int i = 0; i < o->runs; ++i) {
        double t0 = nowMs();
        s.run(inputs);
        times.push_back(nowMs() - t0);
        if (o->profile) profiles.push_back(s.profile());
      }
      std::sort(times.begin(), times.end());
      double median = times.size() % 2 ? times[times.size() / 2]
                                       : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
      double mean = 0;
      for (double t : times) mean += t;
      mean /= static_cast<double>(times.size());
      ModelStats st = m.stats();
      fmt::print("model: {}\nthreads: {}  runs: {}  warmup: {}\nload+prepare: {:.1f} ms\n", o->model, o->threads, o->runs,
                 o->warmup, l1 - l0);
      fmt::print("median: {:.3f} ms\nmin: {:.3f} ms\nmean: {:.3f} ms\nmax: {:.3f} ms\n", median, times.front(), mean,
                 times.back());
      if (st.macs > 0)
        fmt::print("throughput: {:.1f} GFLOP/s at the median ({} MACs)\n", 2.0 * static_cast<double>(st.macs) / median / 1e6,
                   humanCount(st.macs));
      if (o->profile) printProfile(profiles, o->profile_csv);
      return 0;
    };
  });
}

}  // namespace npuc::cli
