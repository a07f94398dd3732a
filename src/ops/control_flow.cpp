// Control flow: If, Loop and Scan (opset 9+). Their bodies are subgraph attributes (ir::GraphPtr) whose captures are
// the node's trailing inputs (ir::Graph::num_captures). A shape function infers the body it runs on a copy, its
// inputs typed from the node's (and its captures holding the node's known values), and reads the body's outputs.
#include "ops/control_flow.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

#include <algorithm>

namespace npuc::ops {

namespace {

/// The output types of subgraph attribute `attr` when its formal inputs have the types `formal` (an undefined one
/// keeps the body's declared type) and its captures those of the node's trailing inputs.
std::vector<ir::Type> bodyOutputTypes(InferContext& c, const std::string& attr, const std::vector<ir::Type>& formal) {
  const ir::Node& n = c.node();
  const ir::Graph* body = n.attrGraph(attr);
  if (!body) c.error("attribute '{}' (a graph) is required", attr);
  if (ir::numFormalInputs(*body) != static_cast<int>(formal.size()))
    c.error("attribute '{}': the body takes {} inputs, {} passes it {}", attr, ir::numFormalInputs(*body), n.op,
            formal.size());
  auto g = body->clone();
  for (size_t i = 0; i < formal.size(); ++i)
    if (formal[i].dtype != DType::kUndefined) g->value(g->inputs()[i]).type = formal[i];
  auto caps = ir::captureInputs(n, attr);
  for (size_t j = 0; j < caps.size(); ++j) {
    ir::Value& v = g->value(g->inputs()[formal.size() + j]);
    v.type = c.knownType(caps[j]);
    if (const Tensor* t = c.knownValue(caps[j])) v.constant = *t;  // its shape operands fold inside the body
  }
  withContext(n.label() + ": attribute '" + attr + "'", [&] { inferShapes(*g); });
  std::vector<ir::Type> r;
  for (ir::ValueId o : g->outputs()) r.push_back(g->value(o).type);
  return r;
}

/// What two types have in common: the element type (which must agree), the rank and the dims where they agree.
ir::Type commonType(const ir::Type& a, const ir::Type& b) {
  if (a == b) return a;
  ir::Type r;
  r.dtype = a.dtype == b.dtype ? a.dtype : DType::kUndefined;
  if (a.rank_known && b.rank_known && a.shape.size() == b.shape.size()) {
    r.rank_known = true;
    for (size_t i = 0; i < a.shape.size(); ++i) r.shape.push_back(a.shape[i] == b.shape[i] ? a.shape[i] : -1);
  }
  return r;
}

ir::Type scalarOf(DType t) { return ir::makeType(t, {}); }

void checkScalar(InferContext& c, int i, DType want, const char* what) {
  ir::Type t = c.knownType(i);
  if (t.dtype != DType::kUndefined && t.dtype != want)
    c.error("{} (input {}) must be {}, got {}", what, i, dtypeName(want), dtypeName(t.dtype));
  if (t.isStatic() && shapeNumel(t.shape) != 1)
    c.error("{} (input {}) must hold one value, got shape {}", what, i, shapeStr(t.shape));
}

void inferIf(InferContext& c) {
  const ir::Node& n = c.node();
  if (ir::numOwnInputs(n) != 1) c.error("If takes one input (the condition) besides its captures, got {}", ir::numOwnInputs(n));
  checkScalar(c, 0, DType::kBool, "the condition");
  const size_t nout = n.outputs.size();
  auto check = [&](const std::vector<ir::Type>& t, const char* attr) {
    if (t.size() != nout) c.error("attribute '{}' has {} outputs, the node {}", attr, t.size(), nout);
    return t;
  };
  if (const Tensor* cond = c.knownValue(0); cond && cond->numel() == 1 && cond->dtype() == DType::kBool) {
    const char* attr = cond->data<bool>()[0] ? "then_branch" : "else_branch";
    auto t = check(bodyOutputTypes(c, attr, {}), attr);
    for (size_t i = 0; i < nout; ++i) c.setOutputType(static_cast<int>(i), t[i]);
    return;
  }
  auto a = check(bodyOutputTypes(c, "then_branch", {}), "then_branch");
  auto b = check(bodyOutputTypes(c, "else_branch", {}), "else_branch");
  for (size_t i = 0; i < nout; ++i) {
    if (a[i].dtype != DType::kUndefined && b[i].dtype != DType::kUndefined && a[i].dtype != b[i].dtype)
      c.error("output {} is {} in then_branch and {} in else_branch", i, dtypeName(a[i].dtype), dtypeName(b[i].dtype));
    c.setOutputType(static_cast<int>(i), commonType(a[i], b[i]));
  }
}

/// A body whose condition output is its condition input (directly or through an Identity): only the trip count ends it.
bool conditionPassesThrough(const ir::Graph& body) {
  if (body.outputs().empty() || body.inputs().size() < 2) return false;
  ir::ValueId out = body.outputs()[0], in = body.inputs()[1];
  if (out == in) return true;
  const ir::Value& v = body.value(out);
  if (v.producer == ir::kNoNode) return false;
  const ir::Node& p = body.node(v.producer);
  return p.op == "Identity" && p.domain.empty() && !p.inputs.empty() && p.inputs[0] == in;
}

void inferLoop(InferContext& c) {
  const ir::Node& n = c.node();
  const int own = ir::numOwnInputs(n);
  if (own < 2) c.error("Loop takes a trip count and a condition (either may be empty) before its loop-carried values");
  if (c.hasInput(0)) checkScalar(c, 0, DType::kI64, "the trip count M");
  if (c.hasInput(1)) checkScalar(c, 1, DType::kBool, "the condition");
  const int carried = own - 2;
  const int scans = static_cast<int>(n.outputs.size()) - carried;
  if (scans < 0) c.error("{} loop-carried values but {} outputs", carried, n.outputs.size());
  std::vector<ir::Type> formal{scalarOf(DType::kI64), scalarOf(DType::kBool)};
  for (int i = 0; i < carried; ++i) formal.push_back(c.knownType(2 + i));
  auto out = bodyOutputTypes(c, "body", formal);
  if (static_cast<int>(out.size()) != 1 + carried + scans)
    c.error("attribute 'body' has {} outputs; {} loop-carried values and {} scan outputs need {}", out.size(), carried,
            scans, 1 + carried + scans);
  for (int i = 0; i < carried; ++i) {
    ir::Type in = c.knownType(2 + i), o = out[static_cast<size_t>(1 + i)];
    if (in.dtype != DType::kUndefined && o.dtype != DType::kUndefined && in.dtype != o.dtype)
      c.error("loop-carried value {} enters as {} and the body returns {}", i, dtypeName(in.dtype), dtypeName(o.dtype));
    c.setOutputType(i, commonType(in, o));
  }
  int64_t trips = -1;  // known only for a plain counted loop
  const Tensor* m = c.knownValue(0);
  const Tensor* cond = c.knownValue(1);
  bool cond_true = !c.hasInput(1) || (cond && cond->numel() == 1 && cond->dtype() == DType::kBool && cond->data<bool>()[0]);
  if (m && m->numel() == 1 && m->dtype() == DType::kI64 && cond_true &&
      (!c.hasInput(1) || conditionPassesThrough(*n.attrGraph("body"))))
    trips = std::max<int64_t>(0, m->data<int64_t>()[0]);
  for (int k = 0; k < scans; ++k) {
    const ir::Type& s = out[static_cast<size_t>(1 + carried + k)];
    ir::Type t;
    t.dtype = s.dtype;
    if (s.rank_known) {
      t.rank_known = true;
      t.shape.push_back(trips);
      t.shape.insert(t.shape.end(), s.shape.begin(), s.shape.end());
    }
    c.setOutputType(carried + k, t);
  }
}

}  // namespace

/// Scan's attributes, checked: how many of its inputs are scanned, and per scanned input / scan output its axis
/// (normalised when the rank is known) and direction.
ScanAttrs scanAttrs(const ir::Node& n, int own_inputs, int scan_outputs) {
  ScanAttrs a;
  a.num_scan_inputs = n.attrInt("num_scan_inputs", -1);
  if (a.num_scan_inputs < 1 || a.num_scan_inputs > own_inputs)
    fail(ErrorCode::kInvalidInput, "{}: num_scan_inputs {} must be between 1 and the {} inputs", n.label(),
         a.num_scan_inputs, own_inputs);
  a.num_state = own_inputs - static_cast<int>(a.num_scan_inputs);
  auto list = [&](const char* name, size_t count) {
    auto v = n.attrInts(name, std::vector<int64_t>(count, 0));
    if (v.size() != count) fail(ErrorCode::kInvalidInput, "{}: attribute '{}' has {} values, {} needed", n.label(), name, v.size(), count);
    return v;
  };
  a.input_axes = list("scan_input_axes", static_cast<size_t>(a.num_scan_inputs));
  a.input_directions = list("scan_input_directions", static_cast<size_t>(a.num_scan_inputs));
  a.output_axes = list("scan_output_axes", static_cast<size_t>(scan_outputs));
  a.output_directions = list("scan_output_directions", static_cast<size_t>(scan_outputs));
  for (auto* d : {&a.input_directions, &a.output_directions})
    for (int64_t x : *d)
      if (x != 0 && x != 1) fail(ErrorCode::kInvalidInput, "{}: a scan direction must be 0 (forward) or 1 (reverse), got {}", n.label(), x);
  return a;
}

namespace {

/// Scan before opset 9: input 0 the optional sequence_lens [batch], then the states [batch, …] and the scanned inputs
/// [batch, sequence, …]; the body sees one batch item's states and one step of each scanned input (`directions`:
/// per scanned input, 1 reverse); outputs the final states [batch, …] and the scan outputs [batch, sequence, …].
void inferScan8(InferContext& c) {
  const ir::Node& n = c.node();
  const int own = ir::numOwnInputs(n);
  const int64_t num_scan = n.attrInt("num_scan_inputs", -1);
  const int state = own - 1 - static_cast<int>(num_scan);
  const int scans = static_cast<int>(n.outputs.size()) - state;
  if (num_scan < 1 || state < 0 || scans < 0)
    c.error("num_scan_inputs {} for {} inputs (sequence_lens first) and {} outputs", num_scan, own, n.outputs.size());
  if (c.hasInput(0) && c.knownType(0).dtype != DType::kUndefined && c.knownType(0).dtype != DType::kI64)
    c.error("sequence_lens must be int64, got {}", dtypeName(c.knownType(0).dtype));
  auto dirs = n.attrInts("directions", std::vector<int64_t>(static_cast<size_t>(num_scan), 0));
  if (dirs.size() != static_cast<size_t>(num_scan)) c.error("attribute 'directions' has {} values, {} needed", dirs.size(), num_scan);
  std::vector<ir::Type> formal;
  auto drop = [&](ir::Type t, size_t dims) {  // t without its first `dims` dims (batch, and sequence)
    if (t.rank_known && t.shape.size() < dims) c.error("an input of rank {} has no {} leading dims", t.shape.size(), dims);
    if (t.rank_known) t.shape.erase(t.shape.begin(), t.shape.begin() + static_cast<std::ptrdiff_t>(dims));
    return t;
  };
  for (int i = 0; i < state; ++i) formal.push_back(drop(c.knownType(1 + i), 1));
  Shape lead{-1, -1};  // batch, sequence
  for (int j = 0; j < num_scan; ++j) {
    const ir::Type t = c.knownType(1 + state + j);
    if (t.rank_known && t.shape.size() >= 2) lead = {t.shape[0], t.shape[1]};
    formal.push_back(drop(t, 2));
  }
  auto out = bodyOutputTypes(c, "body", formal);
  if (static_cast<int>(out.size()) != state + scans)
    c.error("attribute 'body' has {} outputs; {} state values and {} scan outputs need {}", out.size(), state, scans, state + scans);
  for (int i = 0; i < state; ++i) c.setOutputType(i, c.knownType(1 + i));
  for (int k = 0; k < scans; ++k) {
    ir::Type t = out[static_cast<size_t>(state + k)];
    if (t.rank_known) t.shape.insert(t.shape.begin(), lead.begin(), lead.end());
    c.setOutputType(state + k, t);
  }
}

void inferScan(InferContext& c) {
  const ir::Node& n = c.node();
  if (c.opset() < 9) return inferScan8(c);
  const int own = ir::numOwnInputs(n);
  const int nstate_guess = own - static_cast<int>(n.attrInt("num_scan_inputs", 0));
  const int scans = static_cast<int>(n.outputs.size()) - nstate_guess;
  if (scans < 0) c.error("{} state values but {} outputs", nstate_guess, n.outputs.size());
  ScanAttrs a = scanAttrs(n, own, scans);
  std::vector<ir::Type> formal;
  for (int i = 0; i < a.num_state; ++i) formal.push_back(c.knownType(i));
  int64_t len = -1;
  for (int j = 0; j < a.num_scan_inputs; ++j) {
    ir::Type t = c.knownType(a.num_state + j), slice;
    slice.dtype = t.dtype;
    if (t.rank_known) {
      int64_t axis = a.input_axes[static_cast<size_t>(j)];
      if (!normalizeAxis(axis, static_cast<int64_t>(t.shape.size())))
        c.error("scan_input_axes[{}] = {} is out of range for rank {}", j, a.input_axes[static_cast<size_t>(j)], t.shape.size());
      int64_t d = t.shape[static_cast<size_t>(axis)];
      if (d >= 0 && len >= 0 && d != len) c.error("scanned input {} has {} steps along axis {}, an earlier one {}", j, d, axis, len);
      if (d >= 0) len = d;
      slice.rank_known = true;
      slice.shape = t.shape;
      slice.shape.erase(slice.shape.begin() + axis);
    }
    formal.push_back(slice);
  }
  auto out = bodyOutputTypes(c, "body", formal);
  if (static_cast<int>(out.size()) != a.num_state + scans)
    c.error("attribute 'body' has {} outputs; {} state values and {} scan outputs need {}", out.size(), a.num_state, scans,
            a.num_state + scans);
  for (int i = 0; i < a.num_state; ++i) c.setOutputType(i, commonType(c.knownType(i), out[static_cast<size_t>(i)]));
  for (int k = 0; k < scans; ++k) {
    const ir::Type& s = out[static_cast<size_t>(a.num_state + k)];
    ir::Type t;
    t.dtype = s.dtype;
    if (s.rank_known) {
      int64_t axis = a.output_axes[static_cast<size_t>(k)];
      if (!normalizeAxis(axis, static_cast<int64_t>(s.shape.size()) + 1))
        c.error("scan_output_axes[{}] = {} is out of range for rank {}", k, a.output_axes[static_cast<size_t>(k)], s.shape.size() + 1);
      t.rank_known = true;
      t.shape = s.shape;
      t.shape.insert(t.shape.begin() + axis, len);
    }
    c.setOutputType(a.num_state + k, t);
  }
}

constexpr int kMaxOutputs = 1 << 16;

}  // namespace

void registerControlFlowOps(Registry& r) {
  r.add(makeSchema("If", 1, -1,
                   "Runs then_branch or else_branch by a boolean scalar; outer values the branches read are its trailing inputs",
                   inferIf, kMaxOutputs));
  OpSchema loop = makeSchema("Loop", 0, -1,
                             "Runs its body while the trip count M and the condition allow, carrying values and stacking scan outputs",
                             inferLoop, kMaxOutputs);
  loop.min_outputs = 0;
  r.add(loop);
  r.add(makeSchema("Scan", 1, -1,
                   "Runs its body once per slice of its scanned inputs, carrying state and stacking scan outputs (before opset 9: "
                   "per batch item, with sequence_lens)",
                   inferScan, kMaxOutputs));
}

}  // namespace npuc::ops
