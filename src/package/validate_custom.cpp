// The reader's check of the custom layer kind (validate.hpp); its manifest record is checked with the program
// (validate.cpp's customLayer).
#include "package/validate.hpp"

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct CustomChecks : LayerCheck {
  void custom() const {
    // Any package type in and out: what the op computes is its plugin's, checked when the runtime loads it (the
    // plugin's infer callback must give the output this reference holds). No fused activation.
    if (d.act != Act::kNone || d.act_a != 0 || d.act_b != 0) bad("{}: custom layers have no activation", what);
  }
};

}  // namespace

const KindCheck kind_checks::kCustom = [](const LayerCheck& c) { CustomChecks{c}.custom(); };

}  // namespace npuc::package
