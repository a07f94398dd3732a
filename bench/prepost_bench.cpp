// The camera pipeline of issue 5 on the simulator's fast kernels: a 640x480 YUY2 frame -> RGB (conv_yuv2rgb) ->
// 224x224 (resize_hwc, bilinear) -> normalized fp16 (cast_any_to_fp16 fused into normalize), one thread and two,
// with the bytes the pipeline must read (the frame, 0.6 MB) and write (the fp16 image, 0.3 MB) as the
// throughput (bytes_per_second counts those 0.9 MB once per run, not the intermediate images). Also each stage alone,
// and the reference (--exact) kernels. And the Ascend-style AIPP stage on the same job: a 640x480 NV12 frame ->
// CSC -> scf 224x224 -> DTC -> fp16 planes (kernels::aipp, the one kernel both simulator modes run).
//   build/bin/npuc_prepost_bench [--benchmark_filter=Pipeline]
#include "kernels/aipp.hpp"
#include "kernels/prepost.hpp"
#include "support/thread_pool.hpp"

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

namespace {

using namespace npuc;
using namespace npuc::kernels;

constexpr int64_t kH = 480, kW = 640, kOut = 224;
const float kAdd[3] = {-123.675f, -116.28f, -103.53f}, kMul[3] = {0.01712475f, 0.017507f, 0.01742919f};

struct Buffers {
  std::vector<uint8_t> frame, rgb, small;
  std::vector<uint16_t> out;
  Buffers() : frame(kH * kW * 2), rgb(kH * kW * 3), small(kOut * kOut * 3), out(kOut * kOut * 3) {
    std::mt19937 rng(1);
    for (auto& b : frame) b = static_cast<uint8_t>(rng());
  }
};

void pipeline(Buffers& b, ThreadPool* pool, bool fast) {
  (fast ? yuvToRgbFast : yuvToRgb)(YuvFormat::kYUYV, false, kH, kW, b.frame.data(), b.rgb.data(), pool);
  if (fast) resizeHwcFast(ResizeAlg::kBilinear, {kH, kW, 3, kOut, kOut}, b.rgb.data(), b.small.data(), pool);
  else resizeHwc(ResizeAlg::kBilinear, {kH, kW, 3, kOut, kOut}, b.rgb.data(), b.small.data(), pool);
  if (fast) normalizeFast(kOut * kOut, 3, false, kAdd, kMul, b.small.data(), b.out.data(), pool);
  else normalize(kOut * kOut, 3, false, kAdd, kMul, b.small.data(), b.out.data(), pool);
}

void BM_Pipeline(benchmark::State& st) {
  Buffers b;
  int threads = static_cast<int>(st.range(0));
  bool fast = st.range(1) != 0;
  auto pool = std::make_unique<ThreadPool>(threads);
  for (auto _ : st) {
    pipeline(b, fast ? pool.get() : nullptr, fast);
    benchmark::DoNotOptimize(b.out.data());
  }
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(b.frame.size() + b.out.size() * 2));
  st.SetLabel(fast ? "fast" : "reference (--exact)");
}
BENCHMARK(BM_Pipeline)->Args({1, 1})->Args({2, 1})->Args({1, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Stage(benchmark::State& st) {
  Buffers b;
  auto pool = std::make_unique<ThreadPool>(1);
  int stage = static_cast<int>(st.range(0));
  for (auto _ : st) {
    if (stage == 0) yuvToRgbFast(YuvFormat::kYUYV, false, kH, kW, b.frame.data(), b.rgb.data(), pool.get());
    else if (stage == 1) resizeHwcFast(ResizeAlg::kBilinear, {kH, kW, 3, kOut, kOut}, b.rgb.data(), b.small.data(), pool.get());
    else normalizeFast(kOut * kOut, 3, false, kAdd, kMul, b.small.data(), b.out.data(), pool.get());
    benchmark::ClobberMemory();
  }
  st.SetLabel(stage == 0 ? "conv_yuv2rgb 640x480" : stage == 1 ? "resize_hwc bilinear -> 224x224" : "cast+normalize 224x224x3");
}
BENCHMARK(BM_Stage)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Aipp(benchmark::State& st) {
  AippParams p;
  p.input_format = static_cast<uint8_t>(AippFormat::kYUV420SP_U8);
  p.src_w = kW, p.src_h = kH;
  p.csc = 1;
  p.matrix = {{{256, 0, 359}, {256, -88, -183}, {256, 454, 0}}};
  p.input_bias = {0, 128, 128};
  AippBatchParams b;
  b.scf = 1, b.scf_in_w = kW, b.scf_in_h = kH, b.scf_out_w = kOut, b.scf_out_h = kOut;
  for (size_t c = 0; c < 3; ++c) b.min[c] = 0x57BB, b.var_reci[c] = 0x2062;  // ~123.7, ~0.0171
  p.batch = {b};
  AippSetup s{1, 3, kOut, kOut, kW * kH * 3 / 2, 0.f};
  std::vector<uint8_t> frame(static_cast<size_t>(s.image_bytes));
  std::mt19937 rng(1);
  for (auto& v : frame) v = static_cast<uint8_t>(rng());
  std::vector<uint16_t> out(3 * kOut * kOut);
  auto pool = std::make_unique<ThreadPool>(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    aipp(p, s, frame.data(), out.data(), pool.get());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(frame.size() + out.size() * 2));
  st.SetLabel("AIPP NV12 640x480 -> CSC -> scf 224x224 -> DTC fp16");
}
BENCHMARK(BM_Aipp)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
