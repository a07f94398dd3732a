// Shape ranges (shape_ranges.hpp): the manifest's "shape_ranges", its checks, and a package specialized to sizes.
#include "package/shape_ranges.hpp"

#include "package/manifest.hpp"
#include "package/package.hpp"

#include <map>
#include <set>
#include <tuple>

namespace npuc::package {

namespace {

/// The descriptors by program order (the reader checked the numbering first: every seq once, 0 to N - 1).
template <class P>
auto bySeq(P& p) {
  std::vector<decltype(&p.mac[0])> v(p.mac.size() + p.vec.size(), nullptr);
  for (auto* s : {&p.mac, &p.vec})
    for (auto& d : *s)
      if (d.seq < v.size()) v[d.seq] = &d;
  return v;
}

void setBytes(TensorRef& r) { r.bytes = static_cast<uint32_t>(r.numel() * elemSize(r.type)); }

}  // namespace

json shapeRangesManifest(const ShapeRanges& r) {
  json j;
  j["symbols"] = json::array();
  for (const RangeSymbol& s : r.symbols) {
    json e = {{"value", s.value}, {"dim", s.dim}, {"lo", s.lo}, {"hi", s.hi}};
    if (!s.also.empty()) {
      e["also"] = json::array();
      for (const auto& [v, d] : s.also) e["also"].push_back(json::array({v, d}));
    }
    j["symbols"].push_back(e);
  }
  j["functions"] = json::array();
  for (const RangeFunction& f : r.functions) j["functions"].push_back({{"symbol", f.symbol}, {"values", f.values}});
  j["dims"] = json::array();
  for (const RangedDim& d : r.dims) j["dims"].push_back(json::array({d.seq, d.ref, d.dim, d.fn}));
  j["io"] = json::array();
  for (const RangedIo& d : r.io) j["io"].push_back(json::array({d.output ? "output" : "input", d.index, d.dim, d.fn}));
  return j;
}

ShapeRanges shapeRangesFromManifest(const json& j, const std::string& file) {
  ShapeRanges r;
  auto u32 = [&](const json& v, const std::string& field, uint64_t most) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > most) bad(file, "field 'shape_ranges.{}' must be an integer from 0 to {}", field, most);
    return static_cast<uint32_t>(v.get<uint64_t>());
  };
  auto list = [&](const char* key) -> const json& {
    if (!j.is_object() || !j.contains(key) || !j[key].is_array()) bad(file, "field 'shape_ranges.{}' must be a list", key);
    return j[key];
  };
  for (size_t i = 0; i < list("symbols").size(); ++i) {
    const json& s = j["symbols"][i];
    const std::string at = fmt::format("symbols[{}]", i);
    if (!s.is_object() || !s.contains("value") || !s["value"].is_string()) bad(file, "field 'shape_ranges.{}.value' must be a tensor name", at);
    for (const char* k : {"dim", "lo", "hi"})
      if (!s.contains(k)) bad(file, "missing field 'shape_ranges.{}.{}'", at, k);
    r.symbols.push_back({s["value"].get<std::string>(), u32(s["dim"], at + ".dim", 5), u32(s["lo"], at + ".lo", UINT32_MAX),
                         u32(s["hi"], at + ".hi", UINT32_MAX), {}});
    if (s.contains("also")) {
      if (!s["also"].is_array() || s["also"].size() > kMaxRangeSymbols)
        bad(file, "field 'shape_ranges.{}.also' must be a list of at most {} [tensor, dimension]", at, kMaxRangeSymbols);
      for (size_t k = 0; k < s["also"].size(); ++k) {
        const json& a = s["also"][k];
        if (!a.is_array() || a.size() != 2 || !a[0].is_string())
          bad(file, "field 'shape_ranges.{}.also[{}]' must be [tensor, dimension]", at, k);
        r.symbols.back().also.emplace_back(a[0].get<std::string>(), u32(a[1], fmt::format("{}.also[{}][1]", at, k), 5));
      }
    }
  }
  for (size_t i = 0; i < list("functions").size(); ++i) {
    const json& f = j["functions"][i];
    const std::string at = fmt::format("functions[{}]", i);
    if (!f.is_object() || !f.contains("symbol") || !f.contains("values") || !f["values"].is_array() || f["values"].size() > kMaxRangeSpan)
      bad(file, "field 'shape_ranges.{}' must hold 'symbol' and at most {} 'values'", at, kMaxRangeSpan);
    RangeFunction fn{u32(f["symbol"], at + ".symbol", kMaxRangeSymbols), {}};
    for (size_t k = 0; k < f["values"].size(); ++k) fn.values.push_back(u32(f["values"][k], fmt::format("{}.values[{}]", at, k), UINT32_MAX));
    r.functions.push_back(std::move(fn));
  }
  for (size_t i = 0; i < list("dims").size(); ++i) {
    const json& d = j["dims"][i];
    const std::string at = fmt::format("dims[{}]", i);
    if (!d.is_array() || d.size() != 4) bad(file, "field 'shape_ranges.{}' must be [seq, reference, dimension, function]", at);
    r.dims.push_back({u32(d[0], at + "[0]", UINT32_MAX), u32(d[1], at + "[1]", kMaxRefs), u32(d[2], at + "[2]", kMaxRank),
                      u32(d[3], at + "[3]", UINT32_MAX)});
  }
  for (size_t i = 0; i < list("io").size(); ++i) {
    const json& d = j["io"][i];
    const std::string at = fmt::format("io[{}]", i);
    if (!d.is_array() || d.size() != 4 || !d[0].is_string() || (d[0] != "input" && d[0] != "output"))
      bad(file, "field 'shape_ranges.{}' must be [\"input\" or \"output\", index, dimension, function]", at);
    r.io.push_back({d[0] == "output", u32(d[1], at + "[1]", UINT32_MAX), u32(d[2], at + "[2]", kMaxRank), u32(d[3], at + "[3]", UINT32_MAX)});
  }
  return r;
}

void checkShapeRanges(const Package& p, const std::string& where) {
  const ShapeRanges& r = *p.ranges;
  auto badr = [&](const std::string& msg) { fail(ErrorCode::kInvalidInput, "{}: shape_ranges: {}", where, msg); };
  if (r.symbols.empty() || r.symbols.size() > kMaxRangeSymbols) badr(fmt::format("1 to {} symbols, got {}", kMaxRangeSymbols, r.symbols.size()));
  std::set<std::pair<std::string, uint32_t>> seen;
  const std::vector<const Descriptor*> program = bySeq(p);
  // (a dynamic layer's static operands carry their dims as weights, and nonzero its capacity in its references: a
  // specialization would leave those at the translated sizes)
  for (const Descriptor* d : program)
    if (d->kind == LayerKind::kNonZero || (d->flags & kFlagDynamic))
      badr(fmt::format("descriptor seq {} ({}) computes on dynamic tensors; one package does not serve both (translate "
                       "one size: --input-shape)", d->seq, layerKindName(d->kind)));
  for (size_t i = 0; i < r.symbols.size(); ++i) {
    const RangeSymbol& s = r.symbols[i];
    if (s.lo < 1 || s.hi < s.lo || s.hi - s.lo >= kMaxRangeSpan)
      badr(fmt::format("symbols[{}]: range {}~{} (1 <= lo <= hi, at most {} sizes)", i, s.lo, s.hi, kMaxRangeSpan));
    std::vector<std::pair<std::string, uint32_t>> members = {{s.value, s.dim}};
    members.insert(members.end(), s.also.begin(), s.also.end());
    for (const auto& member : members) {
      const std::string& value = member.first;  // (not a structured binding: clang before 16 cannot capture one)
      const uint32_t dim = member.second;
      if (!seen.insert({value, dim}).second) badr(fmt::format("symbols[{}]: {}[{}] is ranged twice", i, value, dim));
      bool known = std::any_of(p.inputs.begin(), p.inputs.end(), [&](const IoTensor& t) { return t.name == value; });
      for (const LayerInfo& l : p.layers) {
        const Descriptor* d = l.seq < program.size() ? program[l.seq] : nullptr;
        known = known || (l.output == value && d && d->kind == LayerKind::kAipp && d->n_in == 2);
      }
      if (!known) badr(fmt::format("symbols[{}]: '{}' is neither a package input nor a dynamic AIPP layer's output", i, value));
    }
  }
  for (size_t i = 0; i < r.functions.size(); ++i) {
    const RangeFunction& f = r.functions[i];
    if (f.symbol >= r.symbols.size()) badr(fmt::format("functions[{}]: symbol {} (there are {})", i, f.symbol, r.symbols.size()));
    const RangeSymbol& s = r.symbols[f.symbol];
    if (f.values.size() != s.hi - s.lo + 1)
      badr(fmt::format("functions[{}]: {} values for the {} sizes of {}~{}", i, f.values.size(), s.hi - s.lo + 1, s.lo, s.hi));
  }
  // Each value within the reference's own dimension: the package's memory holds the largest.
  auto fits = [&](uint32_t fn, uint32_t capacity, const std::string& what) {
    if (fn >= r.functions.size()) badr(fmt::format("{}: function {} (there are {})", what, fn, r.functions.size()));
    for (uint32_t v : r.functions[fn].values)
      if (v < 1 || v > capacity) badr(fmt::format("{}: size {} outside 1..{} (the package's own dimension)", what, v, capacity));
  };
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> dims;
  for (size_t i = 0; i < r.dims.size(); ++i) {
    const RangedDim& x = r.dims[i];
    const std::string what = fmt::format("dims[{}]", i);
    const Descriptor* d = x.seq < program.size() ? program[x.seq] : nullptr;
    if (!d) badr(fmt::format("{}: no descriptor of seq {}", what, x.seq));
    if (x.ref >= static_cast<uint32_t>(d->n_in + d->n_out) || x.dim >= d->refs[x.ref].rank)
      badr(fmt::format("{}: descriptor {} has no reference {} of dimension {}", what, x.seq, x.ref, x.dim));
    if (!dims.insert({x.seq, x.ref, x.dim}).second) badr(fmt::format("{}: listed twice", what));
    fits(x.fn, d->refs[x.ref].dims[x.dim], what);
  }
  std::set<std::tuple<bool, uint32_t, uint32_t>> io;
  for (size_t i = 0; i < r.io.size(); ++i) {
    const RangedIo& x = r.io[i];
    const std::string what = fmt::format("io[{}]", i);
    const auto& list = x.output ? p.outputs : p.inputs;
    if (x.index >= list.size() || x.dim >= list[x.index].ref.rank)
      badr(fmt::format("{}: {} {} has no dimension {}", what, x.output ? "output" : "input", x.index, x.dim));
    if (!io.insert({x.output, x.index, x.dim}).second) badr(fmt::format("{}: listed twice", what));
    fits(x.fn, list[x.index].ref.dims[x.dim], what);
  }
}

std::string rangesText(const ShapeRanges& r) {
  std::string s;
  for (const RangeSymbol& x : r.symbols) {
    s += (s.empty() ? "" : ", ") + fmt::format("{}[{}]", x.value, x.dim);
    for (const auto& [v, d] : x.also) s += fmt::format(" = {}[{}]", v, d);
    s += fmt::format(" {}~{}", x.lo, x.hi);
  }
  return s;
}

Package specializeShapes(const Package& p, const std::vector<int64_t>& at, const std::string& where) {
  if (!p.ranges) fail(ErrorCode::kInvalidArgument, "{}: the package has no shape ranges", where);
  const ShapeRanges& r = *p.ranges;
  if (at.size() != r.symbols.size())
    fail(ErrorCode::kInvalidArgument, "{}: {} sizes for the package's {} ranged dimensions ({})", where, at.size(), r.symbols.size(), rangesText(r));
  for (size_t i = 0; i < at.size(); ++i)
    if (at[i] < r.symbols[i].lo || at[i] > r.symbols[i].hi)
      fail(ErrorCode::kInvalidArgument, "{}: {}[{}] = {} is outside the package's range {}~{}", where, r.symbols[i].value, r.symbols[i].dim,
           at[i], r.symbols[i].lo, r.symbols[i].hi);
  auto value = [&](uint32_t fn) {
    const RangeFunction& f = r.functions[fn];
    return f.values[static_cast<size_t>(at[f.symbol] - r.symbols[f.symbol].lo)];
  };
  Package s = p;
  s.ranges.reset();
  const std::vector<Descriptor*> program = bySeq(s);
  for (const RangedDim& x : r.dims) {
    TensorRef& ref = program.at(x.seq)->refs[x.ref];
    ref.dims[x.dim] = value(x.fn);
    setBytes(ref);
  }
  for (const RangedIo& x : r.io) {
    TensorRef& ref = (x.output ? s.outputs : s.inputs)[x.index].ref;
    ref.dims[x.dim] = value(x.fn);
    setBytes(ref);
  }
  std::string sizes;
  for (size_t i = 0; i < at.size(); ++i) sizes += (sizes.empty() ? "" : ", ") + fmt::format("{}[{}] = {}", r.symbols[i].value, r.symbols[i].dim, at[i]);
  validatePackage(s, fmt::format("{} at {}", where, sizes));
  return s;
}

}  // namespace npuc::package
