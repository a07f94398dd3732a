// The npuc IR: a Graph owns Nodes and Values, each with a stable integer id.
//
// Values are typed edges (element type + static shape; -1 marks a dimension not yet known). A Value is
// produced by exactly one node output, or is a graph input, or holds a constant (an immutable shared Tensor).
// Nodes keep the op name of the ONNX operator set they came from (or an npuc fused op in domain "ai.npuc"),
// and their attributes in a sorted map, so that iteration order never depends on pointers.
// Passes change the graph through the Rewriter (rewriter.hpp); verify() checks every invariant.
#pragma once

#include "support/error.hpp"
#include "support/tensor.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace npuc::ir {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;
inline constexpr NodeId kNoNode = -1;

struct Type {
  DType dtype = DType::kUndefined;
  Shape shape;              // -1: unknown dimension
  bool rank_known = false;  // false: nothing is known about the shape

  bool isStatic() const { return rank_known && shapeIsStatic(shape); }
  std::string str() const;  // "float32[1x3x224x224]"
  bool operator==(const Type&) const = default;
};

inline Type makeType(DType t, Shape s) { return Type{t, std::move(s), true}; }

class Graph;
/// A subgraph held by an attribute (an If's branch, a Loop's or Scan's body): immutable and shared by the copies of
/// its node (a pass that changes one builds a new graph). See Graph::num_captures for how it reads outer values.
using GraphPtr = std::shared_ptr<const Graph>;
/// How deep subgraphs may nest (a model is untrusted input: deeper nesting is refused at import, by the verifier).
inline constexpr int kMaxSubgraphDepth = 16;

class Attr {
 public:
  enum class Kind { kInt, kFloat, kString, kTensor, kInts, kFloats, kStrings, kGraph };
  using Storage = std::variant<int64_t, float, std::string, Tensor, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, GraphPtr>;
  Attr() = default;
  template <typename T> Attr(T v) : v_(std::move(v)) {}
  Kind kind() const { return static_cast<Kind>(v_.index()); }
  const Storage& storage() const { return v_; }
  template <typename T> const T* get() const { return std::get_if<T>(&v_); }

 private:
  Storage v_;
};

const char* attrKindName(Attr::Kind k);

/// int8 codes standing for a float tensor (int8-affine): real = (q - zero_point) * scale; `of` names the float tensor.
/// Set by the quantizer on each QuantizeLinear output; kept through the integer fusions (they write the same
/// value); recorded in packages for traces and comparisons.
struct Quantization {
  double scale = 0;
  int32_t zero_point = 0;
  std::string of;
};

/// How a value's dimensions read as channel / height / width, for reports (the summary, the data lists): the ONNX
/// convention ([N, C, H, W], [N, C, L], [N, C]), a channel-last model's [N, H, W, C] (Appendix B of the DRP-AI
/// manual), or a pre/post-processing order without N.
enum class Layout : uint8_t { kModel, kNhwc, kHwc, kChw, kFlat };
struct ChwDims {
  int64_t c = 1, h = 1, w = 1;
};
/// kModel: c = dim 1 (rank >= 2; rank 1: dim 0), h = dim rank-2 (rank >= 4), w = dim rank-1 (rank >= 3);
/// kNhwc [N, H, W, C], kHwc [H, W, C], kChw [C, H, W]; kFlat: every element a channel. Missing dimensions are 1.
ChwDims chwDims(const Shape& s, Layout l);

struct Value {
  ValueId id = kNoValue;
  std::string name;
  Type type;
  NodeId producer = kNoNode;  // kNoNode for graph inputs and constants
  int producer_output = 0;
  std::optional<Tensor> constant;  // set for initializers and folded constants
  /// Stored exactly as typed (pre/post-processing values: uint8 frames, float16 images, float32 results). Other
  /// float values are stored in the target's float numerics when lowered (float16 for an fp16 target).
  bool exact_type = false;
  std::optional<Quantization> quant;
  Layout layout = Layout::kModel;
  /// A dynamic tensor (docs/package-format.md): the data decide its dims; `type` gives their capacities (set by the
  /// lowering's own copy of the graph, codegen::withCapacities).
  bool bounded = false;

  bool isConstant() const { return constant.has_value(); }
};

struct Node {
  NodeId id = kNoNode;
  std::string name;
  std::string op;
  std::string domain;  // "" = ai.onnx
  std::vector<ValueId> inputs;  // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;
  std::map<std::string, Attr> attrs;
  /// Provenance, kept by the optimizer and never exported to ONNX: the ops and the names of the source nodes that
  /// were folded into this one (a BatchNormalization into a Conv, an activation, a pattern's nodes), in order.
  std::vector<std::string> merged_ops, merged_nodes;

  bool hasAttr(const std::string& n) const { return attrs.count(n) != 0; }
  int64_t attrInt(const std::string& n, int64_t def) const;
  float attrFloat(const std::string& n, float def) const;
  std::string attrString(const std::string& n, const std::string& def) const;
  std::vector<int64_t> attrInts(const std::string& n, std::vector<int64_t> def = {}) const;
  std::vector<float> attrFloats(const std::string& n, std::vector<float> def = {}) const;
  const Tensor* attrTensor(const std::string& n) const;
  /// A subgraph attribute, or nullptr when the node has none of that name.
  const Graph* attrGraph(const std::string& n) const;
  /// "node 'conv1' (Conv)" for messages.
  std::string label() const;
  /// Number of inputs actually present (trailing omitted inputs excluded).
  int numInputs() const;
  bool hasInput(int i) const { return i < static_cast<int>(inputs.size()) && inputs[static_cast<size_t>(i)] != kNoValue; }
};

/// The readers of each value, (node id, input index) in node order, indexed by value id: built in one pass over
/// the nodes, looked up in constant time. The interface is the part of std::map's the passes use; a value that
/// nobody reads is absent (find gives end(), count 0) until operator[] gives it an (empty) list.
class UseMap {
 public:
  using List = std::vector<std::pair<NodeId, int>>;
  using value_type = std::pair<const ValueId, List>;
  using iterator = value_type*;
  using const_iterator = const value_type*;

  const_iterator find(ValueId v) const { return present(v) ? &slots_[static_cast<size_t>(v)] : end(); }
  iterator find(ValueId v) { return present(v) ? &slots_[static_cast<size_t>(v)] : end(); }
  const_iterator end() const { return nullptr; }
  iterator end() { return nullptr; }
  size_t count(ValueId v) const { return present(v) ? 1 : 0; }
  const List& at(ValueId v) const {
    if (!present(v)) throw std::out_of_range("UseMap::at: value has no readers");
    return slots_[static_cast<size_t>(v)].second;
  }
  List& operator[](ValueId v) {
    grow(v);
    has_[static_cast<size_t>(v)] = 1;
    return slots_[static_cast<size_t>(v)].second;
  }

 private:
  bool present(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < has_.size() && has_[static_cast<size_t>(v)]; }
  void grow(ValueId v) {
    if (v < 0) throw std::out_of_range("UseMap: negative value id");
    while (slots_.size() <= static_cast<size_t>(v)) slots_.emplace_back(static_cast<ValueId>(slots_.size()), List{});
    has_.resize(slots_.size(), 0);
  }
  std::deque<value_type> slots_;  // slot i holds value i (a deque: slots never move, iterators stay valid)
  std::vector<char> has_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  /// Deep copy (constant buffers are shared, not copied).
  std::unique_ptr<Graph> clone() const;

  // --- values ---
  Value& addValue(std::string name, Type type = {});
  Value& addConstant(std::string name, Tensor t);
  Value& value(ValueId id);
  const Value& value(ValueId id) const;
  bool hasValue(ValueId id) const;
  /// Values by id, in id order (removed values skipped).
  std::vector<ValueId> valueIds() const;
  /// A name not used by any value yet, derived from `base`.
  std::string uniqueValueName(const std::string& base);
  /// Makes the nodes' names unique (what the layers of reports, estimates and options are found by): in program
  /// order, a name an earlier node holds becomes "name/2", "name/3", … (the first keeps it), an empty one "op".
  /// Bodies of control nodes keep theirs. Returns how many nodes were renamed. The importers call it.
  int uniquifyNodeNames();

  // --- nodes ---
  /// Appends a node at the end of the order and sets the producer of its outputs.
  Node& addNode(std::string op, std::string name, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                std::string domain = "");
  Node& node(NodeId id);
  const Node& node(NodeId id) const;
  bool hasNode(NodeId id) const;
  void removeNode(NodeId id);  // outputs keep existing; their producer is cleared
  void removeValue(ValueId id);
  /// Gives a value a new name (must be unused).
  void renameValue(ValueId id, const std::string& name);
  /// Nodes in execution (topological) order.
  const std::vector<NodeId>& order() const { return order_; }
  int numNodes() const { return static_cast<int>(order_.size()); }
  /// Re-sorts order() topologically, stable with respect to the current order. Throws on cycles.
  void topoSort();

  // --- interface ---
  std::vector<ValueId>& inputs() { return inputs_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  std::vector<ValueId>& outputs() { return outputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::optional<ValueId> findValue(const std::string& name) const;

  /// Consumers of every value: (node id, input index), in node order.
  UseMap uses() const;

  // --- subgraphs ---
  /// A subgraph's last `num_captures` inputs stand for values of the enclosing graph that it reads (ONNX's
  /// outer-scope names, made explicit at import): the node holding the subgraph passes those values as its trailing
  /// inputs, after its own — for each of its subgraph attributes in name order, that subgraph's captures in order
  /// (ir::captureInputs). So passes see them as ordinary inputs: DCE keeps them, renames and rewiring follow them, and
  /// a subgraph never refers to an outer value by name. 0 in a top-level graph.
  int num_captures = 0;
  /// A subgraph typed for what its node passes it (passes/specialize_bodies.cpp): the signature of those types, so
  /// the pass does it once ("" when the body is as imported).
  std::string specialized_for;

  // --- model metadata ---
  int opset = 13;        // ai.onnx opset
  std::string name;      // graph name
  std::string producer;  // producer_name of the source model
  std::string source;    // file the graph came from (for messages)

 private:
  std::vector<std::unique_ptr<Node>> nodes_;   // by id; null when removed
  std::vector<std::unique_ptr<Value>> values_;  // by id; null when removed
  std::vector<NodeId> order_;
  std::vector<ValueId> inputs_, outputs_;
  std::unordered_map<std::string, ValueId> value_names_;  // looked up only, never walked
};

/// The ONNX ops a node computes, for reports: "Conv+BatchNormalization+Relu" (its "fused" attribute or its op,
/// with the folded ops of merged_ops after the first).
std::string opexp(const Node& n);
/// The source nodes a node stands for: its own name, then merged_nodes.
std::vector<std::string> sourceNodes(const Node& n);

/// The subgraph attributes of a node, in name order (empty for most nodes).
std::vector<std::pair<std::string, GraphPtr>> subgraphs(const Node& n);
/// How many of a node's trailing inputs are its subgraphs' captures (the sum of their num_captures).
int numCaptureInputs(const Node& n);
/// The node's own inputs (without the captures): inputs.size() - numCaptureInputs(n).
int numOwnInputs(const Node& n);
/// The positions in n.inputs of subgraph attribute `attr`'s captures, in the subgraph's order.
std::vector<int> captureInputs(const Node& n, const std::string& attr);
/// The formal (non-capture) inputs of a subgraph.
inline int numFormalInputs(const Graph& body) { return static_cast<int>(body.inputs().size()) - body.num_captures; }

/// Input i of `n` when it is a constant of element type `dtype`; nullptr when it is omitted, computed or of another type.
const Tensor* constantInput(const Graph& g, const Node& n, int i, DType dtype);

/// A standard-domain Transpose whose perm attribute is `perm`.
bool isTransposeBy(const Node& n, const std::vector<int64_t>& perm);
/// Every reader of `v` (at least one) is a Transpose by `perm`.
bool onlyFeedsTransposeBy(const Graph& g, ValueId v, const std::vector<int64_t>& perm);
/// A channel-last export's boundaries (Appendix B of the DRP-AI manual): a rank-4 model input read only by
/// Transpose(0, 3, 1, 2), and a rank-4 model output written by Transpose(0, 2, 3, 1), are [N, H, W, C]. Marks them
/// Layout::kNhwc where their layout is still kModel, so the data lists, the summary and the address map report
/// channel / width / height as the tensor holds them.
void markChannelLastBoundaries(Graph& g);

/// Checks every invariant and throws naming the node and the rule broken. `code` is kInvalidInput when
/// checking an imported model, kInternal when checking after a pass (a broken invariant is then a bug).
void verify(const Graph& g, ErrorCode code = ErrorCode::kInternal);

/// Text dump, one node a line, for --dump and debugging.
std::string dump(const Graph& g);

}  // namespace npuc::ir
