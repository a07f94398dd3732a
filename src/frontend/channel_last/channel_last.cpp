// Channel-last framework tensors held channels-first where layers need it (channel_last.hpp).
#include "frontend/channel_last/channel_last.hpp"

#include "ops/registry.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <cstring>

namespace npuc::channel_last {

std::vector<int64_t> toChannelsFirst(size_t rank) {
  std::vector<int64_t> p{0};
  if (rank < 2) return std::vector<int64_t>(rank, 0);
  p.push_back(static_cast<int64_t>(rank) - 1);
  for (int64_t a = 1; a + 1 < static_cast<int64_t>(rank); ++a) p.push_back(a);
  return p;
}

std::vector<int64_t> toFramework(size_t rank) {
  std::vector<int64_t> p{0};
  if (rank < 2) return std::vector<int64_t>(rank, 0);
  for (int64_t a = 2; a < static_cast<int64_t>(rank); ++a) p.push_back(a);
  p.push_back(1);
  return p;
}

int64_t channelsFirstAxis(int64_t axis, size_t rank, const std::string& what) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(ErrorCode::kInvalidInput, "{} {} is out of range for a tensor of {} axes", what, axis, r);
  if (axis < 0) axis += r;
  if (axis == 0) return 0;
  return axis == r - 1 ? 1 : axis + 1;
}

int64_t product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (__builtin_mul_overflow(p, d, &p) || p > kMaxElements) return kMaxElements + 1;
  }
  return p;
}

Shape permuted(const Shape& s, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(s[static_cast<size_t>(p)]);
  return out;
}

Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm) {
  const Shape& s = t.shape();
  const size_t rank = s.size(), es = dtypeSize(t.dtype());
  Tensor r(t.dtype(), permuted(s, perm));
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * s[i];
  std::vector<int64_t> idx(rank, 0);
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(r.raw());
  const Shape& os = r.shape();
  for (int64_t o = 0; o < r.numel(); ++o) {
    int64_t off = 0;
    for (size_t i = 0; i < rank; ++i) off += idx[i] * in_strides[static_cast<size_t>(perm[i])];
    std::memcpy(dst + o * static_cast<int64_t>(es), src + off * static_cast<int64_t>(es), es);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < os[i]) break;
      idx[i] = 0;
    }
  }
  return r;
}

Shape channelsFirstShape(const Shape& framework) { return permuted(framework, toChannelsFirst(framework.size())); }
Shape frameworkShape(const Shape& channels_first) { return permuted(channels_first, toFramework(channels_first.size())); }

// --- building the IR ---

ir::Node& Builder::node(const std::string& op, const std::string& name, std::vector<ir::ValueId> ins,
                        std::vector<ir::ValueId> outs, std::map<std::string, ir::Attr> attrs) {
  ir::Node& n = g_.addNode(op, name, std::move(ins), std::move(outs));
  n.attrs = std::move(attrs);
  const ir::NodeId id = n.id;
  ops::inferNodeTypes(g_, id);
  return g_.node(id);
}

ir::ValueId Builder::value(const std::string& base) { return g_.addValue(g_.uniqueValueName(base)).id; }

ir::ValueId Builder::constant(const std::string& base, Tensor t) {
  return g_.addConstant(g_.uniqueValueName(base), std::move(t)).id;
}

ir::ValueId Builder::ints(const std::string& base, const std::vector<int64_t>& v) {
  return constant(base, Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

const Shape& Builder::irShape(ir::ValueId v) const {
  const ir::Value& val = g_.value(v);
  if (!val.type.isStatic()) fail(ErrorCode::kInvalidInput, "the shape of '{}' could not be inferred", val.name);
  return val.type.shape;
}

// --- framework tensors ---

const Builder::Held& Builder::entry(const std::string& name) const {
  auto it = held_.find(name);
  if (it == held_.end()) fail(ErrorCode::kInvalidInput, "tensor '{}' is read before any operator writes it", name);
  return it->second;
}

Builder::Held& Builder::entry(const std::string& name) {
  return const_cast<Held&>(static_cast<const Builder*>(this)->entry(name));
}

void Builder::bind(const std::string& name, ir::ValueId v, Form f) {
  if (f == Form::kChannelsFirst && irShape(v).size() < 3)
    fail(ErrorCode::kInternal, "tensor '{}' of rank {} bound channels-first", name, irShape(v).size());
  held_[name] = Held{v, f, ir::kNoValue};
}

Shape Builder::shape(const std::string& name) const {
  const Held& h = entry(name);
  const Shape& s = irShape(h.value);
  return h.form == Form::kChannelsFirst ? frameworkShape(s) : s;
}

ir::ValueId Builder::transposed(Held& h, const std::string& name, Form to) {
  if (h.form == to) return h.value;
  if (h.other != ir::kNoValue) return h.other;
  const size_t r = irShape(h.value).size();
  if (r < 3) fail(ErrorCode::kInternal, "tensor '{}' of rank {} has no channels-first form", name, r);
  const bool to_first = to == Form::kChannelsFirst;
  ir::ValueId out = value(name + (to_first ? "/channels_first" : "/channels_last"));
  const std::vector<int64_t> perm = to_first ? toChannelsFirst(r) : toFramework(r);
  // Where only axes of size 1 move (a [1, 1, 1, C] map), the elements keep their order: a Reshape, not a Transpose.
  const Shape& s = irShape(h.value);
  int64_t last = -1;
  bool in_order = true;
  for (int64_t p : perm) {
    if (s[static_cast<size_t>(p)] == 1) continue;
    in_order = in_order && p > last;
    last = p;
  }
  if (in_order)
    node("Reshape", g_.value(out).name, {h.value, ints(name + "/shape", permuted(s, perm))}, {out});
  else
    node("Transpose", g_.value(out).name, {h.value}, {out}, {{"perm", perm}});
  h.other = out;
  return out;
}

ir::ValueId Builder::framework(const std::string& name) { return transposed(entry(name), name, Form::kFramework); }

ir::ValueId Builder::channelsFirst(const std::string& name) {
  Held& h = entry(name);
  if (h.form != Form::kChannelsFirst && irShape(h.value).size() < 3)
    fail(ErrorCode::kInvalidInput, "tensor '{}' has {} axes where a feature map (3 or more) is needed", name,
         irShape(h.value).size());
  return transposed(h, name, Form::kChannelsFirst);
}

ir::ValueId Builder::alignedTo(const std::string& name, size_t rank) {
  Held& h = entry(name);
  const Shape s = shape(name);
  if (s.size() == rank && rank >= 3) return channelsFirst(name);
  if (s.size() > rank)
    fail(ErrorCode::kInvalidInput, "tensor '{}' has {} axes; it cannot broadcast to {}", name, s.size(), rank);
  // Lower rank: numpy aligns trailing axes. Raised to `rank` with leading 1s, then transposed like the result.
  Shape raised(rank - s.size(), 1);
  raised.insert(raised.end(), s.begin(), s.end());
  ir::ValueId r = value(name + "/broadcast");
  node("Reshape", g_.value(r).name, {h.value, ints(name + "/broadcast_shape", raised)}, {r});
  ir::ValueId out = value(name + "/broadcast_channels_first");
  node("Transpose", g_.value(out).name, {r}, {out}, {{"perm", toChannelsFirst(rank)}});
  return out;
}

Builder::Operands Builder::elementwise(const std::vector<std::string>& names) {
  size_t rank = 0;
  for (const std::string& n : names) rank = std::max(rank, this->rank(n));
  bool first = false;
  if (rank >= 3)
    for (const std::string& n : names) first |= this->rank(n) == rank && form(n) == Form::kChannelsFirst;
  Operands ops;
  ops.form = first ? Form::kChannelsFirst : Form::kFramework;
  for (const std::string& n : names) ops.values.push_back(first ? alignedTo(n, rank) : framework(n));
  return ops;
}

ir::ValueId Builder::input(const std::string& name, const Shape& s, DType dtype) {
  if (g_.findValue(name)) fail(ErrorCode::kInvalidInput, "input '{}' is declared twice", name);
  ir::ValueId v = g_.addValue(name, ir::makeType(dtype, s)).id;
  g_.inputs().push_back(v);
  bind(name, v, Form::kFramework);
  return v;
}

void Builder::output(const std::string& name) {
  Held& h = entry(name);
  ir::ValueId v = h.value;
  if (h.form == Form::kChannelsFirst) {
    if (g_.value(v).name == name) g_.renameValue(v, g_.uniqueValueName(name + "/channels_first"));
    ir::ValueId out = h.other;
    if (out == ir::kNoValue) {
      out = g_.findValue(name) ? value(name) : g_.addValue(name).id;
      node("Transpose", g_.value(out).name, {v}, {out}, {{"perm", toFramework(irShape(v).size())}});
    } else if (!g_.findValue(name)) {
      g_.renameValue(out, name);
    }
    h = Held{out, Form::kFramework, v};
    v = out;
  }
  if (std::find(g_.outputs().begin(), g_.outputs().end(), v) == g_.outputs().end()) g_.outputs().push_back(v);
}

}  // namespace npuc::channel_last
