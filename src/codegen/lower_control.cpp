// Control flow in packages: If, Loop and Scan as control layers (docs/package-format.md, "Control layers"). Each body
// is lowered right after its control layer, as a region of the same program: its nodes become ordinary layers, its
// formal inputs values the control layer writes (with its moves, or a loop's step number and condition), its captures
// the values of the enclosing graph they stand for. The bodies come typed and resolved by the specialize-bodies pass.
// The control layer's moves copy values into and out of its regions; lower.cpp keeps what a region reads alive over
// it and writes the moves' addresses once values are placed.
#include "codegen/lowerer.hpp"

#include "ops/control_flow.hpp"

#include <set>

namespace npuc::codegen::detail {

using package::ControlMove;

std::vector<int> Lowerer::lowerBody(const ir::Node& n, const std::string& attr, const std::vector<int>& formal) {
  const ir::Graph* body = n.attrGraph(attr);
  if (!body) unsupported(n, "attribute '{}' (a graph) is missing", attr);
  const int nf = ir::numFormalInputs(*body);
  if (nf != static_cast<int>(formal.size()))
    unsupported(n, "attribute '{}' takes {} inputs, {} passes it {}", attr, nf, n.op, formal.size());
  // The captures the body reads (a capture of a constant is that constant inside a specialized body).
  const ir::UseMap body_uses = body->uses();
  std::map<ir::ValueId, int> captures;
  const std::vector<int> caps = ir::captureInputs(n, attr);
  for (size_t j = 0; j < caps.size(); ++j) {
    const ir::ValueId bv = body->inputs()[static_cast<size_t>(nf) + j];
    const bool read = body_uses.count(bv) && !body_uses.at(bv).empty();
    if (read || std::find(body->outputs().begin(), body->outputs().end(), bv) != body->outputs().end())
      captures[bv] = typedIn(n, caps[j]);
  }
  Lowerer child(*body, t_, nullptr);
  child.out_space_ = 'd';
  auto share = [&] {  // the package under construction moves to the body's lowerer and back
    std::swap(vals_, child.vals_);
    std::swap(descs_, child.descs_);
    std::swap(blobs_, child.blobs_);
    std::swap(weights_, child.weights_);
    std::swap(fusions_, child.fusions_);
    std::swap(aliased_, child.aliased_);
    std::swap(pow2_slots_, child.pow2_slots_);
    std::swap(extent_of_, child.extent_of_);
    std::swap(dims_of_, child.dims_of_);
  };
  share();
  const size_t first_val = child.vals_.size(), first_desc = child.descs_.size(), first_blob = child.blobs_.size();
  std::vector<int> results;
  try {
    for (int i = 0; i < nf; ++i) child.of_[body->inputs()[static_cast<size_t>(i)]] = formal[static_cast<size_t>(i)];
    child.of_.insert(captures.begin(), captures.end());
    withContext(n.label() + ": attribute '" + attr + "'", [&] {
      child.lowerNodes();
      results = child.bodyResults(first_desc);
    });
  } catch (...) {
    share();
    throw;
  }
  // Names unique in the package: the control node's name and the attribute before the body's own.
  const std::string prefix = n.name + "/" + attr + "/";
  for (size_t i = first_desc; i < child.descs_.size(); ++i) child.descs_[i].name = prefix + child.descs_[i].name;
  for (size_t i = first_val; i < child.vals_.size(); ++i) child.vals_[i].name = prefix + child.vals_[i].name;
  for (size_t i = first_blob; i < child.blobs_.size(); ++i) child.blobs_[i].name = prefix + child.blobs_[i].name;
  share();
  return results;
}

std::vector<int> Lowerer::bodyResults(size_t first_desc) {
  std::set<int> written, taken;
  for (size_t i = first_desc; i < descs_.size(); ++i) {
    written.insert(descs_[i].out);
    written.insert(descs_[i].more_outs.begin(), descs_[i].more_outs.end());
  }
  std::vector<int> res;
  for (ir::ValueId o : g_.outputs()) {
    const ir::Value& val = g_.value(o);
    int v;
    if (auto it = of_.find(o); it != of_.end()) {
      v = it->second;
    } else if (val.isConstant()) {
      const Tensor& c = *val.constant;
      v = isFloat(c.dtype()) && c.dtype() != DType::kF64 ? weightVal(val.name, c.shape(), floatBytes(c, false), ft_)
                                                         : rawWeightVal(val.name, c);
    } else {
      fail(ErrorCode::kUnsupported, "output '{}' of the body is computed by no node", val.name);
    }
    int root = v;
    while (vals_[static_cast<size_t>(root)].alias >= 0) root = vals_[static_cast<size_t>(root)].alias;
    if (!written.count(root) || !taken.insert(root).second) {
      const LVal& src = vals_[static_cast<size_t>(v)];
      const int copy = newVal(val.name + "/result", src.shape, src.type, 'd');
      emitFor(LayerKind::kCopy, v, copy, val.name + "/result", "Identity");
      if (auto e = extent_of_.find(v); e != extent_of_.end()) extent_of_[copy] = e->second;  // (a dynamic tensor's copy: its dims)
      v = copy;
      taken.insert(copy);
    }
    res.push_back(v);
  }
  return res;
}

namespace {

/// A move of `rows` rows of `row_bytes` from value src to value dst (their addresses written once placed).
void addMove(LDesc& d, const ControlMove& m, int src, int dst) {
  if (!m.row_bytes || !m.rows) return;  // (an empty value: nothing to copy)
  const size_t at = d.params.size();
  package::appendMove(d.params, m);
  d.addr_words.push_back({at + 3, src});
  d.addr_words.push_back({at + 4, dst});
}

/// The header's n_moves (its last word): the moves appended after it.
void countMoves(LDesc& d) {
  const uint32_t h = package::controlHeaderWords(d.kind);
  d.params[h - 1] = static_cast<uint32_t>((d.params.size() - h) / package::kMoveWords);
}

/// A move between step t of a value stacked along an axis (dims [outer, len, inner bytes]) and a value of one step
/// ([outer, inner bytes]): out of the stack before each step (`from_stack`: a scanned input, phase 1) or into it after
/// each step (a scan output, phase 2).
ControlMove stepMove(bool from_stack, int64_t len, bool reverse, uint64_t outer, uint64_t inner) {
  ControlMove m;
  m.phase = from_stack ? 1 : 2;
  m.count = static_cast<uint32_t>(len);
  m.reverse = reverse ? 1 : 0;
  m.rows = static_cast<uint32_t>(outer);
  m.row_bytes = static_cast<uint32_t>(inner);
  (from_stack ? m.src_row_stride : m.dst_row_stride) = static_cast<uint32_t>(inner * static_cast<uint64_t>(len));
  (from_stack ? m.dst_row_stride : m.src_row_stride) = m.row_bytes;
  (from_stack ? m.src_step : m.dst_step) = m.row_bytes;
  return m;
}

/// The whole of value src copied onto value dst (same bytes), in `phase`.
void wholeMove(Lowerer& L, const ir::Node& n, LDesc& d, uint32_t phase, int src, int dst, const char* what) {
  const LVal &s = L.vals_[static_cast<size_t>(src)], &t = L.vals_[static_cast<size_t>(dst)];
  if (s.shape != t.shape || s.type != t.type)
    L.unsupported(n, "{}: {} {} where {} {} is needed (a package holds one shape per value)", what,
                  dtypeName(s.type), shapeStr(s.shape), dtypeName(t.type), shapeStr(t.shape));
  ControlMove m;
  m.phase = phase;
  m.row_bytes = static_cast<uint32_t>(bytesOf(s));
  addMove(d, m, src, dst);
}

/// A dynamic output of an If (its capacity the larger of its branches'): the branch's result, at most that capacity,
/// copied whole (a dynamic tensor is compact at its run's dims: the bytes past them are not read), and its extent (a
/// static result: a weight of its dims) onto the output's extent (an output of the If layer after its own).
void dynamicMoves(Lowerer& L, const ir::Node& n, LDesc& d, int src, int dst, uint32_t phase) {
  const LVal &s = L.vals_[static_cast<size_t>(src)], &t = L.vals_[static_cast<size_t>(dst)];
  bool fits = s.type == t.type && s.shape.size() == t.shape.size();
  for (size_t i = 0; fits && i < s.shape.size(); ++i) fits = s.shape[i] <= t.shape[i];
  if (!fits)
    L.unsupported(n, "a branch's output is {} {} for the output's {} {}", dtypeName(s.type), shapeStr(s.shape),
                  dtypeName(t.type), shapeStr(t.shape));
  const int from = L.extentOf(src, false);  // (a dynamic tensor's own extent, else a weight of its dims)
  ControlMove m;
  m.phase = phase;
  m.row_bytes = static_cast<uint32_t>(bytesOf(s));
  addMove(d, m, src, dst);
  m.row_bytes = static_cast<uint32_t>(8 * t.shape.size());
  addMove(d, m, from, L.extent_of_.at(dst));
}

/// The node's outputs as values (the first is the layer's output, the others more_outs), at most `refs` of them.
std::vector<int> controlOutputs(Lowerer& L, const ir::Node& n, size_t refs) {
  if (n.outputs.empty() || n.outputs.size() > refs)
    L.unsupported(n, "{} outputs (a package layer holds at most {} beside its inputs)", n.outputs.size(), refs);
  std::vector<int> outs;
  for (ir::ValueId v : n.outputs) {
    if (v == ir::kNoValue) L.unsupported(n, "an output without a name has no package form");
    outs.push_back(L.outVal(n, v));
  }
  return outs;
}

/// The control layer of n (its inputs, its outputs); its index in descs_ (bodies lowered after it move the vector).
size_t emitControl(Lowerer& L, const ir::Node& n, LayerKind k, std::vector<int> ins, const std::vector<int>& outs) {
  LDesc& d = L.emit(n, k, std::move(ins), outs[0]);
  d.more_outs.assign(outs.begin() + 1, outs.end());
  return L.descs_.size() - 1;
}

void ifNode(Lowerer& L, const ir::Node& n) {
  const int cond = L.typedIn(n, 0);
  const std::vector<int> outs = controlOutputs(L, n, package::kMaxRefs - 1);
  std::vector<int> written = outs;  // (and a dynamic output's extent: the If writes it too, with its moves)
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!L.g_.value(n.outputs[k]).bounded) continue;
    const LVal& t = L.vals_[static_cast<size_t>(outs[k])];
    const int e = L.newVal(t.name + "/extent", {static_cast<int64_t>(t.shape.size())}, ElemType::kI64, t.space == 'o' ? 'o' : 'd');
    L.extent_of_[outs[k]] = e;
    written.push_back(e);
  }
  if (written.size() > static_cast<size_t>(package::kMaxRefs - 1))
    L.unsupported(n, "{} outputs and {} extents of dynamic ones (a package layer holds at most {} beside its inputs)",
                  outs.size(), written.size() - outs.size(), package::kMaxRefs - 1);
  const size_t c = emitControl(L, n, LayerKind::kIf, {cond}, written);
  const std::vector<int> then_res = L.lowerBody(n, "then_branch", {});
  const size_t mid = L.descs_.size();
  const std::vector<int> else_res = L.lowerBody(n, "else_branch", {});
  LDesc& d = L.descs_[c];
  d.region = static_cast<int>(L.descs_.size() - c - 1);
  d.params = {static_cast<uint32_t>(mid - c - 1), static_cast<uint32_t>(L.descs_.size() - mid), 0};
  for (size_t k = 0; k < outs.size(); ++k) {
    if (L.g_.value(n.outputs[k]).bounded) {  // a dynamic output: each branch's result and its extent
      dynamicMoves(L, n, d, then_res[k], outs[k], 0);
      dynamicMoves(L, n, d, else_res[k], outs[k], 1);
      continue;
    }
    wholeMove(L, n, d, 0, then_res[k], outs[k], "then_branch's output");
    wholeMove(L, n, d, 1, else_res[k], outs[k], "else_branch's output");
  }
  countMoves(d);
}

void loopNode(Lowerer& L, const ir::Node& n) {
  const int own = ir::numOwnInputs(n), carried = own - 2;
  const int scans = static_cast<int>(n.outputs.size()) - carried;
  if (carried < 0 || scans < 0) L.unsupported(n, "{} loop-carried values for {} outputs", carried, n.outputs.size());
  const bool has_m = n.hasInput(0), has_cond = n.hasInput(1);
  if (!has_m && !has_cond) L.unsupported(n, "a Loop with neither a trip count nor a condition never ends");
  std::vector<int> ins;
  if (has_m) ins.push_back(L.typedIn(n, 0));
  if (has_cond) ins.push_back(L.typedIn(n, 1));
  const std::vector<int> outs = controlOutputs(L, n, package::kMaxRefs - ins.size());
  std::vector<int> init;
  for (int j = 0; j < carried; ++j) init.push_back(L.typedIn(n, 2 + j));
  const int iteration = L.newVal(n.name + "/iteration", {}, DType::kI64, 'd');
  const int cond_in = L.newVal(n.name + "/condition", {}, DType::kBool, 'd');
  const size_t c = emitControl(L, n, LayerKind::kLoop, ins, outs);
  L.descs_[c].owned = {iteration, cond_in};
  std::vector<int> formal = {iteration, cond_in};
  formal.insert(formal.end(), outs.begin(), outs.begin() + carried);  // (a carried value lives in the Loop's output)
  const std::vector<int> res = L.lowerBody(n, "body", formal);
  LDesc& d = L.descs_[c];
  d.region = static_cast<int>(L.descs_.size() - c - 1);
  d.params = {static_cast<uint32_t>(d.region), has_m ? 1u : 0u, has_cond ? 1u : 0u, 0, 0, 0, 0};
  d.addr_words = {{package::kLoopWordIteration, iteration}, {package::kLoopWordCondIn, cond_in}, {package::kLoopWordCondOut, res[0]}};
  if (L.vals_[static_cast<size_t>(res[0])].type != DType::kBool || !L.vals_[static_cast<size_t>(res[0])].shape.empty())
    L.unsupported(n, "the body's condition output must be one bool");
  for (int j = 0; j < carried; ++j) {
    wholeMove(L, n, d, 0, init[static_cast<size_t>(j)], outs[static_cast<size_t>(j)], "a loop-carried value's initial value");
    wholeMove(L, n, d, 2, res[static_cast<size_t>(1 + j)], outs[static_cast<size_t>(j)], "a loop-carried value");
  }
  for (int k = 0; k < scans; ++k) {
    const LVal& step = L.vals_[static_cast<size_t>(res[static_cast<size_t>(1 + carried + k)])];
    const LVal& all = L.vals_[static_cast<size_t>(outs[static_cast<size_t>(carried + k)])];
    Shape want = step.shape;
    want.insert(want.begin(), all.shape.empty() ? -1 : all.shape[0]);
    if (all.shape != want || all.type != step.type || all.shape[0] < 1)
      L.unsupported(n, "scan output {} is {} {} for steps of {} {}: a package needs the trip count known at translate "
                    "time (a constant M, a condition that does not end the loop early) and at least one step",
                    k, dtypeName(all.type), shapeStr(all.shape), dtypeName(step.type), shapeStr(step.shape));
    addMove(d, stepMove(false, all.shape[0], false, 1, bytesOf(step)), res[static_cast<size_t>(1 + carried + k)],
            outs[static_cast<size_t>(carried + k)]);
  }
  countMoves(d);
}

/// Dims before `axis` and bytes of the dims from `axis` on (of a value of element size `es`).
std::pair<uint64_t, uint64_t> outerInner(const Shape& s, size_t axis, uint64_t es) {
  uint64_t outer = 1, inner = es;
  for (size_t i = 0; i < s.size(); ++i) (i < axis ? outer : inner) *= static_cast<uint64_t>(s[i]);
  return {outer, inner};
}

void scanNode(Lowerer& L, const ir::Node& n) {
  if (L.g_.opset < 9) L.unsupported(n, "Scan before opset 9 (batched, with sequence_lens) has no package form (the engine runs it)");
  const int own = ir::numOwnInputs(n);
  const int num_scan = static_cast<int>(n.attrInt("num_scan_inputs", 0));
  const int state = own - num_scan, scans = static_cast<int>(n.outputs.size()) - state;
  if (num_scan < 1 || state < 0 || scans < 0) L.unsupported(n, "{} scanned inputs, {} states, {} outputs", num_scan, state, n.outputs.size());
  const ops::ScanAttrs a = ops::scanAttrs(n, own, scans);
  std::vector<int> xs, init;
  for (int j = 0; j < state; ++j) init.push_back(L.typedIn(n, j));
  for (int j = 0; j < num_scan; ++j) xs.push_back(L.typedIn(n, state + j));
  const std::vector<int> outs = controlOutputs(L, n, package::kMaxRefs - 1);
  // Each scanned input's step: a value of its own, filled by a move before each step.
  std::vector<int> slices;
  std::vector<size_t> axes;
  int64_t len = -1;
  for (int j = 0; j < num_scan; ++j) {
    const LVal x = L.vals_[static_cast<size_t>(xs[static_cast<size_t>(j)])];  // (a copy: newVal below grows vals_)
    int64_t axis = a.input_axes[static_cast<size_t>(j)];
    if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) L.unsupported(n, "scan_input_axes[{}] is out of range", j);
    if (len >= 0 && x.shape[static_cast<size_t>(axis)] != len) L.unsupported(n, "scanned inputs of different lengths");
    len = x.shape[static_cast<size_t>(axis)];
    Shape s = x.shape;
    s.erase(s.begin() + axis);
    slices.push_back(L.newVal(n.name + "/step" + std::to_string(j), s, x.type, 'd'));
    axes.push_back(static_cast<size_t>(axis));
  }
  const size_t c = emitControl(L, n, LayerKind::kScan, {xs[0]}, outs);
  L.descs_[c].owned = slices;
  std::vector<int> formal(outs.begin(), outs.begin() + state);  // (a state lives in the Scan's output)
  formal.insert(formal.end(), slices.begin(), slices.end());
  const std::vector<int> res = L.lowerBody(n, "body", formal);
  LDesc& d = L.descs_[c];
  d.region = static_cast<int>(L.descs_.size() - c - 1);
  d.params = {static_cast<uint32_t>(d.region), static_cast<uint32_t>(len), 0};
  for (int j = 0; j < state; ++j) {
    wholeMove(L, n, d, 0, init[static_cast<size_t>(j)], outs[static_cast<size_t>(j)], "a state's initial value");
    wholeMove(L, n, d, 2, res[static_cast<size_t>(j)], outs[static_cast<size_t>(j)], "a state");
  }
  if (len == 0) {
    countMoves(d);
    return;
  }
  for (int j = 0; j < num_scan; ++j) {
    const LVal& x = L.vals_[static_cast<size_t>(xs[static_cast<size_t>(j)])];
    const LVal& slice = L.vals_[static_cast<size_t>(slices[static_cast<size_t>(j)])];  // (x without the axis)
    auto [outer, inner] = outerInner(slice.shape, axes[static_cast<size_t>(j)], package::elemSize(x.type));
    addMove(d, stepMove(true, len, a.input_directions[static_cast<size_t>(j)] != 0, outer, inner), xs[static_cast<size_t>(j)],
            slices[static_cast<size_t>(j)]);
  }
  for (int k = 0; k < scans; ++k) {
    const LVal& step = L.vals_[static_cast<size_t>(res[static_cast<size_t>(state + k)])];
    const LVal& all = L.vals_[static_cast<size_t>(outs[static_cast<size_t>(state + k)])];
    int64_t axis = a.output_axes[static_cast<size_t>(k)];
    if (axis < 0) axis += static_cast<int64_t>(step.shape.size()) + 1;
    Shape want = step.shape;
    if (axis < 0 || axis > static_cast<int64_t>(want.size())) L.unsupported(n, "scan_output_axes[{}] is out of range", k);
    want.insert(want.begin() + axis, len);
    if (all.shape != want || all.type != step.type)
      L.unsupported(n, "scan output {} is {} {} for steps of {} {}", k, dtypeName(all.type), shapeStr(all.shape),
                    dtypeName(step.type), shapeStr(step.shape));
    auto [outer, inner] = outerInner(step.shape, static_cast<size_t>(axis), package::elemSize(step.type));
    addMove(d, stepMove(false, len, a.output_directions[static_cast<size_t>(k)] != 0, outer, inner),
            res[static_cast<size_t>(state + k)], outs[static_cast<size_t>(state + k)]);
  }
  countMoves(d);
}

}  // namespace

void registerControlLowerings(LowerTable& t) {
  t[{"", "If"}] = ifNode;
  t[{"", "Loop"}] = loopNode;
  t[{"", "Scan"}] = scanNode;
  takeTypedValues(t, {"If", "Loop", "Scan"});
}

}  // namespace npuc::codegen::detail
