#include "plugin/plugin.hpp"

#include "plugin/preload.hpp"

#include "support/file.hpp"
#include "support/sha256.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace npuc::plugin {

namespace {

using detail::checkElf;
using detail::trialLoad;

constexpr size_t kGuard = 64;                 // bytes checked on each side of an output
constexpr uint8_t kGuardByte = 0xA5;
constexpr uint8_t kFillA = 0x00, kFillB = 0xFF;  // an output's bytes before the first call's two runs of a compute
constexpr uint64_t kMaxLibraryBytes = 1ull << 30;
constexpr uint64_t kMaxOutputBytes = 1ull << 40;
constexpr uint32_t kMaxPorts = 64;
constexpr uint32_t kMaxParams = 256;

struct Registry {
  std::recursive_mutex mu;  // (recursive: a plugin's constructor, run by dlopen under it, may look ops up)
  std::vector<std::unique_ptr<Library>> libs;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<CustomOp>, std::less<>> ops;
};
/// Never destroyed: layers may outlive static destruction (a Runtime held by a global), and plugins stay loaded.
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}

std::string normDomain(std::string_view d) { return d == "ai.onnx" ? std::string() : std::string(d); }

/// What npuc keeps behind npuc_op_context::host.
struct Host {
  std::string error;
};
void setError(npuc_op_context* ctx, const char* message) {
  if (!ctx || !ctx->host) return;
  static_cast<Host*>(ctx->host)->error = message ? message : "";
}

npuc_tensor viewOf(DType t, const Shape& s, const void* data, uint64_t bytes) {
  npuc_tensor v{};
  v.elem_type = codeOf(t);
  v.rank = static_cast<int32_t>(s.size());
  for (size_t d = 0; d < s.size() && d < NPUC_OP_MAX_RANK; ++d) v.dims[d] = s[d];
  v.data = const_cast<void*>(data);
  v.bytes = bytes;
  return v;
}

/// Runs one callback: the context made, exceptions caught, a failing status turned into an Error.
template <class F>
void guarded(const CustomOp& op, const std::string& node, const char* what, const ParamViews& views, void* state,
             int threads, F&& call) {
  Host host;
  npuc_op_context ctx{};
  ctx.struct_size = sizeof(npuc_op_context);
  ctx.node_name = node.c_str();
  ctx.params = views.p.data();
  ctx.num_params = static_cast<uint32_t>(views.p.size());
  ctx.state = state;
  ctx.num_threads = threads;
  ctx.host = &host;
  ctx.set_error = &setError;
  int32_t status = 0;
  std::string thrown;
  try {
    status = call(ctx);
  } catch (const std::exception& e) {
    thrown = fmt::format("threw an exception: {}", e.what());
  } catch (...) {
    thrown = "threw an exception (not a std::exception)";
  }
  if (!thrown.empty())
    fail(ErrorCode::kInvalidInput, "{}, node '{}': {} {}", op.label(), node, what, thrown);
  if (status != NPUC_OP_OK)
    fail(ErrorCode::kInvalidInput, "{}, node '{}': {} failed (status {}): {}", op.label(), node, what, status,
         host.error.empty() ? "the plugin gave no message" : host.error);
}

/// An output's bytes (each `fill`) with guard bytes on both sides.
struct Guarded {
  std::vector<uint64_t> mem;  // 8-byte aligned
  size_t bytes = 0;
  Guarded(size_t n, uint8_t fill) : mem((n + 2 * kGuard + 7) / 8), bytes(n) {
    std::memset(mem.data(), kGuardByte, mem.size() * 8);
    if (fill != kGuardByte) std::memset(data(), fill, n);
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(mem.data()) + kGuard; }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(mem.data()) + kGuard; }
  /// The offset (from the data) of the first guard byte written, or nullopt when none was.
  std::optional<std::ptrdiff_t> breach() const {
    const uint8_t* base = reinterpret_cast<const uint8_t*>(mem.data());
    for (size_t k = kGuard; k-- > 0;)
      if (base[k] != kGuardByte) return static_cast<std::ptrdiff_t>(k) - static_cast<std::ptrdiff_t>(kGuard);
    const size_t end = mem.size() * 8;
    for (size_t k = kGuard + bytes; k < end && k < kGuard + bytes + kGuard; ++k)
      if (base[k] != kGuardByte) return static_cast<std::ptrdiff_t>(k - kGuard);
    return std::nullopt;
  }
};

/// The values a parameter's declared type holds, when narrower than what it passes as (int64 / double).
struct DeclaredRange {
  const char* vx_type;
  bool floating;      // a float type (bounded by max) or an integer type (by lo and hi)
  int64_t lo, hi;     // integer types: the values
  double max;         // float types: the largest finite magnitude (NaN and infinities pass)
  const char* shown;  // the range as messages give it
};
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
const DeclaredRange kRanges[] = {
    {"VX_TYPE_INT8", false, -128, 127, 0, "-128 to 127"},
    {"VX_TYPE_UINT8", false, 0, 255, 0, "0 to 255"},
    {"VX_TYPE_CHAR", false, -128, 255, 0, "-128 to 255 (one byte, signed or unsigned)"},
    {"VX_TYPE_INT16", false, -32768, 32767, 0, "-32768 to 32767"},
    {"VX_TYPE_UINT16", false, 0, 65535, 0, "0 to 65535"},
    {"VX_TYPE_INT32", false, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), 0,
     "-2147483648 to 2147483647"},
    {"VX_TYPE_ENUM", false, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), 0,
     "-2147483648 to 2147483647 (vx_enum is int32)"},
    {"VX_TYPE_UINT32", false, 0, std::numeric_limits<uint32_t>::max(), 0, "0 to 4294967295"},
    {"VX_TYPE_UINT64", false, 0, kI64Max, 0, "0 to 9223372036854775807 (passed as int64)"},
    {"VX_TYPE_SIZE", false, 0, kI64Max, 0, "0 to 9223372036854775807 (passed as int64)"},
    {"VX_TYPE_FLOAT16", true, 0, 0, 65504.0, "-65504 to 65504 (float16's finite values)"},
    {"VX_TYPE_FLOAT32", true, 0, 0, static_cast<double>(std::numeric_limits<float>::max()),
     "-3.4028235e+38 to 3.4028235e+38 (float32's finite values)"},
};
const DeclaredRange* declaredRange(const char* vx_type) {
  if (!vx_type) return nullptr;
  for (const DeclaredRange& r : kRanges)
    if (std::strcmp(r.vx_type, vx_type) == 0) return &r;
  return nullptr;
}

}  // namespace

std::string outsideDeclaredRange(const char* vx_type, double v, bool floating) {
  const DeclaredRange* r = declaredRange(vx_type);
  if (!r || r->floating != floating) return "";
  if (floating) return std::isfinite(v) && std::fabs(v) > r->max ? r->shown : "";
  return v < static_cast<double>(r->lo) || v > static_cast<double>(r->hi) ? r->shown : "";
}

ParamViews::ParamViews(const std::vector<Param>& params) {
  tensors.resize(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    const Param& s = params[k];
    npuc_param v{};
    v.name = s.name.c_str();
    v.type = s.type;
    v.present = s.present ? 1 : 0;
    v.i = s.i;
    v.f = s.f;
    v.s = s.s.c_str();
    if (s.type == NPUC_PARAM_INTS) {
      v.count = s.ints.size();
      v.ints = s.ints.data();
    } else if (s.type == NPUC_PARAM_FLOATS) {
      v.count = s.floats.size();
      v.floats = s.floats.data();
    } else if (s.type == NPUC_PARAM_TENSOR && s.tensor.defined()) {
      npuc_tensor& t = tensors[k];
      t.elem_type = codeOf(s.tensor.dtype());
      t.rank = static_cast<int32_t>(s.tensor.shape().size());
      for (int32_t d = 0; d < t.rank && d < NPUC_OP_MAX_RANK; ++d) t.dims[d] = s.tensor.shape()[static_cast<size_t>(d)];
      t.data = const_cast<void*>(s.tensor.raw());
      t.bytes = s.tensor.nbytes();
      v.tensor = &t;
    }
    p.push_back(v);
  }
}

DType dtypeOf(int32_t code) {
  switch (code) {
    case NPUC_ELEM_FLOAT32: return DType::kF32;
    case NPUC_ELEM_FLOAT16: return DType::kF16;
    case NPUC_ELEM_UINT8: return DType::kU8;
    case NPUC_ELEM_INT8: return DType::kI8;
    case NPUC_ELEM_UINT16: return DType::kU16;
    case NPUC_ELEM_INT16: return DType::kI16;
    case NPUC_ELEM_INT32: return DType::kI32;
    case NPUC_ELEM_INT64: return DType::kI64;
    case NPUC_ELEM_BOOL: return DType::kBool;
    default: return DType::kUndefined;
  }
}

int32_t codeOf(DType t) {
  switch (t) {
    case DType::kF32: return NPUC_ELEM_FLOAT32;
    case DType::kF16: return NPUC_ELEM_FLOAT16;
    case DType::kU8: return NPUC_ELEM_UINT8;
    case DType::kI8: return NPUC_ELEM_INT8;
    case DType::kU16: return NPUC_ELEM_UINT16;
    case DType::kI16: return NPUC_ELEM_INT16;
    case DType::kI32: return NPUC_ELEM_INT32;
    case DType::kI64: return NPUC_ELEM_INT64;
    case DType::kBool: return NPUC_ELEM_BOOL;
    default: return 0;
  }
}

int32_t paramTypeFromName(const std::string& s) {
  static const std::map<std::string, int32_t> names = {
      {"bool", NPUC_PARAM_BOOL}, {"int", NPUC_PARAM_INT}, {"float", NPUC_PARAM_FLOAT},
      {"string", NPUC_PARAM_STRING}, {"ints", NPUC_PARAM_INTS}, {"floats", NPUC_PARAM_FLOATS},
      {"tensor", NPUC_PARAM_TENSOR}, {"VX_TYPE_BOOL", NPUC_PARAM_BOOL}, {"VX_TYPE_CHAR", NPUC_PARAM_INT},
      {"VX_TYPE_INT8", NPUC_PARAM_INT}, {"VX_TYPE_UINT8", NPUC_PARAM_INT}, {"VX_TYPE_INT16", NPUC_PARAM_INT},
      {"VX_TYPE_UINT16", NPUC_PARAM_INT}, {"VX_TYPE_INT32", NPUC_PARAM_INT}, {"VX_TYPE_UINT32", NPUC_PARAM_INT},
      {"VX_TYPE_INT64", NPUC_PARAM_INT}, {"VX_TYPE_UINT64", NPUC_PARAM_INT}, {"VX_TYPE_ENUM", NPUC_PARAM_INT},
      {"VX_TYPE_SIZE", NPUC_PARAM_INT}, {"VX_TYPE_FLOAT16", NPUC_PARAM_FLOAT},
      {"VX_TYPE_FLOAT32", NPUC_PARAM_FLOAT}, {"VX_TYPE_FLOAT64", NPUC_PARAM_FLOAT},
      {"VX_TYPE_ARRAY", NPUC_PARAM_INTS}, {"VX_TYPE_TENSOR", NPUC_PARAM_TENSOR}};
  auto it = names.find(s);
  return it == names.end() ? 0 : it->second;
}

const char* paramTypeName(int32_t type) {
  switch (type) {
    case NPUC_PARAM_BOOL: return "bool";
    case NPUC_PARAM_INT: return "int";
    case NPUC_PARAM_FLOAT: return "float";
    case NPUC_PARAM_STRING: return "string";
    case NPUC_PARAM_INTS: return "ints";
    case NPUC_PARAM_FLOATS: return "floats";
    case NPUC_PARAM_TENSOR: return "tensor";
    default: return "?";
  }
}

CustomOp::CustomOp(const Library& lib, const npuc_custom_op& d)
    : lib_(&lib), d_(&d), name_(d.name), domain_(normDomain(d.domain ? d.domain : "")),
      engine_(d.engine && *d.engine ? d.engine : "vector"), doc_(d.doc ? d.doc : "") {}

std::string CustomOp::qualifiedName() const { return domain_.empty() ? name_ : domain_ + "." + name_; }

std::string CustomOp::label() const {
  return fmt::format("custom op '{}' (plugin {})", qualifiedName(), lib_->file_name);
}

std::vector<DType> CustomOp::portTypes(bool output, int i) const {
  const npuc_port_def& p = (output ? d_->outputs : d_->inputs)[i];
  std::vector<DType> r;
  for (uint32_t k = 0; k < p.num_types; ++k) r.push_back(dtypeOf(p.types[k]));
  if (r.empty()) r.push_back(DType::kF32);
  return r;
}

DType CustomOp::floatPortType(bool output, int i, DType stored) const {
  const std::vector<DType> t = portTypes(output, i);
  const bool f32 = std::count(t.begin(), t.end(), DType::kF32) > 0, f16 = std::count(t.begin(), t.end(), DType::kF16) > 0;
  if (f16 && (stored == DType::kF16 || !f32)) return DType::kF16;
  if (f32) return DType::kF32;
  return t.front();
}

DType CustomOp::passType(int i, DType t) const {
  const std::vector<DType> ok = portTypes(false, i);
  if (std::count(ok.begin(), ok.end(), t)) return t;
  const bool floats = std::count(ok.begin(), ok.end(), DType::kF32) || std::count(ok.begin(), ok.end(), DType::kF16);
  if ((t == DType::kF32 || t == DType::kF16) && floats) return floatPortType(false, i, t);
  return DType::kUndefined;
}

int CustomOp::lastParamInput() const {
  int last = -1;
  for (uint32_t k = 0; k < d_->num_params; ++k) last = std::max(last, static_cast<int>(d_->params[k].input));
  return last;
}

void CustomOp::checkParams(const std::string& node, const std::vector<Param>& params) const {
  for (size_t k = 0; k < params.size() && k < d_->num_params; ++k) {
    const npuc_param_def& pd = d_->params[k];
    const Param& p = params[k];
    const DeclaredRange* r = declaredRange(pd.vx_type);
    if (!r || !p.present) continue;
    auto bad = [&](const std::string& value, std::ptrdiff_t item) {
      fail(ErrorCode::kInvalidInput, "{}, node '{}': parameter '{}' ({}){} is {}, which the type cannot hold (its range "
           "is {})", label(), node, pd.name, pd.vx_type, item < 0 ? std::string() : fmt::format(" item {}", item),
           value, r->shown);
    };
    // NaN and infinities are float16 / float32 values: only finite values beyond the largest finite one are refused.
    auto checkF = [&](double v, std::ptrdiff_t item) {
      if (std::isfinite(v) && std::fabs(v) > r->max) bad(fmt::format("{}", v), item);
    };
    auto checkI = [&](int64_t v, std::ptrdiff_t item) {
      if (v < r->lo || v > r->hi) bad(fmt::format("{}", v), item);
    };
    if (r->floating && p.type == NPUC_PARAM_FLOAT) checkF(p.f, -1);
    if (r->floating && p.type == NPUC_PARAM_FLOATS)
      for (size_t j = 0; j < p.floats.size(); ++j) checkF(p.floats[j], static_cast<std::ptrdiff_t>(j));
    if (!r->floating && p.type == NPUC_PARAM_INT) checkI(p.i, -1);
    if (!r->floating && p.type == NPUC_PARAM_INTS)
      for (size_t j = 0; j < p.ints.size(); ++j) checkI(p.ints[j], static_cast<std::ptrdiff_t>(j));
  }
}

std::vector<std::pair<DType, Shape>> CustomOp::infer(const std::string& node, const std::vector<DType>& in_types,
                                                     const std::vector<Shape>& in_shapes,
                                                     const std::vector<const Tensor*>& in_values,
                                                     const std::vector<Param>& params) const {
  std::vector<npuc_tensor> in;
  for (size_t i = 0; i < in_types.size(); ++i) {
    const Tensor* v = i < in_values.size() ? in_values[i] : nullptr;
    if (in_shapes[i].size() > NPUC_OP_MAX_RANK)
      fail(ErrorCode::kUnsupported, "{}, node '{}': input {} has rank {}; custom ops take rank {} at most", label(),
           node, i, in_shapes[i].size(), NPUC_OP_MAX_RANK);
    in.push_back(viewOf(in_types[i], in_shapes[i], v ? v->raw() : nullptr, v ? v->nbytes() : 0));
  }
  checkParams(node, params);
  std::vector<npuc_tensor> out(static_cast<size_t>(numOutputs()));
  for (auto& o : out) o.rank = -1;  // unset: the plugin must set every output
  const ParamViews views(params);
  guarded(*this, node, "infer", views, nullptr, 1, [&](npuc_op_context& ctx) {
    return d_->infer(&ctx, in.data(), static_cast<uint32_t>(in.size()), out.data(), static_cast<uint32_t>(out.size()));
  });
  std::vector<std::pair<DType, Shape>> r;
  for (size_t k = 0; k < out.size(); ++k) {
    const npuc_tensor& o = out[k];
    auto bad = [&](const std::string& why) {
      fail(ErrorCode::kInvalidInput, "{}, node '{}': infer gave output {} ('{}') {}", label(), node, k,
           d_->outputs[k].name ? d_->outputs[k].name : "", why);
    };
    if (o.rank < 0 || o.rank > NPUC_OP_MAX_RANK)
      bad(o.rank < 0 ? std::string("no shape (infer must set every output's rank and dims)")
                     : fmt::format("rank {} (0 to {} allowed)", o.rank, NPUC_OP_MAX_RANK));
    const DType t = dtypeOf(o.elem_type);
    const std::vector<DType> allowed = portTypes(true, static_cast<int>(k));
    if (t == DType::kUndefined || std::count(allowed.begin(), allowed.end(), t) == 0)
      bad(fmt::format("element type code {}, which the op's definition does not list for it", o.elem_type));
    Shape s;
    uint64_t bytes = dtypeSize(t);
    for (int32_t d = 0; d < o.rank; ++d) {
      if (o.dims[d] < 0) bad(fmt::format("dim {} = {} (dims are >= 0)", d, o.dims[d]));
      if (o.dims[d] > 0 && bytes > kMaxOutputBytes / static_cast<uint64_t>(o.dims[d]))
        bad(fmt::format("a shape of more than {} bytes", kMaxOutputBytes));
      bytes *= static_cast<uint64_t>(o.dims[d]);
      s.push_back(o.dims[d]);
    }
    r.emplace_back(t, std::move(s));
  }
  return r;
}

Instance::Instance(const CustomOp& op, std::string node, std::vector<Param> params)
    : op_(op), node_(std::move(node)), params_(std::move(params)), views_(params_) {
  op_.checkParams(node_, params_);
}

Instance::~Instance() { releaseState(); }

namespace {
/// The plugin's destroy for a state its init made (a destructor cannot report: the state is gone either way).
void destroyState(const npuc_custom_op& d, void* st) {
  if (!d.destroy) return;
  try {
    d.destroy(st);
  } catch (...) {
  }
}
}  // namespace

void Instance::releaseState() {
  if (has_state_) destroyState(op_.desc(), state_);
  has_state_ = false;
  state_ = nullptr;
}

void Instance::ensureState(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                           const std::vector<Shape>& shapes, int threads) {
  if (!op_.desc().init) return;
  if (has_state_ && shapes == state_shapes_) return;
  releaseState();
  bool made = false;
  state_ = makeState(in, out, threads, made);
  has_state_ = made;
  state_shapes_ = shapes;
}

void* Instance::makeState(const std::vector<Tensor>& in, const std::vector<Tensor>& out, int threads, bool& made) {
  made = false;
  if (!op_.desc().init) return nullptr;
  std::vector<npuc_tensor> vi, vo;
  for (auto& t : in) vi.push_back(viewOf(t.dtype(), t.shape(), t.raw(), t.nbytes()));
  for (auto& t : out) vo.push_back(viewOf(t.dtype(), t.shape(), nullptr, 0));
  void* st = nullptr;
  guarded(op_, node_, "init", views_, nullptr, threads, [&](npuc_op_context& ctx) {
    return op_.desc().init(&ctx, vi.data(), static_cast<uint32_t>(vi.size()), vo.data(), static_cast<uint32_t>(vo.size()), &st);
  });
  made = true;
  return st;
}

void Instance::compute(const std::vector<Tensor>& in, std::vector<Tensor>& given, bool exact, int threads) {
  // Every output the op defines gets a buffer: those the caller does not keep (a node that omits trailing outputs,
  // a package layer holding output 0) are computed into scratch tensors of the shapes infer gives.
  std::vector<Tensor> out = given;
  if (out.size() < static_cast<size_t>(op_.numOutputs())) {
    std::vector<Shape> in_shapes;
    for (auto& t : in) in_shapes.push_back(t.shape());
    if (spare_for_ != in_shapes || spare_.empty()) {  // their types and shapes, once per set of input shapes
      std::vector<DType> types;
      std::vector<const Tensor*> values;
      for (auto& t : in) types.push_back(t.dtype()), values.push_back(nullptr);
      auto all = op_.infer(node_, types, in_shapes, values, params_);
      spare_.assign(all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), out.size())), all.end());
      spare_for_ = std::move(in_shapes);
    }
    for (auto& [t, s] : spare_) out.push_back(Tensor::uninitialized(t, s));
  }
  std::vector<Shape> shapes;  // inputs then outputs: what init and the fast check are keyed on
  for (auto& t : in) shapes.push_back(t.shape());
  for (auto& t : out) shapes.push_back(t.shape());
  ensureState(in, out, shapes, threads);
  std::vector<npuc_tensor> vi;
  for (auto& t : in) vi.push_back(viewOf(t.dtype(), t.shape(), t.raw(), t.nbytes()));
  // One run of a compute with `state`, into fresh buffers whose bytes are `fill`; the guard bytes checked.
  auto run = [&](npuc_compute_fn fn, const char* what, uint8_t fill, void* state) {
    std::vector<Guarded> bufs;
    bufs.reserve(out.size());
    std::vector<npuc_tensor> vo;
    for (auto& t : out) {
      bufs.emplace_back(t.nbytes(), fill);
      vo.push_back(viewOf(t.dtype(), t.shape(), bufs.back().data(), t.nbytes()));
    }
    guarded(op_, node_, what, views_, state, threads, [&](npuc_op_context& ctx) {
      return fn(&ctx, vi.data(), static_cast<uint32_t>(vi.size()), vo.data(), static_cast<uint32_t>(vo.size()));
    });
    for (size_t k = 0; k < bufs.size(); ++k)
      if (auto at = bufs[k].breach())
        fail(ErrorCode::kInvalidInput,
             "{}, node '{}': {} wrote outside output {} (byte {} of a {}-byte tensor {}): the plugin writes out of "
             "bounds", op_.label(), node_, what, k, *at, bufs[k].bytes, shapeStr(out[k].shape()));
    return bufs;
  };
  // A checking run beyond the call's own: with a state of its own from init (destroyed after), so that the layer's
  // state sees one call per call and every run starts from the state the call's own run started from (the first
  // call for a set of shapes: a state init has just made, shapes being what the state is keyed on too; a layer's
  // `exact` does not change between calls, so its reference and fast checks come on the same first call).
  auto runAside = [&](npuc_compute_fn fn, const char* what, uint8_t fill) {
    bool made = false;
    void* st = makeState(in, out, threads, made);
    struct Release {
      const npuc_custom_op& d;
      void* st;
      bool made;
      ~Release() {
        if (made) destroyState(d, st);
      }
    } release{op_.desc(), st, made};
    return run(fn, what, fill, st);
  };
  // The same compute twice on the same inputs, into outputs pre-filled with different bytes: an element whose bytes
  // differ is one the compute did not write (or a result that is not a function of the inputs, parameters and state).
  auto sameTwice = [&](const char* what, const std::vector<Guarded>& a, const std::vector<Guarded>& b) {
    for (size_t k = 0; k < out.size(); ++k) {
      if (std::memcmp(a[k].data(), b[k].data(), a[k].bytes) == 0) continue;
      const size_t es = std::max<size_t>(1, dtypeSize(out[k].dtype()));
      const size_t n = a[k].bytes / es;
      size_t differ = 0, first = n;
      for (size_t e = 0; e < n; ++e)
        if (std::memcmp(a[k].data() + e * es, b[k].data() + e * es, es) != 0) {
          if (first == n) first = e;
          ++differ;
        }
      const npuc_port_def& port = op_.desc().outputs[k];
      fail(ErrorCode::kInvalidInput,
           "{}, node '{}': {} did not write output {} ('{}') in full: {} of its {} elements were not written, the first "
           "at element {} (npuc ran it twice on the same inputs, the output pre-filled with 0x{:02X} bytes, then with "
           "0x{:02X}, and the results differ there; a compute must write every element of its outputs and give the "
           "same result for the same inputs)", op_.label(), node_, what, k, port.name ? port.name : "", differ, n,
           first, kFillA, kFillB);
    }
  };
  const npuc_compute_fn ref_fn = op_.desc().compute_ref;
  const npuc_compute_fn fast_fn = exact ? nullptr : op_.desc().compute_fast;
  const bool check_fast = fast_fn && !fast_checked_.count(shapes);
  std::vector<Guarded> res;
  if (!fast_fn || check_fast) {  // the reference: the call's own run (with the layer's state)
    const bool check_ref = !ref_checked_.count(shapes);
    res = run(ref_fn, "compute_ref", check_ref ? kFillA : kGuardByte, state_);
    if (check_ref) {
      sameTwice("compute_ref", res, runAside(ref_fn, "compute_ref", kFillB));
      ref_checked_.insert(shapes);
    }
  }
  if (check_fast) {  // compute_fast checked aside; the call's result is the reference's (the same bits)
    const std::vector<Guarded> a = runAside(fast_fn, "compute_fast", kFillA);
    sameTwice("compute_fast", a, runAside(fast_fn, "compute_fast", kFillB));
    for (size_t k = 0; k < out.size(); ++k)
      if (std::memcmp(res[k].data(), a[k].data(), res[k].bytes) != 0) {
        size_t b = 0;
        while (res[k].data()[b] == a[k].data()[b]) ++b;
        const size_t es = std::max<size_t>(1, dtypeSize(out[k].dtype()));
        fail(ErrorCode::kInvalidInput,
             "{}, node '{}': compute_fast differs from compute_ref at output {} element {} (the fast compute must "
             "give the reference's bits)", op_.label(), node_, k, b / es);
      }
    fast_checked_.insert(shapes);
  } else if (fast_fn) {
    res = run(fast_fn, "compute_fast", kGuardByte, state_);
  }
  for (size_t k = 0; k < given.size(); ++k)  // (the spare outputs are dropped)
    if (res[k].bytes) std::memcpy(out[k].raw(), res[k].data(), res[k].bytes);
}

std::vector<const CustomOp*> registerLibrary(const std::filesystem::path& given,
                                             const std::function<bool(const std::string&, const std::string&)>& builtin) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path = fs::absolute(given, ec);
  const std::string shown = given.string();
  if (!fs::exists(path, ec))  // (stat only: a FIFO is not opened here)
    fail(ErrorCode::kIo, "custom op plugin '{}': no such file", shown);
  // Opened without waiting (O_NONBLOCK) and refused unless it is a regular file: a FIFO, a device, a folder.
  std::vector<uint8_t> bytes;
  try {
    bytes = readFileBytes(path, kMaxLibraryBytes);
  } catch (const Error& e) {
    fail(e.code(), "custom op plugin '{}': {}", shown, e.what());
  }
  const std::string sha = sha256Hex(bytes.data(), bytes.size());
  Registry& r = reg();
  // Registered before (perhaps under another name, perhaps by the runtime alone): its ops. r.mu held.
  auto known = [&]() -> std::optional<std::vector<const CustomOp*>> {
    for (auto& l : r.libs)
      if (l->sha256 == sha) {
        std::vector<const CustomOp*> same;
        for (auto& [k, op] : r.ops)
          if (&op->library() == l.get()) {
            if (builtin && builtin(op->domain(), op->name()))
              fail(ErrorCode::kInvalidInput, "custom op plugin '{}': op '{}': npuc implements {} itself (give the custom "
                   "op a domain of its own)", shown, op->name(), op->qualifiedName());
            same.push_back(op.get());
          }
        return same;
      }
    return std::nullopt;
  };
  {
    std::lock_guard<std::recursive_mutex> lock(r.mu);
    if (auto same = known()) return *same;
  }
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0)
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}' is not a shared library (no ELF header; build it with "
         "`npuc custom-op build`)", shown);
  checkElf(shown, bytes);
  trialLoad(shown, path, sha);  // (without r.mu: the child must not inherit it held)
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  if (auto same = known()) return *same;  // (registered by another thread meanwhile)
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}' cannot be loaded as a shared library: {}", shown, e ? e : "dlopen failed");
  }
  auto lib = std::make_unique<Library>();
  lib->path = path;
  lib->file_name = path.filename().string();
  lib->sha256 = sha;
  lib->handle = h;
  auto refuse = [&](const std::string& why) {
    dlclose(h);
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}': {}", shown, why);
  };
  void* sym = dlsym(h, NPUC_CUSTOM_OP_ENTRY);
  if (!sym) refuse("not an npuc plugin: it does not export " NPUC_CUSTOM_OP_ENTRY "() (include/npuc/custom_op.h)");
  const npuc_custom_op_library* table = nullptr;
  try {
    table = reinterpret_cast<npuc_custom_op_library_get_fn>(sym)();
  } catch (...) {
    refuse(NPUC_CUSTOM_OP_ENTRY "() threw an exception");
  }
  if (!table) refuse(NPUC_CUSTOM_OP_ENTRY "() returned no table");
  lib->abi_version = table->abi_version;
  if (table->abi_version != NPUC_CUSTOM_OP_ABI_VERSION)
    refuse(fmt::format("it was built for custom-op ABI version {}, this npuc speaks version {} (rebuild it against "
                       "this npuc's include/npuc/custom_op.h)", table->abi_version, NPUC_CUSTOM_OP_ABI_VERSION));
  if (table->num_ops == 0 || !table->ops) refuse("its table defines no ops");
  if (table->num_ops > 1024) refuse(fmt::format("its table claims {} ops", table->num_ops));
  std::vector<std::unique_ptr<CustomOp>> ops;
  for (uint32_t k = 0; k < table->num_ops; ++k) {
    const npuc_custom_op& d = table->ops[k];
    const std::string name = d.name ? d.name : "";
    auto bad = [&](const std::string& why) {
      refuse(fmt::format("op {} ('{}'): {}", k, name, why));
    };
    if (d.struct_size != sizeof(npuc_custom_op))
      bad(fmt::format("descriptor size {} (this ABI's npuc_custom_op is {} bytes)", d.struct_size, sizeof(npuc_custom_op)));
    if (name.empty() || name.size() > 128 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
      bad("the op name must be 1..128 letters, digits or '_'");
    const std::string domain = normDomain(d.domain ? d.domain : "");
    if (domain.size() > 128 || !std::all_of(domain.begin(), domain.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
        }))
      bad("the domain must be letters, digits, '_', '.' or '-'");
    if (domain == "ai.npuc") bad("the domain ai.npuc is npuc's own");
    auto ident = [](const char* t) {
      const std::string v = t ? t : "";
      return !v.empty() && v.size() <= 128 &&
             std::all_of(v.begin(), v.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    };
    if (d.engine && *d.engine && !ident(d.engine)) bad("the engine name must be letters, digits or '_'");
    if (builtin && builtin(domain, name))
      bad(fmt::format("npuc implements {}{} itself (give the custom op a domain of its own)",
                      domain.empty() ? "" : domain + ".", name));
    if (!d.infer) bad("it lacks the infer callback (required)");
    if (!d.compute_ref) bad("it lacks the compute_ref callback (required: the reference computation)");
    if (d.init && !d.destroy) bad("it has init but no destroy callback");
    if (d.num_inputs > kMaxPorts || (d.num_inputs && !d.inputs)) bad("its inputs are malformed");
    if (d.num_outputs == 0 || d.num_outputs > kMaxPorts || !d.outputs) bad("it must have 1 to 64 outputs");
    if (d.num_params > kMaxParams || (d.num_params && !d.params)) bad("its parameters are malformed");
    for (int side = 0; side < 2; ++side) {
      const npuc_port_def* ports = side ? d.outputs : d.inputs;
      const uint32_t n = side ? d.num_outputs : d.num_inputs;
      for (uint32_t p = 0; p < n; ++p) {
        if (!ident(ports[p].name)) bad(fmt::format("{} {}: a name is 1..128 letters, digits or '_'", side ? "output" : "input", p));
        if (ports[p].num_types > 16 || (ports[p].num_types && !ports[p].types))
          bad(fmt::format("{} '{}': malformed type list", side ? "output" : "input", ports[p].name));
        for (uint32_t t = 0; t < ports[p].num_types; ++t)
          if (dtypeOf(ports[p].types[t]) == DType::kUndefined)
            bad(fmt::format("{} '{}': unknown element type code {}", side ? "output" : "input", ports[p].name, ports[p].types[t]));
      }
    }
    std::vector<std::string> pnames;
    for (uint32_t p = 0; p < d.num_params; ++p) {
      const npuc_param_def& pd = d.params[p];
      if (!ident(pd.name)) bad(fmt::format("parameter {}: a name is 1..128 letters, digits or '_'", p));
      if (std::count(pnames.begin(), pnames.end(), pd.name)) bad(fmt::format("two parameters are named '{}'", pd.name));
      pnames.push_back(pd.name);
      if (pd.type < NPUC_PARAM_BOOL || pd.type > NPUC_PARAM_TENSOR)
        bad(fmt::format("parameter '{}': unknown type code {}", pd.name, pd.type));
      if (pd.input >= 0 && pd.input < static_cast<int32_t>(d.num_inputs))
        bad(fmt::format("parameter '{}' reads input {}, which is one of the op's tensor inputs", pd.name, pd.input));
      if (pd.input > 255) bad(fmt::format("parameter '{}' reads input {}", pd.name, pd.input));
      if (pd.type == NPUC_PARAM_TENSOR && pd.input < 0)
        bad(fmt::format("tensor parameter '{}' must read a constant input (input: N)", pd.name));
    }
    const std::pair<std::string, std::string> key{domain, name};
    if (auto it = r.ops.find(key); it != r.ops.end())
      bad(fmt::format("plugin {} already registered {}", it->second->library().file_name,
                      domain.empty() ? name : domain + "." + name));
    for (auto& o : ops)
      if (o->domain() == domain && o->name() == name) bad("the table defines it twice");
    ops.push_back(std::make_unique<CustomOp>(*lib, d));
  }
  std::vector<const CustomOp*> out;
  for (auto& o : ops) {
    out.push_back(o.get());
    r.ops[{o->domain(), o->name()}] = std::move(o);
  }
  r.libs.push_back(std::move(lib));
  return out;
}

const CustomOp* find(std::string_view domain, std::string_view name) {
  Registry& r = reg();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  if (r.ops.empty()) return nullptr;
  auto it = r.ops.find(std::pair<std::string, std::string>(normDomain(domain), std::string(name)));
  return it == r.ops.end() ? nullptr : it->second.get();
}

std::vector<const CustomOp*> registered() {
  Registry& r = reg();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  std::vector<const CustomOp*> v;
  for (auto& [k, op] : r.ops) v.push_back(op.get());
  return v;
}

}  // namespace npuc::plugin
