// The reader's per-kind checks (internal to the package library): each layer kind of layer_kinds.def has its shape
// and parameter check, defined beside the other kinds of its family in validate_<family>.cpp (mirroring
// codegen/lower_<family>.cpp) and found through a table indexed by the kind (validate.cpp). validate.cpp checks
// everything that does not depend on the kind first: the references lie in the spaces they may use, the input count
// and the parameter block's size follow layer_kinds.def.
#pragma once

#include "kernels/pow2.hpp"
#include "package/package.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace npuc::package {

struct Checker;  // validate.cpp: the checks of the whole package

std::vector<int64_t> dimsOf(const TensorRef& r);
/// The element spaces a layer may write (data, data_out, work) and read (those, data_in and the weights).
bool writableSpace(const Element& e);
bool readableSpace(const Element& e);
std::string dimsStr(const TensorRef& r);  // "1x3x224x224", or "scalar"

/// One descriptor under check: what a kind's check reads (the package, the descriptor and its parameter words) and
/// the helpers it checks with. Messages start with `what` ("vector descriptor 3 (seq 7), conv").
struct LayerCheck {
  const Checker& checker;
  const Package& p;
  const std::string& where;  // the package, for messages
  const Descriptor& d;
  const std::string& what;
  ElemType ft;  // the element type of the package's float layers
  bool pow2;    // an int8-pow2 form whose geometry is its float form's (conv, pooling): types and table checked already
  const TensorRef& x;  // input 0
  const TensorRef& y;  // output 0
  const std::vector<uint32_t>& w;  // the parameter words (their count checked against layer_kinds.def)

  template <typename... Args>
  [[noreturn]] void bad(fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kInvalidInput, "{}: {}", where, fmt::format(f, std::forward<Args>(a)...));
  }
  /// Parameter word i as a two's-complement value.
  int64_t si(size_t i) const { return static_cast<int64_t>(static_cast<int32_t>(w[i])); }
  void isFloat(const TensorRef& r, const char* name) const;  // of the package's float type
  void typeIs(const TensorRef& r, ElemType t, const char* name) const;
  void rankIs(const TensorRef& r, int k, const char* name) const;
  /// x and y of the package's float type and one shape (element-wise kinds).
  void floatSameShape() const;
  /// Input i, if there is one: a float32 bias [n] in the weight space.
  void bias(int i, uint32_t n) const;
  /// A pooling / convolution window along one axis: in, out, kernel, stride, dilation, pad begin.
  void window(int64_t in, int64_t out, int64_t k, int64_t s, int64_t dl, int64_t pb, const char* axis) const;
  /// The element space holding [addr, addr + bytes), or null.
  const Element* spaceOf(uint64_t addr, uint64_t bytes) const;
  /// A reference that must lie in the weight space, inside the loaded weight image.
  void weightRef(const TensorRef& r, const std::string& what) const;
  /// Word i of an int32 reference in the weight space (checked by weightRef first).
  int32_t weightWord(const TensorRef& r, int64_t i) const;
  /// An int8-affine layer's requantization table `tab` (docs/numerics.md): int32 [words] in the weight space whose
  /// first `codes` words are int8 (zero points, then the output clamp [lo, hi], not empty); its words.
  std::vector<int32_t> int8Table(const TensorRef& tab, int64_t words, int codes, const std::string& what) const;
};

/// The int8-pow2 form of a descriptor (validate_pow2.cpp), its table recorded in `tables` by seq: false when the
/// descriptor has none, or when the float form's geometry check (kind_checks, LayerCheck::pow2) must follow.
bool checkPow2Form(const LayerCheck& c, std::map<uint32_t, kernels::pow2::Table>& tables);

/// A kind's check; it throws (LayerCheck::bad) at the first rule the descriptor breaks.
using KindCheck = void (*)(const LayerCheck&);

/// The check of every kind, named as its enumerator (kind_checks::kConv) and defined in its family's file. A kind of
/// layer_kinds.def without one fails to link (the table of validate.cpp takes every kind's address), as a switch
/// without its case fails to build.
namespace kind_checks {
#define NPUC_LAYER_KIND(E, ...) extern const KindCheck E;
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
}  // namespace kind_checks

}  // namespace npuc::package
