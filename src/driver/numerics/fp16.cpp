// fp16: float16 storage, float32 accumulation (docs/numerics.md). With --calib, each Conv / Gemm bias is corrected
// for the rounding of its weights to float16, measured on the samples (docs/calibration.md); the model the check,
// the estimate and -SaveOptOnnx see stays the float model, only the package's biases change.
#include "driver/numerics/strategy.hpp"

#include "driver/translation.hpp"
#include "quant/bias_correction.hpp"

#include <optional>

namespace npuc::numerics {

namespace {
class Fp16 final : public Strategy {
 public:
  Fp16() : Strategy(Numerics::kFp16) {}

  void calibrate(Translation& tr, Model& body) override {
    if (tr.o.calibration.empty()) return;
    auto samples = calibrationSamples(graphOf(body), tr.o.calibration);
    means_ = quant::measureInputMeans(graphOf(body), samples, calibrationThreads(tr.o.threads));
  }

  void beforeLowering(Translation& tr) override {
    if (!means_) return;
    quant::BiasCorrection bc = quant::correctBias(mutableGraphOf(*tr.model), *means_, quant::roundToHalf);
    tr.res.calibration_samples = means_->samples;
    tr.res.bias_corrected_layers = bc.layers;
  }

 private:
  std::optional<quant::InputMeans> means_;  // the input means of every Conv / Gemm, from the samples
};
}  // namespace

std::unique_ptr<Strategy> makeFp16() { return std::make_unique<Fp16>(); }

}  // namespace npuc::numerics
