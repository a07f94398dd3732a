// The executor (runtime_impl.hpp): each step runs its int8-pow2 form (exec_pow2.cpp) or its kind's execution, found
// through a table indexed by the kind (kind_exec, exec_<family>.cpp); float layers compute in float32 views of their
// tensors and store into their outputs.
//
// Numerics (the specification is the scalar reference kernel of each layer kind):
//   fp32 packages: float32 storage and arithmetic.
//   fp16 packages: float16 storage; each layer widens its float16 inputs to float32 (exact), computes in float32
//                  exactly as the fp32 layer does (same reduction order), applies its fused activation, and rounds
//                  each output element to float16 once (round to nearest even). Weights are float16, biases and
//                  channel scale/shift float32. Data-movement layers copy bits.
// --exact runs conv_ref / sgemm_ref; the default runs the packed SIMD kernels on the runtime's threads. Both give
// the same bits (tests/runtime).
#include "runtime/runtime_impl.hpp"

#include <array>
#include <chrono>
#include <iterator>

namespace npuc {

const KindExec& kindExec(LayerKind k) {
  static constexpr uint16_t kCodes[] = {
#define NPUC_LAYER_KIND(E, code, ...) code,
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
  };
  static const auto table = [] {
    std::array<const KindExec*, *std::max_element(std::begin(kCodes), std::end(kCodes)) + 1> t{};
#define NPUC_LAYER_KIND(E, code, ...) t[code] = &kind_exec::E;
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
    return t;
  }();
  return *table[static_cast<size_t>(k)];  // (a kind the reader accepted: every one has its entry)
}

void Runtime::Impl::exec(Step& s) {
  if (s.dyn) return execDynamic(s);
  if (s.channel_last_in || s.channel_last_out) return execChannelLast(s);
  if (s.p2 || s.p2_codes) return execPow2(s);
  kindExec(s.d->kind).run(*this, s);
}

namespace {

/// Reference `ref` of dynamic step s (inputs, then outputs) at these dims, within its capacity.
void atDims(Runtime::Impl::Step& s, int ref, const Shape& dims, const std::string& what) {
  Runtime::Impl::Step::Dynamic& dy = *s.dyn;
  package::Descriptor& v = dy.view;
  const Shape& cap = dy.capacity[static_cast<size_t>(ref)];
  bool within = dims.size() == cap.size();  // (the rank first: a scalar's loop below is empty)
  for (size_t k = 0; within && k < dims.size(); ++k) within = dims[k] >= 0 && dims[k] <= cap[k];
  if (!within)
    fail(ErrorCode::kInvalidInput, "{} layer (seq {}): {} would be [{}], beyond the capacity [{}] the package holds for it",
         package::layerKindName(v.kind), v.seq, what, fmt::join(dims, ", "), fmt::join(cap, ", "));
  package::TensorRef& r = v.refs[static_cast<size_t>(ref)];
  std::copy(dims.begin(), dims.end(), r.dims.begin());
  r.bytes = static_cast<uint32_t>(shapeNumel(dims) * static_cast<int64_t>(package::elemSize(r.type)));
  s.shapes[static_cast<size_t>(ref)] = dims;
}

}  // namespace

void Runtime::Impl::setOutputDims(Step& s, int j, const Shape& y) {
  const package::Descriptor& v = s.dyn->view;
  atDims(s, v.n_in + j, y, fmt::format("output {}", j));
  if (!y.empty()) std::memcpy(s.dyn->out_extent[static_cast<size_t>(j)], y.data(), y.size() * sizeof(int64_t));
}

void Runtime::Impl::execDynamic(Step& s) {
  Step::Dynamic& dy = *s.dyn;
  const package::Descriptor& v = dy.view;
  for (int i = 0; i < v.n_in; ++i) {
    Shape e(dy.capacity[static_cast<size_t>(i)].size());
    if (!e.empty()) std::memcpy(e.data(), dy.in_extent[static_cast<size_t>(i)], e.size() * sizeof(int64_t));  // (a scalar: none)
    atDims(s, i, e, fmt::format("input {}", i));
  }
  std::vector<Shape> outs(static_cast<size_t>(v.n_out));
  kindExec(v.kind).shape(s, outs);
  for (int j = 0; j < v.n_out; ++j) setOutputDims(s, j, outs[static_cast<size_t>(j)]);
  kindExec(v.kind).run(*this, s);  // (a kind that learns its output's dims as it runs sets them again: nms)
}

void Runtime::Impl::execChannelLast(Step& s) {
  const package::Descriptor& d = *s.d;
  std::vector<uint8_t*> in = s.in;
  uint8_t* out = s.out;
  for (int i = 0; i < d.n_in; ++i) {
    if (!(s.channel_last_in & (1u << i))) continue;
    const package::TensorRef& r = d.in(i);
    auto& buf = layout_scratch[static_cast<size_t>(i)];
    buf.resize(r.bytes);
    kernels::transpose(package::storedDims(r), package::channelLastToLayer(r.rank), package::elemSize(r.type), s.in[static_cast<size_t>(i)],
                       buf.data(), pool.get());
    s.in[static_cast<size_t>(i)] = buf.data();
  }
  auto& ybuf = layout_scratch[package::kMaxRefs - 1];
  if (s.channel_last_out) {
    ybuf.resize(d.out(0).bytes);
    s.out = ybuf.data();
  }
  const uint8_t cl_in = s.channel_last_in;
  const bool cl_out = s.channel_last_out;
  s.channel_last_in = 0, s.channel_last_out = false;
  struct Restore {  // (the step as loaded, also when the layer throws)
    Step& s;
    std::vector<uint8_t*>& in;
    uint8_t* out;
    uint8_t cl_in;
    bool cl_out;
    ~Restore() { s.in = in, s.out = out, s.channel_last_in = cl_in, s.channel_last_out = cl_out; }
  } restore{s, in, out, cl_in, cl_out};
  exec(s);
  if (cl_out) {
    const package::TensorRef& r = d.out(0);
    kernels::transpose(s.shapes[static_cast<size_t>(d.n_in)], package::layerToChannelLast(r.rank), package::elemSize(r.type), ybuf.data(), out,
                       pool.get());
  }
}

void Runtime::Impl::runRegion(size_t first, size_t count) {
  for (size_t i = first; i < first + count; i += 1 + steps[i].skip) exec(steps[i]);
}

const float* Runtime::Impl::inF(Step& s, int i) {
  const package::TensorRef& r = s.d->in(i);
  if (r.type == ElemType::kF32) return reinterpret_cast<const float*>(s.in[static_cast<size_t>(i)]);
  auto& buf = scratch[static_cast<size_t>(i)];
  buf.resize(r.numel());
  const uint16_t* h = reinterpret_cast<const uint16_t*>(s.in[static_cast<size_t>(i)]);
  if (opts.exact) kernels::f16ToF32_ref(h, buf.data(), static_cast<int64_t>(r.numel()));
  else kernels::f16ToF32(h, buf.data(), static_cast<int64_t>(r.numel()), pool.get());
  return buf.data();
}

float* Runtime::Impl::outF(Step& s) {
  const package::TensorRef& r = s.d->out(0);
  if (r.type == ElemType::kF32) return reinterpret_cast<float*>(s.out);
  auto& buf = scratch[package::kMaxRefs - 1];
  buf.resize(r.numel());
  return buf.data();
}

void Runtime::Impl::store(Step& s) {
  const package::TensorRef& r = s.d->out(0);
  kernels::Activation act = s.post_act ? s.act : kernels::Activation{};
  int64_t n = static_cast<int64_t>(r.numel());
  if (r.type == ElemType::kF32) {
    if (act.kind != kernels::ActKind::kNone) {
      float* y = reinterpret_cast<float*>(s.out);
      for (int64_t i = 0; i < n; ++i) y[i] = kernels::applyActivation(y[i], act);
    }
    return;
  }
  const float* src = scratch[package::kMaxRefs - 1].data();
  if (opts.exact) kernels::f32ToF16_ref(src, reinterpret_cast<uint16_t*>(s.out), n, act);
  else kernels::f32ToF16(src, reinterpret_cast<uint16_t*>(s.out), n, act, pool.get());
}

/// What the translator fixed for the AIPP stage of step s: the output it writes, the frame's bytes per image,
/// padding_value. Its parameter block is aippBlockSize(n) bytes. The bytes per image are the frame input's

void Runtime::run(const LayerCallback& cb) {
  Impl& im = *impl_->cur;
  im.checkInputsSet();
  if (im.opts.profile) im.times.assign(im.steps.size(), 0.0);
  for (size_t i = 0; i < im.steps.size(); i += 1 + im.steps[i].skip) {  // (a control layer runs its regions itself)
    if (im.only_group > 0 && im.layers[i].group != im.only_group) continue;  // (a pipeline stage: its group only)
    if (im.opts.profile) {
      auto t0 = std::chrono::steady_clock::now();
      im.exec(im.steps[i]);
      im.times[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    } else {
      im.exec(im.steps[i]);
    }
    if (cb) {
      const RuntimeLayer& l = im.layers[i];
      const Impl::Step& st = im.steps[i];
      const package::Descriptor& full = *im.program[st.d->seq];
      // Output k as the run left it: a dynamic tensor at its run's dims (a dynamic layer's data outputs: its view's
      // references; nonzero's indices: [rank, n] from its extent), any other at its shape.
      auto dims = [&](const RuntimeLayer& rl, int k) {
        if (st.dyn && k < st.d->n_out) return shapeOf(st.d->out(k));
        if (full.kind == LayerKind::kNonZero && k == 0) {
          Shape e(2);
          std::memcpy(e.data(), im.at(full.out(1).addr, full.out(1).bytes, "nonzero's extent"), sizeof(int64_t) * 2);
          if (e[0] == rl.output.shape[0] && e[1] >= 0 && e[1] <= rl.output.shape[1]) return e;
        }
        return rl.output.shape;
      };
      auto view = [&](const RuntimeLayer& rl, int k) {
        const package::TensorRef& r = full.out(k);
        for (auto& s : im.spaces)
          if (r.addr >= s.addr && r.addr - s.addr < s.size) {
            cb(rl, Tensor(rl.output.dtype, dims(rl, k), s.buf, r.addr - s.addr));
            break;
          }
      };
      view(l, 0);
      for (size_t k = 0; k < l.more_outputs.size(); ++k) {  // (a layer's other outputs, each named as `output`)
        RuntimeLayer o = l;
        o.output = l.more_outputs[k];
        o.output_index = static_cast<int>(k + 1);
        o.scale = 0, o.zero_point = 0, o.float_value.clear();
        view(o, static_cast<int>(k + 1));
      }
    }
  }
}

}  // namespace npuc
