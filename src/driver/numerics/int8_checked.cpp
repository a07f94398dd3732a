// int8 (targets whose integer profile npuc does not implement yet): the model is checked and its time estimated on
// the target; no package is written.
#include "driver/numerics/strategy.hpp"

#include "driver/translation.hpp"

#include <fmt/format.h>

namespace npuc::numerics {

namespace {
class Int8Checked final : public Strategy {
 public:
  Int8Checked() : Strategy(Numerics::kInt8) {}
  bool writesPackage(const Translation&) const override { return false; }
  std::string whyNoPackage(const Translation& tr) const override {
    return fmt::format("target '{}' declares {} numerics: no object package is written until quantization is implemented "
                       "(reports only)", tr.t.name, numericsName(tr.t.numerics));
  }
};
}  // namespace

std::unique_ptr<Strategy> makeInt8Checked() { return std::make_unique<Int8Checked>(); }

}  // namespace npuc::numerics
