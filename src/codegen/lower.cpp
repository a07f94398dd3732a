// Lowering to descriptors (lower.hpp). Docs: docs/package-format.md (what each descriptor kind means) and
// docs/memory-planning.md (where activations go).
#include "codegen/lower.hpp"

#include "codegen/lowerer.hpp"

#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"
#include "package/interval_map.hpp"
#include "plan/memory.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace npuc::codegen {


namespace detail {

void Lowerer::lowerNode(const ir::Node& n) {
  if (const plugin::CustomOp* c = ops::customOpOf(n)) return customNode(n, *c);
  if (n.domain != "" && n.domain != "ai.npuc") unsupported(n, "domain '{}' has no package form", n.domain);
  // A dynamic tensor (typed at its capacity by withCapacities) is read by the layers readsDynamic names, so far.
  const bool reads_bounded = readsBounded(n);
  const bool reads_extent = n.domain.empty() && n.op == "Shape";  // (Shape of a dynamic tensor: its extent)
  // A layer writing a dynamic tensor from static inputs (ConstantOfShape of a dynamic tensor's Shape): dynamic too.
  const bool writes_bounded = !(n.domain.empty() && n.op == "NonZero") && std::any_of(n.outputs.begin(), n.outputs.end(), [&](ir::ValueId v) {
    return v != ir::kNoValue && g_.value(v).bounded;
  });
  for (size_t i = 0; i < n.inputs.size() && reads_bounded && !readsDynamic(n) && !reads_extent; ++i)
    if (n.inputs[i] != ir::kNoValue && g_.value(n.inputs[i]).bounded)
      unsupported(n, "input {} is a tensor whose shape the data decide (at most {}); {} does not read one in packages yet "
                  "(Transpose, GatherND, Gather, TopK, Concat, Shape and element-wise ops do; docs/roadmap.md: bounded "
                  "dynamic shapes)", i,
                  g_.value(n.inputs[i]).type.str(), n.op);
  static const LowerTable table = [] {
    LowerTable t;
    registerNnLowerings(t);
    registerElementwiseLowerings(t);
    registerTensorLowerings(t);
    registerReduceLowerings(t);
    registerPrepostLowerings(t);
    registerQuantLowerings(t);
    registerIndexingLowerings(t);
    registerControlLowerings(t);
    return t;
  }();
  auto it = table.find({n.domain, n.op});
  if (it == table.end() || (!it->second.member && !it->second.fn))
    unsupported(n, "op {} has no package form yet (docs/package-format.md lists the layer kinds)", n.op);
  // Packages hold static shapes: a node reading or writing a value of unknown shape has no package form (and no
  // lowering indexes a shape it does not have).
  // (Named by position: check caches the reason for every node of the same signature.)
  auto dynamic = [&](ir::ValueId v) { return v != ir::kNoValue && !g_.value(v).isConstant() && !g_.value(v).type.isStatic(); };
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (dynamic(n.inputs[i]))
      unsupported(n, "input {} has a dynamic shape ({}); packages need static shapes", i, g_.value(n.inputs[i]).type.str());
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if ((uses_.count(n.outputs[i]) || is_output_.count(n.outputs[i])) && dynamic(n.outputs[i]))
      unsupported(n, "output {} has a dynamic shape ({}); packages need static shapes", i, g_.value(n.outputs[i]).type.str());
  // Typed values (bool, integers) go only where the layer kinds define them: the ops registered as taking them.
  typed_ = false;
  const ir::Value* typed_value = nullptr;
  auto look = [&](ir::ValueId v) {
    if (v == ir::kNoValue || typed_value) return;
    const ir::Value& val = g_.value(v);
    if (!val.isConstant() && isTypedValue(val)) typed_value = &val;
  };
  for (ir::ValueId v : n.inputs) look(v);
  for (ir::ValueId v : n.outputs)
    if (v != ir::kNoValue && (uses_.count(v) || is_output_.count(v))) look(v);  // an unused output takes no memory
  if (typed_value) {
    if (!it->second.typed)
      unsupported(n, "op {} on {} values has no package form (typed values: docs/package-format.md)", n.op,
                  dtypeName(typed_value->type.dtype));
    typed_ = true;
  }
  // A layer an int8 package keeps at float16 (LowerOptions::half_layers): its float values and weights in float16.
  struct Width {
    Lowerer& l;
    ElemType saved;
    Width(Lowerer& lw, bool half) : l(lw), saved(lw.ft_) {
      l.half_node_ = half;
      if (half) l.ft_ = ElemType::kF16;
    }
    ~Width() { l.ft_ = saved, l.half_node_ = false; }
  } width(*this, !half_layers_.empty() && half_layers_.count(n.name) && ft_ == ElemType::kF32);
  if (half_node_) half_lowered_.insert(n.name);
  const size_t first = descs_.size();
  if (it->second.member) (this->*(it->second.member))(n);
  else it->second.fn(*this, n);
  // (an If's layers are its own and its branches': the branches' layers are made dynamic as they are lowered, and its
  // moves carry its dynamic outputs' extents)
  const bool control = n.domain.empty() && n.op == "If";
  if (((reads_bounded && !reads_extent) || writes_bounded) && !control) makeDynamic(n, first);
  typed_ = false;
}

}  // namespace detail

using detail::Lowerer;
using detail::LVal;
using detail::LDesc;
using detail::alignUp;
using package::Act;
using package::ElemType;
using package::Engine;
using package::LayerKind;

namespace {

package::TensorRef makeRef(uint64_t addr, ElemType t, const Shape& s, const std::string& what) {
  if (s.size() > package::kMaxRank)
    fail(ErrorCode::kUnsupported, "value '{}' has rank {}; packages hold tensors of rank {} at most", what, s.size(), package::kMaxRank);
  uint64_t total = package::elemSize(t);
  for (int64_t d : s) {
    if (d < 0 || static_cast<uint64_t>(d) > 0xFFFF'FFFFu) fail(ErrorCode::kUnsupported, "value '{}': dim {} does not fit a package", what, d);
    total *= static_cast<uint64_t>(std::max<int64_t>(d, 1));
    if (total > 0xFFFF'FFFFu) fail(ErrorCode::kUnsupported, "value '{}' ({}) is larger than 4 GiB: no package form", what, shapeStr(s));
  }
  package::TensorRef r;
  r.addr = static_cast<uint32_t>(addr);
  r.type = t;
  r.rank = static_cast<uint8_t>(s.size());
  uint64_t n = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    r.dims[i] = static_cast<uint32_t>(s[i]);
    n *= static_cast<uint64_t>(s[i]);
  }
  r.bytes = static_cast<uint32_t>(n * package::elemSize(t));
  return r;
}

const char* spaceName(char s) {
  switch (s) {
    case 'i': return "data_in";
    case 'o': return "data_out";
    case 'w': return "weight";
    default: return "data";
  }
}

}  // namespace

namespace {
/// The graph's inputs end to end in data_in and its outputs in data_out (64-byte aligned), a dynamic output's extent
/// right after it; returns the two spaces' sizes.
std::pair<uint64_t, uint64_t> placeInputsAndOutputs(const ir::Graph& g, const std::map<ir::ValueId, int>& of,
                                                    const std::map<int, int>& extent_of, std::vector<LVal>& vals) {
  uint64_t in_bytes = 0, out_bytes = 0;
  auto place = [&](int vi, uint64_t& end) {
    LVal& l = vals[static_cast<size_t>(vi)];
    l.offset = end;
    end = alignUp(end + bytesOf(l), 64);
  };
  for (ir::ValueId v : g.inputs())
    if (auto it = of.find(v); it != of.end()) place(it->second, in_bytes);
  for (ir::ValueId v : g.outputs()) {
    place(of.at(v), out_bytes);
    if (auto e = extent_of.find(of.at(v)); e != extent_of.end()) place(e->second, out_bytes);
  }
  return {in_bytes, out_bytes};
}

Lowered lowerImpl(const ir::Graph& g, const target::Target& t, const LowerOptions& o, ir::Graph* consume);

}

Lowered lower(const ir::Graph& g, const target::Target& t, const LowerOptions& o) { return lowerImpl(g, t, o, nullptr); }
Lowered lowerConsuming(ir::Graph& g, const target::Target& t, const LowerOptions& o) { return lowerImpl(g, t, o, &g); }

namespace {

/// Concat in place: each input of a Concat whose inputs lie end to end in its result (every dimension before the
/// axis is 1) becomes a slab of the result, written there by its producer, and the Concat's copy layer goes. Each
/// input must be a 'data' value of the result's element type written by a layer of its own (not an alias, a graph
/// input or output, a constant, nor an input twice), and each slab must start 64-byte aligned (the kernels' row
/// loads). Not for int8-pow2, where a layer's codes carry their own per-frame shift. Other aliases of an input
/// follow it into the slab. The results are placed as buffers of their own, alive from their first slab's writer to
/// their last reader (lowerImpl). `aliased` gets the names of the Concat nodes that lost their layer.
void concatsInPlace(std::vector<LVal>& vals, std::vector<LDesc>& descs, std::vector<std::string>& aliased) {
  std::vector<int> writer(vals.size(), -1);
  bool any = false;
  std::vector<bool> drop(descs.size(), false);
  for (size_t i = 0; i < descs.size(); ++i) writer[static_cast<size_t>(descs[i].out)] = static_cast<int>(i);
  for (size_t i = 0; i < descs.size(); ++i) {
    const LDesc& d = descs[i];
    const LVal& y = vals[static_cast<size_t>(d.out)];
    if (d.kind != LayerKind::kConcat || d.params.empty() || y.space != 'd' || y.alias >= 0 || !d.views.empty() || d.dynamic) continue;
    const size_t axis = d.params[0];
    if (axis >= y.shape.size()) continue;
    bool ok = true;
    for (size_t k = 0; k < axis; ++k) ok &= y.shape[k] == 1;
    std::set<int> seen;
    uint64_t at = 0;
    for (int v : d.ins) {
      const LVal& x = vals[static_cast<size_t>(v)];
      const int w = writer[static_cast<size_t>(v)];
      ok &= x.space == 'd' && x.alias < 0 && x.type == y.type && w >= 0 && w < static_cast<int>(i) && !drop[static_cast<size_t>(w)] &&
            seen.insert(v).second && at % 64 == 0;
      at += bytesOf(x);
    }
    if (!ok || at != bytesOf(y)) continue;
    at = 0;
    for (int v : d.ins) {
      vals[static_cast<size_t>(v)].alias = d.out;
      vals[static_cast<size_t>(v)].alias_offset = at;
      at += bytesOf(vals[static_cast<size_t>(v)]);
    }
    drop[i] = true;
    any = true;
    // (a Concat of more than 7 inputs is a chain of layers "NAME/partK" then NAME: only a node's own name is listed)
    if (std::find(d.onnx_nodes.begin(), d.onnx_nodes.end(), d.name) != d.onnx_nodes.end()) aliased.push_back(d.name);
  }
  if (!any) return;
  for (LVal& v : vals)  // (aliases of a slab: of the root, at the slab's offset)
    if (v.alias >= 0 && vals[static_cast<size_t>(v.alias)].alias >= 0) {
      const LVal& slab = vals[static_cast<size_t>(v.alias)];
      v.alias_offset += slab.alias_offset;
      v.alias = slab.alias;
    }
  std::vector<LDesc> kept;
  for (size_t i = 0; i < descs.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(descs[i]));
  descs = std::move(kept);
}

/// Appendix B of the DRP-AI manual (Target::absorb_boundary_transposes): a channel-last model's boundary Transposes
/// take no layer. The boundaries are the values of Layout::kNhwc: a model input (or what pre-processing hands the
/// model) and a model output (or what it hands post-processing) held [N, H, W, C]. A Transpose to channels-first
/// ({0, r-1, 1, …}, rank 3 to 6) of one becomes a channel-last view of it that its readers take as channel-last
/// references; a Transpose back to channel-last ({0, 2, …, 1}) that writes one has its input's writer write it
/// channel-last instead (its readers, if any, read it as it is). Only where nothing else needs the value in the other
/// layout: no alias, control or custom layer, other reader, or view that reorders its bytes. `aliased` gets the
/// Transposes' names.
void absorbBoundaryTransposes(const ir::Graph& g, std::vector<LVal>& vals, std::vector<LDesc>& descs,
                              std::vector<std::string>& aliased) {
  std::set<std::string> nhwc;  // the boundaries (ir::markChannelLastBoundaries, the pre/post bridge)
  for (ir::ValueId v : g.valueIds())
    if (g.value(v).layout == ir::Layout::kNhwc) nhwc.insert(g.value(v).name);
  const size_t nv = vals.size();
  std::vector<int> writer(nv, -1), readers(nv, 0);
  std::vector<bool> aliased_by(nv, false), bad_reader(nv, false);
  // A reference's view keeps a channel-last value's bytes in order when it has the value's N and C and its spatial
  // dims but for 1s (a 1-D window's N×C×1×W).
  auto viewKeeps = [](const LDesc& d, size_t k, const Shape& s) {
    if (d.views.empty()) return true;
    const Shape& v = d.views[k];
    auto spatial = [](const Shape& x) {
      Shape r;
      for (size_t i = 2; i < x.size(); ++i)
        if (x[i] != 1) r.push_back(x[i]);
      return r;
    };
    return v.size() >= 3 && v[0] == s[0] && v[1] == s[1] && spatial(v) == spatial(s);
  };
  for (size_t i = 0; i < descs.size(); ++i) {
    const LDesc& d = descs[i];
    writer[static_cast<size_t>(d.out)] = static_cast<int>(i);
    const bool plain = d.region == 0 && !d.custom && d.kind != LayerKind::kCustom;
    for (size_t k = 0; k < d.ins.size(); ++k) {
      const size_t v = static_cast<size_t>(d.ins[k]);
      ++readers[v];
      if (!plain || vals[v].shape.size() < 3 || !viewKeeps(d, k, vals[v].shape)) bad_reader[v] = true;
    }
  }
  for (const LVal& v : vals)
    if (v.alias >= 0) aliased_by[static_cast<size_t>(v.alias)] = true;
  auto permIs = [](const LDesc& d, const std::vector<int64_t>& p) {
    if (d.params.size() != p.size()) return false;
    for (size_t k = 0; k < p.size(); ++k)
      if (d.params[k] != static_cast<uint32_t>(p[k])) return false;
    return true;
  };
  std::vector<bool> drop(descs.size(), false);
  for (size_t i = 0; i < descs.size(); ++i) {
    const LDesc& d = descs[i];
    if (d.kind != LayerKind::kTranspose || d.ins.size() != 1 || !d.views.empty()) continue;
    const int x = d.ins[0], y = d.out;
    LVal& xv = vals[static_cast<size_t>(x)];
    LVal& yv = vals[static_cast<size_t>(y)];
    const size_t r = xv.shape.size();
    if (r < 3 || r > package::kMaxRank || xv.channel_last || yv.alias >= 0 || yv.channel_last) continue;
    const int root = xv.alias >= 0 ? xv.alias : x;
    if (permIs(d, package::channelLastToLayer(r)) && nhwc.count(xv.name) && yv.space == 'd' && readers[static_cast<size_t>(y)] > 0 &&
        !bad_reader[static_cast<size_t>(y)] && !aliased_by[static_cast<size_t>(y)]) {
      yv.alias = root;  // (its readers' references: x's bytes, y's dims, channel-last)
      yv.alias_offset = xv.alias >= 0 ? xv.alias_offset : 0;
      yv.space = vals[static_cast<size_t>(root)].space;
      yv.channel_last = true;
    } else if (permIs(d, package::layerToChannelLast(r)) && nhwc.count(yv.name) && (yv.space == 'o' || yv.space == 'd') &&
               xv.space == 'd' && xv.alias < 0 && !aliased_by[static_cast<size_t>(x)] && readers[static_cast<size_t>(x)] == 1 &&
               writer[static_cast<size_t>(x)] >= 0) {
      LDesc& w = descs[static_cast<size_t>(writer[static_cast<size_t>(x)])];
      if (!viewKeeps(w, w.ins.size(), xv.shape) || !w.more_outs.empty() || w.region != 0 || w.custom ||
          drop[static_cast<size_t>(writer[static_cast<size_t>(x)])])
        continue;
      LVal z = yv;  // what x's writer now writes: y's bytes (its name and place), x's dims, channel-last
      z.shape = xv.shape;
      z.alias = y, z.alias_offset = 0;
      z.channel_last = true;
      z.writer = z.last_reader = -1;
      if (!z.quant) z.quant = xv.quant;
      vals.push_back(std::move(z));
      w.out = static_cast<int>(vals.size()) - 1;
    } else {
      continue;
    }
    drop[i] = true;
    if (std::find(d.onnx_nodes.begin(), d.onnx_nodes.end(), d.name) != d.onnx_nodes.end()) aliased.push_back(d.name);
  }
  std::vector<LDesc> kept;
  for (size_t i = 0; i < descs.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(descs[i]));
  descs = std::move(kept);
}

/// Each value's writer and last reader; refuses a graph output no layer computes and a dynamic shape.
void linkValues(const ir::Graph& g, const std::map<ir::ValueId, int>& of, std::vector<LVal>& vals,
                const std::vector<LDesc>& descs) {
  for (ir::ValueId v : g.outputs()) {
    auto it = of.find(v);
    if (it == of.end() || vals[static_cast<size_t>(it->second)].space != 'o')
      fail(ErrorCode::kUnsupported, "graph output '{}' is not computed by a layer (a constant or a graph input); no package form",
           g.value(v).name);
  }
  for (size_t i = 0; i < descs.size(); ++i) {
    for (int v : descs[i].ins) vals[static_cast<size_t>(v)].last_reader = static_cast<int>(i);
    vals[static_cast<size_t>(descs[i].out)].writer = static_cast<int>(i);
    for (int v : descs[i].more_outs) vals[static_cast<size_t>(v)].writer = static_cast<int>(i);
    for (int v : descs[i].owned) vals[static_cast<size_t>(v)].writer = static_cast<int>(i);
  }
  for (auto& v : vals)
    for (auto& d : v.shape)
      if (d < 0) fail(ErrorCode::kUnsupported, "value '{}' has a dynamic shape; packages need static shapes (--input-shape)", v.name);
}

/// Control layers (lower_control.cpp): a region runs again step after step, so what it reads that is written outside
/// it, and every value a control layer's moves or scalars touch, stays alive to the region's end.
void keepAliveOverRegions(std::vector<LVal>& vals, const std::vector<LDesc>& descs) {
  for (size_t c = 0; c < descs.size(); ++c) {
    if (!descs[c].region) continue;
    const int first = static_cast<int>(c) + 1, last = static_cast<int>(c) + descs[c].region;
    auto keep = [&](int v) { vals[static_cast<size_t>(v)].last_reader = std::max(vals[static_cast<size_t>(v)].last_reader, last); };
    auto outside = [&](int v) { return vals[static_cast<size_t>(v)].writer < first || vals[static_cast<size_t>(v)].writer > last; };
    for (auto& [word, v] : descs[c].addr_words) keep(v);
    keep(descs[c].out);
    for (int v : descs[c].more_outs) keep(v);
    for (int i = first; i <= last; ++i) {
      for (int v : descs[static_cast<size_t>(i)].ins)
        if (outside(v)) keep(v);
      for (auto& [word, v] : descs[static_cast<size_t>(i)].addr_words)
        if (outside(v)) keep(v);
    }
  }
}

/// A control layer's parameter words that hold the address of a value (`addressOf`, once values are placed).
template <class F>
void writeAddressWords(LDesc& d, const F& addressOf) {
  for (auto& [word, v] : d.addr_words) d.params[word] = addressOf(v);
}

/// Places the activations in the data space: a buffer per layer output alive from its writer to its last reader (a
/// Concat done in place: one for its slabs), planned sequentially or reused by liveness; each value's offset set.
plan::MemoryPlan placeActivations(std::vector<LVal>& vals, const std::vector<LDesc>& descs, bool reuse) {
  std::vector<plan::Buffer> bufs;
  std::vector<int> buf_val;
  std::map<int, size_t> slab_buffer;  // a Concat done in place: its result's buffer
  for (size_t i = 0; i < descs.size(); ++i) {
    // A custom layer's other outputs: buffers of their own, alive from the layer to their last reader (a Concat never
    // takes them in place: concatsInPlace knows only a layer's first output as a writer).
    std::vector<int> more = descs[i].more_outs;  // (and what a control layer writes through its moves)
    more.insert(more.end(), descs[i].owned.begin(), descs[i].owned.end());
    for (int v : more) {
      const LVal& l = vals[static_cast<size_t>(v)];
      if (l.space != 'd' || l.alias >= 0) continue;
      bufs.push_back({l.name, bytesOf(l), static_cast<int>(i), std::max(static_cast<int>(i), l.last_reader)});
      buf_val.push_back(v);
    }
    const int out = descs[i].out;
    LVal& l = vals[static_cast<size_t>(out)];
    if (l.space != 'd') continue;
    if (l.alias >= 0) {  // a slab of a Concat done in place: the result's buffer, from the first slab written
      LVal& r = vals[static_cast<size_t>(l.alias)];
      if (auto it = slab_buffer.find(l.alias); it != slab_buffer.end()) {
        bufs[it->second].last = std::max(bufs[it->second].last, static_cast<int>(i));  // (alive for every slab's writer)
        continue;
      }
      r.writer = static_cast<int>(i);
      slab_buffer[l.alias] = bufs.size();
      bufs.push_back({r.name, bytesOf(r), static_cast<int>(i), std::max(static_cast<int>(i), r.last_reader)});
      buf_val.push_back(l.alias);
      continue;
    }
    bufs.push_back({l.name, bytesOf(l), static_cast<int>(i), std::max(static_cast<int>(i), l.last_reader)});
    buf_val.push_back(out);
  }
  plan::MemoryPlan mp = reuse ? plan::planReuse(bufs) : plan::planSequential(bufs);
  for (size_t i = 0; i < bufs.size(); ++i) vals[static_cast<size_t>(buf_val[i])].offset = mp.offsets[i];
  for (auto& v : vals)
    if (v.alias >= 0 && v.space != 'w') v.offset = vals[static_cast<size_t>(v.alias)].offset + v.alias_offset;
  return mp;
}

/// Descriptors with waits: a descriptor waits for the latest earlier descriptor of the other engine whose
/// output it reads (RAW), whose input it overwrites (WAR) or whose output it overwrites (WAW) — unless an
/// earlier wait of its engine already covers it.
void addWaits(std::vector<package::Descriptor>& all, const std::vector<LDesc>& descs) {
  // Per engine, the last descriptor that wrote / read each byte (interval maps: O(n log n) over the program).
  package::IntervalMap<int64_t> last_write[2], last_read[2];
  auto span = [](const package::TensorRef& r) { return std::pair<uint64_t, uint64_t>{r.addr, uint64_t(r.addr) + r.bytes}; };
  int64_t covered[2] = {-1, -1};
  // An engine's maps are read only by later descriptors of the other engine: none after the last of those.
  int64_t last_of[2] = {-1, -1};
  for (size_t i = 0; i < all.size(); ++i) last_of[static_cast<int>(descs[i].engine)] = static_cast<int64_t>(i);
  for (size_t i = 0; i < all.size(); ++i) {
    package::Descriptor& d = all[i];
    int e = static_cast<int>(descs[i].engine), other = 1 - e;
    int64_t need = -1;
    auto latest = [&](const package::IntervalMap<int64_t>& m, const package::TensorRef& r) {
      auto [lo, hi] = span(r);
      m.forEachOverlap(lo, hi, [&](uint64_t, uint64_t, int64_t seq) { need = std::max(need, seq); });
    };
    for (int k = 0; k < d.n_out; ++k) {
      latest(last_write[other], d.out(k));  // WAW
      latest(last_read[other], d.out(k));   // WAR
    }
    for (int k = 0; k < d.n_in; ++k) latest(last_write[other], d.in(k));  // RAW
    if (last_of[other] > static_cast<int64_t>(i)) {
      for (int k = 0; k < d.n_in; ++k) {
        auto [lo, hi] = span(d.in(k));
        last_read[e].assign(lo, hi, static_cast<int64_t>(i));
      }
      for (int k = 0; k < d.n_out; ++k) {
        auto [olo, ohi] = span(d.out(k));
        last_write[e].assign(olo, ohi, static_cast<int64_t>(i));
      }
    }
    if (need > covered[e]) {
      d.wait = static_cast<uint32_t>(need);
      covered[e] = need;
      all[static_cast<size_t>(need)].flags |= package::kFlagInterrupt;
    }
  }
  all.back().flags |= package::kFlagInterrupt;
}

/// The descriptors into their engine's stream, and each one's layer record (names, the ONNX nodes it stands for,
/// the real values of int8 codes).
void addLayers(package::Package& p, const std::vector<package::Descriptor>& all, const std::vector<LDesc>& descs,
               const std::vector<LVal>& vals) {
  for (size_t i = 0; i < all.size(); ++i) {
    bool mac = descs[i].engine == Engine::kMac;
    auto& stream = mac ? p.mac : p.vec;
    package::LayerInfo li;
    li.seq = static_cast<uint32_t>(i);
    li.engine = mac ? Engine::kMac : Engine::kVector;
    li.index = static_cast<uint32_t>(stream.size());
    li.name = descs[i].name;
    li.opexp = descs[i].opexp;
    li.onnx_nodes = descs[i].onnx_nodes;
    li.output = vals[static_cast<size_t>(descs[i].out)].name;
    for (int v : descs[i].more_outs) li.extra_outputs.push_back(vals[static_cast<size_t>(v)].name);
    if (const auto& q = vals[static_cast<size_t>(descs[i].out)].quant) {
      li.scale = q->scale;
      li.zero_point = q->zero_point;
      li.float_value = q->of;
    }
    li.custom = descs[i].custom;
    stream.push_back(all[i]);
    p.layers.push_back(std::move(li));
  }
}

/// The vector engine's libraries: one per layer kind it runs, numbered from 1 in kind order (`lib_of` gets each id).
std::vector<package::Library> vectorLibraries(const std::vector<LDesc>& descs, std::map<LayerKind, uint16_t>& lib_of) {
  for (const LDesc& d : descs)
    if (d.engine != Engine::kMac) lib_of[d.kind] = 0;
  std::vector<package::Library> libs;
  uint16_t next_lib = 1;
  for (auto& [k, id] : lib_of) {
    id = next_lib++;
    libs.push_back({id, 1, std::string("npuc_") + package::layerKindName(k)});
  }
  return libs;
}

/// Lowered::ref_values / ref_views: per descriptor and reference, the graph value it holds and whether in other dims.
void refValues(const std::vector<LDesc>& descs, const std::vector<LVal>& vals, const std::map<ir::ValueId, int>& of, Lowered& res) {
  std::map<int, ir::ValueId> value_of;  // LVal -> the graph value it holds
  for (const auto& [v, lv] : of) value_of.emplace(lv, v);
  res.ref_values.resize(descs.size());
  res.ref_views.resize(descs.size());
  for (size_t i = 0; i < descs.size(); ++i) {
    const LDesc& ld = descs[i];
    std::vector<int> refs = ld.ins;
    refs.push_back(ld.out);
    refs.insert(refs.end(), ld.more_outs.begin(), ld.more_outs.end());
    for (size_t k = 0; k < refs.size(); ++k) {
      auto it = value_of.find(refs[k]);
      res.ref_values[i].push_back(it == value_of.end() ? ir::kNoValue : it->second);
      const LVal& v = vals[static_cast<size_t>(refs[k])];
      res.ref_views[i].push_back((k < ld.views.size() && ld.views[k] != v.shape) || v.channel_last);
    }
  }
}

Lowered lowerImpl(const ir::Graph& model, const target::Target& t, const LowerOptions& o, ir::Graph* consume) {
  const std::unique_ptr<ir::Graph> bounded = detail::withCapacities(model);  // (its own copy: nothing to consume)
  const ir::Graph& g = bounded ? *bounded : model;
  Lowerer L(g, t, bounded ? nullptr : consume);
  L.keepAtFloat16(o.half_layers).run();
  auto& vals = L.vals_;
  auto& descs = L.descs_;
  // (Not with control layers: dropping a Concat's layer would move the regions that follow it.)
  const bool control = std::any_of(descs.begin(), descs.end(), [](const LDesc& d) { return d.region > 0; });
  if (t.absorb_boundary_transposes && !control) absorbBoundaryTransposes(g, vals, descs, L.aliased_);
  if (o.concat_in_place && numericsTraits(t.numerics).concat_in_place && !control) concatsInPlace(vals, descs, L.aliased_);
  if (descs.empty()) fail(ErrorCode::kUnsupported, "the optimized model has no layers to put into a package");
  linkValues(g, L.of_, vals, descs);
  keepAliveOverRegions(vals, descs);
  // Place activations.
  Lowered res;
  // An alias keeps its root alive as long as it is read.
  for (auto& v : vals)
    if (v.alias >= 0) {
      LVal& r = vals[static_cast<size_t>(v.alias)];
      r.last_reader = std::max(r.last_reader, v.last_reader);
    }
  const auto [in_bytes, out_bytes] = placeInputsAndOutputs(g, L.of_, L.extent_of_, vals);
  plan::MemoryPlan mp = placeActivations(vals, descs, o.reuse_memory);
  res.data_bytes = mp.total;
  res.data_lower_bound = mp.lower_bound;
  // Weights.
  uint64_t wbytes = L.weights_.size();
  for (auto& v : vals)
    if (v.space == 'w') v.offset = L.blobs_[static_cast<size_t>(v.weight_blob)].offset;
  res.fusions = L.fusions_;
  res.aliased = L.aliased_;
  // Parameters.
  std::vector<uint64_t> param_off;
  uint64_t pbytes = 0;
  for (auto& d : descs) {
    param_off.push_back(pbytes);
    pbytes += d.params.size() * 4;
  }
  // Engines and libraries.
  const size_t nmac = static_cast<size_t>(std::count_if(descs.begin(), descs.end(), [](const LDesc& d) { return d.engine == Engine::kMac; }));
  const size_t nvec = descs.size() - nmac;
  std::map<LayerKind, uint16_t> lib_of;
  const std::vector<package::Library> libs = vectorLibraries(descs, lib_of);
  // Address map.
  std::map<std::string, uint64_t> needed = {
      {"data_in", in_bytes},
      {"data", mp.total},
      {"data_out", out_bytes},
      {"work", 0},
      {"weight", wbytes},
      {"drp_config", 32 + libs.size() * package::kLibraryRecordSize},
      {"drp_param", pbytes},
      {"desc_aimac", package::kDescHeaderSize + nmac * package::kDescriptorSize},
      {"desc_drp", package::kDescHeaderSize + nvec * package::kDescriptorSize}};
  plan::AddrMapRules rules = plan::AddrMapRules::forTarget(t);
  plan::AddrMapDef def = o.addr_def ? *o.addr_def : plan::defaultAddrMapDef(rules.base);
  res.map = plan::layoutAddrMap(def, needed, rules, o.intm_yaml_name);
  auto base = [&](const char* space) { return res.map.find(space)->addr; };

  package::Package& p = res.pkg;
  p.prefix = o.prefix;
  p.target = t.name;
  p.numerics = t.numerics;
  if (numericsTraits(t.numerics).pow2_codes) p.pow2 = package::Pow2Info{o.pow2, static_cast<uint32_t>(L.pow2_slots_)};
  for (auto& s : res.map.subspaces) {
    package::SubSpace ss{s.name, s.addr, s.size, {}};
    for (auto& e : s.elements) ss.elements.push_back({e.name, e.addr, e.size});
    p.address_map.push_back(std::move(ss));
  }
  auto refOf = [&](int vi, const Shape* view) {
    const LVal& v = vals[static_cast<size_t>(vi)];
    package::TensorRef r = makeRef(base(spaceName(v.space)) + v.offset, v.type, view ? *view : v.shape, v.name);
    if (v.channel_last) r.layout = package::RefLayout::kChannelLast;
    return r;
  };
  auto ioRefOf = [&](int vi) {  // (what the user reads and writes: the bytes' own dims)
    package::TensorRef r = refOf(vi, nullptr);
    const std::vector<int64_t> dims = package::storedDims(r);
    std::copy(dims.begin(), dims.end(), r.dims.begin());
    r.layout = package::RefLayout::kRowMajor;
    return r;
  };
  for (ir::ValueId v : g.inputs())
    if (auto it = L.of_.find(v); it != L.of_.end()) {
      auto im = o.input_images.find(g.value(v).name);
      p.inputs.push_back({g.value(v).name, ioRefOf(it->second), im == o.input_images.end() ? package::ImageInfo{} : im->second});
      res.input_layouts.push_back(g.value(v).layout);
    }
  for (ir::ValueId v : g.outputs()) {
    p.outputs.push_back({g.value(v).name, ioRefOf(L.of_.at(v)), {}, {}});
    if (auto e = L.extent_of_.find(L.of_.at(v)); e != L.extent_of_.end()) p.outputs.back().extent = ioRefOf(e->second);
    res.output_layouts.push_back(g.value(v).layout);
  }
  p.weights = std::move(L.weights_);
  for (LDesc& d : descs) writeAddressWords(d, [&](int v) { return refOf(v, nullptr).addr; });
  p.params.reserve(pbytes);
  for (auto& d : descs)
    for (uint32_t w : d.params)
      for (int k = 0; k < 4; ++k) p.params.push_back(static_cast<uint8_t>(w >> (8 * k)));
  p.libraries = libs;
  // The descriptors; then their waits and their layers' records.
  std::vector<package::Descriptor> all(descs.size());
  for (size_t i = 0; i < descs.size(); ++i) {
    LDesc& ld = descs[i];
    package::Descriptor& d = all[i];
    d.seq = static_cast<uint32_t>(i);
    d.kind = ld.kind;
    d.act = ld.act;
    d.act_a = ld.act_a;
    d.act_b = ld.act_b;
    d.n_in = static_cast<uint8_t>(ld.ins.size());
    if (ld.dynamic) d.flags |= package::kFlagDynamic;
    d.n_out = static_cast<uint8_t>(1 + ld.more_outs.size());
    if (!ld.params.empty()) {
      d.param_addr = static_cast<uint32_t>(base("drp_param") + param_off[i]);
      d.param_size = static_cast<uint32_t>(ld.params.size() * 4);
    }
    for (size_t k = 0; k < ld.ins.size(); ++k)
      d.refs[k] = refOf(ld.ins[k], ld.views.empty() ? nullptr : &ld.views[k]);
    d.refs[ld.ins.size()] = refOf(ld.out, ld.views.empty() ? nullptr : &ld.views.back());
    for (size_t k = 0; k < ld.more_outs.size(); ++k) d.refs[ld.ins.size() + 1 + k] = refOf(ld.more_outs[k], nullptr);
    if (ld.engine == Engine::kVector) d.lib = lib_of.at(ld.kind);
  }
  addWaits(all, descs);
  addLayers(p, all, descs, vals);
  refValues(descs, vals, L.of_, res);
  // Placements for the tbl_addr files.
  for (auto& v : vals) {
    if (v.space == 'w' || v.alias >= 0) continue;
    if (v.space == 'd' && v.writer < 0) continue;
    res.placements.push_back({spaceName(v.space), v.name, base(spaceName(v.space)) + v.offset, bytesOf(v)});
  }
  for (auto& b : L.blobs_) res.placements.push_back({"weight", b.name, base("weight") + b.offset, b.size});
  for (size_t i = 0; i < descs.size(); ++i)
    if (!descs[i].params.empty())
      res.placements.push_back({"drp_param", descs[i].name, base("drp_param") + param_off[i], descs[i].params.size() * 4});
  res.placements.push_back({"drp_config", "library table", base("drp_config"), needed["drp_config"]});
  res.placements.push_back({"desc_aimac", "aimac_desc.bin", base("desc_aimac"), needed["desc_aimac"]});
  res.placements.push_back({"desc_drp", "drp_desc.bin", base("desc_drp"), needed["desc_drp"]});
  std::stable_sort(res.placements.begin(), res.placements.end(), [](const Placement& a, const Placement& b) { return a.addr < b.addr; });
  return res;
}
}  // namespace

std::vector<PackageGap> packageGaps(const ir::Graph& model, const target::Target& t) {
  const std::unique_ptr<ir::Graph> bounded = detail::withCapacities(model);
  const ir::Graph& g = bounded ? *bounded : model;
  std::vector<PackageGap> gaps;
  if (!numericsTraits(t.numerics).packages) return gaps;
  std::set<ir::ValueId> used;  // values something reads (or the model outputs)
  for (ir::NodeId id : g.order())
    for (ir::ValueId v : g.node(id).inputs) used.insert(v);
  used.insert(g.outputs().begin(), g.outputs().end());
  std::map<std::string, std::string> cache;  // signature -> reason ("" when the node lowers)
  int index = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    // The signature: everything the lowering of a lone node can depend on.
    std::string sig = n.domain + "." + n.op + "|";
    for (auto& [k, a] : n.attrs) {
      sig += k + "=";
      if (auto v = a.get<int64_t>()) sig += std::to_string(*v);
      else if (auto f = a.get<float>()) sig += fmt::format("{}", *f);
      else if (auto str = a.get<std::string>()) sig += *str;
      else if (auto l = a.get<std::vector<int64_t>>()) sig += fmt::format("{}", fmt::join(*l, ","));
      else if (auto fl = a.get<std::vector<float>>()) sig += fmt::format("{}", fmt::join(*fl, ","));
      else sig += "?" + n.name;  // tensors and string lists: not shared
      sig += ";";
    }
    auto typeSig = [&](ir::ValueId v) {
      if (v == ir::kNoValue) return std::string("-");
      const ir::Value& val = g.value(v);
      std::string ts = val.type.str() + (val.exact_type ? "!" : "") + (used.count(v) ? "u" : "") + (val.bounded ? "~" : "");
      if (val.isConstant()) {
        const Tensor& c = *val.constant;
        ts += c.numel() <= 64 ? fmt::format("={}", fmt::join(c.toDouble(), ",")) : "=const" + std::to_string(v);
      }
      return ts;
    };
    for (ir::ValueId v : n.inputs) sig += typeSig(v) + ",";
    sig += "->";
    for (ir::ValueId v : n.outputs) sig += typeSig(v) + ",";
    auto it = cache.find(sig);
    if (it == cache.end()) {
      ir::Graph one;
      one.opset = g.opset;
      std::map<ir::ValueId, ir::ValueId> copy;
      auto valueOf = [&](ir::ValueId v, bool output) -> ir::ValueId {
        if (v == ir::kNoValue) return ir::kNoValue;
        if (auto c = copy.find(v); c != copy.end()) return c->second;
        const ir::Value& src = g.value(v);
        ir::Value& dst = !output && src.isConstant() ? one.addConstant(src.name, *src.constant) : one.addValue(src.name, src.type);
        dst.exact_type = src.exact_type;
        dst.bounded = src.bounded;
        if (!output && !src.isConstant()) one.inputs().push_back(dst.id);
        return copy[v] = dst.id;
      };
      std::vector<ir::ValueId> ins, outs;
      for (ir::ValueId v : n.inputs) ins.push_back(valueOf(v, false));
      for (ir::ValueId v : n.outputs) outs.push_back(valueOf(v, true));
      one.addNode(n.op, n.name, ins, outs, n.domain).attrs = n.attrs;
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] != ir::kNoValue && used.count(n.outputs[k])) one.outputs().push_back(outs[k]);
      std::string reason;
      try {
        if (!one.outputs().empty()) lower(one, t, LowerOptions{});
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kUnsupported) reason = e.message();
      }
      // (cached without the node's label: another node of this signature gets the same reason)
      if (const std::string label = n.label() + ": "; reason.compare(0, label.size(), label) == 0) reason = reason.substr(label.size());
      it = cache.emplace(sig, reason).first;
    }
    if (!it->second.empty()) gaps.push_back({index, it->second, ""});
    ++index;
  }
  for (ir::ValueId v : g.outputs())
    if (std::string why = Lowerer::directOutputGap(g, v); !why.empty()) gaps.push_back({-1, why, g.value(v).name});
  return gaps;
}

std::vector<std::pair<std::string, std::string>> tblAddrTexts(const Lowered& l) {
  static const char* kSpaces[] = {"data", "data_in", "data_out", "drp_config", "weight", "work", "merge"};
  std::vector<std::pair<std::string, std::string>> tables;
  for (const char* sp : kSpaces)
    tables.emplace_back(sp, fmt::format("# {} — {}: name, address, size (bytes, hex)\n",
                                        std::string_view(sp) == "merge" ? "all element spaces" : sp, "npuc address table"));
  std::string& merge = tables.back().second;
  std::string line;
  for (auto& p : l.placements) {  // each line formatted once, for its space's table and the merged one
    line.clear();
    fmt::format_to(std::back_inserter(line), FMT_COMPILE("{:<40s} {} {:#x}"), p.name, plan::hexGrouped(p.addr), p.size);
    for (size_t i = 0; i + 1 < tables.size(); ++i)
      if (p.space == tables[i].first) (tables[i].second += line) += '\n';
    ((merge += line) += ' ') += p.space;
    merge += '\n';
  }
  return tables;
}

std::string ioListText(const Lowered& l, bool inputs) {
  std::string s;
  const auto& io = inputs ? l.pkg.inputs : l.pkg.outputs;
  const auto& layouts = inputs ? l.input_layouts : l.output_layouts;
  for (size_t i = 0; i < io.size(); ++i) {
    const package::IoTensor& t = io[i];
    Shape shape(t.ref.dims.begin(), t.ref.dims.begin() + t.ref.rank);
    // The value's layout: a pre/post frame or result is HWC, CHW or flat as declared; a model tensor NCHW.
    const ir::ChwDims d = ir::chwDims(shape, i < layouts.size() ? layouts[i] : ir::Layout::kModel);
    s += fmt::format("{}_node_name: {}\n         Address: {:#x}\n         Channel: {}\n         Width  : {}\n         Height : {}\n\n",
                     inputs ? "Input" : "Output", t.name, t.ref.addr, d.c, d.w, d.h);
  }
  return s;
}

}  // namespace npuc::codegen
