// int8-radix (Kneron; docs/numerics.md): int8-affine restricted to symmetric codes at power-of-two scales (float =
// fixed / 2^radix). A model quantized elsewhere must already be in that form; beside the package,
// PREFIX_radix_scale_info.txt gives each output's radix and scale as Kneron's tools do.
#include "driver/numerics/int8_affine.hpp"

#include "codegen/lower.hpp"
#include "driver/translation.hpp"
#include "ir/graph.hpp"
#include "package/package.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace npuc::numerics {

namespace {

class Int8Radix final : public Int8Affine {
 public:
  Int8Radix() : Int8Affine(Numerics::kInt8Radix) {}

  void writeFiles(Translation& tr, const codegen::Lowered& low) override { tr.put("_radix_scale_info.txt", radixScaleInfo(low.pkg)); }

 protected:
  const char* scheme() const override { return "radix"; }

  /// Every QuantizeLinear must already be in radix form (zero point 0, a power-of-two scale); otherwise an error
  /// naming the tensor and how to get that form.
  void checkQuantized(const ir::Graph& g, const std::string& file) const override {
    for (ir::NodeId id : g.order()) {
      const ir::Node& n = g.node(id);
      if (n.op != "QuantizeLinear" || !n.domain.empty()) continue;
      const Tensor* sc = n.hasInput(1) ? ir::constantInput(g, n, 1, DType::kF32) : nullptr;
      bool ok = sc && sc->numel() == 1;
      if (ok) {
        int e = 0;
        ok = std::frexp(sc->data<float>()[0], &e) == 0.5f;
      }
      ok = ok && zeroPointIsZero(g, n);
      if (!ok)
        fail(ErrorCode::kUnsupported, "{}: tensor '{}' is quantized with a scale or zero point that is not in int8-radix form (zero "
             "point 0, a power-of-two scale): quantize the float model with `npuc quantize --scheme radix`, or translate it with --calib",
             file, g.value(n.inputs[0]).name);
    }
  }

 private:
  /// PREFIX_radix_scale_info.txt (Kneron's per-output radix and scale: float = fixed / scale / 2^radix): "<output>
  /// <radix> <scale>" per output, from the record of the int8 codes the output dequantizes.
  static std::string radixScaleInfo(const package::Package& p) {
    std::string s = "# output radix scale (float = fixed / scale / 2^radix; npuc int8-radix)\n";
    for (const package::IoTensor& out : p.outputs) {
      const package::LayerInfo* rec = nullptr;
      for (const package::LayerInfo& l : p.layers)
        if (l.scale > 0 && l.float_value == out.name) rec = &l;
      if (!rec) {
        s += fmt::format("{} float\n", out.name);
        continue;
      }
      int e = 0;
      std::frexp(rec->scale, &e);
      s += fmt::format("{} {} 1\n", out.name, 1 - e);
    }
    return s;
  }
};

}  // namespace

std::unique_ptr<Strategy> makeInt8Radix() { return std::make_unique<Int8Radix>(); }

}  // namespace npuc::numerics
