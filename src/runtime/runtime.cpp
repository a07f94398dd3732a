// The simulated device (docs/simulator.md), its public face: a Runtime loads an ordinary package or a package's gears
// (gear_state.cpp), takes inputs, runs (executor.cpp) and gives outputs. The package loader, the executor and the
// layer kinds' execution are runtime_impl.hpp's files.
#include "runtime/runtime_impl.hpp"

#include "package/gears.hpp"
#include "support/fp16.hpp"

#include <cmath>
#include <cstring>

namespace npuc {

Runtime::Runtime(const std::filesystem::path& dir, RuntimeOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.opts = opts;
  if (opts.threads < 1) fail(ErrorCode::kInvalidArgument, "threads must be at least 1 (got {})", opts.threads);
  if (const std::vector<int64_t> ids = bundleModelIds(dir); !ids.empty())
    fail(ErrorCode::kInvalidArgument, "{} is a bundle of models (ids {}): run one of them (npuc::bundleModel(dir, id); Python model_id=; "
         "the CLI's --model-id)", dir.string(), fmt::join(ids, ", "));
  if (package::hasGears(dir)) {
    const package::Gears g = package::readGears(dir);
    im.gear_kind = g.kind;
    im.gear_input = g.input;
    for (const package::Gear& x : g.gears) {
      if (package::hasGears(dir / x.dir))
        fail(ErrorCode::kInvalidInput, "{}: gear '{}' holds gears of its own (a gear's folder holds an ordinary package)", dir.string(), x.dir);
      Runtime one(dir / x.dir, opts);
      const auto& ins = one.inputs();
      auto in = std::find_if(ins.begin(), ins.end(), [&](const RuntimeTensor& r) { return r.name == g.input; });
      // (behind an AIPP stage the input is the frame [N, bytes]: its batch is checked, its image size is the stage's)
      if (in == ins.end() || in->shape.empty() ||
          (g.kind == "batch" ? in->shape[0] != x.batch
                             : in->shape.size() == 4 && (in->shape[2] != x.height || in->shape[3] != x.width)))
        fail(ErrorCode::kInvalidInput, "{}: gear '{}' does not hold input '{}' of the size gears.json gives", dir.string(), x.dir, g.input);
      im.gear_programs.push_back(std::move(one.impl_));
      im.gears.push_back({x.batch, x.height, x.width});
    }
    im.cur = im.gear_programs.front().get();
    return;
  }
  im.pkg = package::readPackage(dir);
  im.numerics = std::string(numericsName(im.pkg.numerics));
  // Both modes split layers' outputs among the threads (never a reduction), so the bits do not depend on them.
  im.pool = std::make_unique<ThreadPool>(opts.threads);
  im.prepare();
  if (im.pkg.ranges)
    for (const package::RangeSymbol& s : im.pkg.ranges->symbols) {
      im.ranges.push_back({s.value, s.dim, s.lo, s.hi, {}});
      for (const auto& [v, d] : s.also) im.ranges.back().also.emplace_back(v, d);
      im.range_at.push_back(s.hi);
    }
}

void Runtime::resetState() {
  impl_->resetPow2();
  for (auto& g : impl_->gear_programs) g->resetPow2();
}

void Runtime::registerCustomOp(const std::filesystem::path& library) { plugin::registerLibrary(library); }

Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

const std::string& Runtime::target() const { return impl_->cur->pkg.target; }
const std::string& Runtime::numerics() const { return impl_->cur->numerics; }
const std::string& Runtime::contentHash() const { return impl_->cur->pkg.content_hash; }
const std::vector<RuntimeTensor>& Runtime::inputs() const { return impl_->cur->inputs; }
const std::vector<RuntimeTensor>& Runtime::outputs() const { return impl_->cur->outputs; }
const std::vector<RuntimeLayer>& Runtime::layers() const { return impl_->cur->layers; }
const std::vector<double>& Runtime::layerTimes() const { return impl_->cur->times; }

double Runtime::outputScale(int seq) const {
  const Impl& im = *impl_->cur;
  if (seq < 0 || static_cast<size_t>(seq) >= im.layers.size())
    fail(ErrorCode::kInvalidArgument, "outputScale: layer seq {} is out of range (the package has {} layers)", seq, im.layers.size());
  if (!im.pkg.pow2) return im.layers[static_cast<size_t>(seq)].scale;
  const int slot = im.p2_out_slot[static_cast<size_t>(seq)];
  return slot < 0 ? 0.0 : std::ldexp(1.0, -im.p2_slots[static_cast<size_t>(slot)].q);
}

int64_t Runtime::clippedInputs(int seq) const {
  const Impl& im = *impl_->cur;
  if (seq < 0 || static_cast<size_t>(seq) >= im.layers.size())
    fail(ErrorCode::kInvalidArgument, "clippedInputs: layer seq {} is out of range (the package has {} layers)", seq, im.layers.size());
  return static_cast<size_t>(seq) < im.clipped.size() ? im.clipped[static_cast<size_t>(seq)] : 0;
}

void Runtime::Impl::markSet(size_t i) {
  if (input_set.size() != inputs.size()) input_set.assign(inputs.size(), 0);
  input_set[i] = 1;
}

void Runtime::Impl::markWritten(const uint8_t* dst) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (at(inputs[i].address, 1, "input " + inputs[i].name) == dst) markSet(i);
}

void Runtime::Impl::checkInputsSet() const {
  if (!check_inputs) return;
  std::string missing;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (i >= input_set.size() || !input_set[i]) missing += (missing.empty() ? "'" : ", '") + inputs[i].name + "'";
  if (!missing.empty())
    fail(ErrorCode::kInvalidArgument, "input {} never set: set every input of the package before running it (inputs: {})",
         missing, [&] {
           std::string all;
           for (auto& r : inputs) all += (all.empty() ? "" : ", ") + r.name;
           return all;
         }());
}


void Runtime::setInput(const std::string& name, const Tensor& t) { setInput(name, t.dtype(), t.shape(), t.raw()); }

void Runtime::setInput(const std::string& name, DType dtype, const Shape& shape, const void* data) {
  if (!impl_->ranges.empty())  // (a shape inside the ranges selects the program at that size)
    for (const RuntimeRange& r : impl_->ranges)
      if (r.value == name || std::any_of(r.also.begin(), r.also.end(), [&](const auto& m) { return m.first == name; })) {
        auto it = std::find_if(impl_->cur->inputs.begin(), impl_->cur->inputs.end(), [&](const RuntimeTensor& t) { return t.name == name; });
        if (it != impl_->cur->inputs.end() && it->shape != shape) setInputShape(name, shape);
        break;
      }
  Impl& im = *impl_->cur;
  auto it = std::find_if(im.inputs.begin(), im.inputs.end(), [&](const RuntimeTensor& r) { return r.name == name; });
  if (it == im.inputs.end()) {
    std::string names;
    for (auto& r : im.inputs) names += (names.empty() ? "" : ", ") + r.name;
    fail(ErrorCode::kInvalidArgument, "the package has no input '{}' (inputs: {})", name, names);
  }
  int64_t n = shapeNumel(it->shape);
  // The frame of a dynamic AIPP stage may hold fewer bytes per image than max_src_image_size: [N, B] with B at least
  // what the parameter block's source needs (docs/aipp.md, "Frames smaller than max_src_image_size").
  if (Impl::Step* stage = im.dynamicAippStage(it->address); stage && it->shape.size() == 2 && shape.size() == 2 &&
                                                             shape[0] == it->shape[0] && dtype == DType::kU8) {
    im.setAippFrame(*stage, it, name, shape, data);
    return;
  }
  // The exact shape: a tensor of another shape (even with the same element count) is a mistake, not a reshape.
  if (shape != it->shape)
    fail(ErrorCode::kInvalidArgument, "input '{}' needs shape {}, got {}{}", name, shapeStr(it->shape), shapeStr(shape),
         shapeNumel(shape) == n ? " (the same number of elements, in another shape: reshape it yourself if that is what you mean)" : "");
  uint8_t* dst = im.at(it->address, static_cast<uint64_t>(n) * dtypeSize(it->dtype), "input " + name);
  const size_t index = static_cast<size_t>(it - im.inputs.begin());
  if (dtype == it->dtype || (dtype == DType::kBool && it->dtype == DType::kU8)) {  // bool: a byte, 0 or 1
    std::memcpy(dst, data, static_cast<size_t>(n) * dtypeSize(dtype));
  } else if ((it->dtype == DType::kF16 || it->dtype == DType::kF32) &&
             (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16)) {
    // Another float type: widened exactly to float32, then (a float16 device input) rounded to nearest even.
    auto at = [&](int64_t i) {
      if (dtype == DType::kF32) return static_cast<const float*>(data)[i];
      const uint16_t h = static_cast<const uint16_t*>(data)[i];
      return dtype == DType::kF16 ? halfToFloat(h) : bf16ToFloat(h);
    };
    if (it->dtype == DType::kF32) {
      float* d = reinterpret_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = at(i);
    } else {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = floatToHalf(at(i));
    }
  } else {
    fail(ErrorCode::kInvalidArgument, "input '{}' is {} on the device; got {} (give {}{})", name, dtypeName(it->dtype),
         dtypeName(dtype), dtypeName(it->dtype),
         isFloat(it->dtype) ? ", or float32, float16 or bfloat16" : "");
  }
  im.markSet(index);
}

Tensor Runtime::output(const std::string& name) const {
  Impl& im = *impl_->cur;
  auto it = std::find_if(im.outputs.begin(), im.outputs.end(), [&](const RuntimeTensor& r) { return r.name == name; });
  if (it == im.outputs.end()) fail(ErrorCode::kInvalidArgument, "the package has no output '{}'", name);
  Shape shape = it->shape;
  if (it->dynamic) {  // its dims of the last run, within the capacity (a dims record beyond it is a device fault)
    std::vector<int64_t> e(shape.size());
    if (!e.empty()) std::memcpy(e.data(), im.at(it->extent_address, e.size() * sizeof(int64_t), "the extent of output " + name), e.size() * sizeof(int64_t));
    for (size_t d = 0; d < e.size(); ++d)
      if (e[d] < 0 || e[d] > shape[d])
        im.fault(fmt::format("output '{}': extent [{}] outside its capacity [{}]", name, fmt::join(e, ", "), fmt::join(shape, ", ")));
    shape = e;
  }
  Tensor t(it->dtype, shape);
  if (t.nbytes() > 0) std::memcpy(t.raw(), im.at(it->address, t.nbytes(), "output " + name), t.nbytes());
  return t;
}

Tensor Runtime::outputFloat(const std::string& name) const {
  Tensor t = output(name);
  if (t.dtype() == DType::kF32) return t;
  Tensor f(DType::kF32, t.shape());
  if (t.dtype() == DType::kF16) {
    kernels::f16ToF32_ref(static_cast<const uint16_t*>(t.raw()), f.data<float>(), t.numel());
    return f;
  }
  auto v = t.toDouble();
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
  return f;
}

std::vector<Tensor> Runtime::run(const std::vector<Tensor>& ins, const LayerCallback& cb) {
  const Impl& im = *impl_->cur;
  if (ins.size() != im.inputs.size())
    fail(ErrorCode::kInvalidArgument, "the package has {} inputs, got {}", im.inputs.size(), ins.size());
  for (size_t i = 0; i < ins.size(); ++i) setInput(im.inputs[i].name, ins[i]);
  run(cb);
  std::vector<Tensor> outs;
  for (auto& o : im.outputs) outs.push_back(outputFloat(o.name));
  return outs;
}

}  // namespace npuc
