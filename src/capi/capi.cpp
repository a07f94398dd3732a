// The C API (include/npuc/npuc.h) over npuc::Runtime. Every entry point runs its body inside guard(), which turns
// any exception into a status code and the calling thread's last-error text; nothing escapes into C.
#include "npuc/npuc.h"

#include "npuc/error.hpp"
#include "npuc/runtime.hpp"

#include "kernels/aipp.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#ifndef NPUC_VERSION_STRING
#error "NPUC_VERSION_STRING must be defined by the build"
#endif

// The C enum mirrors npuc::DType value for value.
static_assert(NPUC_DTYPE_UNDEFINED == static_cast<int>(npuc::DType::kUndefined));
static_assert(NPUC_DTYPE_FLOAT32 == static_cast<int>(npuc::DType::kF32));
static_assert(NPUC_DTYPE_FLOAT16 == static_cast<int>(npuc::DType::kF16));
static_assert(NPUC_DTYPE_BFLOAT16 == static_cast<int>(npuc::DType::kBF16));
static_assert(NPUC_DTYPE_FLOAT64 == static_cast<int>(npuc::DType::kF64));
static_assert(NPUC_DTYPE_INT8 == static_cast<int>(npuc::DType::kI8));
static_assert(NPUC_DTYPE_UINT8 == static_cast<int>(npuc::DType::kU8));
static_assert(NPUC_DTYPE_INT16 == static_cast<int>(npuc::DType::kI16));
static_assert(NPUC_DTYPE_UINT16 == static_cast<int>(npuc::DType::kU16));
static_assert(NPUC_DTYPE_INT32 == static_cast<int>(npuc::DType::kI32));
static_assert(NPUC_DTYPE_UINT32 == static_cast<int>(npuc::DType::kU32));
static_assert(NPUC_DTYPE_INT64 == static_cast<int>(npuc::DType::kI64));
static_assert(NPUC_DTYPE_UINT64 == static_cast<int>(npuc::DType::kU64));
static_assert(NPUC_DTYPE_BOOL == static_cast<int>(npuc::DType::kBool));

struct npuc_runtime {
  explicit npuc_runtime(npuc::Runtime r) : rt(std::move(r)) {}
  npuc::Runtime rt;
  std::vector<npuc_tensor_info> inputs, outputs;
  std::vector<npuc_layer_info> layers;  // by seq; strings point into rt.layers()
  mutable std::atomic<bool> busy{false};
  bool ran = false;  // a run has completed (npuc_runtime_output_dims: before one, a dynamic output's capacity)
};

struct npuc_aipp_params {
  size_t images = 1;
  std::vector<npuc::kernels::AippFieldValue> fields;  // as set, by name (record fields with their image)
};

struct npuc_pipeline {
  explicit npuc_pipeline(std::unique_ptr<npuc::Pipeline> p) : pl(std::move(p)) {}
  std::unique_ptr<npuc::Pipeline> pl;
  std::vector<npuc_tensor_info> inputs, outputs;
  mutable std::atomic<bool> busy{false};
};

namespace {

thread_local std::string t_last_error;

// A failure detected by the C layer itself (bad argument), thrown inside guard() like any other error.
[[noreturn]] void invalid(const std::string& msg) { throw npuc::Error(npuc::ErrorCode::kInvalidArgument, msg); }

npuc_status statusOf(npuc::ErrorCode c) {
  switch (c) {
    case npuc::ErrorCode::kInvalidArgument: return NPUC_STATUS_INVALID_ARGUMENT;
    case npuc::ErrorCode::kInvalidInput: return NPUC_STATUS_INVALID_INPUT;
    case npuc::ErrorCode::kUnsupported: return NPUC_STATUS_UNSUPPORTED;
    case npuc::ErrorCode::kIo: return NPUC_STATUS_IO;
    case npuc::ErrorCode::kInternal: return NPUC_STATUS_INTERNAL;
  }
  return NPUC_STATUS_INTERNAL;
}

npuc_status failWith(npuc_status s, const char* fn, const char* msg) noexcept {
  try {
    t_last_error = std::string(fn) + ": " + msg;
  } catch (...) {
    // No memory even for the message: keep the previous text rather than fail here.
  }
  return s;
}

// Runs body() and maps every exception to a status; `fn` prefixes the message ("npuc_runtime_open: …").
template <typename Body>
npuc_status guard(const char* fn, Body&& body) noexcept {
  try {
    body();
    return NPUC_STATUS_OK;
  } catch (const npuc::Error& e) {
    return failWith(statusOf(e.code()), fn, e.what());
  } catch (const std::bad_alloc&) {
    return failWith(NPUC_STATUS_OUT_OF_MEMORY, fn, "out of memory");
  } catch (const std::filesystem::filesystem_error& e) {
    return failWith(NPUC_STATUS_IO, fn, e.what());
  } catch (const std::exception& e) {
    return failWith(NPUC_STATUS_INTERNAL, fn, e.what());
  } catch (...) {
    return failWith(NPUC_STATUS_INTERNAL, fn, "unknown exception");
  }
}

// Marks a runtime (or a pipeline) in use for the duration of a call; a second thread entering meanwhile gets an error.
class Busy {
 public:
  explicit Busy(const npuc_runtime* rt) : Busy(rt->busy, "runtime") {}
  explicit Busy(const npuc_pipeline* p) : Busy(p->busy, "pipeline") {}
  ~Busy() { flag_.store(false, std::memory_order_release); }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  Busy(std::atomic<bool>& flag, const std::string& what) : flag_(flag) {
    if (flag_.exchange(true, std::memory_order_acquire))
      invalid("the " + what + " is in use by another call (one npuc_" + what + " is used by one thread at a time)");
  }
  std::atomic<bool>& flag_;
};

template <typename T>
void need(const T* p, const char* what) {
  if (p == nullptr) invalid(std::string(what) + " is NULL");
}

npuc_tensor_info infoOf(const npuc::RuntimeTensor& t) {
  npuc_tensor_info info{};
  if (t.shape.size() > NPUC_MAX_RANK)
    throw npuc::Error(npuc::ErrorCode::kUnsupported, "tensor '" + t.name + "' has rank " +
                                                         std::to_string(t.shape.size()) + ", more than NPUC_MAX_RANK");
  info.name = t.name.c_str();
  info.dtype = static_cast<npuc_dtype>(t.dtype);
  info.rank = static_cast<int>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) info.dims[i] = t.shape[i];
  info.elements = static_cast<size_t>(npuc::shapeNumel(t.shape));
  info.bytes = info.elements * npuc::dtypeSize(t.dtype);
  return info;
}

// The cached descriptions of the runtime's (selected gear's) inputs, outputs and layers.
void describe(npuc_runtime& h) {
  h.inputs.clear();
  h.outputs.clear();
  h.layers.clear();
  for (auto& t : h.rt.inputs()) h.inputs.push_back(infoOf(t));
  for (auto& t : h.rt.outputs()) h.outputs.push_back(infoOf(t));
  for (auto& l : h.rt.layers()) {
    npuc_layer_info li{};
    li.seq = l.seq;
    li.engine = l.engine.c_str();
    li.index = l.index;
    li.kind = l.kind.c_str();
    li.name = l.name.c_str();
    li.opexp = l.opexp.c_str();
    li.output = infoOf(l.output);
    h.layers.push_back(li);
  }
}

const npuc_tensor_info& pick(const std::vector<npuc_tensor_info>& v, size_t index, const char* what) {
  if (index >= v.size())
    invalid(std::string(what) + " index " + std::to_string(index) + " is out of range (the package has " +
            std::to_string(v.size()) + ")");
  return v[index];
}

// The inputs' / outputs' count and descriptions of a runtime or a pipeline (handle `h` named `name` in messages).
template <typename H>
npuc_status countOf(const char* fn, const H* h, const char* name, std::vector<npuc_tensor_info> H::*list, size_t* count) {
  return guard(fn, [&] {
    need(h, name);
    need(count, "count");
    *count = (h->*list).size();
  });
}

template <typename H>
npuc_status infoAt(const char* fn, const H* h, const char* name, std::vector<npuc_tensor_info> H::*list, size_t index,
                   npuc_tensor_info* info, const char* what) {
  return guard(fn, [&] {
    need(h, name);
    need(info, "info");
    *info = pick(h->*list, index, what);
  });
}

const npuc_tensor_info* findByName(const std::vector<npuc_tensor_info>& v, const char* name) {
  for (auto& t : v)
    if (std::strcmp(t.name, name) == 0) return &t;
  return nullptr;
}

std::string namesOf(const std::vector<npuc_tensor_info>& v) {
  std::string s;
  for (auto& t : v) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

bool validDtype(int d) { return d > NPUC_DTYPE_UNDEFINED && d <= NPUC_DTYPE_BOOL; }

}  // namespace

extern "C" {

const char* npuc_version(void) { return NPUC_VERSION_STRING; }

const char* npuc_last_error(void) { return t_last_error.c_str(); }

const char* npuc_status_name(npuc_status status) {
  switch (status) {
    case NPUC_STATUS_OK: return "ok";
    case NPUC_STATUS_INVALID_ARGUMENT: return "invalid_argument";
    case NPUC_STATUS_INVALID_INPUT: return "invalid_input";
    case NPUC_STATUS_UNSUPPORTED: return "unsupported";
    case NPUC_STATUS_IO: return "io";
    case NPUC_STATUS_INTERNAL: return "internal";
    case NPUC_STATUS_OUT_OF_MEMORY: return "out_of_memory";
    case NPUC_STATUS_RANGE_MAX_: break;
  }
  return "unknown";
}

const char* npuc_dtype_name(npuc_dtype dtype) {
  static const char* const kNames[] = {"undefined", "float32", "float16", "bfloat16", "float64", "int8",  "uint8",
                                       "int16",     "uint16",  "int32",   "uint32",   "int64",   "uint64", "bool"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == NPUC_DTYPE_BOOL + 1);
  return validDtype(dtype) ? kNames[dtype] : "undefined";
}

size_t npuc_dtype_size(npuc_dtype dtype) {
  if (!validDtype(dtype)) return 0;
  return npuc::dtypeSize(static_cast<npuc::DType>(dtype));
}

npuc_status npuc_register_custom_op(const char* library_path) {
  return guard(__func__, [&] {
    need(library_path, "library_path");
    npuc::Runtime::registerCustomOp(std::filesystem::path(library_path));
  });
}

npuc_status npuc_runtime_open(const char* package_dir, int threads, int exact, npuc_runtime** out) {
  if (out) *out = nullptr;
  return guard(__func__, [&] {
    need(out, "out");
    need(package_dir, "package_dir");
    npuc::RuntimeOptions o;
    o.threads = threads;
    o.exact = exact != 0;
    npuc::Runtime r(std::filesystem::path(package_dir), o);
    auto h = std::make_unique<npuc_runtime>(std::move(r));
    describe(*h);
    *out = h.release();
  });
}

npuc_status npuc_runtime_num_gears(const npuc_runtime* rt, size_t* count) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(count, "count");
    *count = rt->rt.gears().size();
  });
}

npuc_status npuc_runtime_gear(const npuc_runtime* rt, size_t index, int64_t* batch, int64_t* height, int64_t* width) {
  return guard(__func__, [&] {
    need(rt, "rt");
    const auto& g = rt->rt.gears();
    if (index >= g.size()) invalid("gear index " + std::to_string(index) + " out of range (" + std::to_string(g.size()) + " gears)");
    if (batch) *batch = g[index].batch;
    if (height) *height = g[index].height;
    if (width) *width = g[index].width;
  });
}

npuc_status npuc_runtime_set_dynamic_batch_size(npuc_runtime* rt, int64_t batch) {
  return guard(__func__, [&] {
    need(rt, "rt");
    Busy busy(rt);
    rt->rt.setDynamicBatchSize(batch);
    describe(*rt);
  });
}

npuc_status npuc_runtime_set_dynamic_hw_size(npuc_runtime* rt, int64_t height, int64_t width) {
  return guard(__func__, [&] {
    need(rt, "rt");
    Busy busy(rt);
    rt->rt.setDynamicHWSize(height, width);
    describe(*rt);
  });
}

npuc_status npuc_runtime_num_shape_ranges(const npuc_runtime* rt, size_t* count) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(count, "count");
    *count = rt->rt.shapeRanges().size();
  });
}

npuc_status npuc_runtime_shape_range(const npuc_runtime* rt, size_t index, const char** value, int64_t* dim, int64_t* lo, int64_t* hi) {
  return guard(__func__, [&] {
    need(rt, "rt");
    const auto& r = rt->rt.shapeRanges();
    if (index >= r.size()) invalid("shape range index " + std::to_string(index) + " out of range (" + std::to_string(r.size()) + " ranges)");
    if (value) *value = r[index].value.c_str();
    if (dim) *dim = r[index].dim;
    if (lo) *lo = r[index].lo;
    if (hi) *hi = r[index].hi;
  });
}

npuc_status npuc_runtime_set_input_shape(npuc_runtime* rt, const char* name, const int64_t* dims, size_t rank) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(name, "name");
    if (rank > 0) need(dims, "dims");
    Busy busy(rt);
    rt->rt.setInputShape(name, npuc::Shape(dims, dims + rank));
    describe(*rt);
  });
}

void npuc_runtime_close(npuc_runtime* rt) { delete rt; }

npuc_status npuc_runtime_num_inputs(const npuc_runtime* rt, size_t* count) {
  return countOf(__func__, rt, "rt", &npuc_runtime::inputs, count);
}

npuc_status npuc_runtime_num_outputs(const npuc_runtime* rt, size_t* count) {
  return countOf(__func__, rt, "rt", &npuc_runtime::outputs, count);
}

npuc_status npuc_runtime_input_info(const npuc_runtime* rt, size_t index, npuc_tensor_info* info) {
  return infoAt(__func__, rt, "rt", &npuc_runtime::inputs, index, info, "input");
}

npuc_status npuc_runtime_output_info(const npuc_runtime* rt, size_t index, npuc_tensor_info* info) {
  return infoAt(__func__, rt, "rt", &npuc_runtime::outputs, index, info, "output");
}

npuc_status npuc_runtime_num_layers(const npuc_runtime* rt, size_t* count) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(count, "count");
    *count = rt->layers.size();
  });
}

npuc_status npuc_runtime_layer_info(const npuc_runtime* rt, size_t index, npuc_layer_info* info) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(info, "info");
    if (index >= rt->layers.size())
      invalid("layer index " + std::to_string(index) + " is out of range (the package has " +
              std::to_string(rt->layers.size()) + ")");
    *info = rt->layers[index];
  });
}

npuc_status npuc_runtime_target(const npuc_runtime* rt, const char** target) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(target, "target");
    *target = rt->rt.target().c_str();
  });
}

npuc_status npuc_runtime_numerics(const npuc_runtime* rt, const char** numerics) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(numerics, "numerics");
    *numerics = rt->rt.numerics().c_str();
  });
}

npuc_status npuc_runtime_content_hash(const npuc_runtime* rt, const char** hash) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(hash, "hash");
    *hash = rt->rt.contentHash().c_str();
  });
}

npuc_status npuc_runtime_set_input(npuc_runtime* rt, const char* name, npuc_dtype dtype, const void* data,
                                   size_t bytes) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(name, "name");
    need(data, "data");
    Busy busy(rt);
    const npuc_tensor_info* in = findByName(rt->inputs, name);
    if (!in) invalid("the package has no input '" + std::string(name) + "' (inputs: " + namesOf(rt->inputs) + ")");
    if (dtype != in->dtype && dtype != NPUC_DTYPE_FLOAT32)
      invalid("input '" + std::string(name) + "' takes " + npuc_dtype_name(in->dtype) + " or float32, got " +
              npuc_dtype_name(dtype));
    const size_t want = in->elements * npuc_dtype_size(dtype);
    // The frame of a dynamic AIPP stage: N * B bytes with B at most max_src_image_size (the runtime checks B).
    bool aipp_frame = false;
    for (const npuc::RuntimeTensor& r : rt->rt.inputs()) aipp_frame = aipp_frame || r.aipp_for == name;
    if (aipp_frame && dtype == NPUC_DTYPE_UINT8 && in->rank == 2 && in->dims[0] > 0 && bytes > 0 && bytes < want &&
        bytes % static_cast<size_t>(in->dims[0]) == 0) {
      npuc::Shape shape = {in->dims[0], static_cast<int64_t>(bytes / static_cast<size_t>(in->dims[0]))};
      rt->rt.setInput(name, npuc::DType::kU8, shape, data);
      return;
    }
    if (bytes != want)
      invalid("input '" + std::string(name) + "' as " + npuc_dtype_name(dtype) + " is " + std::to_string(want) +
              " bytes, got " + std::to_string(bytes));
    npuc::Shape shape(in->dims, in->dims + in->rank);
    rt->rt.setInput(name, static_cast<npuc::DType>(dtype), shape, data);  // (copied once, into device memory)
  });
}

npuc_status npuc_runtime_set_dynamic_aipp(npuc_runtime* rt, const char* name, const void* params, size_t bytes) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(name, "name");
    need(params, "params");
    Busy busy(rt);
    const auto* p = static_cast<const uint8_t*>(params);
    rt->rt.setDynamicAipp(name, std::vector<uint8_t>(p, p + bytes));
    describe(*rt);  // (a package serving a shape range: the block's picture size may select another program)
  });
}

npuc_status npuc_aipp_params_create(size_t images, npuc_aipp_params** out) {
  return guard(__func__, [&] {
    need(out, "out");
    *out = nullptr;
    if (images < 1 || images > 127) invalid("images is " + std::to_string(images) + ", must be 1..127 (batchNum is an int8)");
    auto* p = new npuc_aipp_params;
    p->images = images;
    *out = p;
  });
}

void npuc_aipp_params_destroy(npuc_aipp_params* p) { delete p; }

npuc_status npuc_aipp_params_set(npuc_aipp_params* p, const char* field, size_t image, double value) {
  return guard(__func__, [&] {
    need(p, "p");
    need(field, "field");
    const std::string name = field;
    const bool record = npuc::kernels::isAippRecordField(name);
    if (image >= p->images || (!record && image != 0))
      invalid(std::string(field) + ": image " + std::to_string(image) + " is out of range (" +
              (record ? "the block has " + std::to_string(p->images) + " image(s)" : "a kAippDynamicPara field: image 0") + ")");
    // The value as text, for the one table of names (kernels::aippParamsFromFields): integers exactly.
    char text[64];
    if (std::isfinite(value) && value == std::nearbyint(value) && std::fabs(value) < 9.0e15)
      std::snprintf(text, sizeof text, "%lld", static_cast<long long>(value));
    else
      std::snprintf(text, sizeof text, "%.17g", value);
    std::vector<npuc::kernels::AippFieldValue> next;
    const int at = record ? static_cast<int>(image) : -1;
    for (const auto& f : p->fields)
      if (f.name != name || f.image != at) next.push_back(f);
    next.push_back({name, at, text});
    try {
      (void)npuc::kernels::aippParamsFromFields(next, p->images, false);
    } catch (const npuc::Error& e) {
      invalid(e.what());
    }
    p->fields = std::move(next);
  });
}

namespace {
std::vector<uint8_t> encodeAippParams(const npuc_aipp_params* p) {
  try {
    return npuc::kernels::encodeAipp(npuc::kernels::aippParamsFromFields(p->fields, p->images));
  } catch (const npuc::Error& e) {
    invalid(e.what());
  }
}
}  // namespace

npuc_status npuc_aipp_params_encode(const npuc_aipp_params* p, void* dst, size_t capacity, size_t* written) {
  return guard(__func__, [&] {
    need(p, "p");
    need(written, "written");
    const std::vector<uint8_t> block = encodeAippParams(p);
    *written = block.size();
    if (!dst && capacity == 0) return;
    need(dst, "dst");
    if (capacity < block.size())
      invalid("the block is " + std::to_string(block.size()) + " bytes, capacity " + std::to_string(capacity));
    std::memcpy(dst, block.data(), block.size());
  });
}

npuc_status npuc_runtime_set_dynamic_aipp_params(npuc_runtime* rt, const char* name, const npuc_aipp_params* p) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(name, "name");
    need(p, "p");
    Busy busy(rt);
    rt->rt.setDynamicAipp(name, encodeAippParams(p));
    describe(*rt);
  });
}

npuc_status npuc_runtime_reset_state(npuc_runtime* rt) {
  return guard(__func__, [&] {
    need(rt, "rt");
    Busy busy(rt);
    rt->rt.resetState();
  });
}

npuc_status npuc_runtime_run(npuc_runtime* rt, npuc_layer_callback callback, void* user) {
  return guard(__func__, [&] {
    need(rt, "rt");
    Busy busy(rt);
    rt->ran = false;  // (a run that fails leaves no run's dims)
    if (!callback) {
      rt->rt.run();
    } else {
      rt->rt.run([&](const npuc::RuntimeLayer& l, const npuc::Tensor& y) {
        const npuc_layer_info& li = rt->layers.at(static_cast<size_t>(l.seq));
        callback(&li, y.raw(), y.nbytes(), user);
      });
    }
    rt->ran = true;
  });
}

npuc_status npuc_runtime_get_output(const npuc_runtime* rt, const char* name, int as_float32, void* dst,
                                    size_t capacity, size_t* written) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(name, "name");
    Busy busy(rt);
    const npuc_tensor_info* o = findByName(rt->outputs, name);
    if (!o) invalid("the package has no output '" + std::string(name) + "' (outputs: " + namesOf(rt->outputs) + ")");
    const size_t size = as_float32 ? o->elements * sizeof(float) : o->bytes;
    if (written) *written = size;
    if (dst == nullptr && capacity == 0) return;  // size query
    need(dst, "dst");
    if (capacity < size)
      invalid("output '" + std::string(name) + "' needs " + std::to_string(size) + " bytes, capacity is " +
              std::to_string(capacity));
    npuc::Tensor t = as_float32 ? rt->rt.outputFloat(name) : rt->rt.output(name);
    // (a dynamic output — a shape the data decide — is at most its capacity, `size`: *written says how much it is)
    const auto& outs = rt->rt.outputs();
    const bool dynamic = std::any_of(outs.begin(), outs.end(), [&](const npuc::RuntimeTensor& r) { return r.name == name && r.dynamic; });
    if (t.nbytes() != size && !(t.nbytes() < size && dynamic)) throw npuc::Error(npuc::ErrorCode::kInternal, "output size mismatch");
    if (written) *written = t.nbytes();
    if (t.nbytes()) std::memcpy(dst, t.raw(), t.nbytes());
  });
}

npuc_status npuc_runtime_output_dims(const npuc_runtime* rt, const char* name, int* rank, int64_t dims[NPUC_MAX_RANK],
                                     int* dynamic) {
  return guard(__func__, [&] {
    need(rt, "rt");
    need(name, "name");
    need(rank, "rank");
    need(dims, "dims");
    Busy busy(rt);
    const auto& outs = rt->rt.outputs();
    const auto it = std::find_if(outs.begin(), outs.end(), [&](const npuc::RuntimeTensor& r) { return r.name == name; });
    if (it == outs.end())
      invalid("the package has no output '" + std::string(name) + "' (outputs: " + namesOf(rt->outputs) + ")");
    const bool dyn = it->dynamic;
    // (a static output's dims are its declared ones; a dynamic one's the extent the last run wrote, its capacity before)
    const npuc::Shape shape = dyn && rt->ran ? rt->rt.output(name).shape() : it->shape;
    if (shape.size() > NPUC_MAX_RANK) invalid("output '" + std::string(name) + "' has more than NPUC_MAX_RANK dims");
    *rank = static_cast<int>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) dims[i] = shape[i];
    if (dynamic) *dynamic = dyn ? 1 : 0;
  });
}

npuc_status npuc_pipeline_open(const char* package_dir, int threads, int exact, npuc_pipeline** out) {
  if (out) *out = nullptr;
  return guard(__func__, [&] {
    need(out, "out");
    need(package_dir, "package_dir");
    npuc::RuntimeOptions o;
    o.threads = threads;
    o.exact = exact != 0;
    auto h = std::make_unique<npuc_pipeline>(std::make_unique<npuc::Pipeline>(std::filesystem::path(package_dir), o));
    for (auto& t : h->pl->inputs()) h->inputs.push_back(infoOf(t));
    for (auto& t : h->pl->outputs()) h->outputs.push_back(infoOf(t));
    *out = h.release();
  });
}

void npuc_pipeline_close(npuc_pipeline* p) { delete p; }

npuc_status npuc_pipeline_num_stages(const npuc_pipeline* p, size_t* count) {
  return guard(__func__, [&] {
    need(p, "p");
    need(count, "count");
    *count = p->pl->groups().size();
  });
}

npuc_status npuc_pipeline_stage_info(const npuc_pipeline* p, size_t index, int* group, double* busy_ms, uint64_t* handoff_bytes) {
  return guard(__func__, [&] {
    need(p, "p");
    Busy busy(p);
    const auto& g = p->pl->groups();
    if (index >= g.size())
      invalid("stage index " + std::to_string(index) + " is out of range (the pipeline has " + std::to_string(g.size()) + ")");
    if (group) *group = g[index];
    // (before the first run: no times, no bytes)
    if (busy_ms) *busy_ms = index < p->pl->stageMs().size() ? p->pl->stageMs()[index] : 0.0;
    if (handoff_bytes) *handoff_bytes = index < p->pl->handoffBytes().size() ? p->pl->handoffBytes()[index] : 0;
  });
}

npuc_status npuc_pipeline_num_inputs(const npuc_pipeline* p, size_t* count) {
  return countOf(__func__, p, "p", &npuc_pipeline::inputs, count);
}

npuc_status npuc_pipeline_num_outputs(const npuc_pipeline* p, size_t* count) {
  return countOf(__func__, p, "p", &npuc_pipeline::outputs, count);
}

npuc_status npuc_pipeline_input_info(const npuc_pipeline* p, size_t index, npuc_tensor_info* info) {
  return infoAt(__func__, p, "p", &npuc_pipeline::inputs, index, info, "input");
}

npuc_status npuc_pipeline_output_info(const npuc_pipeline* p, size_t index, npuc_tensor_info* info) {
  return infoAt(__func__, p, "p", &npuc_pipeline::outputs, index, info, "output");
}

npuc_status npuc_pipeline_run(npuc_pipeline* p, size_t frames, const void* const* inputs, const npuc_dtype* dtypes,
                              float* const* outputs, double* wall_ms) {
  return guard(__func__, [&] {
    need(p, "p");
    Busy busy(p);
    if (frames == 0) invalid("frames is 0");
    need(inputs, "inputs");
    need(outputs, "outputs");
    const size_t ni = p->inputs.size(), no = p->outputs.size();
    for (size_t i = 0; dtypes != nullptr && i < ni; ++i)
      if (!validDtype(dtypes[i])) invalid("dtypes[" + std::to_string(i) + "] (input '" + p->inputs[i].name + "') is not an npuc_dtype");
    std::vector<std::vector<npuc::Tensor>> in(frames);
    for (size_t f = 0; f < frames; ++f)
      for (size_t i = 0; i < ni; ++i) {
        const npuc::RuntimeTensor& t = p->pl->inputs()[i];
        const void* src = inputs[f * ni + i];
        if (src == nullptr) invalid("inputs[" + std::to_string(f * ni + i) + "] (frame " + std::to_string(f) + ", input '" + t.name + "') is NULL");
        npuc::Tensor x(dtypes != nullptr ? static_cast<npuc::DType>(dtypes[i]) : npuc::DType::kF32, t.shape);
        if (x.nbytes()) std::memcpy(x.raw(), src, x.nbytes());
        in[f].push_back(std::move(x));
      }
    for (size_t k = 0; k < frames * no; ++k)
      if (outputs[k] == nullptr)
        invalid("outputs[" + std::to_string(k) + "] (frame " + std::to_string(k / no) + ", output '" + p->outputs[k % no].name + "') is NULL");
    const auto got = p->pl->run(in);
    for (size_t f = 0; f < frames; ++f)
      for (size_t o = 0; o < no; ++o) {
        const npuc::Tensor& y = got.at(f).at(o);
        if (y.nbytes() != p->outputs[o].elements * sizeof(float)) throw npuc::Error(npuc::ErrorCode::kInternal, "output size mismatch");
        if (y.nbytes()) std::memcpy(outputs[f * no + o], y.raw(), y.nbytes());
      }
    if (wall_ms) *wall_ms = p->pl->wallMs();
  });
}

npuc_status npuc_pipeline_reset_state(npuc_pipeline* p) {
  return guard(__func__, [&] {
    need(p, "p");
    Busy busy(p);
    p->pl->resetState();
  });
}

}  // extern "C"
