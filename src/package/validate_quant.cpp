// The reader's checks of the conversion layer kinds of int8 packages (validate.hpp): quantize, dequantize (their
// int8-pow2 forms: validate_pow2.cpp).
#include "package/validate.hpp"

#include <cmath>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct QuantChecks : LayerCheck {
  void convert() const {
    const bool q = d.kind == LayerKind::kQuantize;
    if (!numericsTraits(p.numerics).affine_codes) bad("{}: {} layers belong to int8-affine packages", what, layerKindName(d.kind));
    if (d.n_in != 1) bad("{}: {} inputs (the int8-affine form takes 1)", what, d.n_in);
    typeIs(x, q ? ElemType::kF32 : ElemType::kI8, "x");
    typeIs(y, q ? ElemType::kI8 : ElemType::kF32, "y");
    if (dimsOf(x) != dimsOf(y)) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    const float scale = paramFloat(w[0]);
    const int32_t zp = static_cast<int32_t>(w[1]);
    if (!(scale > 0) || !std::isfinite(scale)) bad("{}: scale {} is not a finite positive number", what, scale);
    if (zp < -128 || zp > 127) bad("{}: zero point {} is outside int8", what, zp);
    const NumericsTraits& nt = numericsTraits(p.numerics);
    if (nt.radix_codes) {  // float = fixed / 2^radix: zero point 0, scale a power of two
      int e = 0;
      if (zp != 0 || std::frexp(scale, &e) != 0.5f)
        bad("{}: int8-radix tensors are symmetric at a power-of-two scale, got scale {} and zero point {}", what, scale, zp);
    } else if (nt.symmetric_codes && zp != 0) {
      bad("{}: {} tensors are symmetric (zero point 0), got zero point {}", what, numericsName(p.numerics), zp);
    }
  }
};

}  // namespace

const KindCheck kind_checks::kQuantize = [](const LayerCheck& c) { QuantChecks{c}.convert(); };
const KindCheck kind_checks::kDequantize = [](const LayerCheck& c) { QuantChecks{c}.convert(); };

}  // namespace npuc::package
