// The Caffe importer: its state while it maps a network (blobs by name, the graph being built, the trained blobs) and
// the helpers every layer's mapping uses. Layers are read in file order, as Caffe runs them: a bottom names the blob
// the latest earlier layer wrote under that name (so in-place layers, top == bottom, simply rebind the name), which
// also rules out cycles. Each layer becomes ai.onnx nodes whose semantics equal Caffe's; shapes are inferred node by
// node as the graph grows, because several mappings (Flatten, Reshape, Scale, InnerProduct) need their input's shape.
// Internal to src/frontend/caffe: import.cpp reads the files, layers.cpp maps each layer type.
#pragma once

#include "caffe.pb.h"

#include "frontend/caffe/caffe_io.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "ir/graph.hpp"
#include "ops/registry.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace npuc::caffe_io {

/// A .prototxt is a description, not data: anything larger is not one.
constexpr uint64_t kMaxPrototxtBytes = 64ull << 20;
/// Sizes beyond this are no real network's and would overflow products of dims.
constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 40;

/// The product of dims [from, to), saturated just above kMaxElements (dims come from untrusted files: a product that
/// large is refused where it is used, never computed in overflowing arithmetic).
inline int64_t product(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, s.size());
  from = std::min(from, to);
  int64_t p = 1;
  for (auto it = s.begin() + static_cast<long>(from); it != s.begin() + static_cast<long>(to); ++it) {
    if (*it < 0) return -1;
    if (__builtin_mul_overflow(p, *it, &p) || p > kMaxElements) return kMaxElements + 1;
  }
  return p;
}

class Importer {
 public:
  Importer(const caffe::NetParameter& net, const caffe::NetParameter& weights, std::string weights_name,
           const onnx_io::ImportOptions& opts)
      : net_(net), weights_name_(std::move(weights_name)), opts_(opts) {
    // Caffe copies trained blobs by layer name; a later layer of the same name overwrites an earlier one.
    for (const auto& l : weights.layer())
      if (l.blobs_size() > 0) blobs_[l.name()] = &l.blobs();
    for (const auto& l : weights.layers())
      if (l.blobs_size() > 0) blobs_[l.name()] = &l.blobs();
  }

  std::unique_ptr<ir::Graph> run() {
    g_ = std::make_unique<ir::Graph>();
    g_->opset = 13;  // Softmax along one axis, Split sizes as an input: the forms Caffe's layers map to
    g_->name = net_.name();
    g_->producer = "caffe";
    if (net_.layers_size() > 0)
      fail(ErrorCode::kUnsupported,
           "the network uses the V1 'layers' field (Caffe before 2015), which npuc does not read; upgrade it with "
           "Caffe's upgrade_net_proto_text tool (its 'layer' entries are read)");
    netInputs();
    std::set<std::string> names;
    for (int i = 0; i < net_.layer_size(); ++i) {
      const caffe::LayerParameter& l = net_.layer(i);
      if (!inTestPhase(l)) continue;
      std::string label = fmt::format("layer '{}' ({})", l.name().empty() ? "#" + std::to_string(i) : l.name(), l.type());
      if (l.name().empty()) fail(ErrorCode::kInvalidInput, "{}: the layer has no name (weights are matched by name)", label);
      if (!names.insert(l.name()).second)
        fail(ErrorCode::kInvalidInput, "{}: a second layer of this name (weights are matched by name)", label);
      withContext(label, [&] { layer(l); });
    }
    for (auto& [name, s] : opts_.input_shapes)
      if (!fixed_.count(name)) {
        auto origin = opts_.input_shape_origin.find(name);
        std::string inputs;
        for (ir::ValueId v : g_->inputs()) inputs += (inputs.empty() ? "" : ", ") + g_->value(v).name;
        fail(ErrorCode::kInvalidArgument, "{} names '{}', which is not an input of the network (its inputs: {})",
             origin == opts_.input_shape_origin.end() ? "--input-shape" : origin->second, name,
             inputs.empty() ? "none" : inputs);
      }
    if (g_->inputs().empty()) fail(ErrorCode::kInvalidInput, "the network has no input (no Input layer, no 'input' field)");
    for (const std::string& b : available_) g_->outputs().push_back(bound_.at(b));
    if (g_->outputs().empty()) fail(ErrorCode::kInvalidInput, "the network has no output (every blob is read by a later layer)");
    g_->topoSort();
    ir::verify(*g_, ErrorCode::kInvalidInput);
    return std::move(g_);
  }

 private:
  // --- the net's phase ---
  /// Caffe's NetStateRule against the TEST state (level 0, no stages): layers of the training net are left out.
  static bool ruleMatches(const caffe::NetStateRule& r) {
    if (r.has_phase() && r.phase() != caffe::TEST) return false;
    if (r.has_min_level() && r.min_level() > 0) return false;
    if (r.has_max_level() && r.max_level() < 0) return false;
    return r.stage_size() == 0;
  }
  static bool inTestPhase(const caffe::LayerParameter& l) {
    if (l.has_phase() && l.phase() != caffe::TEST) return false;
    if (l.include_size() > 0 && std::none_of(l.include().begin(), l.include().end(), ruleMatches)) return false;
    return std::none_of(l.exclude().begin(), l.exclude().end(), ruleMatches);
  }

  // --- blobs by name ---
  ir::ValueId bottom(const caffe::LayerParameter& l, int i) {
    const std::string& b = l.bottom(i);
    auto it = bound_.find(b);
    if (it == bound_.end())
      fail(ErrorCode::kInvalidInput, "bottom '{}' is not written by any earlier layer or input (Caffe runs layers in "
                                     "file order)", b);
    auto a = std::find(available_.begin(), available_.end(), b);
    if (a != available_.end()) available_.erase(a);
    return it->second;
  }
  std::vector<ir::ValueId> bottoms(const caffe::LayerParameter& l) {
    std::vector<ir::ValueId> r;
    for (int i = 0; i < l.bottom_size(); ++i) r.push_back(bottom(l, i));
    return r;
  }
  /// A value for blob `name`. An in-place layer rebinds the name: the value it replaces is renamed after the layer
  /// that wrote it, so the blob's name always stands for its latest contents (what Caffe's net outputs hold).
  /// (A network input keeps its name, which is how it is fed: the value rebinding it is named after its layer.)
  ir::ValueId bindTop(const std::string& name, ir::Type type = {}) {
    auto it = bound_.find(name);
    if (it != bound_.end()) {
      const ir::Value& old = g_->value(it->second);
      if (old.producer != ir::kNoNode && old.name == name)
        g_->renameValue(it->second, g_->uniqueValueName(name + "/" + g_->node(old.producer).name));
    }
    const std::string value_name = g_->findValue(name) ? g_->uniqueValueName(name + "/" + layer_name_) : name;
    ir::ValueId v = g_->addValue(value_name, std::move(type)).id;
    bound_[name] = v;
    if (std::find(available_.begin(), available_.end(), name) == available_.end()) available_.push_back(name);
    return v;
  }
  const Shape& shapeOf(ir::ValueId v) const {
    const ir::Value& val = g_->value(v);
    if (!val.type.isStatic()) fail(ErrorCode::kInternal, "the shape of '{}' is not known", val.name);
    return val.type.shape;
  }

  // --- nodes ---
  /// Adds a node and infers its output types at once (later mappings read them).
  ir::Node& node(const std::string& op, const std::string& name, std::vector<ir::ValueId> ins,
                 std::vector<ir::ValueId> outs, std::map<std::string, ir::Attr> attrs = {}) {
    ir::Node& n = g_->addNode(op, name, std::move(ins), std::move(outs));
    n.attrs = std::move(attrs);
    ir::NodeId id = n.id;
    ops::inferNodeTypes(*g_, id);
    return g_->node(id);
  }
  /// A value internal to one layer's mapping.
  ir::ValueId temp(const caffe::LayerParameter& l, const std::string& what) {
    return g_->addValue(g_->uniqueValueName(l.name() + "/" + what)).id;
  }
  ir::ValueId constant(const caffe::LayerParameter& l, const std::string& what, Tensor t) {
    return g_->addConstant(g_->uniqueValueName(l.name() + "/" + what), std::move(t)).id;
  }
  ir::ValueId shapeConstant(const caffe::LayerParameter& l, const Shape& s) {
    return constant(l, "shape", Tensor::fromVector<int64_t>({static_cast<int64_t>(s.size())}, s));
  }
  /// One node whose single output is the layer's single top.
  void simple(const caffe::LayerParameter& l, const std::string& op, std::vector<ir::ValueId> ins,
              std::map<std::string, ir::Attr> attrs = {}) {
    expectTops(l, 1);
    node(op, l.name(), std::move(ins), {bindTop(l.top(0))}, std::move(attrs));
  }
  /// A Reshape named after the layer, or "layer/suffix" for one of its helper steps (the layer's own node keeps the
  /// layer's name).
  void reshape(const caffe::LayerParameter& l, ir::ValueId in, const Shape& to, ir::ValueId out, const std::string& suffix = "") {
    node("Reshape", suffix.empty() ? l.name() : l.name() + "/" + suffix, {in, shapeConstant(l, to)}, {out});
  }

  // --- checks ---
  static void expectBottoms(const caffe::LayerParameter& l, int lo, int hi) {
    if (l.bottom_size() < lo || l.bottom_size() > hi)
      fail(ErrorCode::kInvalidInput, "has {} bottom(s); this layer type takes {}", l.bottom_size(),
           lo == hi ? std::to_string(lo) : hi == INT_MAX ? fmt::format("{} or more", lo) : fmt::format("{} to {}", lo, hi));
  }
  static void expectTops(const caffe::LayerParameter& l, int n) {
    if (l.top_size() != n)
      fail(ErrorCode::kInvalidInput, "has {} top(s); this layer type writes {}", l.top_size(), n);
  }
  static int64_t axisOf(int64_t axis, size_t rank, const char* field) {
    int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r) fail(ErrorCode::kInvalidInput, "{} {} is out of range for a blob of {} axes", field, axis, r);
    return axis < 0 ? axis + r : axis;
  }

  // --- weights ---
  const google::protobuf::RepeatedPtrField<caffe::BlobProto>* blobsOf(const caffe::LayerParameter& l) {
    auto it = blobs_.find(l.name());
    if (it != blobs_.end()) return it->second;
    if (l.blobs_size() > 0) return &l.blobs();  // blobs written into the description itself
    return nullptr;
  }
  /// Blob `i` of the layer as a float tensor of shape `shape`. Caffe's own check is on the element count (a file
  /// from before BlobShape holds 4-D num/channels/height/width of the same count).
  Tensor blob(const caffe::LayerParameter& l, int i, const Shape& shape, const std::string& what) {
    const auto* blobs = blobsOf(l);
    if (!blobs || blobs->size() <= i)
      fail(ErrorCode::kInvalidInput, "{}: the layer has {} trained blob(s); blob {} ({}) is missing", weights_name_,
           blobs ? blobs->size() : 0, i, what);
    const caffe::BlobProto& b = (*blobs)[i];
    const int64_t want = product(shape);
    if (want > kMaxElements)
      fail(ErrorCode::kInvalidInput, "blob {} ({}) would have the shape {}: more elements than any network holds", i,
           what, shapeStr(shape));
    const int64_t have = b.data_size() > 0 ? b.data_size() : b.double_data_size();
    if (have != want) {
      std::string dims;
      if (b.has_shape())
        for (int64_t d : b.shape().dim()) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      else
        dims = fmt::format("{}x{}x{}x{}", b.num(), b.channels(), b.height(), b.width());
      fail(ErrorCode::kInvalidInput, "{}: blob {} ({}) holds {} values (shape {}); the layer needs {} = {}", weights_name_,
           i, what, have, dims, shapeStr(shape), want);
    }
    std::vector<float> v(static_cast<size_t>(want));
    if (b.data_size() > 0)
      std::copy(b.data().begin(), b.data().end(), v.begin());
    else
      for (int64_t k = 0; k < want; ++k) v[static_cast<size_t>(k)] = static_cast<float>(b.double_data(static_cast<int>(k)));
    return Tensor::fromVector<float>(shape, v);
  }
  /// Caffe's spatial parameters of Convolution and Deconvolution, per spatial axis: the _h/_w fields (2-D only) or
  /// the repeated field with one value for every axis or one per axis.
  static std::vector<int64_t> spatial(const google::protobuf::RepeatedField<uint32_t>& rep, bool has_h, uint32_t h,
                                      bool has_w, uint32_t w, size_t n, int64_t def, const char* field) {
    if (has_h || has_w) {
      if (n != 2) fail(ErrorCode::kInvalidInput, "{}_h / {}_w are for 2-D blobs; this one has {} spatial axes", field, field, n);
      if (rep.size() > 0) fail(ErrorCode::kInvalidInput, "gives both {} and {}_h / {}_w", field, field, field);
      return {has_h ? int64_t{h} : def, has_w ? int64_t{w} : def};
    }
    if (rep.empty()) return std::vector<int64_t>(n, def);
    if (rep.size() == 1) return std::vector<int64_t>(n, rep[0]);
    if (static_cast<size_t>(rep.size()) != n)
      fail(ErrorCode::kInvalidInput, "{} has {} values; the blob has {} spatial axes", field, rep.size(), n);
    return std::vector<int64_t>(rep.begin(), rep.end());
  }

  // --- inputs ---
  Shape inputShape(const std::string& name, Shape s) {
    auto it = opts_.input_shapes.find(name);
    if (it != opts_.input_shapes.end()) {
      fixed_.insert(name);
      s = it->second;
    }
    for (int64_t d : s)
      if (d <= 0 || d > kMaxDim) fail(ErrorCode::kInvalidInput, "input '{}': dimension {} in shape {} is not a size", name, d, shapeStr(s));
    if (product(s) > kMaxElements) fail(ErrorCode::kInvalidInput, "input '{}': shape {} is too large", name, shapeStr(s));
    return s;
  }
  void addInput(const std::string& name, const Shape& s) {
    if (bound_.count(name)) fail(ErrorCode::kInvalidInput, "input '{}' is declared twice", name);
    ir::ValueId v = bindTop(name, ir::makeType(DType::kF32, inputShape(name, s)));
    g_->inputs().push_back(v);
  }
  static Shape blobShape(const caffe::BlobShape& b) { return Shape(b.dim().begin(), b.dim().end()); }
  void netInputs() {
    const int n = net_.input_size();
    if (n == 0) {
      if (net_.input_shape_size() > 0 || net_.input_dim_size() > 0)
        fail(ErrorCode::kInvalidInput, "input_shape / input_dim are given without 'input' names");
      return;
    }
    if (net_.input_shape_size() > 0) {
      if (net_.input_shape_size() != n)
        fail(ErrorCode::kInvalidInput, "{} 'input' names but {} input_shape entries", n, net_.input_shape_size());
      for (int i = 0; i < n; ++i) addInput(net_.input(i), blobShape(net_.input_shape(i)));
    } else if (net_.input_dim_size() > 0) {
      if (net_.input_dim_size() != 4 * n)
        fail(ErrorCode::kInvalidInput, "{} 'input' names need {} input_dim values (4 each), got {}", n, 4 * n,
             net_.input_dim_size());
      for (int i = 0; i < n; ++i)
        addInput(net_.input(i), Shape(net_.input_dim().begin() + 4 * i, net_.input_dim().begin() + 4 * i + 4));
    } else {
      Shape none;
      for (int i = 0; i < n; ++i)
        if (!opts_.input_shapes.count(net_.input(i)))
          fail(ErrorCode::kInvalidInput, "input '{}' has no shape (no input_shape / input_dim); give one with "
                                         "--input-shape {}=…", net_.input(i), net_.input(i));
        else
          addInput(net_.input(i), none);
    }
  }

  // --- layers ---
  void layer(const caffe::LayerParameter& l) {
    using Fn = void (Importer::*)(const caffe::LayerParameter&);
    static const std::map<std::string, Fn> table = {
        {"Input", &Importer::input},          {"Convolution", &Importer::convolution},
        {"Deconvolution", &Importer::convolution}, {"Pooling", &Importer::pooling},
        {"InnerProduct", &Importer::innerProduct}, {"ReLU", &Importer::relu},
        {"PReLU", &Importer::prelu},          {"Sigmoid", &Importer::unary},
        {"TanH", &Importer::unary},           {"Softmax", &Importer::softmax},
        {"Concat", &Importer::concat},        {"Eltwise", &Importer::eltwise},
        {"BatchNorm", &Importer::batchNorm},  {"Scale", &Importer::scale},
        {"Dropout", &Importer::identity},     {"Split", &Importer::identity},
        {"Flatten", &Importer::flatten},      {"Reshape", &Importer::reshapeLayer},
        {"Slice", &Importer::slice},          {"LRN", &Importer::lrn},
        {"Permute", &Importer::permute},      {"ArgMax", &Importer::argmax},
        {"Bias", &Importer::bias},            {"Crop", &Importer::crop},
        {"PriorBox", &Importer::priorBox},    {"DetectionOutput", &Importer::detectionOutput},
    };
    auto it = table.find(l.type());
    if (it == table.end()) {
      std::string known;
      for (const std::string& t : supportedLayers()) known += (known.empty() ? "" : ", ") + t;
      fail(ErrorCode::kUnsupported, "layer type '{}' is not one npuc imports (it imports: {})", l.type(), known);
    }
    for (int i = 0; i < l.top_size(); ++i)
      if (l.top(i).empty()) fail(ErrorCode::kInvalidInput, "top {} has no name", i);
    layer_name_ = l.name();
    (this->*(it->second))(l);
  }

  // --- the layer types (layers.cpp) ---
  void input(const caffe::LayerParameter& l);
  void convolution(const caffe::LayerParameter& l);
  void pooling(const caffe::LayerParameter& l);
  void innerProduct(const caffe::LayerParameter& l);
  void relu(const caffe::LayerParameter& l);
  void prelu(const caffe::LayerParameter& l);
  void unary(const caffe::LayerParameter& l);
  void softmax(const caffe::LayerParameter& l);
  void concat(const caffe::LayerParameter& l);
  void eltwise(const caffe::LayerParameter& l);
  void batchNorm(const caffe::LayerParameter& l);
  /// The operand of Scale and Bias: it covers axes [axis, axis + num_axes) of `x` (num_axes -1: all the rest), from
  /// the second bottom or from blob `blob_index`; shaped with a 1 for each axis after those, as ONNX broadcasting
  /// aligns trailing axes.
  ir::ValueId axesOperand(const caffe::LayerParameter& l, const Shape& xs, int32_t axis_field, int32_t num_axes,
                          bool from_bottom, int blob_index, const std::string& what);
  void scale(const caffe::LayerParameter& l);
  void bias(const caffe::LayerParameter& l);
  void crop(const caffe::LayerParameter& l);
  /// Dropout (Caffe scales while training, so it passes blobs through at test time) and Split (one blob under
  /// several names): an Identity per top, which the resolve pipeline removes.
  void identity(const caffe::LayerParameter& l);
  void flatten(const caffe::LayerParameter& l);
  void reshapeLayer(const caffe::LayerParameter& l);
  void slice(const caffe::LayerParameter& l);
  void lrn(const caffe::LayerParameter& l);
  void permute(const caffe::LayerParameter& l);
  void argmax(const caffe::LayerParameter& l);
  /// SSD (ssd.cpp). PriorBox depends on its bottoms' shapes only, which import knows: its boxes become a constant
  /// [1, 2, 4·priors] (boxes, then variances), computed as Caffe's layer does.
  void priorBox(const caffe::LayerParameter& l);
  /// ai.npuc.DetectionOutput (the engine's kernel, kernels::ssdDetectionOutput).
  void detectionOutput(const caffe::LayerParameter& l);

  const caffe::NetParameter& net_;
  std::string weights_name_;
  const onnx_io::ImportOptions& opts_;
  std::map<std::string, const google::protobuf::RepeatedPtrField<caffe::BlobProto>*> blobs_;
  std::unique_ptr<ir::Graph> g_;
  std::map<std::string, ir::ValueId> bound_;  // blob name -> its latest value
  std::vector<std::string> available_;        // blobs no later layer has read yet, in order: the net's outputs
  std::set<std::string> fixed_;               // inputs whose shape opts.input_shapes replaced
  std::string layer_name_;                    // of the layer being mapped
};

}  // namespace npuc::caffe_io
