// npuc_plan_bench: memory planning at scale. A chain of N layers (every buffer alive for two steps) and a
// "skip" graph (every tenth buffer alive to the end, as U-Net / DenseNet-style long-lived activations) through
// planSequential and planReuse; the figure to watch is the time per buffer staying flat as N grows (the planner
// was quadratic: 200,000 layers took a minute; issue 22). `npuc translate` of a 200k-layer chain prints the whole
// translator's stages (docs/memory-planning.md).
#include "plan/memory.hpp"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {

std::vector<npuc::plan::Buffer> chain(int64_t n, bool skips) {
  std::vector<npuc::plan::Buffer> b;
  b.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int last = static_cast<int>(skips && i % 10 == 0 ? n : i + 1);
    b.push_back({"v" + std::to_string(i), static_cast<uint64_t>(256 + (i % 7) * 64), static_cast<int>(i), last});
  }
  return b;
}

void planReuse(benchmark::State& state, bool skips) {
  auto b = chain(state.range(0), skips);
  for (auto _ : state) benchmark::DoNotOptimize(npuc::plan::planReuse(b));
  // seconds / (iterations * buffers / 1e6) = microseconds per buffer
  state.counters["us/buffer"] = benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()) / 1e6,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void planSequential(benchmark::State& state) {
  auto b = chain(state.range(0), false);
  for (auto _ : state) benchmark::DoNotOptimize(npuc::plan::planSequential(b));
}

}  // namespace

BENCHMARK_CAPTURE(planReuse, chain, false)->Arg(20000)->Arg(200000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(planReuse, skips, true)->Arg(2000)->Arg(20000)->Unit(benchmark::kMillisecond);
BENCHMARK(planSequential)->Arg(200000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
