// npuc bench: times the reference engine on a model (median and min over K runs after warm-up).
#include "cli_common.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npuc::cli {

void addBench(CLI::App& app, Action& run) {
  auto* c = app.add_subcommand("bench", "Time a model on the reference engine (median and min latency)");
  struct Opts {
    std::string model;
    std::vector<std::string> inputs, shapes;
    int threads = 1, runs = 20, warmup = 3;
  };
  auto o = std::make_shared<Opts>();
  c->add_option("model", o->model, "ONNX model")->required();
  c->add_option("--input", o->inputs, "Input tensor: name=file.npy (others get seeded random data)");
  c->add_option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224");
  c->add_option("--threads,-t", o->threads, "Worker threads")->check(CLI::Range(1, 256));
  c->add_option("--runs,-r", o->runs, "Timed runs")->check(CLI::Range(1, 100000));
  c->add_option("--warmup", o->warmup, "Untimed warm-up runs")->check(CLI::Range(0, 1000));
  c->callback([o, &run] {
    run = [o] {
      auto inputs = parseInputs(o->inputs);
      LoadOptions lo;
      lo.input_shapes = parseShapes(o->shapes);
      for (auto& [n, t] : inputs)
        if (!lo.input_shapes.count(n)) lo.input_shapes[n] = t.shape();
      double l0 = nowMs();
      Model m = Model::load(o->model, lo);
      fillRandomInputs(m, inputs);
      Session s(m, o->threads);
      double l1 = nowMs();
      for (int i = 0; i < o->warmup; ++i) s.run(inputs);
      std::vector<double> times;
      for (int i = 0; i < o->runs; ++i) {
        double t0 = nowMs();
        s.run(inputs);
        times.push_back(nowMs() - t0);
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
      return 0;
    };
  });
}

}  // namespace npuc::cli
