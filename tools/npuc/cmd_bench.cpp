// npuc bench: times the reference engine on a model (median and min over K runs after warm-up).
#include "cli_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace npuc::cli {

namespace {
// Per node: the median over runs; then totals per op type and the ten slowest nodes.
void printProfile(const std::vector<std::vector<NodeProfile>>& runs) {
  if (runs.empty()) return;
  size_t nodes = runs[0].size();
  std::vector<NodeProfile> med = runs[0];
  for (size_t i = 0; i < nodes; ++i) {
    std::vector<double> v;
    for (auto& r : runs) v.push_back(r[i].ms);
    std::sort(v.begin(), v.end());
    med[i].ms = v[v.size() / 2];
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

void addBench(CLI::App& app, Action& run) {
  auto* c = app.add_subcommand("bench", "Time a model on the reference engine (median and min latency)");
  struct Opts {
    std::string model;
    std::vector<std::string> inputs, shapes;
    int threads = 1, runs = 20, warmup = 3;
    bool profile = false;
  };
  auto o = std::make_shared<Opts>();
  c->add_option("model", o->model, "ONNX model")->required();
  c->add_option("--input", o->inputs, "Input tensor: name=file.npy (others get seeded random data)");
  c->add_option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224");
  c->add_option("--threads,-t", o->threads, "Worker threads")->check(CLI::Range(1, 256));
  c->add_option("--runs,-r", o->runs, "Timed runs")->check(CLI::Range(1, 100000));
  c->add_option("--warmup", o->warmup, "Untimed warm-up runs")->check(CLI::Range(0, 1000));
  c->add_flag("--profile", o->profile, "Also print time per op type and the slowest nodes (median run)");
  c->callback([o, &run] {
    run = [o] {
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
      if (o->profile) printProfile(profiles);
      return 0;
    };
  });
}

}  // namespace npuc::cli
