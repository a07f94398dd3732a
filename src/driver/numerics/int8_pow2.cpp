// int8-pow2 (TIDL, docs/numerics.md): 8-bit codes at 2^-q chosen per frame (or frozen), numParamBits weights. TIDL's
// import keys are checked before any work; the calibration statistics of every tensor are collected on the optimized
// model, and the checked model is quantized to the ai.npuc P2 ops just before lowering (the check and the estimate
// see the float model). Without calibration samples no package is written. Beside the package:
// PREFIX_pow2_table.csv.
#include "driver/numerics/strategy.hpp"

#include "codegen/lower.hpp"
#include "driver/translation.hpp"
#include "passes/pass.hpp"
#include "quant/adaround.hpp"
#include "quant/bias_absorption.hpp"
#include "quant/pow2.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace npuc::numerics {

namespace {

/// TranslateOptions::Pow2 (TIDL's keys) as the quantizer's and the runtime's options; bad values are errors naming
/// the key.
struct Pow2Setup {
  quant::Pow2Options quant;
  kernels::pow2::Options runtime;
};

Pow2Setup pow2Options(const TranslateOptions& o) {
  Pow2Setup p;
  const TranslateOptions::Pow2& t = o.pow2;
  if (t.num_param_bits < 4 || t.num_param_bits > 12) fail(ErrorCode::kInvalidArgument, "numParamBits {} is outside 4..12", t.num_param_bits);
  if (t.in_element_type != 0 && t.in_element_type != 1) fail(ErrorCode::kInvalidArgument, "inElementType {} is not 0 (unsigned) or 1 (signed)", t.in_element_type);
  if (!(t.in_quant_factor > 0) && t.in_quant_factor != -1) fail(ErrorCode::kInvalidArgument, "inQuantFactor {} must be > 0 (or -1: from calibration)", t.in_quant_factor);
  p.runtime.round_add = t.quant_round_add;
  p.runtime.dynamic = t.dynamic;
  p.runtime.history1 = t.quant_history_param1;
  p.runtime.history2 = t.quant_history_param2;
  p.runtime.margin = t.quant_margin;
  p.runtime.boot_frames = t.boot_frames;
  if (std::string why = kernels::pow2::checkOptions(p.runtime); !why.empty()) fail(ErrorCode::kInvalidArgument, "{}", why);
  if (!quant::rangeMethodFromName(o.calib_method, &p.quant.method))
    fail(ErrorCode::kInvalidArgument, "unknown range method '{}' (minmax, percentile, entropy, mse)", o.calib_method);
  p.quant.param_bits = t.num_param_bits;
  p.quant.input_signed = t.in_element_type == 1;
  p.quant.in_quant_factor = t.in_quant_factor;
  p.quant.margin = t.quant_margin;
  for (const std::string& name : keptInFloat(o)) p.quant.keep_float.insert(name);
  p.quant.ranges = o.ranges;
  return p;
}

/// PREFIX_pow2_table.csv: every slot (tensor, signedness, calibrated range, starting q) and every layer's form.
std::string pow2TableCsv(const quant::Pow2Report& r) {
  std::string s = "kind,name,op,signed,lo,hi,q,qw,qb,note\n";
  for (size_t i = 0; i < r.slots.size(); ++i) {
    const quant::Pow2Slot& x = r.slots[i];
    s += fmt::format("slot,{},{},{},{},{},{},,,{}\n", csvField(x.tensor), i, x.is_signed ? 1 : 0, x.lo, x.hi, x.q, csvField(x.warning));
  }
  for (const quant::Pow2Layer& l : r.layers) {
    const bool weighted = l.op == "conv" || l.op == "deconv" || l.op == "gemm";
    s += fmt::format("layer,{},{},,,,,{},{},{}\n", csvField(l.name), l.op,
                     weighted || l.op == "prelu" ? std::to_string(l.qw) : "",  // (prelu: its slopes' q)
                     weighted ? std::to_string(l.qb) : "", csvField(l.note));
  }
  return s;
}

class Int8Pow2 final : public Strategy {
 public:
  Int8Pow2() : Strategy(Numerics::kInt8Pow2) {}

  void checkOptions(Translation& tr) override { setup_ = pow2Options(tr.o); }

  std::vector<std::vector<std::string>> afterOptimize(const Translation&, const Model&) const override {
    // No channel-affine layer of its own: a BatchNormalization no Conv absorbed, and a lone Mul or Add by a constant per
    // channel, run as a depthwise 1x1 convolution (TIDL's BatchNorm layer), the activation after it fused
    // (docs/numerics.md).
    return {{"batchnorm-to-conv", "scale-to-conv", "fuse-activations", "dce"}};
  }

  void calibrate(Translation& tr, Model& body) override {
    if (tr.o.calibration.empty()) {
      if (tr.o.absorb_bias) tr.warn("--absorb-bias is ignored: it measures on calibration samples (--calib), and none were given");
      return;
    }
    // The statistics of every tensor of the optimized model; quantized where it is lowered (beforeLowering).
    auto samples = calibrationSamples(graphOf(body), tr.o.calibration);
    if (tr.o.absorb_bias) {  // (before the statistics: the ranges are the absorbed model's)
      absorbed_ = withContext(tr.o.onnx.string(), [&] {
        return quant::absorbHighBiases(mutableGraphOf(body), samples, calibrationThreads(tr.o.threads));
      });
      tr.res.bias_absorbed_layers = static_cast<int>(absorbed_.pairs.size());
    }
    stats_ = withContext(tr.o.onnx.string(), [&] { return quant::collectStats(graphOf(body), samples, calibrationThreads(tr.o.threads)); });
    tr.res.calibration_samples = samples.size();
    if (tr.o.bias_correction) {  // the float model's input means, before anything is quantized
      means_ = withContext(tr.o.onnx.string(), [&] { return quant::measureInputMeans(graphOf(body), samples, calibrationThreads(tr.o.threads)); });
      setup_.quant.bias_means = &*means_;
    }
    if (tr.o.adaround) {  // the codes of each layer's numParamBits-bit weights at its one step 2^-qw
      const int bits = setup_.quant.param_bits;
      const quant::StepsOf steps = [&](const ir::Node& n, const Tensor& w) -> std::optional<quant::WeightSteps> {
        if (setup_.quant.keep_float.count(n.name)) return std::nullopt;
        double wmax = 0;
        for (int64_t i = 0; i < w.numel(); ++i) wmax = std::max(wmax, std::fabs(static_cast<double>(w.data<float>()[i])));
        if (!std::isfinite(wmax)) return std::nullopt;
        return quant::WeightSteps{{std::ldexp(1.0, -quant::weightQ(wmax, bits))}, static_cast<double>((1 << (bits - 1)) - 1)};
      };
      ada_ = withContext(tr.o.onnx.string(), [&] {
        const auto some = std::vector<std::map<std::string, Tensor>>(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(samples.size(), 64)));
        return quant::adaRoundLayers(graphOf(body), quant::measureInputGrams(graphOf(body), some, calibrationThreads(tr.o.threads)), steps, {},
                                     calibrationThreads(tr.o.threads));
      });
      setup_.quant.weight_codes = &ada_->codes;
      setup_.quant.weight_notes = &ada_->notes;
    }
  }

  bool writesPackage(const Translation&) const override { return stats_.has_value(); }
  std::string whyNoPackage(const Translation& tr) const override {
    return fmt::format("target '{}' has {} numerics: no object package is written without calibration samples (--calib "
                       "NAME=FILE.npy, tidl-import's sampleInData; reports only)", tr.t.name, numericsName(tr.t.numerics));
  }

  void beforeLowering(Translation& tr) override {
    quant::Pow2Report pr = withContext(tr.o.onnx.string(), [&] {
      return quant::quantizeToPow2(mutableGraphOf(*tr.model), *stats_, setup_.quant);
    });
    passes::PassContext ctx;
    passes::PassManager({"dce"}).runToFixpoint(mutableGraphOf(*tr.model), ctx);
    for (quant::Pow2Layer& l : pr.layers)  // (--absorb-bias: said on the layer that gave its floor)
      for (const quant::AbsorbedPair& p : absorbed_.pairs)
        if (p.first == l.name) l.note = l.note.empty() ? p.note() : l.note + "; " + p.note();
    table_ = pow2TableCsv(pr);
    tr.res.quantized = true;
    tr.res.bias_corrected_layers = pr.bias_corrected;
    tr.res.warnings.insert(tr.res.warnings.end(), pr.warnings.begin(), pr.warnings.end());
  }

  void lowerOptions(codegen::LowerOptions& lo) const override { lo.pow2 = setup_.runtime; }

  void writeFiles(Translation& tr, const codegen::Lowered&) override { tr.put("_pow2_table.csv", table_); }

 private:
  Pow2Setup setup_;
  std::optional<std::map<std::string, quant::TensorStats>> stats_;  // the calibration statistics
  std::optional<quant::InputMeans> means_;                          // --bias-correction: the float model's input means
  quant::BiasAbsorption absorbed_;                                   // --absorb-bias: what moved
  std::optional<quant::AdaRoundResult> ada_;                        // --adaround: the weights' codes
  std::string table_;                                               // PREFIX_pow2_table.csv
};

}  // namespace

std::unique_ptr<Strategy> makeInt8Pow2() { return std::make_unique<Int8Pow2>(); }

}  // namespace npuc::numerics
