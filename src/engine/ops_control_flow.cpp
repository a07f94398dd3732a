// If, Loop and Scan: each body runs on its own Engine (made once with the node's kernel), its formal inputs first and
// then its captures, the node's trailing inputs (ir::Graph::num_captures). ONNX semantics: the trip count and the
// condition are the model's own; a negative trip count, a loop with neither, and steps of changing shape are errors.
#include "engine/engine.hpp"
#include "ops/control_flow.hpp"

#include <cstring>
#include <limits>

namespace npuc::engine {

namespace {

/// One subgraph attribute and the engine that runs it.
struct Body {
  ir::GraphPtr graph;
  std::unique_ptr<Engine> engine;
  std::vector<int> captures;  // positions in the node's inputs

  Body(const ir::Node& n, const std::string& attr) {
    auto it = n.attrs.find(attr);
    const ir::GraphPtr* g = it == n.attrs.end() ? nullptr : it->second.get<ir::GraphPtr>();
    if (!g || !*g) fail(ErrorCode::kInvalidInput, "{}: attribute '{}' (a graph) is required", n.label(), attr);
    graph = *g;
    captures = ir::captureInputs(n, attr);
    // The body's declared types may hold for one step only (a carried value growing): nothing is planned from them.
    EngineOptions opts;
    opts.place_concat_inputs = false;
    engine = withContext(n.label() + ": attribute '" + attr + "'", [&] { return std::make_unique<Engine>(*graph, opts); });
  }

  std::vector<Tensor> run(const KernelCall& call, std::vector<Tensor> formal, const char* attr, size_t want_outputs) {
    for (int i : captures) {
      if (i < 0 || static_cast<size_t>(i) >= call.in.size()) call.error("attribute '{}': capture input {} is missing", attr, i);
      formal.push_back(call.in[static_cast<size_t>(i)]);
    }
    auto out = withContext(call.node.label() + ": attribute '" + attr + "'", [&] { return engine->run(formal); });
    if (out.size() != want_outputs) call.error("attribute '{}' gave {} outputs, {} expected", attr, out.size(), want_outputs);
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].defined()) call.error("attribute '{}': output {} was not computed", attr, i);
    return out;
  }
};

bool scalarBool(const KernelCall& call, int i, const char* what) {
  const Tensor& t = call.input(i);
  if (t.dtype() != DType::kBool || t.numel() != 1) call.error("{} must be one bool, got {} {}", what, dtypeName(t.dtype()), shapeStr(t.shape()));
  return t.data<bool>()[0];
}

/// Step tensors of one shape stacked along a new axis: [outer, steps, inner] with each step at its position.
class Stacker {
 public:
  void add(const KernelCall& call, const Tensor& t, const char* what) {
    if (steps_.empty()) {
      first_ = t;
    } else if (t.dtype() != first_.dtype() || t.shape() != first_.shape()) {
      call.error("{} is {} {} at step {} but {} {} at step 0 (steps must agree to be stacked)", what, dtypeName(t.dtype()),
                 shapeStr(t.shape()), steps_.size(), dtypeName(first_.dtype()), shapeStr(first_.shape()));
    }
    steps_.push_back(t);
  }
  /// The stacked tensor: axis `axis` (of the result) holds the steps, in reverse order when `reverse`. With no step,
  /// `empty` gives the type (its shape with 0 at the axis where known).
  Tensor stack(const KernelCall& call, int64_t axis, bool reverse, const ir::Type& empty) const {
    if (steps_.empty()) {
      if (axis < 0 && empty.rank_known) axis += static_cast<int64_t>(empty.shape.size());
      Shape s = empty.rank_known ? empty.shape : Shape{0};
      for (auto& d : s) d = std::max<int64_t>(d, 0);
      if (empty.rank_known && axis >= 0 && axis < static_cast<int64_t>(s.size())) s[static_cast<size_t>(axis)] = 0;
      return Tensor(empty.dtype == DType::kUndefined ? DType::kF32 : empty.dtype, s);
    }
    const Shape& slice = first_.shape();
    if (axis < 0) axis += static_cast<int64_t>(slice.size()) + 1;
    if (axis < 0 || axis > static_cast<int64_t>(slice.size())) call.error("scan output axis {} is out of range for rank {}", axis, slice.size() + 1);
    Shape shape = slice;
    shape.insert(shape.begin() + axis, static_cast<int64_t>(steps_.size()));
    const int64_t n = static_cast<int64_t>(steps_.size());
    if (first_.numel() > 0 && n > std::numeric_limits<int64_t>::max() / first_.numel())
      call.error("{} steps of {} elements overflow a tensor's size", n, first_.numel());
    Tensor out = Tensor::uninitialized(first_.dtype(), shape);
    size_t outer = 1, inner = dtypeSize(first_.dtype());
    for (int64_t i = 0; i < axis; ++i) outer *= static_cast<size_t>(slice[static_cast<size_t>(i)]);
    for (size_t i = static_cast<size_t>(axis); i < slice.size(); ++i) inner *= static_cast<size_t>(slice[i]);
    auto* dst = static_cast<uint8_t*>(out.raw());
    for (int64_t s = 0; s < n; ++s) {
      const auto* src = static_cast<const uint8_t*>(steps_[static_cast<size_t>(reverse ? n - 1 - s : s)].raw());
      for (size_t o = 0; o < outer; ++o)
        if (inner) std::memcpy(dst + (o * static_cast<size_t>(n) + static_cast<size_t>(s)) * inner, src + o * inner, inner);
    }
    return out;
  }

 private:
  Tensor first_;
  std::vector<Tensor> steps_;
};

/// Step t of `in` along `axis` (the axis removed).
Tensor sliceAt(const Tensor& in, int64_t axis, int64_t t) {
  Shape shape = in.shape();
  const int64_t len = shape[static_cast<size_t>(axis)];
  shape.erase(shape.begin() + axis);
  Tensor out = Tensor::uninitialized(in.dtype(), shape);
  size_t outer = 1, inner = dtypeSize(in.dtype());
  for (int64_t i = 0; i < axis; ++i) outer *= static_cast<size_t>(in.shape()[static_cast<size_t>(i)]);
  for (size_t i = static_cast<size_t>(axis) + 1; i < in.shape().size(); ++i) inner *= static_cast<size_t>(in.shape()[i]);
  const auto* src = static_cast<const uint8_t*>(in.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (size_t o = 0; o < outer; ++o)
    if (inner) std::memcpy(dst + o * inner, src + (o * static_cast<size_t>(len) + static_cast<size_t>(t)) * inner, inner);
  return out;
}

class IfKernel : public Kernel {
 public:
  explicit IfKernel(const ir::Node& n) : then_(n, "then_branch"), else_(n, "else_branch") {}
  void run(KernelCall& call) override {
    bool c = scalarBool(call, 0, "the condition");
    auto out = (c ? then_ : else_).run(call, {}, c ? "then_branch" : "else_branch", static_cast<size_t>(call.numOutputs()));
    for (size_t i = 0; i < out.size(); ++i) call.out[i] = std::move(out[i]);
  }

 private:
  Body then_, else_;
};

class LoopKernel : public Kernel {
 public:
  explicit LoopKernel(const ir::Node& n) : body_(n, "body") {}
  void run(KernelCall& call) override {
    const int carried = ir::numOwnInputs(call.node) - 2;
    const int scans = call.numOutputs() - carried;
    if (carried < 0 || scans < 0) call.error("{} loop-carried values and {} outputs do not match", carried, call.numOutputs());
    int64_t m = std::numeric_limits<int64_t>::max();
    if (call.has(0)) {
      const Tensor& t = call.input(0);
      if (t.dtype() != DType::kI64 || t.numel() != 1) call.error("the trip count M must be one int64, got {} {}", dtypeName(t.dtype()), shapeStr(t.shape()));
      m = t.data<int64_t>()[0];
      if (m < 0) call.error("the trip count M is negative ({})", m);
    }
    bool cond = call.has(1) ? scalarBool(call, 1, "the condition") : true;
    if (!call.has(0) && !call.has(1))
      call.unsupported("a Loop with neither a trip count nor a condition never ends (npuc does not run it)");
    std::vector<Tensor> values(call.in.begin() + 2, call.in.begin() + 2 + carried);
    std::vector<Stacker> stacks(static_cast<size_t>(scans));
    for (int64_t i = 0; i < m && cond; ++i) {
      std::vector<Tensor> formal{Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
      formal.insert(formal.end(), values.begin(), values.end());
      auto out = body_.run(call, std::move(formal), "body", static_cast<size_t>(1 + carried + scans));
      if (call.has(1)) {
        if (out[0].dtype() != DType::kBool || out[0].numel() != 1) call.error("the body's condition output must be one bool");
        cond = out[0].data<bool>()[0];
      }
      for (int j = 0; j < carried; ++j) {
        Tensor& v = out[static_cast<size_t>(1 + j)];
        if (v.dtype() != values[static_cast<size_t>(j)].dtype())
          call.error("loop-carried value {} enters as {} and the body returns {}", j, dtypeName(values[static_cast<size_t>(j)].dtype()), dtypeName(v.dtype()));
        values[static_cast<size_t>(j)] = std::move(v);
      }
      for (int k = 0; k < scans; ++k) stacks[static_cast<size_t>(k)].add(call, out[static_cast<size_t>(1 + carried + k)], "a scan output");
    }
    for (int j = 0; j < carried; ++j) call.out[static_cast<size_t>(j)] = values[static_cast<size_t>(j)];
    for (int k = 0; k < scans; ++k)  // (no step: the shape function's type, its unknown dims 0)
      call.out[static_cast<size_t>(carried + k)] =
          stacks[static_cast<size_t>(k)].stack(call, 0, false, call.out_types[static_cast<size_t>(carried + k)]);
  }

 private:
  Body body_;
};

class ScanKernel : public Kernel {
 public:
  explicit ScanKernel(const ir::Node& n) : body_(n, "body") {}
  void run(KernelCall& call) override {
    const int own = ir::numOwnInputs(call.node);
    const int scans = call.numOutputs() - (own - static_cast<int>(call.node.attrInt("num_scan_inputs", 0)));
    if (scans < 0) call.error("more state values than outputs");
    ops::ScanAttrs a = ops::scanAttrs(call.node, own, scans);
    std::vector<Tensor> state(call.in.begin(), call.in.begin() + a.num_state);
    std::vector<int64_t> axes;
    int64_t len = -1;
    for (int j = 0; j < a.num_scan_inputs; ++j) {
      const Tensor& t = call.input(a.num_state + j);
      int64_t axis = a.input_axes[static_cast<size_t>(j)];
      if (axis < 0) axis += t.rank();
      if (axis < 0 || axis >= t.rank()) call.error("scan_input_axes[{}] is out of range for rank {}", j, t.rank());
      if (len >= 0 && t.dim(static_cast<int>(axis)) != len) call.error("scanned input {} has {} steps, an earlier one {}", j, t.dim(static_cast<int>(axis)), len);
      len = t.dim(static_cast<int>(axis));
      axes.push_back(axis);
    }
    std::vector<Stacker> stacks(static_cast<size_t>(scans));
    for (int64_t s = 0; s < len; ++s) {
      std::vector<Tensor> formal = state;
      for (int j = 0; j < a.num_scan_inputs; ++j) {
        int64_t at = a.input_directions[static_cast<size_t>(j)] ? len - 1 - s : s;
        formal.push_back(sliceAt(call.input(a.num_state + j), axes[static_cast<size_t>(j)], at));
      }
      auto out = body_.run(call, std::move(formal), "body", static_cast<size_t>(a.num_state + scans));
      for (int i = 0; i < a.num_state; ++i) state[static_cast<size_t>(i)] = std::move(out[static_cast<size_t>(i)]);
      for (int k = 0; k < scans; ++k) stacks[static_cast<size_t>(k)].add(call, out[static_cast<size_t>(a.num_state + k)], "a scan output");
    }
    for (int i = 0; i < a.num_state; ++i) call.out[static_cast<size_t>(i)] = state[static_cast<size_t>(i)];
    for (int k = 0; k < scans; ++k) {
      const ir::Type& t = call.out_types[static_cast<size_t>(a.num_state + k)];
      int64_t axis = a.output_axes[static_cast<size_t>(k)];
      call.out[static_cast<size_t>(a.num_state + k)] =
          stacks[static_cast<size_t>(k)].stack(call, axis, a.output_directions[static_cast<size_t>(k)] != 0, t);
    }
  }

 private:
  Body body_;
};

/// Scan before opset 9 (ops/control_flow.cpp, inferScan8): per batch item, its states and the steps of its scanned
/// inputs ([batch, sequence, …]) up to its sequence length (sequence_lens, or the whole sequence); the scan outputs of
/// a shorter sequence are zeros past its length.
class Scan8Kernel : public Kernel {
 public:
  explicit Scan8Kernel(const ir::Node& n) : body_(n, "body") {}
  void run(KernelCall& call) override {
    const int own = ir::numOwnInputs(call.node);
    const int num_scan = static_cast<int>(call.node.attrInt("num_scan_inputs", 0));
    const int state = own - 1 - num_scan, scans = call.numOutputs() - state;
    if (num_scan < 1 || state < 0 || scans < 0) call.error("num_scan_inputs {} for {} inputs and {} outputs", num_scan, own, call.numOutputs());
    const auto dirs = call.node.attrInts("directions", std::vector<int64_t>(static_cast<size_t>(num_scan), 0));
    const Tensor& x0 = call.input(1 + state);
    if (x0.rank() < 2) call.error("scanned input 0 is {}; [batch, sequence, …] is needed", shapeStr(x0.shape()));
    const int64_t batch = x0.dim(0), seq = x0.dim(1);
    for (int j = 0; j < num_scan; ++j) {
      const Tensor& x = call.input(1 + state + j);
      if (x.rank() < 2 || x.dim(0) != batch || x.dim(1) != seq)
        call.error("scanned input {} is {}; scanned input 0 gives batch {} and sequence {}", j, shapeStr(x.shape()), batch, seq);
    }
    for (int i = 0; i < state; ++i)
      if (call.input(1 + i).rank() < 1 || call.input(1 + i).dim(0) != batch)
        call.error("state {} is {}; the batch is {}", i, shapeStr(call.input(1 + i).shape()), batch);
    std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
    if (call.has(0)) {
      const Tensor& l = call.input(0);
      if (l.dtype() != DType::kI64 || l.numel() != batch) call.error("sequence_lens must be int64 [{}], got {} {}", batch, dtypeName(l.dtype()), shapeStr(l.shape()));
      for (int64_t b = 0; b < batch; ++b) {
        lens[static_cast<size_t>(b)] = l.data<int64_t>()[b];
        if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > seq)
          call.error("sequence_lens[{}] = {} is outside [0, {}]", b, lens[static_cast<size_t>(b)], seq);
      }
    }
    std::vector<Stacker> states(static_cast<size_t>(state)), outs(static_cast<size_t>(scans));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      std::vector<Tensor> st, xb;
      for (int i = 0; i < state; ++i) st.push_back(sliceAt(call.input(1 + i), 0, b));
      for (int j = 0; j < num_scan; ++j) xb.push_back(sliceAt(call.input(1 + state + j), 0, b));
      std::vector<Stacker> steps(static_cast<size_t>(scans));
      for (int64_t t = 0; t < len; ++t) {
        std::vector<Tensor> formal = st;
        for (int j = 0; j < num_scan; ++j) formal.push_back(sliceAt(xb[static_cast<size_t>(j)], 0, dirs[static_cast<size_t>(j)] ? len - 1 - t : t));
        auto out = body_.run(call, std::move(formal), "body", static_cast<size_t>(state + scans));
        for (int i = 0; i < state; ++i) st[static_cast<size_t>(i)] = std::move(out[static_cast<size_t>(i)]);
        for (int k = 0; k < scans; ++k) steps[static_cast<size_t>(k)].add(call, out[static_cast<size_t>(state + k)], "a scan output");
      }
      for (int i = 0; i < state; ++i) states[static_cast<size_t>(i)].add(call, st[static_cast<size_t>(i)], "a state");
      for (int k = 0; k < scans; ++k) {
        ir::Type step_type = call.out_types[static_cast<size_t>(state + k)];  // [batch, sequence, …] → one item's [0, …]
        if (step_type.rank_known && step_type.shape.size() >= 1) step_type.shape.erase(step_type.shape.begin());
        Tensor got = steps[static_cast<size_t>(k)].stack(call, 0, false, step_type);
        if (len < seq) {  // (zeros past the sequence's length)
          Shape full = got.shape();
          if (full.empty()) call.error("scan output {} of an empty sequence has no known shape", k);
          full[0] = seq;
          Tensor padded(got.dtype(), full);
          if (got.nbytes()) std::memcpy(padded.raw(), got.raw(), got.nbytes());
          got = std::move(padded);
        }
        outs[static_cast<size_t>(k)].add(call, got, "a scan output");
      }
    }
    for (int i = 0; i < state; ++i) call.out[static_cast<size_t>(i)] = states[static_cast<size_t>(i)].stack(call, 0, false, call.out_types[static_cast<size_t>(i)]);
    for (int k = 0; k < scans; ++k)
      call.out[static_cast<size_t>(state + k)] = outs[static_cast<size_t>(k)].stack(call, 0, false, call.out_types[static_cast<size_t>(state + k)]);
  }

 private:
  Body body_;
};

}  // namespace

void registerControlFlowKernels(KernelRegistry& r) {
  r.add("If", [](const ir::Node& n, const ir::Graph&) { return std::make_unique<IfKernel>(n); });
  r.add("Loop", [](const ir::Node& n, const ir::Graph&) { return std::make_unique<LoopKernel>(n); });
  r.add("Scan", [](const ir::Node& n, const ir::Graph& g) -> std::unique_ptr<Kernel> {
    if (g.opset < 9) return std::make_unique<Scan8Kernel>(n);
    return std::make_unique<ScanKernel>(n);
  });
}

}  // namespace npuc::engine
