// int8-affine (docs/numerics.md): int8 tensors between quantize / dequantize layers, float32 elsewhere. Its
// restrictions (int8-radix, int8-symmetric) are the same strategy with another activation scheme, a form check of a
// model quantized elsewhere, and files of their own.
#pragma once

#include "driver/numerics/strategy.hpp"

namespace npuc {

struct QuantizeOptions;
namespace ir {
struct Node;
}

namespace numerics {

/// A model quantized elsewhere (QuantizeLinear / DequantizeLinear pairs, e.g. `npuc quantize`) keeps its own scales:
/// its convolutions become integer layers before the optimizer folds the weights' DequantizeLinear (so the import
/// does not resolve it), and nothing is calibrated. A float model is quantized as QDQ on the optimized model with the
/// calibration samples (required), its quantization table written beside the package.
class Int8Affine : public Strategy {
 public:
  Int8Affine() : Int8Affine(Numerics::kInt8Affine) {}

  bool resolveAtImport() const override { return false; }
  void prepareImported(Translation& tr, Model& m) override;
  std::vector<std::vector<std::string>> afterOptimize(const Translation&, const Model& body) const override;
  void calibrate(Translation& tr, Model& body) override;

 protected:
  explicit Int8Affine(Numerics id) : Strategy(id) {}
  /// The activation scheme of `npuc quantize` (QuantizeOptions::scheme).
  virtual const char* scheme() const { return "affine"; }
  /// A model quantized elsewhere: its quantization must be one the family's packages hold (an error names the tensor).
  virtual void checkQuantized(const ir::Graph&, const std::string& /*file*/) const {}
  /// Whether a QuantizeLinear's zero point is 0 (absent, or constant zeros): the symmetric families' codes.
  static bool zeroPointIsZero(const ir::Graph& g, const ir::Node& quantize);

 private:
  void saveStandardQdq(Translation& tr, const QuantizeOptions& qo) const;

  bool prequantized_ = false;  // the model holds its own quantization
};

}  // namespace numerics
}  // namespace npuc
