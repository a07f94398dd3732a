// How the control layer kinds run (runtime_impl.hpp; docs/package-format.md, "Control layers"): if, loop and scan run
// the regions that follow them — a branch, or the body once per step — and copy values in and out of them with their
// moves. ONNX semantics, as the reference engine's (engine/ops_control_flow.cpp): a negative trip count is an error,
// a loop ends when its trip count is reached or its body's condition is false, and a scan output holds exactly the
// steps the package was translated for (a loop that runs another number of steps stops the run, naming both).
#include "runtime/runtime_impl.hpp"

#include <cstring>
#include <limits>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

void prepareControl(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const std::string what = fmt::format("descriptor seq {} ({})", d.seq, package::layerKindName(d.kind));
  const uint32_t n = s.p[package::controlHeaderWords(d.kind) - 1];
  for (uint32_t i = 0; i < n; ++i) {
    const package::ControlMove m = package::controlMove(d.kind, s.p, i);
    s.moves.push_back({m, im.at(m.src, package::controlMoveSpan(m, false), what), im.at(m.dst, package::controlMoveSpan(m, true), what)});
  }
  s.regions = package::controlRegions(d.kind, s.p);
  for (uint32_t r : s.regions) s.skip += r;
  if (d.kind == LayerKind::kLoop) {
    s.iteration = im.at(s.p[package::kLoopWordIteration], 8, what);
    s.cond_in = im.at(s.p[package::kLoopWordCondIn], 1, what);
    s.cond_out = im.at(s.p[package::kLoopWordCondOut], 1, what);
  }
}

const std::string& layerName(const Runtime::Impl& im, const Step& s) { return im.layers[s.d->seq].name; }

/// The moves of `phase` at step `step`.
void applyMoves(const Runtime::Impl& im, const Step& s, uint32_t phase, uint64_t step) {
  for (const Step::Move& mv : s.moves) {
    const package::ControlMove& m = mv.m;
    if (m.phase != phase) continue;
    uint64_t t = 0;
    if (m.indexed()) {
      if (step >= m.count)
        fail(ErrorCode::kInvalidInput, "{} layer '{}': step {} is past the {} steps its scan output holds (the package "
             "was translated for {} steps)", package::layerKindName(s.d->kind), layerName(im, s), step + 1, m.count, m.count);
      t = m.reverse ? m.count - 1 - step : step;
    }
    const uint8_t* src = mv.src + t * m.src_step;
    uint8_t* dst = mv.dst + t * m.dst_step;
    for (uint64_t r = 0; r < m.rows; ++r) std::memcpy(dst + r * m.dst_row_stride, src + r * m.src_row_stride, m.row_bytes);
  }
}

/// After a loop or scan: every indexed move covered exactly the steps that ran.
void checkSteps(const Runtime::Impl& im, const Step& s, uint64_t steps) {
  for (const Step::Move& mv : s.moves)
    if (mv.m.indexed() && mv.m.count != steps)
      fail(ErrorCode::kInvalidInput, "{} layer '{}' ran {} steps; its scan output holds {} (the package was translated "
           "for that many: translate again for this input)", package::layerKindName(s.d->kind), layerName(im, s), steps,
           mv.m.count);
}

void runIf(Runtime::Impl& im, Step& s) {
  const bool c = s.in[0][0] != 0;
  const size_t first = s.d->seq + 1;
  if (c) im.runRegion(first, s.regions[0]);
  else im.runRegion(first + s.regions[0], s.regions[1]);
  applyMoves(im, s, c ? 0 : 1, 0);
}

void runLoop(Runtime::Impl& im, Step& s) {
  const bool has_m = s.p[1] != 0, has_cond = s.p[2] != 0;
  int64_t m = std::numeric_limits<int64_t>::max();
  if (has_m) {
    std::memcpy(&m, s.in[0], 8);
    if (m < 0) fail(ErrorCode::kInvalidInput, "loop layer '{}': the trip count M is negative ({})", layerName(im, s), m);
  }
  bool cond = has_cond ? s.in[has_m ? 1 : 0][0] != 0 : true;
  applyMoves(im, s, 0, 0);
  int64_t i = 0;
  for (; i < m && cond; ++i) {
    std::memcpy(s.iteration, &i, 8);
    s.cond_in[0] = cond ? 1 : 0;
    applyMoves(im, s, 1, static_cast<uint64_t>(i));
    im.runRegion(s.d->seq + 1, s.regions[0]);
    if (has_cond) cond = s.cond_out[0] != 0;
    applyMoves(im, s, 2, static_cast<uint64_t>(i));
  }
  checkSteps(im, s, static_cast<uint64_t>(i));
}

void runScan(Runtime::Impl& im, Step& s) {
  const uint32_t steps = s.p[1];
  applyMoves(im, s, 0, 0);
  for (uint32_t t = 0; t < steps; ++t) {
    applyMoves(im, s, 1, t);
    im.runRegion(s.d->seq + 1, s.regions[0]);
    applyMoves(im, s, 2, t);
  }
  checkSteps(im, s, steps);
}

}  // namespace

const KindExec kind_exec::kIf = {&prepareControl, &runIf};
const KindExec kind_exec::kLoop = {&prepareControl, &runLoop};
const KindExec kind_exec::kScan = {&prepareControl, &runScan};

}  // namespace npuc
