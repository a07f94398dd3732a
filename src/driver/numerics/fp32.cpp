// fp32: float32 weights and activations, the reference engine's bits. Nothing to calibrate or rewrite: every hook is
// the base's.
#include "driver/numerics/strategy.hpp"

namespace npuc::numerics {

namespace {
class Fp32 final : public Strategy {
 public:
  Fp32() : Strategy(Numerics::kFp32) {}
  std::string calibrationUnused() const override { return "weights are stored exactly"; }
};
}  // namespace

std::unique_ptr<Strategy> makeFp32() { return std::make_unique<Fp32>(); }

}  // namespace npuc::numerics
