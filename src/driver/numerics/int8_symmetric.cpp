// int8-symmetric (docs/numerics.md, "Adding a numerics family"): int8-affine with every activation symmetric — zero
// point 0, scale max(|lo|, |hi|) / 127 — as many NPUs without zero-point hardware store them. The packages are
// int8-affine's (the same layers and kernels); NumericsTraits' symmetric_codes has the reader refuse a code record
// with a zero point. A model quantized elsewhere must already be symmetric.
#include "driver/numerics/int8_affine.hpp"

#include "ir/graph.hpp"
#include "support/error.hpp"

namespace npuc::numerics {

namespace {

class Int8Symmetric final : public Int8Affine {
 public:
  Int8Symmetric() : Int8Affine(Numerics::kInt8Symmetric) {}

 protected:
  const char* scheme() const override { return "symmetric"; }

  void checkQuantized(const ir::Graph& g, const std::string& file) const override {
    for (ir::NodeId id : g.order()) {
      const ir::Node& n = g.node(id);
      if (n.op != "QuantizeLinear" || !n.domain.empty()) continue;
      if (!zeroPointIsZero(g, n))
        fail(ErrorCode::kUnsupported, "{}: tensor '{}' is quantized with a zero point other than 0, which int8-symmetric packages "
             "do not hold: quantize the float model with `npuc quantize --scheme symmetric`, or translate it with --calib",
             file, g.value(n.inputs[0]).name);
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> makeInt8Symmetric() { return std::make_unique<Int8Symmetric>(); }

}  // namespace npuc::numerics
