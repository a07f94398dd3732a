// Validation of a package: everything the runtime relies on is checked here once, so the runtime's hot path can
// trust every address, shape and parameter (a package is untrusted input).
#include "package/package.hpp"
#include "package/validate.hpp"

#include "kernels/aipp.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"
#include "kernels/prepost.hpp"
#include "kernels/quant.hpp"
#include "package/interval_map.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace npuc::package {

const std::vector<std::string>& unaryOpNames() {
  static const std::vector<std::string> k = {
#define NPUC_UNARY_OP(E, name, alpha, beta) name,
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
  };
  return k;
}
const std::vector<std::pair<std::string, std::string>>& unaryOpAttrs() {
  static const std::vector<std::pair<std::string, std::string>> k = {
#define NPUC_UNARY_OP(E, name, alpha, beta) {alpha, beta},
#include "kernels/elementwise_ops.def"
#undef NPUC_UNARY_OP
  };
  return k;
}
const std::vector<std::string>& binaryOpNames() {
  static const std::vector<std::string> k = {
#define NPUC_BINARY_OP(E, name) name,
#include "kernels/elementwise_ops.def"
#undef NPUC_BINARY_OP
  };
  return k;
}

std::vector<uint32_t> resizeParams(const kernels::ResizeSpec& s) {
  std::vector<uint32_t> w = {static_cast<uint32_t>(s.interp), static_cast<uint32_t>(s.coord), static_cast<uint32_t>(s.nearest),
                             s.legacy ? 1u : 0u, s.exclude_outside ? 1u : 0u, floatParam(static_cast<float>(s.cubic_a)),
                             floatParam(static_cast<float>(s.extrapolation))};
  for (size_t a = 0; a < s.scale.size(); ++a)
    for (double v : {s.scale[a], s.roi_start[a], s.roi_end[a]}) {
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      w.push_back(static_cast<uint32_t>(bits));
      w.push_back(static_cast<uint32_t>(bits >> 32));
    }
  return w;
}

kernels::ResizeSpec resizeSpecFromParams(const std::vector<uint32_t>& w, size_t rank) {
  kernels::ResizeSpec s;
  s.interp = static_cast<kernels::ResizeInterp>(w[0]);
  s.coord = static_cast<kernels::ResizeCoord>(w[1]);
  s.nearest = static_cast<kernels::ResizeNearest>(w[2]);
  s.legacy = w[3] != 0;
  s.exclude_outside = w[4] != 0;
  s.cubic_a = paramFloat(w[5]);
  s.extrapolation = paramFloat(w[6]);
  auto f64 = [&](size_t i) {
    uint64_t bits = uint64_t(w[i]) | uint64_t(w[i + 1]) << 32;
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  };
  for (size_t a = 0; a < rank; ++a) {
    s.scale.push_back(f64(7 + 6 * a));
    s.roi_start.push_back(f64(9 + 6 * a));
    s.roi_end.push_back(f64(11 + 6 * a));
  }
  return s;
}

std::optional<uint32_t> reduceOpCode(const std::string& onnx_op) {
  kernels::ReduceOp op = kernels::reduceOpFromName(onnx_op.c_str());
  if (op == kernels::ReduceOp::kCount) return std::nullopt;
  return static_cast<uint32_t>(op);
}

float paramFloat(uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
uint32_t floatParam(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

uint32_t expectedParamWords(const Descriptor& d) {
  uint32_t r = d.n_in ? d.in(0).rank : 0;
  const LayerKindInfo* k = layerKindInfo(d.kind);
  if (!k) return 0;
  if (k->words >= 0) return static_cast<uint32_t>(k->words) + static_cast<uint32_t>(k->words_per_rank) * r;
  switch (d.kind) {  // the kinds whose block size layer_kinds.def marks as computed (-1)
    case LayerKind::kAipp:  // a static stage carries its parameter block (batch = the output's N)
      return static_cast<uint32_t>(kernels::kAippHeaderWords) +
             (d.n_in == 2 || d.n_out < 1 || d.out(0).rank < 1 ? 0 : static_cast<uint32_t>(kernels::aippBlockSize(std::min<uint32_t>(d.out(0).dims[0], 1u << 20)) / 4));
    case LayerKind::kNormalize:  // saturated: a channel count this large is refused by the shape check
      return static_cast<uint32_t>(std::min<uint64_t>(1 + 2 * uint64_t(r ? d.in(0).dims[r - 1] : 0), 1u << 20));
    case LayerKind::kIf: case LayerKind::kLoop: case LayerKind::kScan: {  // the header and whole moves (n_moves checked)
      const uint32_t h = controlHeaderWords(d.kind), have = d.param_size / 4;
      return have < h ? h : h + (have - h) / kMoveWords * kMoveWords;
    }
    default: return 0;
  }
}

uint32_t controlHeaderWords(LayerKind k) {
  switch (k) {
    case LayerKind::kIf: case LayerKind::kScan: return 3;
    case LayerKind::kLoop: return 7;
    default: return 0;
  }
}

std::vector<uint32_t> controlRegions(LayerKind k, const std::vector<uint32_t>& w) {
  if (k == LayerKind::kIf) return {w[0], w[1]};
  return {w[0]};
}

ControlMove controlMove(LayerKind k, const std::vector<uint32_t>& w, uint32_t i) {
  const uint32_t* m = w.data() + controlHeaderWords(k) + size_t{i} * kMoveWords;
  return {m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10]};
}

void appendMove(std::vector<uint32_t>& w, const ControlMove& m) {
  w.insert(w.end(), {m.phase, m.count, m.reverse, m.src, m.dst, m.rows, m.row_bytes, m.src_row_stride, m.dst_row_stride,
                     m.src_step, m.dst_step});
}

uint64_t controlMoveSpan(const ControlMove& m, bool destination) {
  using u128 = unsigned __int128;
  const uint32_t step = destination ? m.dst_step : m.src_step, stride = destination ? m.dst_row_stride : m.src_row_stride;
  const u128 bytes = u128(m.count ? m.count - 1 : 0) * step + u128(m.rows ? m.rows - 1 : 0) * stride + m.row_bytes;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

bool writableSpace(const Element& e) { return e.name == "data" || e.name == "data_out" || e.name == "work"; }
bool readableSpace(const Element& e) { return writableSpace(e) || e.name == "data_in" || e.name == "weight"; }

kernels::Pool2dShape poolShapeOf(const Descriptor& d, const std::vector<uint32_t>& words) {
  const TensorRef &x = d.in(0), &y = d.out(0);
  auto si = [&](size_t i) { return static_cast<int64_t>(static_cast<int32_t>(words[i])); };
  kernels::Pool2dShape s;
  s.planes = int64_t{x.dims[0]} * x.dims[1];
  s.ih = x.dims[2], s.iw = x.dims[3], s.oh = y.dims[2], s.ow = y.dims[3];
  s.kh = si(0), s.kw = si(1), s.sh = si(2), s.sw = si(3), s.dh = si(4), s.dw = si(5);
  s.pt = si(6), s.pl = si(7), s.pb = si(8), s.pr = si(9);
  s.count_include_pad = words[10] != 0;
  s.pad_value = paramFloat(words[11]);
  return s;
}

std::vector<uint32_t> paramWords(const Package& p, const Descriptor& d) {
  std::vector<uint32_t> w(d.param_size / 4);
  if (w.empty()) return w;
  const Element* e = p.element("drp_param");
  uint64_t off = uint64_t(d.param_addr) - e->addr;
  std::memcpy(w.data(), p.params.data() + off, w.size() * 4);
  return w;
}

std::vector<int64_t> dimsOf(const TensorRef& r) {
  std::vector<int64_t> d;
  for (int i = 0; i < r.rank; ++i) d.push_back(r.dims[static_cast<size_t>(i)]);
  return d;
}

std::string dimsStr(const TensorRef& r) {
  std::string s;
  for (int i = 0; i < r.rank; ++i) s += (i ? "x" : "") + std::to_string(r.dims[static_cast<size_t>(i)]);
  return r.rank ? s : "scalar";
}

namespace {

/// The check of a kind: a table indexed by the kind's code, one entry per line of layer_kinds.def (kind_checks).
KindCheck kindCheck(LayerKind k) {
  static constexpr uint16_t kCodes[] = {
#define NPUC_LAYER_KIND(E, code, ...) code,
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
  };
  static const auto table = [] {
    std::array<const KindCheck*, *std::max_element(std::begin(kCodes), std::end(kCodes)) + 1> t{};
#define NPUC_LAYER_KIND(E, code, ...) t[code] = &kind_checks::E;
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
    return t;
  }();
  return *table[static_cast<size_t>(k)];  // (a known kind: descriptor() refused any other code first)
}

}  // namespace

struct Checker {
  const Package& p;
  std::string where;
  std::vector<const Element*> elements;  // sorted by address

  template <typename... Args>
  [[noreturn]] void bad(fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kInvalidInput, "{}: {}", where, fmt::format(f, std::forward<Args>(a)...));
  }

  const Element& need(const char* name) const {
    const Element* e = p.element(name);
    if (!e) bad("address map has no element space '{}'", name);
    return *e;
  }

  void addressMap() {
    static const char* kNames[] = {"data_in", "data", "data_out", "work", "weight",
                                   "drp_config", "drp_param", "desc_aimac", "desc_drp"};
    std::map<std::string, int> seen;
    uint64_t prev_end = 0;
    for (auto& s : p.address_map) {
      if (s.addr % 64) bad("address map: Sub-Space '{}' at 0x{:x} is not 64-byte aligned", s.name, s.addr);
      if (s.addr < prev_end) bad("address map: Sub-Space '{}' at 0x{:x} overlaps the previous one or is out of address order", s.name, s.addr);
      if (s.addr + s.size > (uint64_t(1) << 32) || s.size > (uint64_t(1) << 32))
        bad("address map: Sub-Space '{}' ends beyond the 32-bit address space", s.name);
      prev_end = s.addr + s.size;
      for (auto& e : s.elements) {
        if (++seen[e.name] > 1) bad("address map: element space '{}' appears twice", e.name);
        if (std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return e.name == n; }) == std::end(kNames))
          bad("address map: unknown element space '{}'", e.name);
        if (e.addr < s.addr || e.size > s.size || e.addr - s.addr > s.size - e.size)
          bad("address map: element space '{}' [0x{:x}, +0x{:x}) lies outside its Sub-Space '{}'", e.name, e.addr, e.size, s.name);
        elements.push_back(&e);
      }
    }
    for (const char* n : kNames)
      if (!seen.count(n)) bad("address map has no element space '{}'", n);
    std::sort(elements.begin(), elements.end(), [](const Element* a, const Element* b) { return a->addr < b->addr; });
    for (size_t i = 1; i < elements.size(); ++i)
      if (elements[i]->addr < elements[i - 1]->addr + elements[i - 1]->size)
        bad("address map: element spaces '{}' and '{}' overlap", elements[i - 1]->name, elements[i]->name);
    auto fits = [&](const char* space, uint64_t bytes, const char* what) {
      if (bytes > need(space).size) bad("{} ({} bytes) does not fit the '{}' space ({} bytes)", what, bytes, space, need(space).size);
    };
    fits("weight", p.weights.size(), "the weight image");
    fits("drp_param", p.params.size(), "the parameter image");
    fits("drp_config", 32 + p.libraries.size() * kLibraryRecordSize, "the library table");
    fits("desc_aimac", kDescHeaderSize + p.mac.size() * kDescriptorSize, "the MAC descriptor stream");
    fits("desc_drp", kDescHeaderSize + p.vec.size() * kDescriptorSize, "the vector descriptor stream");
  }

  /// The element space holding [addr, addr + bytes), or null.
  const Element* spaceOf(uint64_t addr, uint64_t bytes) const {
    for (const Element* e : elements)
      if (addr >= e->addr && bytes <= e->size && addr - e->addr <= e->size - bytes) return e;
    return nullptr;
  }

  void ref(const TensorRef& r, const std::string& what) const {
    if (!isPackageType(r.type)) bad("{}: element type {} cannot be in a package", what, dtypeName(r.type));
    if (r.rank > kMaxRank) bad("{}: rank {} (at most {})", what, r.rank, kMaxRank);
    for (int i = r.rank; i < kMaxRank; ++i)
      if (r.dims[static_cast<size_t>(i)]) bad("{}: dims beyond the rank must be 0", what);
    // Every dim counts (a zero dim must not let the others grow unchecked: kernels multiply them).
    uint64_t n = 1, span = 1;
    for (int i = 0; i < r.rank; ++i) {
      uint64_t d = r.dims[static_cast<size_t>(i)];
      n *= d;
      span *= std::max<uint64_t>(d, 1);
      if (span > (uint64_t(1) << 32)) bad("{}: shape {} is too large", what, dimsStr(r));
    }
    if (r.addr % elemSize(r.type)) bad("{}: address 0x{:x} is not aligned to its {}-byte elements", what, r.addr, elemSize(r.type));
    if (n * elemSize(r.type) != r.bytes)
      bad("{}: {} {} is {} bytes, the reference says {}", what, elemName(r.type), dimsStr(r), n * elemSize(r.type), r.bytes);
  }

  void image(const IoTensor& t) const {
    const ImageInfo& im = t.image;
    std::string what = fmt::format("input '{}': image", t.name);
    if (im.height < 1 || im.width < 1 || im.height > 65535 || im.width > 65535)
      bad("{} size {}x{} is out of range (1..65535)", what, im.height, im.width);
    uint64_t n = t.ref.numel();
    kernels::YuvFormat f;
    if (im.format == "RGB" || im.format == "BGR" || im.format == "GRAY") {
      uint64_t c = im.format == "GRAY" ? 1 : 3;
      bool hwc_ok = t.ref.rank == 3 && (im.chw ? t.ref.dims[0] == c && t.ref.dims[1] == im.height && t.ref.dims[2] == im.width
                                                : t.ref.dims[0] == im.height && t.ref.dims[1] == im.width && t.ref.dims[2] == c);
      if (!hwc_ok) bad("{}: a {}x{} {} picture ({}) is not {}", what, im.height, im.width, im.format, im.chw ? "CHW" : "HWC", dimsStr(t.ref));
    } else if (kernels::yuvFormatFromName(im.format, &f)) {
      if (t.ref.type != ElemType::kU8 || im.chw || im.width % 2) bad("{}: {} frames are uint8 HWC with an even width", what, im.format);
      if (static_cast<uint64_t>(kernels::yuvBufferSize(f, im.height, im.width)) > n)  // (a frame fills the start)
        bad("{}: a {}x{} {} frame is {} bytes, the input holds only {}", what, im.height, im.width, im.format,
            kernels::yuvBufferSize(f, im.height, im.width), n);
    } else {
      bad("{}: unknown format '{}' (RGB, BGR, GRAY, YUYV, NV12, …: docs/package-format.md)", what, im.format);
    }
  }

  void ioTensors() const {
    if (p.outputs.empty()) bad("the package has no outputs (a package has at least one)");
    std::set<std::string> names;
    for (auto* list : {&p.inputs, &p.outputs})
      for (auto& t : *list) {
        if (t.name.empty()) bad("an input or output has an empty name");
        if (!names.insert(t.name).second) bad("the name '{}' is used by two inputs/outputs", t.name);
      }
    // (Tested by name: an empty tensor lies in every empty space at its address.)
    auto inside = [&](const TensorRef& r, const char* name) {
      return std::any_of(elements.begin(), elements.end(), [&](const Element* e) {
        return e->name == name && r.addr >= e->addr && r.bytes <= e->size && r.addr - e->addr <= e->size - r.bytes;
      });
    };
    for (auto& t : p.inputs) {
      ref(t.ref, "input '" + t.name + "'");
      if (!inside(t.ref, "data_in")) bad("input '{}' at 0x{:x} (+{} bytes) is not inside data_in", t.name, t.ref.addr, t.ref.bytes);
      if (!t.image.format.empty()) image(t);
    }
    for (auto& t : p.outputs) {
      ref(t.ref, "output '" + t.name + "'");
      if (!inside(t.ref, "data_out") && !inside(t.ref, "data"))
        bad("output '{}' at 0x{:x} (+{} bytes) is not inside data_out or data", t.name, t.ref.addr, t.ref.bytes);
      if (t.extent) {
        dynamicOutput(t);
        if (!inside(*t.extent, "data_out") && !inside(*t.extent, "data"))
          bad("output '{}': its extent at 0x{:x} is not inside data_out or data", t.name, t.extent->addr);
      }
    }
  }

  /// A dynamic output (IoTensor::extent): its extent int64 [rank] lies in memory beside it, and the layer that writes
  /// the output writes the extent too (a nonzero layer's outputs 0 and 1, a dynamic layer's output and its extent, or
  /// two outputs of an if layer).
  void dynamicOutput(const IoTensor& t) const {
    const TensorRef& e = *t.extent;
    ref(e, "output '" + t.name + "': extent");
    if (e.type != ElemType::kI64 || e.rank != 1 || e.dims[0] != t.ref.rank)
      bad("output '{}': its extent is {} {}, not int64 [{}] (one dim per dim of the output)", t.name, elemName(e.type), dimsStr(e), t.ref.rank);
    auto same = [](const TensorRef& a, const TensorRef& b) { return a.addr == b.addr && a.bytes == b.bytes; };
    for (const auto* list : {&p.mac, &p.vec})
      for (const Descriptor& d : *list) {
        if (d.kind == LayerKind::kNonZero && d.n_out == 2 && same(d.out(0), t.ref) && same(d.out(1), e)) return;
        if (d.kind == LayerKind::kIf) {  // (an if writes its dynamic outputs and their extents with its moves)
          bool data = false, extent = false;
          for (int j = 0; j < d.n_out; ++j) data |= same(d.out(j), t.ref), extent |= same(d.out(j), e);
          if (data && extent) return;
        }
        if (d.flags & kFlagDynamic)
          for (int j = 0; j < d.n_out / 2; ++j)
            if (same(d.out(j), t.ref) && same(d.out(d.n_out / 2 + j), e)) return;
      }
    bad("output '{}': no layer writes it with its extent at 0x{:x} (a nonzero layer, a dynamic layer's output and its "
        "extent, or an if layer's outputs)", t.name, e.addr);
  }

  ElemType floatType() const {
    if (!numericsTraits(p.numerics).packages)
      bad("numerics '{}' is not supported by this npuc (packages exist for {})", numericsName(p.numerics), familiesWithPackages());
    return numericsTraits(p.numerics).float_type;
  }

  /// A dynamic layer (kFlagDynamic): a kind that takes it, an extent int64 [rank] after each data input and output.
  void dynamicLayer(const Descriptor& d, const std::string& what) const {
    if (!layerTakesDynamic(d.kind)) bad("{}: this kind does not compute on dynamic tensors (flag 0x{:x})", what, kFlagDynamic);
    if (d.n_in % 2 || d.n_out % 2 || d.n_in + d.n_out > kMaxRefs)
      bad("{}: a dynamic layer has an extent for each of its inputs and outputs: {} inputs and {} outputs", what, d.n_in, d.n_out);
    auto extent = [&](const TensorRef& data, const TensorRef& e, const std::string& whose) {
      if (e.type != ElemType::kI64 || e.rank != 1 || e.dims[0] != data.rank)
        bad("{}: the extent of {} is {} {}, not int64 [{}]", what, whose, elemName(e.type), dimsStr(e), data.rank);
      if (data.layout != RefLayout::kRowMajor) bad("{}: {} is dynamic and channel-last (dynamic tensors are row-major)", what, whose);
    };
    for (int i = 0; i < d.n_in / 2; ++i) extent(d.in(i), d.in(d.n_in / 2 + i), fmt::format("input {}", i));
    for (int j = 0; j < d.n_out / 2; ++j) extent(d.out(j), d.out(d.n_out / 2 + j), fmt::format("output {}", j));
  }

  void descriptor(const Descriptor& full, Engine e, size_t index) const {
    std::string what = fmt::format("{} descriptor {} (seq {})", engineName(e), index, full.seq);
    const char* kname = layerKindName(full.kind);
    if (!kname) bad("{}: unknown layer kind {}", what, static_cast<int>(full.kind));
    what += fmt::format(", {}", kname);
    if (full.flags & kFlagDynamic) dynamicLayer(full, what);
    // (a dynamic layer's kind rules hold for its data references, at capacity; every reference is placed and checked)
    const Descriptor view = dataView(full);
    const Descriptor& d = view;
    if (!layerAllowedOn(d.kind, e)) bad("{}: this kind runs on the {} engine", what, engineName(layerEngine(d.kind)));
    // 1..max_outputs outputs (layer_kinds.def: several for a custom layer, layer_norm's statistics, top_k's indices),
    // as many as fit the references.
    if (d.n_in + d.n_out > kMaxRefs || d.n_out < 1 || d.n_out > layerKindInfo(d.kind)->max_outputs || d.n_in < 1)
      bad("{}: {} inputs and {} outputs (this kind writes 1..{} outputs; at most {} references)", what, d.n_in, d.n_out,
          layerKindInfo(d.kind)->max_outputs, kMaxRefs);
    if (d.n_in < layerKindInfo(d.kind)->min_inputs || d.n_in > layerKindInfo(d.kind)->max_inputs)
      bad("{}: {} inputs (this kind takes {}..{})", what, d.n_in, layerKindInfo(d.kind)->min_inputs, layerKindInfo(d.kind)->max_inputs);
    if (static_cast<uint8_t>(d.act) > 3) bad("{}: unknown activation code {}", what, static_cast<int>(d.act));
    const LayerKindInfo& info = *layerKindInfo(d.kind);
    bool moves = info.cls == KindClass::Moves, prepost = info.cls == KindClass::PrePost;
    if ((moves || prepost) && (d.act != Act::kNone || d.act_a != 0 || d.act_b != 0))
      bad("{}: {} layers have no activation", what, moves ? "data-movement" : "pre/post-processing");
    if (full.flags & ~(kFlagInterrupt | kFlagDynamic)) bad("{}: unknown flags 0x{:x}", what, full.flags);
    if (e == Engine::kVector) {
      if (std::none_of(p.libraries.begin(), p.libraries.end(), [&](const Library& l) { return l.id == d.lib; }))
        bad("{}: library {} is not in the drp_config table", what, d.lib);
    } else if (d.lib) {
      bad("{}: MAC descriptors use library 0", what);
    }
    for (int i = 0; i < kMaxRefs; ++i) {
      const TensorRef& r = full.refs[static_cast<size_t>(i)];
      if (i >= full.n_in + full.n_out) {
        if (r.addr || r.bytes || r.rank) bad("{}: unused reference {} must be zero", what, i);
        continue;
      }
      bool is_out = i >= full.n_in;
      std::string rw = is_out ? fmt::format("output {}", i - full.n_in) : fmt::format("input {}", i);
      ref(r, what + ": " + rw);
      if (r.layout == RefLayout::kChannelLast) {  // (RefLayout: the executor transposes around the layer)
        if (r.rank < 3) bad("{}: {} is channel-last with rank {} (channel-last references have rank 3 or more)", what, rw, r.rank);
        if (is_out && (d.n_out != 1))
          bad("{}: {} is channel-last; only the output of a layer with one output may be", what, rw);
        if (d.kind == LayerKind::kIf || d.kind == LayerKind::kLoop || d.kind == LayerKind::kScan || d.kind == LayerKind::kCustom)
          bad("{}: {} is channel-last; {} layers take row-major references only", what, rw, layerKindName(d.kind));
      }
      const Element* s = spaceOf(r.addr, r.bytes);
      if (!s) bad("{}: {} [0x{:x}, +{}) is outside every element space of the map", what, rw, r.addr, r.bytes);
      const bool writable = writableSpace(*s), readable = readableSpace(*s);
      // (An empty tensor reads and writes nothing: it may sit where empty spaces meet.)
      if (r.bytes && (is_out ? !writable : !readable)) bad("{}: {} lies in '{}', which it may not {}", what, rw, s->name, is_out ? "write" : "read");
      if (s->name == "weight") weightRef(r, what + ": " + rw);
    }
    // An output may not overlap any input (kernels read inputs while writing the output), nor another output.
    auto overlap = [](const TensorRef& a, const TensorRef& b) {
      return a.bytes && b.bytes && a.addr < uint64_t(b.addr) + b.bytes && b.addr < uint64_t(a.addr) + a.bytes;
    };
    for (int k = 0; k < full.n_out; ++k) {
      const TensorRef& o = full.out(k);
      const std::string ow = full.n_out == 1 ? std::string("the output") : fmt::format("output {}", k);
      for (int i = 0; i < full.n_in; ++i)
        if (overlap(o, full.in(i))) bad("{}: {} [0x{:x}, +{}) overlaps input {}", what, ow, o.addr, o.bytes, i);
      for (int j = 0; j < k; ++j)
        if (overlap(o, full.out(j))) bad("{}: {} [0x{:x}, +{}) overlaps output {}", what, ow, o.addr, o.bytes, j);
    }
    // parameter block
    uint32_t words = expectedParamWords(d);
    if (d.param_size != words * 4) bad("{}: parameter block of {} bytes, this kind needs {}", what, d.param_size, words * 4);
    if (words) {
      const Element& dp = need("drp_param");
      if (d.param_addr < dp.addr || d.param_addr % 4 || uint64_t(d.param_addr) - dp.addr + d.param_size > p.params.size())
        bad("{}: parameter block [0x{:x}, +{}) is not inside the loaded drp_param image", what, d.param_addr, d.param_size);
    } else if (d.param_addr) {
      bad("{}: no parameters, so param_addr must be 0", what);
    }
    shapes(d, what);
  }

  /// A custom layer's record: parameter names unique, types known, each tensor parameter one of the descriptor's
  /// inputs (after the op's tensor inputs, no two on one input).
  void customLayer(const CustomLayer& c, const Descriptor& d, const std::string& what) const {
    if (c.op.empty() || c.library.empty()) bad("{}: the custom record names no op or no plugin", what);
    std::set<std::string> names;
    std::set<int32_t> inputs;
    for (const CustomParam& q : c.params) {
      if (q.name.empty() || !names.insert(q.name).second) bad("{}: parameter name '{}' is empty or repeated", what, q.name);
      if (q.type < 1 || q.type > 7) bad("{}: parameter '{}' has unknown type {}", what, q.name, q.type);
      if (q.type == 7 && q.present) {
        if (q.input < 0 || q.input >= d.n_in || !inputs.insert(q.input).second)
          bad("{}: tensor parameter '{}' names input {} (the descriptor has {}; one parameter per input)", what, q.name, q.input, d.n_in);
      }
    }
    if (!inputs.empty() && *inputs.begin() < d.n_in - static_cast<int>(inputs.size()))
      bad("{}: tensor parameters must be the descriptor's last inputs", what);
  }

  void weightRef(const TensorRef& r, const std::string& what) const {
    const Element* s = spaceOf(r.addr, r.bytes);
    if (!s || s->name != "weight") bad("{} must be in the weight space", what);
    if (uint64_t(r.addr) - s->addr + r.bytes > p.weights.size())
      bad("{} [0x{:x}, +{}) reaches beyond the {} bytes of the weight image (weight file shorter than its references)",
          what, r.addr, r.bytes, p.weights.size());
  }

  /// Word i of an int32 reference in the weight space (checked by weightRef first).
  int32_t weightWord(const TensorRef& r, int64_t i) const {
    int32_t v;
    std::memcpy(&v, p.weights.data() + (r.addr - need("weight").addr) + 4 * static_cast<size_t>(i), 4);
    return v;
  }

  /// An int8-affine layer's requantization table `tab` (docs/numerics.md): int32 [words] in the weight space whose
  /// first `codes` words are int8 (zero points, then the output clamp [lo, hi], not empty); its words.
  std::vector<int32_t> int8Table(const TensorRef& tab, int64_t words, int codes, const std::string& what) const {
    if (tab.type != ElemType::kI32 || tab.rank != 1 || tab.dims[0] != words)
      bad("{}: the requantization table must be int32 [{}], got {} {}", what, words, elemName(tab.type), dimsStr(tab));
    weightRef(tab, what + ": requantization");
    std::vector<int32_t> t(static_cast<size_t>(words));
    for (int64_t k = 0; k < words; ++k) t[static_cast<size_t>(k)] = weightWord(tab, k);
    for (int k = 0; k < codes; ++k)
      if (t[k] < -128 || t[k] > 127) bad("{}: requantization word {} = {} is outside int8", what, k, t[k]);
    if (t[codes - 2] > t[codes - 1]) bad("{}: the clamp [{}, {}] is empty", what, t[codes - 2], t[codes - 1]);
    return t;
  }

  /// int8-pow2 packages (docs/numerics.md): each layer's table, by seq, for the slot order check of program().
  mutable std::map<uint32_t, kernels::pow2::Table> pow2_tables;

  void shapes(const Descriptor& d, const std::string& what) const {
    ElemType ft = floatType();
    // Mixed precision: a layer of an int8 package kept at float16 has every float operand in float16 (the casts
    // around it convert; docs/numerics.md "Mixed precision").
    if (numericsTraits(p.numerics).activation_bytes == 1 && d.kind != LayerKind::kCast && d.n_out > 0 &&
        ((d.n_in > 0 && d.in(0).type == ElemType::kF16) || d.out(0).type == ElemType::kF16))
      ft = ElemType::kF16;
    // The int8-pow2 forms checkPow2Form leaves to the float form's geometry checks (conv, conv_transpose, max_pool,
    // avg_pool, resize, global_avg_pool, global_max_pool); every other kind keeps its own type checks (codes where a float form
    // needs floats are refused).
    const bool pow2 = pow2Form(p.numerics, d) != Pow2Form::kNone &&
                      (d.kind == LayerKind::kConv || d.kind == LayerKind::kConvTranspose || d.kind == LayerKind::kMaxPool ||
                       d.kind == LayerKind::kAvgPool || d.kind == LayerKind::kResize ||
                       d.kind == LayerKind::kGlobalAvgPool || d.kind == LayerKind::kGlobalMaxPool);
    const std::vector<uint32_t> w = paramWords(p, d);
    const LayerCheck c{*this, p, where, d, what, ft, pow2, d.in(0), d.out(0), w};
    if (numericsTraits(p.numerics).pow2_codes && checkPow2Form(c, pow2_tables)) return;
    kindCheck(d.kind)(c);
  }

  void program() const {
    size_t n = p.mac.size() + p.vec.size();
    std::vector<std::pair<Engine, size_t>> by_seq(n, {Engine::kMac, SIZE_MAX});
    for (Engine e : {Engine::kMac, Engine::kVector}) {
      const auto& ds = e == Engine::kMac ? p.mac : p.vec;
      for (size_t i = 0; i < ds.size(); ++i) {
        const Descriptor& d = ds[i];
        if (d.seq >= n || by_seq[d.seq].second != SIZE_MAX) bad("{} descriptor {}: seq {} is out of range or repeated", engineName(e), i, d.seq);
        if (i && d.seq <= ds[i - 1].seq) bad("{} descriptor {}: seq {} is not after the previous descriptor's", engineName(e), i, d.seq);
        by_seq[d.seq] = {e, i};
        descriptor(d, e, i);
      }
    }
    if (numericsTraits(p.numerics).pow2_codes) {
      // Slots: each written by one layer, read only after it (in program order).
      std::vector<bool> written(p.pow2 ? p.pow2->slots : 0, false);
      for (auto& [seq, t] : pow2_tables) {
        for (int32_t sl : t.in_slots)
          if (!written[static_cast<size_t>(sl)]) bad("seq {}: reads the q of slot {} before any layer writes it", seq, sl);
        if (t.out.slot >= 0) {
          if (written[static_cast<size_t>(t.out.slot)]) bad("seq {}: slot {} is written by two layers", seq, t.out.slot);
          written[static_cast<size_t>(t.out.slot)] = true;
        }
      }
    }
    for (Engine e : {Engine::kMac, Engine::kVector}) {
      const auto& ds = e == Engine::kMac ? p.mac : p.vec;
      for (size_t i = 0; i < ds.size(); ++i) {
        uint32_t wt = ds[i].wait;
        if (wt == kNoWait) continue;
        if (wt >= ds[i].seq || by_seq[wt].first == e)
          bad("{} descriptor {}: waits for seq {}, which is not an earlier descriptor of the other engine", engineName(e), i, wt);
      }
    }
    // Data hazards: every byte a descriptor reads that was last written by the other engine must come from a
    // descriptor it waited for. `last` maps disjoint address intervals to their last writer (an interval map: each
    // write replaces the parts it covers), so partial overwrites are seen and the check stays O(n log n).
    struct Writer {
      uint32_t seq;
      Engine e;
    };
    IntervalMap<Writer> last;
    uint32_t waited[2] = {0, 0};      // per engine: every seq of the other engine below this is complete
    // A write matters to a later read of the other engine, or to the coverage of an output below: others are not
    // recorded (a single-engine program of 200k layers keeps its map small).
    size_t last_of[2] = {0, 0};  // one past the last seq of each engine
    for (size_t s = 0; s < n; ++s) last_of[static_cast<int>(by_seq[s].first)] = s + 1;
    auto touchesOutput = [&](const TensorRef& y) {
      for (const IoTensor& t : p.outputs)
        if (y.addr < uint64_t(t.ref.addr) + t.ref.bytes && t.ref.addr < uint64_t(y.addr) + y.bytes) return true;
      return false;
    };
    for (size_t s = 0; s < n; ++s) {
      const Engine e = by_seq[s].first;  // (not structured bindings: the lambda below captures them)
      const size_t i = by_seq[s].second;
      const Descriptor& d = (e == Engine::kMac ? p.mac : p.vec)[i];
      int ei = static_cast<int>(e);
      if (d.wait != kNoWait) waited[ei] = std::max(waited[ei], d.wait + 1);
      for (int k = 0; k < d.n_in; ++k) {
        const TensorRef& r = d.in(k);
        last.forEachOverlap(r.addr, uint64_t(r.addr) + r.bytes, [&](uint64_t, uint64_t, const Writer& w) {
          if (w.e != e && w.seq >= waited[ei])
            bad("{} descriptor {} (seq {}): input {} reads data written by seq {} on the other engine without waiting for it",
                engineName(e), i, d.seq, k, w.seq);
        });
      }
      for (int k = 0; k < d.n_out; ++k) {
        const TensorRef& y = d.out(k);
        if (last_of[1 - ei] > s + 1 || touchesOutput(y)) last.assign(y.addr, uint64_t(y.addr) + y.bytes, Writer{d.seq, e});
      }
    }
    // Every byte of every output is written by some descriptor (an output elsewhere would read stale memory).
    for (const IoTensor& t : p.outputs) {
      uint64_t lo = t.ref.addr, hi = uint64_t(t.ref.addr) + t.ref.bytes;
      last.forEachOverlap(lo, hi, [&](uint64_t b, uint64_t e, const Writer&) {
        if (b <= lo && e > lo) lo = e;  // covered up to e (intervals come in address order)
      });
      if (lo < hi)
        bad("output '{}' [0x{:x}, +{}): the bytes from 0x{:x} on are written by no descriptor", t.name, t.ref.addr, t.ref.bytes, lo);
    }
    if (n == 0) bad("the package has no descriptors");
    if (p.layers.size() != n) bad("manifest lists {} layers for {} descriptors", p.layers.size(), n);
    for (size_t s = 0; s < n; ++s) {
      const LayerInfo& l = p.layers[s];
      if (l.seq != s || l.engine != by_seq[s].first || l.index != by_seq[s].second)
        bad("manifest layer {} ('{}') does not point at the descriptor with seq {}", s, l.name, s);
      if (l.name.empty() || l.output.empty()) bad("manifest layer {}: empty name or output", s);
      const Descriptor& d = (l.engine == Engine::kMac ? p.mac : p.vec)[l.index];
      if ((d.kind == LayerKind::kCustom) != l.custom.has_value())
        bad("manifest layer {} ('{}'): {}", s, l.name,
            l.custom ? "a custom record on a layer that is not custom" : "a custom layer without its custom record");
      if (l.custom) customLayer(*l.custom, d, fmt::format("manifest layer {} ('{}')", s, l.name));
      if (l.extra_outputs.size() + 1 != d.n_out)
        bad("manifest layer {} ('{}'): it names {} output{} for a descriptor of {} (\"outputs\" lists them when there are "
            "several)", s, l.name, l.extra_outputs.size() + 1, l.extra_outputs.empty() ? "" : "s", d.n_out);
      for (const std::string& o : l.extra_outputs)
        if (o.empty()) bad("manifest layer {} ('{}'): an empty output name", s, l.name);
    }
    // Control layers (docs/package-format.md): their regions are the descriptors that follow them, inside any region
    // they lie in, in their layers group.
    std::vector<std::pair<uint64_t, size_t>> open;  // (one past a region's last seq, its control layer's seq), innermost last
    for (size_t s = 0; s < n; ++s) {
      while (!open.empty() && open.back().first <= s) open.pop_back();
      const LayerInfo& l = p.layers[s];
      if (!open.empty() && l.group != p.layers[open.back().second].group)
        bad("manifest layer {} ('{}'): group {} inside the region of control layer seq {} (group {})", s, l.name, l.group,
            open.back().second, p.layers[open.back().second].group);
      const Descriptor& d = (l.engine == Engine::kMac ? p.mac : p.vec)[l.index];
      if (!controlHeaderWords(d.kind)) continue;
      const std::vector<uint32_t> regions = controlRegions(d.kind, paramWords(p, d));
      uint64_t end = s + 1;
      for (uint32_t r : regions) end += r;
      if (end > n) bad("seq {} ({}): its regions ({} descriptors) run past the end of the program ({} descriptors)", s,
                       layerKindName(d.kind), end - s - 1, n);
      if (!open.empty() && end > open.back().first)
        bad("seq {} ({}): its regions end at seq {}, past the end of the region it lies in (seq {})", s,
            layerKindName(d.kind), end - 1, open.back().first - 1);
      for (size_t k = regions.size(); k-- > 0; end -= regions[k]) open.push_back({end, s});
      std::set<size_t> holders;  // (the runtime runs a region from its control layer: nesting is its call depth)
      for (auto& o : open) holders.insert(o.second);
      if (holders.size() > kMaxControlDepth)
        bad("seq {} ({}): control layers nest {} deep (at most {})", s, layerKindName(d.kind), holders.size(), kMaxControlDepth);
    }
    // Layers groups: pipeline stages, each a run of consecutive layers (a stage reads only what earlier ones wrote).
    if (std::any_of(p.layers.begin(), p.layers.end(), [](const LayerInfo& l) { return l.group > 0; }))
      for (size_t s = 0; s < n; ++s) {
        const LayerInfo& l = p.layers[s];
        if (l.group < 1 || l.group > kMaxGroups)
          bad("manifest layer {} ('{}'): group {} is outside [1, {}] (groups are given to every layer or none)", s, l.name, l.group, kMaxGroups);
        if (s > 0 && l.group < p.layers[s - 1].group)
          bad("manifest layer {} ('{}'): group {} after group {}: layers groups are pipeline stages, non-decreasing in program order",
              s, l.name, l.group, p.layers[s - 1].group);
      }
  }
};

void LayerCheck::isFloat(const TensorRef& r, const char* name) const {
  if (r.type != ft) bad("{}: {} is {}, the package numerics need {}", what, name, elemName(r.type), elemName(ft));
}

void LayerCheck::typeIs(const TensorRef& r, ElemType t, const char* name) const {
  if (r.type != t) bad("{}: {} is {}, this kind needs {}", what, name, elemName(r.type), elemName(t));
}

void LayerCheck::rankIs(const TensorRef& r, int k, const char* name) const {
  if (r.rank != k) bad("{}: {} has rank {}, needs {}", what, name, r.rank, k);
}

void LayerCheck::floatSameShape() const {
  isFloat(x, "x"); isFloat(y, "y");
  if (dimsOf(x) != dimsOf(y)) bad("{}: {} -> {} changes the shape", what, dimsStr(x), dimsStr(y));
}

void LayerCheck::bias(int i, uint32_t n) const {
  if (d.n_in > i) {
    const TensorRef& b = d.in(i);
    if (b.type != ElemType::kF32 || b.rank != 1 || b.dims[0] != n) bad("{}: bias must be float32 [{}], got {} {}", what, n, elemName(b.type), dimsStr(b));
    weightRef(b, what + ": bias");
  }
}

void LayerCheck::window(int64_t in, int64_t out, int64_t k, int64_t s, int64_t dl, int64_t pb, const char* axis) const {
  if (k < 1 || s < 1 || dl < 1 || pb < 0 || k > 1024 || s > 1024 || dl > 1024 || pb > 1024)
    bad("{}: {} window k={} s={} d={} pad={} out of range", what, axis, k, s, dl, pb);
  int64_t pe = (out - 1) * s + (k - 1) * dl + 1 - in - pb;
  if (out < 1 || pe < -(s - 1) - (k - 1) * dl || pe > (k - 1) * dl + s)
    bad("{}: {} output size {} does not follow from input {} with k={} s={} d={} pad={}", what, axis, out, in, k, s, dl, pb);
}

void LayerCheck::weightRef(const TensorRef& r, const std::string& what) const { checker.weightRef(r, what); }
const Element* LayerCheck::spaceOf(uint64_t addr, uint64_t bytes) const { return checker.spaceOf(addr, bytes); }
int32_t LayerCheck::weightWord(const TensorRef& r, int64_t i) const { return checker.weightWord(r, i); }
std::vector<int32_t> LayerCheck::int8Table(const TensorRef& tab, int64_t words, int codes, const std::string& what) const {
  return checker.int8Table(tab, words, codes, what);
}

void validatePackage(const Package& p, const std::string& where) {
  if (p.version != kFormatVersion) fail(ErrorCode::kInvalidInput, "{}: unknown format version {}", where, p.version);
  Checker c{p, where, {}, {}};
  for (auto [field, value] : {std::pair<const char*, const std::string*>{"prefix", &p.prefix}, {"target", &p.target}})
    if (std::string why = whyNotPlainName(*value); !why.empty()) c.bad("{} '{}' {}", field, *value, why);
  c.floatType();
  if (numericsTraits(p.numerics).pow2_codes != p.pow2.has_value())
    c.bad("the manifest's 'pow2' options belong to int8-pow2 packages, and those need them");
  if (p.pow2)
    if (std::string why = kernels::pow2::checkOptions(p.pow2->options); !why.empty()) c.bad("pow2 options: {}", why);
  c.addressMap();
  for (auto& l : p.libraries)
    if (l.name.size() > 23) c.bad("library {}: name '{}' is longer than 23 characters", l.id, l.name);
  c.ioTensors();
  c.program();
  if (p.ranges) checkShapeRanges(p, where);
}

}  // namespace npuc::package
