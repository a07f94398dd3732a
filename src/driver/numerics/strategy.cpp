// The base of the numerics strategies: what every family does unless it says otherwise, the table of families, and
// the calibration samples of TranslateOptions as the model's inputs.
#include "driver/numerics/strategy.hpp"

#include "driver/translation.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <thread>

namespace npuc {
namespace numerics {

std::unique_ptr<Strategy> makeFp32();
std::unique_ptr<Strategy> makeFp16();
std::unique_ptr<Strategy> makeInt8Checked();
std::unique_ptr<Strategy> makeInt8Affine();
std::unique_ptr<Strategy> makeInt8Radix();
std::unique_ptr<Strategy> makeInt8Pow2();
std::unique_ptr<Strategy> makeInt8Symmetric();

std::unique_ptr<Strategy> makeStrategy(Numerics n) {
  switch (n) {  // (the one place that maps a family to its strategy)
    case Numerics::kFp32: return makeFp32();
    case Numerics::kFp16: return makeFp16();
    case Numerics::kInt8: return makeInt8Checked();
    case Numerics::kInt8Affine: return makeInt8Affine();
    case Numerics::kInt8Radix: return makeInt8Radix();
    case Numerics::kInt8Pow2: return makeInt8Pow2();
    case Numerics::kInt8Symmetric: return makeInt8Symmetric();
  }
  fail(ErrorCode::kInternal, "no numerics strategy for family {}", static_cast<int>(n));
}

int calibrationThreads(int requested) {
  return requested > 0 ? requested : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, ThreadPool::kMaxThreads);
}

void Strategy::checkOptions(Translation& tr) {
  // TIDL's keys (int8-pow2) given for another family: said, not silently dropped.
  const TranslateOptions::Pow2 def, &p = tr.o.pow2;
  std::vector<std::string> set;
  auto note = [&](bool changed, const char* name) {
    if (changed) set.push_back(name);
  };
  note(p.num_param_bits != def.num_param_bits, "numParamBits");
  note(p.quant_round_add != def.quant_round_add, "quantRoundAdd");
  note(p.in_element_type != def.in_element_type, "inElementType");
  note(p.in_quant_factor != def.in_quant_factor, "inQuantFactor");
  note(p.quant_history_param1 != def.quant_history_param1, "quantHistoryParam1");
  note(p.quant_history_param2 != def.quant_history_param2, "quantHistoryParam2");
  note(p.quant_margin != def.quant_margin, "quantMargin");
  note(p.boot_frames != def.boot_frames, "boot-frames");
  note(p.dynamic != def.dynamic, "static-quant");
  if (!set.empty())
    tr.warn(fmt::format("{} set, but target '{}' has {} numerics: the int8-pow2 options apply to int8-pow2 targets (tidl) "
                        "only, ignored", fmt::join(set, ", "), tr.t.name, numericsName(tr.t.numerics)));
  if (!keptInFloat(tr.o).empty() && (tr.t.numerics == Numerics::kFp32 || tr.t.numerics == Numerics::kFp16))
    tr.warn(fmt::format("--keep-float / --keep-float16 are ignored: target '{}' has {} numerics, the width of every layer "
                        "(they keep layers of int8 packages in float32 / float16)", tr.t.name, numericsName(tr.t.numerics)));
}

void Strategy::prepareImported(Translation& tr, Model&) {
  if (tr.o.save_qdq_onnx)
    tr.warn(fmt::format("--save-qdq-onnx is ignored: target '{}' has {} numerics (the QDQ model is the int8-affine "
                        "quantization)", tr.t.name, numericsName(tr.t.numerics)));
}

void Strategy::calibrate(Translation& tr, Model& body) {
  if (tr.o.calibration.empty()) return;
  calibrationSamples(graphOf(body), tr.o.calibration);  // (checked all the same: a mistake in them is said)
  tr.warn(fmt::format("calibration data is not used: target '{}' has {} numerics ({})", tr.t.name, numericsName(tr.t.numerics),
                      calibrationUnused()));
}

}  // namespace numerics

/// The calibration tensors of TranslateOptions as samples of the model's inputs: each tensor stacks one or more
/// samples along its first axis (views, nothing copied). Also used by Model::quantizedQdq (model.cpp).
std::vector<std::map<std::string, Tensor>> calibrationSamples(const ir::Graph& g, const std::map<std::string, std::vector<Tensor>>& data) {
  for (const auto& entry : data) {
    const std::string& name = entry.first;  // (not a structured binding: the lambda below captures it)
    bool known = std::any_of(g.inputs().begin(), g.inputs().end(), [&](ir::ValueId v) { return g.value(v).name == name; });
    if (!known) fail(ErrorCode::kInvalidArgument, "calibration data for '{}': the model has no input of that name", name);
  }
  std::vector<std::map<std::string, Tensor>> samples;
  std::string first;
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    auto it = data.find(in.name);
    if (it == data.end() || it->second.empty()) fail(ErrorCode::kInvalidArgument, "calibration data: input '{}' has none (every input needs samples)", in.name);
    const Shape& s = in.type.shape;
    std::vector<Tensor> mine;
    for (size_t f = 0; f < it->second.size(); ++f) {
      const Tensor& t = it->second[f];
      auto where = [&] { return fmt::format("calibration data for '{}' (tensor {})", in.name, f + 1); };
      if (t.dtype() != in.type.dtype)
        fail(ErrorCode::kInvalidInput, "{}: {} values, the input is {}", where(), dtypeName(t.dtype()), dtypeName(in.type.dtype));
      if (s.empty() && t.rank() <= 1) {  // a scalar input: one sample, or a list of them
        const int64_t n = t.rank() == 0 ? 1 : t.dim(0);
        for (int64_t k = 0; k < n; ++k) mine.emplace_back(t.dtype(), s, t.buffer(), t.offset() + static_cast<size_t>(k) * dtypeSize(t.dtype()));
        continue;
      }
      bool fits = t.rank() == static_cast<int>(s.size()) && !s.empty() && s[0] > 0 && t.dim(0) > 0 && t.dim(0) % s[0] == 0 &&
                  std::equal(s.begin() + 1, s.end(), t.shape().begin() + 1);
      if (!fits)
        fail(ErrorCode::kInvalidInput, "{}: shape {} does not stack samples of the input's shape {} (the first dimension a "
             "multiple of {}, the others equal; a scalar input takes a scalar or a list of them)", where(), shapeStr(t.shape()),
             shapeStr(s), s.empty() ? 0 : s[0]);
      size_t bytes = t.nbytes() / static_cast<size_t>(t.dim(0) / s[0]);
      for (int64_t k = 0; k < t.dim(0) / s[0]; ++k)
        mine.emplace_back(t.dtype(), s, t.buffer(), t.offset() + static_cast<size_t>(k) * bytes);
    }
    if (first.empty()) {
      samples.resize(mine.size());
      first = in.name;
    } else if (mine.size() != samples.size()) {
      fail(ErrorCode::kInvalidInput, "calibration data: input '{}' has {} samples, input '{}' {} (they go together)", in.name,
           mine.size(), first, samples.size());
    }
    for (size_t k = 0; k < mine.size(); ++k) samples[k][in.name] = mine[k];
  }
  return samples;
}

}  // namespace npuc
