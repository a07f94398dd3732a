// Pipeline (include/npuc/runtime.hpp): a package's layers groups as stages, one Runtime each on its own thread, each
// frame handed from stage to stage (the bytes the later stages read and the int8-pow2 slots they take in).
#include "runtime/runtime_impl.hpp"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace npuc {

namespace {

/// Byte ranges [addr, addr + bytes), sorted and merged.
std::vector<std::pair<uint64_t, uint64_t>> mergeRanges(std::vector<std::pair<uint64_t, uint64_t>> r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto [a, n] : r) {
    if (n == 0) continue;
    if (!out.empty() && a <= out.back().first + out.back().second)
      out.back().second = std::max(out.back().first + out.back().second, a + n) - out.back().first;
    else
      out.push_back({a, n});
  }
  return out;
}

bool covered(const std::vector<std::pair<uint64_t, uint64_t>>& merged, uint64_t a, uint64_t n) {
  for (auto [b, m] : merged)
    if (a >= b && a + n <= b + m) return true;
  return false;
}

/// Adds [a, a + n) to sorted, merged ranges, keeping them so.
void addRange(std::vector<std::pair<uint64_t, uint64_t>>& merged, uint64_t a, uint64_t n) {
  if (n == 0) return;
  auto it = std::lower_bound(merged.begin(), merged.end(), std::pair<uint64_t, uint64_t>{a, 0});
  if (it != merged.begin() && std::prev(it)->first + std::prev(it)->second >= a) --it;  // touches the one before
  uint64_t lo = a, hi = a + n;
  auto end = it;
  for (; end != merged.end() && end->first <= hi; ++end) {
    lo = std::min(lo, end->first);
    hi = std::max(hi, end->first + end->second);
  }
  it = merged.erase(it, end);
  merged.insert(it, {lo, hi - lo});
}

}  // namespace

struct Pipeline::Impl {
  std::vector<Runtime> stages;
  std::vector<int> groups;
  // Into stage k (k >= 1): the device bytes it and the later stages read that earlier stages wrote (or that are
  // package inputs), and the int8-pow2 slots earlier stages write.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> in_ranges;
  std::vector<std::vector<int32_t>> in_slots;
  std::vector<double> stage_ms;
  std::vector<uint64_t> handoff_bytes;
  double wall_ms = 0;
};

Pipeline::Pipeline(const std::filesystem::path& dir, RuntimeOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  Runtime first(dir, opts);
  if (!first.gears().empty()) fail(ErrorCode::kInvalidArgument, "{}: a package with gears does not run as a pipeline", dir.string());
  if (!first.shapeRanges().empty())
    fail(ErrorCode::kInvalidArgument, "{}: a package serving shape ranges does not run as a pipeline (its stages would all take one size)", dir.string());
  for (const RuntimeLayer& l : first.layers())
    if (p.groups.empty() || l.group != p.groups.back()) p.groups.push_back(l.group);  // (non-decreasing: validated)
  p.stages.push_back(std::move(first));
  for (size_t k = 1; k < p.groups.size(); ++k) p.stages.emplace_back(dir, opts);
  const Runtime::Impl& im = *p.stages[0].impl_;
  auto dataSpace = [&](uint64_t addr) {
    for (const Space& sp : im.spaces)
      if (addr >= sp.addr && addr - sp.addr < sp.size)
        return sp.name == "data_in" || sp.name == "data" || sp.name == "data_out" || sp.name == "work";
    return false;
  };
  p.in_ranges.assign(p.groups.size(), {});
  p.in_slots.assign(p.groups.size(), {});
  for (size_t k = 1; k < p.groups.size(); ++k) {
    const int g = p.groups[k];
    std::vector<std::pair<uint64_t, uint64_t>> need, written;  // (written: sorted and merged)
    for (size_t i = 0; i < im.steps.size(); ++i) {
      const package::Descriptor& d = *im.program[im.steps[i].d->seq];  // (a dynamic layer's extents included)
      if (im.layers[i].group < g) {
        if (im.steps[i].p2 && im.steps[i].p2->out.slot >= 0) p.in_slots[k].push_back(im.steps[i].p2->out.slot);
        continue;
      }
      for (int j = 0; j < d.n_in; ++j)
        if (dataSpace(d.in(j).addr) && !covered(written, d.in(j).addr, d.in(j).bytes)) need.push_back({d.in(j).addr, d.in(j).bytes});
      for (int j = 0; j < d.n_out; ++j) addRange(written, d.out(j).addr, d.out(j).bytes);
    }
    for (const package::IoTensor& o : im.pkg.outputs) {  // outputs earlier stages write reach the last one
      if (!covered(written, o.ref.addr, o.ref.bytes)) need.push_back({o.ref.addr, o.ref.bytes});
      if (o.extent && !covered(written, o.extent->addr, o.extent->bytes)) need.push_back({o.extent->addr, o.extent->bytes});
    }
    p.in_ranges[k] = mergeRanges(need);
  }
  for (size_t k = 0; k < p.stages.size(); ++k) {
    p.stages[k].impl_->only_group = p.groups[k];
    p.stages[k].impl_->check_inputs = k == 0;  // (later stages take their inputs from the stage before)
  }
}

Pipeline::~Pipeline() = default;

const std::vector<int>& Pipeline::groups() const { return impl_->groups; }
const std::vector<RuntimeTensor>& Pipeline::inputs() const { return impl_->stages[0].inputs(); }
const std::vector<RuntimeTensor>& Pipeline::outputs() const { return impl_->stages[0].outputs(); }
const std::vector<double>& Pipeline::stageMs() const { return impl_->stage_ms; }
double Pipeline::wallMs() const { return impl_->wall_ms; }
const std::vector<uint64_t>& Pipeline::handoffBytes() const { return impl_->handoff_bytes; }

void Pipeline::resetState() {
  for (Runtime& r : impl_->stages) r.resetState();
}

std::vector<std::vector<Tensor>> Pipeline::run(const std::vector<std::vector<Tensor>>& frames) {
  Impl& p = *impl_;
  const size_t S = p.stages.size(), F = frames.size();
  for (size_t i = 0; i < F; ++i)
    if (frames[i].size() != inputs().size())
      fail(ErrorCode::kInvalidArgument, "frame {}: the package has {} inputs, got {}", i, inputs().size(), frames[i].size());
  // One hand-over buffer between consecutive stages: the bytes and slots stage k + 1 takes in, of one frame.
  struct Handoff {
    std::vector<uint8_t> bytes;
    std::vector<kernels::pow2::Slot> slots;
    int64_t frame = -1;  // the frame it holds; -1: empty
  };
  std::vector<Handoff> box(S);
  std::mutex mu;
  std::condition_variable cv;
  bool failed = false;
  std::exception_ptr error;
  std::vector<std::vector<Tensor>> results(F);
  std::vector<double> busy(S, 0.0);
  p.handoff_bytes.assign(S, 0);
  for (size_t k = 1; k < S; ++k)
    for (auto [a, n] : p.in_ranges[k]) p.handoff_bytes[k] += n;
  auto stage = [&](size_t k) {
    try {
      Runtime& rt = p.stages[k];
      Runtime::Impl& im = *rt.impl_;
      for (size_t f = 0; f < F; ++f) {
        if (k == 0) {
          for (size_t j = 0; j < frames[f].size(); ++j) rt.setInput(rt.inputs()[j].name, frames[f][j]);
        } else {  // take frame f from the stage before (one producer, one consumer: the copy runs unlocked)
          {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return failed || box[k].frame == static_cast<int64_t>(f); });
            if (failed) return;
          }
          const auto t0 = std::chrono::steady_clock::now();
          size_t at = 0;
          for (auto [a, n] : p.in_ranges[k]) {
            std::memcpy(im.at(a, n, "pipeline hand-over"), box[k].bytes.data() + at, n);
            at += n;
          }
          for (size_t j = 0; j < p.in_slots[k].size(); ++j) im.p2_slots[static_cast<size_t>(p.in_slots[k][j])] = box[k].slots[j];
          busy[k] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          std::lock_guard<std::mutex> lk(mu);
          box[k].frame = -1;
          cv.notify_all();
        }
        const auto t0 = std::chrono::steady_clock::now();
        rt.run();
        busy[k] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (k + 1 < S) {  // hand frame f to the next stage once it has taken the one before
          {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return failed || box[k + 1].frame < 0; });
            if (failed) return;
          }
          Handoff& h = box[k + 1];
          h.bytes.resize(p.handoff_bytes[k + 1]);
          size_t at = 0;
          for (auto [a, n] : p.in_ranges[k + 1]) {
            std::memcpy(h.bytes.data() + at, im.at(a, n, "pipeline hand-over"), n);
            at += n;
          }
          h.slots.clear();
          for (int32_t sl : p.in_slots[k + 1]) h.slots.push_back(im.p2_slots[static_cast<size_t>(sl)]);
          std::lock_guard<std::mutex> lk(mu);
          h.frame = static_cast<int64_t>(f);
          cv.notify_all();
        } else {
          for (const RuntimeTensor& o : rt.outputs()) results[f].push_back(rt.outputFloat(o.name));
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu);
      if (!failed) error = std::current_exception();
      failed = true;
      cv.notify_all();
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  try {
    for (size_t k = 1; k < S; ++k) threads.emplace_back(stage, k);
  } catch (...) {  // (a thread that could not start: the others are told to stop)
    std::lock_guard<std::mutex> lk(mu);
    if (!failed) error = std::current_exception();
    failed = true;
    cv.notify_all();
  }
  if (!failed) stage(0);
  for (auto& t : threads) t.join();
  p.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (error) {
    // Stages stopped at different frames: their int8-pow2 histories no longer belong to one sequence. Every stage
    // starts again from the calibrated ranges, as a new Pipeline would.
    resetState();
    std::rethrow_exception(error);
  }
  p.stage_ms.assign(S, 0.0);
  for (size_t k = 0; k < S; ++k) p.stage_ms[k] = F > 0 ? busy[k] / static_cast<double>(F) : 0.0;
  return results;
}

}  // namespace npuc
