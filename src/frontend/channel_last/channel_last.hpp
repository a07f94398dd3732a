// Channel-last frameworks (TensorFlow, TensorFlow Lite) into the channels-first IR without a Transpose pair around
// every layer. A Builder maps the framework's tensors by name to IR values and remembers, for each, which form the IR
// holds: the framework's own (N, spatial…, C for a feature map) or channels-first (N, C, spatial…, what npuc's
// layers take). A layer asks for its operands in the form it needs; a Transpose is added only when the form differs,
// and once per tensor (cached). So a chain of convolutions runs channels-first from the first Transpose after the
// input to the last one before the output, and only layout-sensitive ops (a Reshape of a feature map, say) go back
// to the framework's form. Constants take the same path: their Transposes fold at resolve.
//
// Shared by src/frontend/tf and src/frontend/tflite (docs/frontends.md, "Layout").
#pragma once

#include "ir/graph.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::channel_last {

/// How the IR holds a framework tensor.
enum class Form : uint8_t {
  kFramework,      ///< as the framework holds it
  kChannelsFirst,  ///< N, C, spatial… (rank >= 3 only): framework axis r-1 is IR axis 1
};

/// Transpose perm from the framework's form of a rank-r tensor to channels-first: {0, r-1, 1, …, r-2}.
std::vector<int64_t> toChannelsFirst(size_t rank);
/// Transpose perm from channels-first back to the framework's form: {0, 2, …, r-1, 1}.
std::vector<int64_t> toFramework(size_t rank);
/// Framework axis `axis` (negative counts from the end) of a rank-r tensor held channels-first: its IR axis.
/// Throws kInvalidInput naming `what` when the axis is out of range.
int64_t channelsFirstAxis(int64_t axis, size_t rank, const std::string& what = "axis");
/// Sizes beyond this are no real network's; element counts from untrusted files are checked against it.
constexpr int64_t kMaxElements = int64_t{1} << 40;
/// The product of dims, saturated just above kMaxElements (never computed in overflowing arithmetic); -1 when a dim
/// is negative.
int64_t product(const Shape& s);
/// A shape, and a host tensor's elements, permuted: out axis i = in axis perm[i] (constants' layouts at import).
Shape permuted(const Shape& s, const std::vector<int64_t>& perm);
Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm);

/// A framework shape in channels-first order, and back.
Shape channelsFirstShape(const Shape& framework);
Shape frameworkShape(const Shape& channels_first);

class Builder {
 public:
  explicit Builder(ir::Graph& g) : g_(g) {}
  ir::Graph& graph() { return g_; }

  // --- building the IR ---
  /// Adds a node and infers its output types at once (later mappings read shapes).
  ir::Node& node(const std::string& op, const std::string& name, std::vector<ir::ValueId> ins,
                 std::vector<ir::ValueId> outs, std::map<std::string, ir::Attr> attrs = {});
  /// A new value named after `base` (made unique).
  ir::ValueId value(const std::string& base);
  ir::ValueId constant(const std::string& base, Tensor t);
  /// An int64 vector constant (shapes, axes, pads).
  ir::ValueId ints(const std::string& base, const std::vector<int64_t>& v);
  /// The static shape of an IR value; throws kInvalidInput naming it when inference could not give one.
  const Shape& irShape(ir::ValueId v) const;

  // --- framework tensors ---
  /// From now on the framework tensor `name` is `v`, held in form `f`.
  void bind(const std::string& name, ir::ValueId v, Form f);
  bool bound(const std::string& name) const { return held_.count(name) != 0; }
  Form form(const std::string& name) const { return entry(name).form; }
  /// The tensor's shape as the framework sees it, whatever form the IR holds.
  Shape shape(const std::string& name) const;
  size_t rank(const std::string& name) const { return shape(name).size(); }
  /// The tensor in the framework's form (one Transpose added, once, when it is held channels-first; a Reshape where
  /// only axes of size 1 move).
  ir::ValueId framework(const std::string& name);
  /// The tensor channels-first (one Transpose added, once, when it is held in the framework's form); rank >= 3.
  ir::ValueId channelsFirst(const std::string& name);
  /// The tensor as an operand of an element-wise op whose result is channels-first of framework rank `rank`: its
  /// framework shape broadcasts against the result's (numpy rules), so it is raised to `rank` with leading 1s and
  /// transposed like the result. A constant's Reshape and Transpose fold at resolve.
  ir::ValueId alignedTo(const std::string& name, size_t rank);

  /// The operands of an element-wise op over framework tensors, and the form its result takes: channels-first when
  /// an operand of the result's rank (>= 3) is held channels-first (the others aligned to it), else every operand in
  /// the framework's form.
  struct Operands {
    std::vector<ir::ValueId> values;
    Form form = Form::kFramework;
  };
  Operands elementwise(const std::vector<std::string>& names);

  /// A graph input of framework shape `s`, named `name`, bound in the framework's form.
  ir::ValueId input(const std::string& name, const Shape& s, DType dtype);
  /// Makes the tensor a graph output in the framework's form, named `name` (the value held channels-first is renamed
  /// `name/channels_first` and a Transpose writes `name`).
  void output(const std::string& name);

 private:
  struct Held {
    ir::ValueId value = ir::kNoValue;
    Form form = Form::kFramework;
    ir::ValueId other = ir::kNoValue;  // the other form, once a Transpose made it
  };
  const Held& entry(const std::string& name) const;
  Held& entry(const std::string& name);
  ir::ValueId transposed(Held& h, const std::string& name, Form to);

  ir::Graph& g_;
  std::map<std::string, Held> held_;
};

}  // namespace npuc::channel_last
