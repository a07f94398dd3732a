#include "ops/custom.hpp"

#include "ops/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

namespace npuc::ops {

const plugin::CustomOp* customOpOf(const ir::Node& n) {
  if (n.domain == "ai.npuc") return nullptr;
  if (n.domain.empty() && registry().find("", n.op)) return nullptr;
  return plugin::find(n.domain, n.op);
}

int customPackageOutputs(const ir::Node& n) {
  size_t used = n.outputs.size();
  while (used > 0 && n.outputs[used - 1] == ir::kNoValue) --used;
  for (size_t k = 0; k < used; ++k)
    if (n.outputs[k] == ir::kNoValue) return 0;
  return static_cast<int>(used);
}

const Tensor* constantInput(const ir::Graph& g, const ir::Node& n, int i) {
  if (!n.hasInput(i)) return nullptr;
  const ir::Value& v = g.value(n.inputs[static_cast<size_t>(i)]);
  return v.isConstant() ? &*v.constant : nullptr;
}

std::vector<plugin::Param> customParams(const ir::Node& n, const plugin::CustomOp& op,
                                        const std::function<const Tensor*(int)>& constant) {
  std::vector<plugin::Param> out;
  const npuc_custom_op& d = op.desc();
  for (uint32_t k = 0; k < d.num_params; ++k) {
    const npuc_param_def& pd = d.params[k];
    plugin::Param p;
    p.name = pd.name;
    p.type = pd.type;
    const char* tn = plugin::paramTypeName(pd.type);
    auto bad = [&](const std::string& why) {
      fail(ErrorCode::kInvalidInput, "{}: {} parameter '{}' ({}): {}", n.label(), op.label(), p.name, tn, why);
    };
    if (pd.input >= 0) {
      if (n.hasInput(pd.input)) {
        const Tensor* t = constant(pd.input);
        if (!t) bad(fmt::format("input {} must be a constant of the model (an initializer)", pd.input));
        p.present = true;
        switch (pd.type) {
          case NPUC_PARAM_TENSOR: p.tensor = *t; break;
          case NPUC_PARAM_INTS:
            if (!isInteger(t->dtype()) && t->dtype() != DType::kBool) bad(fmt::format("input {} is {}, not integers", pd.input, dtypeName(t->dtype())));
            p.ints = t->toInt64();
            break;
          case NPUC_PARAM_FLOATS: p.floats = t->toDouble(); break;
          case NPUC_PARAM_STRING: bad("a string cannot come from an input"); break;
          default: {
            if (t->numel() != 1) bad(fmt::format("input {} holds {} values, a scalar holds one", pd.input, t->numel()));
            if (pd.type == NPUC_PARAM_FLOAT) {
              p.f = t->toDouble()[0];
            } else if (isInteger(t->dtype()) || t->dtype() == DType::kBool) {
              p.i = t->toInt64()[0];
            } else {  // a float constant for an int parameter: only an exact integer
              const double v = t->toDouble()[0];
              if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15)
                bad(fmt::format("input {} holds {}, not an integer", pd.input, v));
              p.i = static_cast<int64_t>(v);
            }
            if (pd.type == NPUC_PARAM_BOOL) p.i = p.i != 0;
          }
        }
      }
    } else if (auto it = n.attrs.find(p.name); it != n.attrs.end()) {
      const ir::Attr& a = it->second;
      p.present = true;
      const int64_t* i = a.get<int64_t>();
      const float* f = a.get<float>();
      const std::vector<int64_t>* is = a.get<std::vector<int64_t>>();
      const std::vector<float>* fs = a.get<std::vector<float>>();
      auto kindIs = [&] { return std::string(ir::attrKindName(a.kind())); };
      switch (pd.type) {
        case NPUC_PARAM_BOOL:
        case NPUC_PARAM_INT:
          if (!i) bad(fmt::format("the attribute is {}, not an int", kindIs()));
          p.i = pd.type == NPUC_PARAM_BOOL ? (*i != 0) : *i;
          break;
        case NPUC_PARAM_FLOAT:
          if (!f && !i) bad(fmt::format("the attribute is {}, not a float", kindIs()));
          p.f = f ? static_cast<double>(*f) : static_cast<double>(*i);
          break;
        case NPUC_PARAM_STRING:
          if (!a.get<std::string>()) bad(fmt::format("the attribute is {}, not a string", kindIs()));
          p.s = *a.get<std::string>();
          break;
        case NPUC_PARAM_INTS:
          if (is) p.ints = *is;
          else if (i) p.ints = {*i};
          else bad(fmt::format("the attribute is {}, not ints", kindIs()));
          break;
        case NPUC_PARAM_FLOATS:
          if (fs) p.floats.assign(fs->begin(), fs->end());
          else if (f) p.floats = {static_cast<double>(*f)};
          else if (is) p.floats.assign(is->begin(), is->end());
          else bad(fmt::format("the attribute is {}, not floats", kindIs()));
          break;
        case NPUC_PARAM_TENSOR:
          if (!a.get<Tensor>()) bad(fmt::format("the attribute is {}, not a tensor", kindIs()));
          p.tensor = *a.get<Tensor>();
          break;
        default: break;
      }
    }
    if (p.type == NPUC_PARAM_TENSOR && p.present && p.tensor.shape().size() > NPUC_OP_MAX_RANK)
      bad(fmt::format("the tensor has rank {}; custom ops take rank {} at most", p.tensor.shape().size(), NPUC_OP_MAX_RANK));
    if (p.type == NPUC_PARAM_TENSOR && p.present && !plugin::codeOf(p.tensor.dtype()))
      bad(fmt::format("the tensor is {}, which the ABI has no code for", dtypeName(p.tensor.dtype())));
    if (!p.present && pd.required)
      bad(pd.input >= 0 ? fmt::format("the node has no input {} (the parameter is required)", pd.input)
                        : fmt::format("the node has no attribute '{}' (the parameter is required)", p.name));
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

OpSchema schemaOf(const plugin::CustomOp& op) {
  OpSchema s;
  s.name = op.name();
  s.domain = op.domain();
  s.min_inputs = op.numInputs();
  s.max_inputs = std::max(op.numInputs(), op.lastParamInput() + 1);
  s.min_outputs = 1;
  s.max_outputs = op.numOutputs();
  s.doc = op.doc().empty() ? op.label() : op.doc() + " (" + op.label() + ")";
  const plugin::CustomOp* p = &op;
  s.infer = [p](InferContext& ctx) {
    const ir::Node& n = ctx.node();
    std::vector<DType> types;
    std::vector<Shape> shapes;
    std::vector<const Tensor*> values;
    for (int i = 0; i < p->numInputs(); ++i) {
      if (!ctx.hasInput(i)) ctx.error("{}: input {} is required", p->label(), i);
      types.push_back(p->passType(i, ctx.inputDType(i)));
      if (types.back() == DType::kUndefined)
        ctx.unsupported("{}: input {} is {}, which the op does not take", p->label(), i, dtypeName(ctx.inputDType(i)));
      shapes.push_back(ctx.inputShape(i));
      const Tensor* v = nullptr;
      try {
        v = &ctx.inputValue(i);
      } catch (const UnknownInput&) {
      }
      values.push_back(v && v->dtype() == types.back() ? v : nullptr);  // (data only in the type the plugin is told)
    }
    // A parameter read from an input that is not known yet leaves the outputs unknown (UnknownInput).
    std::vector<plugin::Param> params = customParams(n, *p, [&](int i) { return &ctx.inputValue(i); });
    auto outs = p->infer(n.name, types, shapes, values, params);
    for (size_t k = 0; k < outs.size(); ++k) ctx.setOutput(static_cast<int>(k), outs[k].first, outs[k].second);
  };
  return s;
}

}  // namespace

const OpSchema* findSchema(std::string_view domain, std::string_view name) {
  if (const OpSchema* s = registry().find(domain == "ai.onnx" ? std::string_view() : domain, name)) return s;
  if (domain == "ai.npuc") return nullptr;
  const plugin::CustomOp* op = plugin::find(domain, name);
  if (!op) return nullptr;
  static std::mutex mu;
  static std::map<const plugin::CustomOp*, OpSchema> cache;  // registered ops live as long as the process
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(op);
  if (it == cache.end()) it = cache.emplace(op, schemaOf(*op)).first;
  return &it->second;
}

}  // namespace npuc::ops
