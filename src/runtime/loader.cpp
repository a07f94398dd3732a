// The package loader (runtime_impl.hpp): the device memory is exactly the address map's element spaces; the
// package's images (weights, parameters, library table, descriptor streams) are loaded at their addresses; the
// package's tensors and layers are listed for the API; each descriptor becomes a Step, read once: its memory, shapes,
// parameter words, and what its kind prepares (exec_<family>.cpp) or its int8-pow2 form (exec_pow2.cpp).
#include "runtime/runtime_impl.hpp"

#include <cstring>

#include <map>

namespace npuc {

namespace {

kernels::Activation actOf(const package::Descriptor& d) {
  kernels::Activation a;
  switch (d.act) {
    case package::Act::kNone: break;
    case package::Act::kRelu: a.kind = kernels::ActKind::kRelu; break;
    case package::Act::kClip: a.kind = kernels::ActKind::kClip; a.a = d.act_a; a.b = d.act_b; break;
    case package::Act::kLeakyRelu: a.kind = kernels::ActKind::kLeakyRelu; a.a = d.act_a; break;
  }
  return a;
}

}  // namespace

Shape shapeOf(const package::TensorRef& r) {
  Shape s;
  for (int i = 0; i < r.rank; ++i) s.push_back(r.dims[static_cast<size_t>(i)]);
  return s;
}

/// Parameter words [from, from + n) read as two's-complement 32-bit values (pads, starts, steps).
std::vector<int64_t> signedWords(const std::vector<uint32_t>& p, size_t from, size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(p[from + i]);
  return v;
}

std::vector<int64_t> intValues(const package::TensorRef& r, const uint8_t* data) {
  std::vector<int64_t> v(r.numel());
  if (r.type == ElemType::kI64) {
    if (!v.empty()) std::memcpy(v.data(), data, v.size() * sizeof(int64_t));
  } else {
    for (size_t k = 0; k < v.size(); ++k) v[k] = reinterpret_cast<const int32_t*>(data)[k];
  }
  return v;
}

uint8_t* Runtime::Impl::at(uint64_t addr, uint64_t bytes, const std::string& what) {
  for (auto& s : spaces)
    if (addr >= s.addr && bytes <= s.size && addr - s.addr <= s.size - bytes) return s.buf->data() + (addr - s.addr);
  fault(fmt::format("{}: access [0x{:x}, +{}) is outside the address map", what, addr, bytes));
}

Space& Runtime::Impl::space(const std::string& name) {
  for (auto& s : spaces)
    if (s.name == name) return s;
  fault("no element space '" + name + "'");
}

void Runtime::Impl::load(const std::string& name, const std::vector<uint8_t>& image) {
  Space& s = space(name);
  if (image.size() > s.size) fault(fmt::format("image of {} bytes does not fit '{}'", image.size(), name));
  if (!image.empty()) std::memcpy(s.buf->data(), image.data(), image.size());
}


void Runtime::Impl::prepare() {
  for (auto& ss : pkg.address_map)
    for (auto& e : ss.elements) spaces.push_back({e.name, e.addr, e.size, Buffer::allocate(std::max<uint64_t>(e.size, 1))});
  std::sort(spaces.begin(), spaces.end(), [](const Space& a, const Space& b) { return a.addr < b.addr; });
  load("weight", pkg.weights);
  load("drp_param", pkg.params);
  load("drp_config", package::encodeLibraries(pkg.libraries));
  load("desc_aimac", package::encodeDescriptors(pkg.mac, package::Engine::kMac));
  load("desc_drp", package::encodeDescriptors(pkg.vec, package::Engine::kVector));

  for (auto& t : pkg.inputs)
    inputs.push_back({t.name, t.ref.type, shapeOf(t.ref), t.ref.addr, {t.image.format, t.image.height, t.image.width, t.image.chw}, {}});
  for (auto& t : pkg.outputs) {
    outputs.push_back({t.name, t.ref.type, shapeOf(t.ref), t.ref.addr, {}, {}});
    if (t.extent) outputs.back().dynamic = true, outputs.back().extent_address = t.extent->addr;
  }
  // Parameter inputs of dynamic AIPP stages name the frame input they configure.
  for (const package::Descriptor& d : pkg.vec)
    if (d.kind == LayerKind::kAipp && d.n_in == 2) {
      auto frame = std::find_if(inputs.begin(), inputs.end(), [&](const RuntimeTensor& r) { return r.address == d.in(0).addr; });
      for (RuntimeTensor& r : inputs)
        if (r.address == d.in(1).addr && frame != inputs.end()) r.aipp_for = frame->name;
    }
  program.resize(pkg.mac.size() + pkg.vec.size());
  for (auto* s : {&pkg.mac, &pkg.vec})
    for (auto& d : *s) program[d.seq] = &d;
  // The value starting at each address as program order goes: the package inputs first, then each layer's output
  // (memory reused by liveness holds several values over time: a layer reads the latest written before it). An
  // input range may hold several values end to end (a Concat done in place: its slabs' layers wrote them).
  std::map<uint32_t, std::string> holds;
  auto write = [&](const package::TensorRef& r, const std::string& name) {
    holds.erase(holds.lower_bound(r.addr), holds.lower_bound(static_cast<uint32_t>(std::min<uint64_t>(uint64_t{r.addr} + r.bytes, UINT32_MAX))));
    holds[r.addr] = name;
  };
  for (auto& t : pkg.inputs) write(t.ref, t.name);
  for (auto& l : pkg.layers) {
    const package::Descriptor& d = *program[l.seq];
    RuntimeLayer rl;
    for (int i = 0; i < d.n_in; ++i)
      for (auto it = holds.lower_bound(d.in(i).addr); it != holds.end() && uint64_t{it->first} < uint64_t{d.in(i).addr} + d.in(i).bytes; ++it)
        if (std::find(rl.inputs.begin(), rl.inputs.end(), it->second) == rl.inputs.end()) rl.inputs.push_back(it->second);
    write(d.out(0), l.output);
    for (int k = 1; k < d.n_out && static_cast<size_t>(k) <= l.extra_outputs.size(); ++k)
      write(d.out(k), l.extra_outputs[static_cast<size_t>(k - 1)]);
    rl.seq = static_cast<int>(l.seq);
    rl.engine = package::engineName(l.engine);
    rl.index = static_cast<int>(l.index);
    rl.kind = package::layerKindName(d.kind);
    rl.name = l.name;
    rl.opexp = l.opexp;
    rl.onnx_nodes = l.onnx_nodes;
    rl.scale = l.scale;
    rl.zero_point = l.zero_point;
    rl.float_value = l.float_value;
    rl.group = static_cast<int>(l.group);
    rl.output = {l.output, d.out(0).type, package::storedDims(d.out(0)), d.out(0).addr, {}, {}};  // (as memory holds it)
    rl.output.channel_last = d.out(0).layout == package::RefLayout::kChannelLast;
    for (int k = 1; k < d.n_out && static_cast<size_t>(k) <= l.extra_outputs.size(); ++k)
      rl.more_outputs.push_back({l.extra_outputs[static_cast<size_t>(k - 1)], d.out(k).type, shapeOf(d.out(k)), d.out(k).addr, {}, {}});
    layers.push_back(std::move(rl));
  }
  for (const package::Descriptor* d : program) steps.push_back(prepareStep(*d));
  scratch.assign(package::kMaxRefs, {});
  layout_scratch.assign(package::kMaxRefs, {});
  resetPow2();
  // int8-pow2: the slot whose q each layer's codes are at — its table's output slot, or for a layer on codes without
  // a table (max pooling, data movement) the slot of the codes it reads (the last writer of that address before it).
  p2_out_slot.assign(steps.size(), -1);
  clipped.assign(steps.size(), 0);
  if (pkg.pow2) {
    std::map<uint32_t, int> slot_at;  // address -> the slot of the codes last written there (-1: not codes)
    for (const Step& st : steps) {
      const package::Descriptor& d = *st.d;
      int slot = -1;  // (-1 too for a float output: a dequantize)
      const bool codes = d.out(0).type == ElemType::kI8 || d.out(0).type == ElemType::kU8;
      if (codes && st.p2) slot = st.p2->out.slot;
      else if (auto it = codes && d.n_in >= 1 ? slot_at.find(d.in(0).addr) : slot_at.end(); it != slot_at.end()) slot = it->second;
      p2_out_slot[d.seq] = slot;
      slot_at[d.out(0).addr] = slot;
    }
  }
}

/// ConvShape / ConvTransposeShape of a conv descriptor: dims from its references, the window from its parameters

Runtime::Impl::Step Runtime::Impl::prepareStep(const package::Descriptor& full) {
  Step s;
  s.d = &full;
  std::string what = fmt::format("descriptor seq {} ({})", full.seq, package::layerKindName(full.kind));
  if (full.flags & package::kFlagDynamic) {  // (the reader checked the kind and the extents)
    const KindExec& k = kindExec(full.kind);
    // (a dynamic kind's prepare, where it has one, reads nothing of its dims: binary's int8 tables)
    if (!k.shape) fault(fmt::format("{}: this kind has no dynamic form in this runtime", what));
    s.dyn = std::make_unique<Step::Dynamic>();
    s.dyn->view = package::dataView(full);
    const package::Descriptor& v = s.dyn->view;
    for (int i = 0; i < v.n_in; ++i) s.dyn->in_extent.push_back(at(full.in(v.n_in + i).addr, full.in(v.n_in + i).bytes, what));
    for (int j = 0; j < v.n_out; ++j) s.dyn->out_extent.push_back(at(full.out(v.n_out + j).addr, full.out(v.n_out + j).bytes, what));
    for (int i = 0; i < v.n_in + v.n_out; ++i) s.dyn->capacity.push_back(shapeOf(v.refs[static_cast<size_t>(i)]));
    s.d = &v;
  }
  const package::Descriptor& d = *s.d;
  for (int i = 0; i < d.n_in; ++i) s.in.push_back(at(d.in(i).addr, d.in(i).bytes, what));
  s.out = at(d.out(0).addr, d.out(0).bytes, what);
  for (int i = 0; i < d.n_in + d.n_out; ++i) s.shapes.push_back(shapeOf(d.refs[static_cast<size_t>(i)]));
  for (int i = 0; i < d.n_in; ++i)
    if (d.in(i).layout == package::RefLayout::kChannelLast) s.channel_last_in |= static_cast<uint8_t>(1u << i);
  s.channel_last_out = d.out(0).layout == package::RefLayout::kChannelLast;
  s.p = package::paramWords(pkg, d);
  s.act = actOf(d);
  if (preparePow2(s)) return s;
  const KindExec& k = kindExec(d.kind);
  if (k.prepare) k.prepare(*this, s);
  else s.post_act = true;  // (a kind with nothing to prepare applies its activation as its output is stored)
  return s;
}

const float* Runtime::Impl::weightsF32(Step& s, int i) {
  const package::TensorRef& r = s.d->in(i);
  if (r.type == ElemType::kF32) return reinterpret_cast<const float*>(s.in[static_cast<size_t>(i)]);
  s.w32.resize(r.numel());
  kernels::f16ToF32_ref(reinterpret_cast<const uint16_t*>(s.in[static_cast<size_t>(i)]), s.w32.data(), static_cast<int64_t>(r.numel()));
  return s.w32.data();
}

Tensor Runtime::Impl::viewOf(const package::TensorRef& r) {
  for (auto& sp : spaces)
    if (r.addr >= sp.addr && r.bytes <= sp.size && r.addr - sp.addr <= sp.size - r.bytes)
      return Tensor(r.type, shapeOf(r), sp.buf, r.addr - sp.addr);
  fault(fmt::format("access [0x{:x}, +{}) is outside the address map", r.addr, r.bytes));
}


}  // namespace npuc
