// How custom layers run (runtime_impl.hpp; docs/custom-ops.md): on the plugin the package was translated with,
// through the same plugin::Instance the engine uses.
#include "runtime/runtime_impl.hpp"

#include "plugin/plugin.hpp"

#include <vector>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

/// A tensor of device memory as a custom op's port takes it: itself, or float16 widened to float32 (exact) / float32
/// rounded to float16 (nearest even) — CustomOp::passType chose the type.
Tensor asPassed(const Tensor& v, DType t) {
  if (v.dtype() == t) return v;
  Tensor w = Tensor::uninitialized(t, v.shape());
  if (v.dtype() == DType::kF16 && t == DType::kF32)
    kernels::f16ToF32_ref(static_cast<const uint16_t*>(v.raw()), w.data<float>(), v.numel());
  else
    kernels::f32ToF16_ref(v.data<float>(), static_cast<uint16_t*>(w.raw()), v.numel(), kernels::Activation{});
  return w;
}

/// A custom layer: its plugin found among the registered ones and checked against the package's record (the op,
/// the ABI version, the library's SHA-256), its parameters rebuilt, its output shape checked with the plugin's
/// infer.
void prepareCustom(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const package::LayerInfo& l = im.pkg.layers[d.seq];
  const package::CustomLayer& c = *l.custom;
  const std::string qn = c.domain.empty() ? c.op : c.domain + "." + c.op;
  const std::string what = fmt::format("layer '{}' (custom op '{}')", l.name, qn);
  if (c.abi_version != NPUC_CUSTOM_OP_ABI_VERSION)
    fail(ErrorCode::kInvalidInput, "{}: the package was translated with custom-op ABI version {} (plugin {}, sha256 {}); "
         "this npuc speaks version {} (translate it again with this npuc and a plugin built for it)", what,
         c.abi_version, c.library, c.sha256, NPUC_CUSTOM_OP_ABI_VERSION);
  const plugin::CustomOp* op = plugin::find(c.domain, c.op);
  if (!op)
    fail(ErrorCode::kInvalidInput, "{}: its plugin is missing: register {} (sha256 {}) before loading the package "
         "(--custom-op PATH, Runtime::registerCustomOp, npuc_register_custom_op)", what, c.library, c.sha256);
  if (op->library().sha256 != c.sha256)
    fail(ErrorCode::kInvalidInput, "{}: the registered plugin {} has sha256 {}, but the package was translated with "
         "{} (sha256 {}): register the plugin the package was made with, or translate again", what,
         op->library().file_name, op->library().sha256, c.library, c.sha256);
  std::vector<plugin::Param> params;
  int tensors = 0;
  for (const package::CustomParam& q : c.params) {
    plugin::Param p;
    static_cast<plugin::ParamValue&>(p) = q;
    if (q.type == NPUC_PARAM_TENSOR && q.present) {
      p.tensor = im.viewOf(d.in(q.input));
      ++tensors;
    }
    params.push_back(std::move(p));
  }
  const uint32_t np = op->desc().num_params;
  if (params.size() != np)
    fail(ErrorCode::kInvalidInput, "{}: the package records {} parameters, {} defines {}", what, params.size(), op->label(), np);
  for (uint32_t k = 0; k < np; ++k) {
    const npuc_param_def& pd = op->desc().params[k];
    if (params[k].name != pd.name || params[k].type != pd.type)
      fail(ErrorCode::kInvalidInput, "{}: parameter {} is '{}' ({}) in the package, '{}' ({}) in {}", what, k,
           params[k].name, plugin::paramTypeName(params[k].type), pd.name, plugin::paramTypeName(pd.type), op->label());
    if (pd.required && !params[k].present)
      fail(ErrorCode::kInvalidInput, "{}: the package does not give parameter '{}', which {} requires", what, pd.name, op->label());
  }
  if (d.n_in - tensors != op->numInputs())
    fail(ErrorCode::kInvalidInput, "{}: {} tensor inputs, {} takes {}", what, d.n_in - tensors, op->label(), op->numInputs());
  std::vector<DType> types;
  std::vector<Shape> shapes;
  std::vector<Tensor> constants;  // inputs in the weight space: their data, as shape inference saw it
  constants.reserve(static_cast<size_t>(op->numInputs()));
  std::vector<const Tensor*> values;
  const package::Element* weight = im.pkg.element("weight");
  for (int i = 0; i < op->numInputs(); ++i) {
    const DType stored = d.in(i).type;
    const DType t = op->passType(i, stored);
    if (t == DType::kUndefined)
      fail(ErrorCode::kInvalidInput, "{}: input {} is {}, which {} does not take", what, i, dtypeName(stored), op->label());
    s.custom_in.push_back(t);
    types.push_back(t);
    shapes.push_back(s.shapes[static_cast<size_t>(i)]);
    const bool is_weight = weight && d.in(i).addr >= weight->addr && d.in(i).addr - weight->addr < weight->size;
    if (is_weight) {  // a constant: its data in the type the plugin is told (converted as execCustom converts it)
      constants.push_back(asPassed(im.viewOf(d.in(i)), t));
      values.push_back(&constants.back());
    } else {
      values.push_back(nullptr);
    }
  }
  if (d.n_out > op->numOutputs())
    fail(ErrorCode::kInvalidInput, "{}: the layer writes {} outputs, {} defines {}", what, d.n_out, op->label(), op->numOutputs());
  auto outs = op->infer(l.name, types, shapes, values, params);
  for (int k = 0; k < d.n_out; ++k) {
    const DType stored = d.out(k).type;
    const Shape& held = s.shapes[static_cast<size_t>(d.n_in + k)];
    const size_t ku = static_cast<size_t>(k);
    if (outs.size() <= ku || outs[ku].second != held || !(outs[ku].first == stored || (isFloat(outs[ku].first) && isFloat(stored))))
      fail(ErrorCode::kInvalidInput, "{}: {}'s infer gives {} {}, but the package holds {} {} for its output{}", what,
           op->label(), outs.size() <= ku ? "nothing" : dtypeName(outs[ku].first), outs.size() <= ku ? "" : shapeStr(outs[ku].second),
           dtypeName(stored), shapeStr(held), d.n_out == 1 ? std::string() : fmt::format(" {}", k));
    s.custom_out.push_back(outs[ku].first);
  }
  s.custom = std::make_unique<plugin::Instance>(*op, l.name, std::move(params));
}

/// A tensor of device memory as a custom op's port takes it: itself, or float16 widened to float32 (exact) / float32

void execCustom(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  std::vector<Tensor> in;
  for (size_t i = 0; i < s.custom_in.size(); ++i) in.push_back(asPassed(im.viewOf(d.in(static_cast<int>(i))), s.custom_in[i]));
  // Each output the layer writes (the plugin computes the op's others, if any, into scratch: Instance::compute),
  // in device memory when the plugin writes the stored type, else converted after the call.
  std::vector<Tensor> out;
  for (int k = 0; k < d.n_out; ++k) {
    const package::TensorRef& y = d.out(k);
    const DType t = s.custom_out[static_cast<size_t>(k)];
    out.push_back(t == y.type ? im.viewOf(y) : Tensor::uninitialized(t, shapeOf(y)));
  }
  s.custom->compute(in, out, im.opts.exact, im.pool ? im.pool->size() : 1);
  for (int k = 0; k < d.n_out; ++k) {
    const package::TensorRef& y = d.out(k);
    const DType t = s.custom_out[static_cast<size_t>(k)];
    if (t == y.type) continue;
    const Tensor& o = out[static_cast<size_t>(k)];
    void* dst = im.at(y.addr, y.bytes, "a custom layer's output");
    if (y.type == ElemType::kF16 && t == DType::kF32)
      kernels::f32ToF16_ref(o.data<float>(), static_cast<uint16_t*>(dst), o.numel(), kernels::Activation{});
    else
      kernels::f16ToF32_ref(static_cast<const uint16_t*>(o.raw()), static_cast<float*>(dst), o.numel());
  }
}

}  // namespace

const KindExec kind_exec::kCustom = {&prepareCustom, &execCustom};

}  // namespace npuc
