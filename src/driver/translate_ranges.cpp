// translate() of a package serving every size of --input_shape ranges (package/shape_ranges.hpp, docs/aipp.md "Gears
// and shape ranges"). The model is translated once at its largest sizes (the capacity: every tensor's memory), with
// Concats as copy layers (a slab's place would move with the size); the stage `ranges` then
//   1. sweeps each ranged dimension over its range on the graph as it was lowered, the others at their largest, and
//      records every tensor's dims from the model's own shape inference: the package's table (a dimension of a layer's
//      reference follows at most one ranged dimension; one that follows two, or a layer's view of another shape over a
//      tensor whose size moves, is refused naming the layer);
//   2. translates the model as an ordinary package at a few sizes of the range (the smallest corner, and per ranged
//      dimension its second size and its middle) and requires each to be the capacity package specialized to that size
//      (package::specializeShapes): the same layers, parameters, weights and dims. A layer whose parameters move with
//      the size (padding `SAME`, a Reshape to fixed dims, …) is refused here, naming it and the size.
#include "driver/translate_reports.hpp"
#include "driver/translate_stages.hpp"
#include "driver/translation.hpp"

#include "ops/registry.hpp"
#include "package/shape_ranges.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <bit>
#include <map>
#include <set>

namespace npuc {

namespace fs = std::filesystem;

TranslateResult translateRanges(const TranslateOptions& o, const std::vector<package::RangeSymbol>& symbols,
                                const std::function<void(const std::string&, double)>& progress) {
  std::string which;
  for (const package::RangeSymbol& s : symbols) which += (which.empty() ? "" : ", ") + fmt::format("{}[{}] {}~{}", s.value, s.dim, s.lo, s.hi);
  const target::Target t = target::loadTarget(o.target);
  if (numericsTraits(t.numerics).activation_bytes == 1)
    fail(ErrorCode::kInvalidArgument, "--input_shape ranges ({}): target '{}' has {} numerics, calibrated at one size; a package serving a "
         "range is float32 or float16 (fix the size with --input-shape NAME=DIMS, or give the sizes as gears)", which, t.name,
         numericsName(t.numerics));
  if (!o.calibration.empty())
    fail(ErrorCode::kInvalidArgument, "--input_shape ranges ({}): calibration samples (--calib) are of one size; a package serving a range "
         "is translated without them (or fix the size with --input-shape NAME=DIMS)", which);
  if (!o.prepost.empty())
    fail(ErrorCode::kInvalidArgument, "--input_shape ranges ({}): a pre/post-processing definition fixes the model's input size (fix it "
         "with --input-shape NAME=DIMS)", which);
  TranslateOptions cap = o;
  cap.concat_copies = true;  // (a slab written in place would move with the size)
  return translateStages(cap, symbols, progress);
}

namespace stages {

bool servesRanges(const Translation& tr) { return !tr.range_symbols.empty() && writesPackage(tr); }

namespace {

/// Where a ranged dimension is set in the lowered graph: a graph input's dims, or the size attributes of the dynamic
/// AIPP node that makes the model input from a frame.
struct Site {
  ir::ValueId input = ir::kNoValue;
  ir::NodeId aipp = ir::kNoNode;
  std::string value;  // the package's name of the ranged tensor (the AIPP layer's output behind a frame)
};

Site siteOf(const ir::Graph& g, const package::RangeSymbol& s) {
  for (ir::ValueId v : g.inputs()) {
    if (g.value(v).name != s.value) continue;
    for (ir::NodeId id : g.order()) {
      const ir::Node& n = g.node(id);
      if (n.domain == "ai.npuc" && n.op == "Aipp" && !n.inputs.empty() && n.inputs[0] == v) {
        if (s.dim != 2 && s.dim != 3)
          fail(ErrorCode::kUnsupported, "--input_shape '{}': dimension {} is a range, and its AIPP stage fixes the batch and channels "
               "(only the height and width of an AIPP output may be ranged)", s.value, s.dim);
        if (!n.attrInt("dynamic", 0))
          fail(ErrorCode::kUnsupported, "--input_shape '{}': its static AIPP stage fixes the size", s.value);
        return {ir::kNoValue, id, g.value(n.outputs[0]).name};
      }
    }
    if (s.dim >= g.value(v).type.shape.size())
      fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} is a range, and the input has rank {}", s.value, s.dim,
           g.value(v).type.shape.size());
    return {v, ir::kNoNode, s.value};
  }
  fail(ErrorCode::kUnsupported, "--input_shape '{}': the translated model has no input of that name", s.value);
}

void setSize(ir::Graph& g, const Site& site, uint32_t dim, int64_t v) {
  if (site.aipp != ir::kNoNode) {
    g.node(site.aipp).attrs[dim == 2 ? "height" : "width"] = ir::Attr(v);
    return;
  }
  g.value(site.input).type.shape[dim] = v;
}

/// Every value a node writes inferred again from the graph's inputs (an error names the node that cannot take them).
void reinfer(ir::Graph& g) {
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).outputs)
      if (v != ir::kNoValue) g.value(v).type = ir::Type{};
  ops::inferShapes(g);
}

/// What differs between `a` (the capacity package specialized) and `b` (translated at that size), or "".
std::string difference(const package::Package& a, const package::Package& b) {
  if (a.mac.size() != b.mac.size() || a.vec.size() != b.vec.size() || a.layers.size() != b.layers.size())
    return fmt::format("{} layers there, {} at the largest size", b.layers.size(), a.layers.size());
  if (a.weights != b.weights) return "the weights differ";
  auto refText = [](const package::TensorRef& r) { return fmt::format("{} {}", package::elemName(r.type), fmt::join(package::storedDims(r), "x")); };
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const package::LayerInfo &la = a.layers[i], &lb = b.layers[i];
    const package::Descriptor& da = (la.engine == package::Engine::kMac ? a.mac : a.vec)[la.index];
    const package::Descriptor& db = (lb.engine == package::Engine::kMac ? b.mac : b.vec)[lb.index];
    const std::string who = fmt::format("layer '{}' ({})", la.name, package::layerKindName(da.kind));
    if (la.name != lb.name || da.kind != db.kind || la.engine != lb.engine) return fmt::format("{} is '{}' ({}) there", who, lb.name, package::layerKindName(db.kind));
    if (da.act != db.act || da.act_a != db.act_a || da.act_b != db.act_b || da.n_in != db.n_in || da.n_out != db.n_out)
      return who + ": its activation or tensor count differ";
    if (package::paramWords(a, da) != package::paramWords(b, db)) return who + ": its parameters differ (they depend on the size)";
    for (int k = 0; k < da.n_in + da.n_out; ++k) {
      const package::TensorRef &ra = da.refs[static_cast<size_t>(k)], &rb = db.refs[static_cast<size_t>(k)];
      if (ra.type != rb.type || ra.layout != rb.layout || package::storedDims(ra) != package::storedDims(rb))
        return fmt::format("{}: {} {} is {} there, {} from the range's table", who, k < da.n_in ? "input" : "output",
                           k < da.n_in ? k : k - da.n_in, refText(rb), refText(ra));
    }
  }
  for (auto [io, xa, xb] : {std::tuple{"input", &a.inputs, &b.inputs}, std::tuple{"output", &a.outputs, &b.outputs}}) {
    if (xa->size() != xb->size()) return fmt::format("{} {}s there, {} at the largest size", xb->size(), io, xa->size());
    for (size_t i = 0; i < xa->size(); ++i)
      if ((*xa)[i].name != (*xb)[i].name || refText((*xa)[i].ref) != refText((*xb)[i].ref))
        return fmt::format("{} '{}' is {} there, {} from the range's table", io, (*xb)[i].name, refText((*xb)[i].ref), refText((*xa)[i].ref));
  }
  return "";
}

}  // namespace

namespace {

/// The sweeps of the ranges over the graph as lowered: each needed value's dims at every size of each range.
struct Sweep {
  std::vector<Site> sites;
  std::vector<std::vector<size_t>> groups;               // the package's symbols: ranged dims moving together (indices)
  std::set<ir::ValueId> needed;                          // the values the package's references and inputs / outputs carry
  std::map<ir::ValueId, Shape> capacity;                 // their dims at the largest sizes
  std::map<ir::ValueId, std::vector<uint32_t>> follows;  // value -> per dim, a bit per range it moves with
  std::map<std::tuple<ir::ValueId, size_t, size_t>, std::vector<uint32_t>> sizes;  // (value, dim, range) -> dims over the range
};

ir::ValueId ioValue(const ir::Graph& g, const std::string& name) {
  const std::optional<ir::ValueId> v = g.findValue(name);
  if (!v) fail(ErrorCode::kInternal, "shape ranges: the package's tensor '{}' is no value of the lowered graph", name);
  return *v;
}

/// 1. Per range, the others at their largest: the dims of every needed value at each size. The model as imported (no
/// optimizer rewrite, no AIPP) is swept alongside: a rewrite that holds at the largest size only (a ceil-mode pooling's
/// pads, a folded size) shows as a tensor of both whose dims then differ; a node padding `auto_pad SAME` (pads the
/// lowering computes from the size) whose output moves is refused.
Sweep sweep(Translation& tr) {
  ir::Graph& g = *tr.range_graph;
  const codegen::Lowered& low = *tr.lowered;
  const std::vector<package::RangeSymbol>& symbols = tr.range_symbols;
  Sweep w;
  for (const package::RangeSymbol& s : symbols) w.sites.push_back(siteOf(g, s));
  for (const auto& refs : low.ref_values)
    for (ir::ValueId v : refs)
      if (v != ir::kNoValue && !g.value(v).isConstant()) w.needed.insert(v);
  for (const auto* io : {&low.pkg.inputs, &low.pkg.outputs})
    for (const package::IoTensor& t : *io) w.needed.insert(ioValue(g, t.name));
  reinfer(g);
  for (ir::ValueId v : w.needed) w.capacity[v] = g.value(v).type.shape;
  LoadOptions lo = modelFiles(tr.o);
  lo.input_shapes = tr.o.input_shapes;
  lo.optimize = false;
  Model original = withContext(tr.o.onnx.string(), [&] { return Model::load(tr.o.onnx, lo); });
  ir::Graph& og = mutableGraphOf(original);
  std::vector<ir::ValueId> og_inputs;
  for (const package::RangeSymbol& s : symbols) og_inputs.push_back(ioValue(og, s.value));
  std::map<ir::ValueId, ir::ValueId> twin;  // a needed value -> the imported model's tensor of that name and dims
  for (ir::ValueId v : w.needed)
    if (auto o = og.findValue(g.value(v).name); o && og.value(*o).type.shape == w.capacity.at(v)) twin[v] = *o;
  for (size_t j = 0; j < symbols.size(); ++j)  // (the AIPP stage's output stands for the model input)
    if (w.sites[j].aipp != ir::kNoNode) twin[g.node(w.sites[j].aipp).outputs[0]] = og_inputs[j];
  std::map<ir::NodeId, Shape> padded_same;  // nodes padding SAME: their output at the largest sizes
  for (ir::NodeId id : og.order())
    if (const std::string ap = og.node(id).attrString("auto_pad", "NOTSET");
        (ap == "SAME_UPPER" || ap == "SAME_LOWER") && !og.node(id).outputs.empty() && og.node(id).outputs[0] != ir::kNoValue)
      padded_same[id] = og.value(og.node(id).outputs[0]).type.shape;
  auto setGroup = [&](const std::vector<size_t>& group, int64_t v) {
    for (size_t k : group) {
      setSize(g, w.sites[k], symbols[k].dim, v == 0 ? symbols[k].hi : v);
      og.value(og_inputs[k]).type.shape[symbols[k].dim] = v == 0 ? symbols[k].hi : v;
    }
  };
  auto runs = [&](const std::vector<size_t>& group, int64_t v) {  // (the graphs back at the largest sizes after)
    setGroup(group, v);
    bool ok = true;
    try {
      reinfer(og);
      reinfer(g);
    } catch (const Error&) {
      ok = false;
    }
    setGroup(group, 0);
    return ok;
  };
  // Ranged dims the model needs equal move together (an image and its mask): a dim that does not run alone at the
  // smallest size of its range is tied to the ranged dims of the same index and range of the other inputs.
  std::vector<char> grouped(symbols.size(), 0);
  for (size_t j = 0; j < symbols.size(); ++j) {
    if (grouped[j]) continue;
    std::vector<size_t> group = {j};
    if (!runs(group, symbols[j].lo)) {
      std::vector<size_t> tied = group;
      for (size_t k = j + 1; k < symbols.size(); ++k)
        if (!grouped[k] && symbols[k].value != symbols[j].value && symbols[k].dim == symbols[j].dim && symbols[k].lo == symbols[j].lo &&
            symbols[k].hi == symbols[j].hi)
          tied.push_back(k);
      if (tied.size() > 1 && runs(tied, symbols[j].lo)) group = tied;
    }
    for (size_t k : group) grouped[k] = 1;
    w.groups.push_back(group);
  }
  reinfer(og);
  reinfer(g);
  for (size_t j = 0; j < w.groups.size(); ++j) {
    const package::RangeSymbol& s = symbols[w.groups[j].front()];
    for (uint32_t v = s.lo; v <= s.hi; ++v) {
      setGroup(w.groups[j], v);
      for (ir::Graph* graph : {&og, &g}) {
        try {
          reinfer(*graph);
        } catch (const Error& e) {
          fail(ErrorCode::kUnsupported, "the model does not run at {}[{}] = {} (inside the range {}~{}): {}", s.value, s.dim, v, s.lo,
               s.hi, e.message());
        }
      }
      for (const auto& [id, at_hi] : padded_same)
        if (og.value(og.node(id).outputs[0]).type.shape != at_hi)
          fail(ErrorCode::kUnsupported, "{}: auto_pad {} pads by the size, and its size moves with the range {}[{}] {}~{}: no package form "
               "serves the range (the model's own `pads` do)", og.node(id).label(), og.node(id).attrString("auto_pad", ""), s.value, s.dim,
               s.lo, s.hi);
      for (ir::ValueId x : w.needed) {
        const Shape& now = g.value(x).type.shape;
        if (now.size() != w.capacity.at(x).size())
          fail(ErrorCode::kUnsupported, "at {}[{}] = {}, tensor '{}' has rank {} (at the largest size {})", s.value, s.dim, v, g.value(x).name,
               now.size(), w.capacity.at(x).size());
        for (size_t d = 0; d < now.size(); ++d) w.sizes[{x, d, j}].push_back(static_cast<uint32_t>(now[d]));
        if (auto t = twin.find(x); t != twin.end() && og.value(t->second).type.shape != now)
          fail(ErrorCode::kUnsupported, "at {}[{}] = {} tensor '{}' is {} in the model, {} as optimized for the largest size (a rewrite that "
               "holds at that size only: a ceil-mode pooling's end pads, a size folded into a constant): no package serves the range "
               "{}~{}", s.value, s.dim, v, g.value(x).name, shapeStr(og.value(t->second).type.shape), shapeStr(now), s.lo, s.hi);
      }
    }
    setGroup(w.groups[j], 0);
    for (const auto& [key, vals] : w.sizes) {
      const auto [x, d, sym] = key;
      if (sym != j || std::all_of(vals.begin(), vals.end(), [&, x = x, d = d](uint32_t z) { return z == w.capacity.at(x)[d]; })) continue;
      auto& f = w.follows[x];
      f.resize(w.capacity.at(x).size(), 0);
      f[d] |= 1u << j;
    }
  }
  reinfer(g);
  return w;
}

/// The package's table from the sweeps: a function per distinct (range, dims), each reference dimension that moves
/// pointing at one. A dimension moving with two ranges, a layer's view of other dims over a tensor that moves, and a
/// tensor of the lowering's own beside tensors that move are refused naming the layer.
package::ShapeRanges table(const Translation& tr, const Sweep& w) {
  const ir::Graph& g = *tr.range_graph;
  const codegen::Lowered& low = *tr.lowered;
  const package::Package& p = low.pkg;
  package::ShapeRanges r;
  for (const std::vector<size_t>& group : w.groups) {
    const package::RangeSymbol& s = tr.range_symbols[group.front()];
    r.symbols.push_back({w.sites[group.front()].value, s.dim, s.lo, s.hi, {}});
    for (size_t k = 1; k < group.size(); ++k) r.symbols.back().also.push_back({w.sites[group[k]].value, tr.range_symbols[group[k]].dim});
  }
  std::map<std::pair<uint32_t, std::vector<uint32_t>>, uint32_t> fn_of;
  auto function = [&](ir::ValueId x, size_t d, const std::string& who) -> std::optional<uint32_t> {
    auto f = w.follows.find(x);
    if (f == w.follows.end() || d >= f->second.size() || f->second[d] == 0) return std::nullopt;
    if (std::popcount(f->second[d]) > 1)
      fail(ErrorCode::kUnsupported, "{}: dimension {} of tensor '{}' moves with more than one ranged dimension ({}): the package's table "
           "follows one per dimension", who, d, g.value(x).name, package::rangesText(r));
    const uint32_t j = static_cast<uint32_t>(std::countr_zero(f->second[d]));
    const auto key = std::make_pair(j, w.sizes.at({x, d, j}));
    auto it = fn_of.find(key);
    if (it == fn_of.end()) {
      it = fn_of.emplace(key, static_cast<uint32_t>(r.functions.size())).first;
      r.functions.push_back({j, key.second});
    }
    return it->second;
  };
  const package::Element* weights = p.element("weight");
  for (size_t i = 0; i < low.ref_values.size(); ++i) {
    const package::LayerInfo& l = p.layers[i];
    const package::Descriptor& d = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
    const std::string who = fmt::format("layer '{}' ({})", l.name, package::layerKindName(d.kind));
    bool moves = false;
    for (size_t k = 0; k < low.ref_values[i].size(); ++k) {
      const ir::ValueId x = low.ref_values[i][k];
      if (x == ir::kNoValue || !w.follows.count(x)) continue;
      moves = true;
      if (low.ref_views[i][k])
        fail(ErrorCode::kUnsupported, "{} holds tensor '{}' under other dims than its own (a view of the layer's), and its size moves with "
             "the range ({}): no package form serves the range", who, g.value(x).name, package::rangesText(r));
      for (size_t dim = 0; dim < d.refs[k].rank; ++dim)
        if (auto fn = function(x, dim, who)) r.dims.push_back({l.seq, static_cast<uint32_t>(k), static_cast<uint32_t>(dim), *fn});
    }
    for (size_t k = 0; moves && k < low.ref_values[i].size(); ++k) {
      const uint32_t addr = d.refs[k].addr;
      if (low.ref_values[i][k] == ir::kNoValue && !(weights && addr >= weights->addr && addr - weights->addr < weights->size))
        fail(ErrorCode::kUnsupported, "{} holds a tensor of the lowering's own beside tensors whose size moves with the range ({}): no "
             "package form serves the range", who, package::rangesText(r));
    }
  }
  for (bool output : {false, true}) {
    const auto& list = output ? p.outputs : p.inputs;
    for (size_t i = 0; i < list.size(); ++i)
      for (size_t dim = 0; dim < list[i].ref.rank; ++dim)
        if (auto fn = function(ioValue(g, list[i].name), dim, fmt::format("{} '{}'", output ? "output" : "input", list[i].name)))
          r.io.push_back({output, static_cast<uint32_t>(i), static_cast<uint32_t>(dim), *fn});
  }
  return r;
}

/// 2. Ordinary translations at sizes of the ranges (the smallest corner; per range its second and middle sizes, the
/// others at their largest), each required to be `p` specialized to that size.
void checkAtSizes(const Translation& tr, const Sweep& w, const package::Package& p) {
  const std::vector<package::RangeSymbol>& symbols = p.ranges->symbols;  // (one per group of tr.range_symbols)
  const std::string ranges = package::rangesText(*p.ranges);
  std::vector<std::vector<int64_t>> samples;
  std::vector<int64_t> lo, hi;
  for (const auto& s : symbols) lo.push_back(s.lo), hi.push_back(s.hi);
  samples.push_back(lo);
  for (size_t j = 0; j < symbols.size(); ++j)
    for (int64_t v : {int64_t{symbols[j].lo} + 1, (int64_t{symbols[j].lo} + symbols[j].hi) / 2}) {
      std::vector<int64_t> at = hi;
      at[j] = std::min<int64_t>(v, symbols[j].hi);
      if (at != hi && std::find(samples.begin(), samples.end(), at) == samples.end()) samples.push_back(at);
    }
  static std::atomic<int> counter{0};
  const fs::path scratch = fs::temp_directory_path() / fmt::format("npuc-ranges-{}-{}", ::getpid(), counter++);
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove{scratch};
  for (const std::vector<int64_t>& at : samples) {
    TranslateOptions o = tr.o;
    o.out_root = scratch;
    o.prefix = "size";
    std::string where;
    for (size_t j = 0; j < w.groups.size(); ++j)
      for (size_t k : w.groups[j]) {
        const package::RangeSymbol& s = tr.range_symbols[k];
        o.input_shapes[s.value][s.dim] = at[j];
        where += (where.empty() ? "" : ", ") + fmt::format("{}[{}] = {}", s.value, s.dim, at[j]);
      }
    TranslateResult res;
    try {
      res = translateStages(o, {}, nullptr);
    } catch (const Error& e) {
      fail(ErrorCode::kUnsupported, "the model does not translate at {} (inside the ranges {}): {}", where, ranges, e.message());
    }
    if (!res.ok)
      fail(ErrorCode::kUnsupported, "the model does not translate at {} (inside the ranges {}): {} row(s) in its error report, the first: {}",
           where, ranges, res.errors.size(), res.errors.empty() ? "" : res.errors[0].node + ": " + res.errors[0].rule);
    const std::string why = difference(package::specializeShapes(p, at, "the package"), package::readPackage(scratch / "size"));
    if (!why.empty())
      fail(ErrorCode::kUnsupported, "at {} the model's package is not the largest size's with the range's dims ({}): {}", where, ranges, why);
  }
}

}  // namespace

void shapeRanges(Translation& tr) {
  // (the summary's thread finishes first: the translations below fork for ONNX's shape check, which is safe only
  // with no other thread of this process inside the allocator or a lock)
  if (tr.summary.valid()) tr.summary.wait();
  try {
    const Sweep w = sweep(tr);
    package::Package& p = tr.lowered->pkg;
    p.ranges = table(tr, w);
    package::validatePackage(p, "the package serving " + package::rangesText(*p.ranges));
    checkAtSizes(tr, w, p);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    std::string names;
    for (const package::RangeSymbol& s : tr.range_symbols)
      if (names.find("'" + s.value + "'") == std::string::npos) names += (names.empty() ? "'" : ", '") + s.value + "'";
    throw Error(e.code(), fmt::format("{} — one size of the range still translates: fix it with --input-shape for {} (or give the "
                                      "sizes as gears: --dynamic_image_size / --dynamic_batch_size)", e.message(), names));
  }
}

}  // namespace stages
}  // namespace npuc
