// The names of a DRP-AI pre/post-processing definition, checked against each other and against the model, with
// the manual's messages (§9: [Error Y01], [Error Y02], [Error(DRP Converter-007)]), and the size of each boundary
// tensor against the model's (-NotCheckSizeONNXvsYAML skips that).
#include "prepost/internal.hpp"
#include "support/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace npuc::prepost {

using namespace detail;

namespace {

std::vector<std::string> names(const std::vector<TensorDecl>& v) {
  std::vector<std::string> r;
  for (auto& d : v) r.push_back(d.name);
  return r;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string lines(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, "\n")); }

[[noreturn]] void converter007(const std::string& name, const char* key, const char* side) {
  bad(fmt::format("[Error(DRP Converter-007)] Node {} is not found.\nMake sure that the node names defined in prepost.yaml "
                  "file match the input/output nodes in ONNX file. ({} name '{}' is not an {} of the model)",
                  name, key, name, side));
}

}  // namespace

namespace detail {

void checkModelNames(const PrePost& pp, const ParseOptions& o) {
  std::vector<std::string> in = names(pp.input_to_body), out = names(pp.output_from_body);
  if (!o.model_inputs.empty()) {
    std::set<std::string> a(in.begin(), in.end()), b(o.model_inputs.begin(), o.model_inputs.end());
    if (o.check_prepost && a != b)
      withContext("input_to_body", [&] {
        bad(fmt::format("[Error Y01] Error in prepost yaml file: set input_to_body name as:\n{}\nMake sure that "
                        "input_to_body \"name\"(s) matches the input node name(s) in ONNX.",
                        lines(o.model_inputs)));
      });
    for (size_t i = 0; i < in.size(); ++i)
      if (!b.count(in[i]))
        withContext(fmt::format("input_to_body[{}].name", i), [&] { converter007(in[i], "input_to_body", "input"); });
  }
  if (!o.model_outputs.empty()) {
    std::set<std::string> a(out.begin(), out.end()), b(o.model_outputs.begin(), o.model_outputs.end());
    if (o.check_prepost && a != b)
      withContext("output_from_body", [&] {
        bad(fmt::format("[Error Y01] Error in prepost yaml file: set output_from_body name as:\n{}\nMake sure that "
                        "output_from_body \"name\"(s) matches the output node name(s) in ONNX.",
                        lines(o.model_outputs)));
      });
    for (size_t i = 0; i < out.size(); ++i)
      if (!b.count(out[i]))
        withContext(fmt::format("output_from_body[{}].name", i), [&] { converter007(out[i], "output_from_body", "output"); });
  }
}

void checkPreNames(const PrePost& pp, const std::vector<ParsedProcess>& procs, const ParseOptions& o) {
  std::vector<std::string> pre_in = names(pp.input_to_pre), body_in = names(pp.input_to_body);
  std::map<std::string, std::string> dest_by;
  for (auto& pr : procs) {
    if (!contains(pre_in, pr.p.src))
      withContext(pr.path + ".src", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: preprocess src =/= input_to_pre name\nMake sure the "
                        "preprocess \"src\" matches input_to_pre \"name\". (src '{}'; input_to_pre names: {})",
                        pr.p.src, fmt::join(pre_in, ", ")));
      });
    if (!contains(body_in, pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: preprocess dest =/= input_to_body name\nMake sure the "
                        "preprocess \"dest\" matches input_to_body \"name\". (dest '{}'; input_to_body names: {})",
                        pr.p.dest, fmt::join(body_in, ", ")));
      });
    dest_by.emplace(pr.p.dest, pr.path);
  }
  for (auto& n : pre_in)
    if (std::none_of(procs.begin(), procs.end(), [&](const ParsedProcess& pr) { return pr.p.src == n; }))
      withContext("input_to_pre", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: preprocess src =/= input_to_pre name\nMake sure the "
                        "preprocess \"src\" matches input_to_pre \"name\". (input_to_pre '{}' is not the src of any "
                        "preprocess entry)",
                        n));
      });
  // Without a model, the YAML's own input_to_body names stand for the ONNX inputs.
  const std::vector<std::string>& onnx_in = o.model_inputs.empty() ? body_in : o.model_inputs;
  std::vector<std::string> missing;
  for (auto& n : onnx_in)
    if (!dest_by.count(n)) missing.push_back(n);
  if (!missing.empty())
    withContext("preprocess", [&] {
      bad(fmt::format("[Error Y01] Error in prepost yaml file: set : preprocess dest must include all name(s) of onnx "
                      "input node(s) listed below:\n{}\nMake sure that all of ONNX input node(s) name are already defined "
                      "in preprocess \"dest\". (missing: {})",
                      lines(onnx_in), fmt::join(missing, ", ")));
    });
  for (auto& pr : procs)
    if (dest_by.at(pr.p.dest) != pr.path)
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("input_to_body '{}' is already the dest of {}; each input is produced by one preprocess entry",
                        pr.p.dest, dest_by.at(pr.p.dest)));
      });
}

std::map<std::string, TensorInfo> postSources(const PrePost& pp) {
  std::map<std::string, TensorInfo> r;
  for (auto& d : pp.output_from_body) {
    if (d.shape_post.empty()) {
      r[d.name] = d.info();
      continue;
    }
    for (auto& p : d.shape_post) {
      if (r.count(p.name) || pp.findOutputFromBody(p.name))
        bad(fmt::format("output_from_body '{}': shape_post name '{}' is already used by another output or piece", d.name,
                        p.name));
      r[p.name] = TensorInfo{p.shape, d.order, ImageFormat::kNone, d.type};
    }
  }
  return r;
}

void checkPostNames(const PrePost& pp, const std::vector<ParsedProcess>& procs, const ParseOptions& o,
                    const std::map<std::string, TensorInfo>& sources) {
  std::vector<std::string> post_out = names(pp.output_from_post);
  std::map<std::string, std::string> dest_by;
  for (auto& pr : procs) {
    if (sources.count(pr.p.dest) || pp.findOutputFromBody(pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("'{}' is an output_from_body (or shape_post) name; a postprocess dest needs a new name", pr.p.dest));
      });
    if (dest_by.count(pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("'{}' is already the dest of {}; each postprocess dest is produced once", pr.p.dest, dest_by[pr.p.dest]));
      });
    dest_by[pr.p.dest] = pr.path;
  }
  bool chained = std::any_of(procs.begin(), procs.end(), [&](const ParsedProcess& pr) { return !contains(post_out, pr.p.dest); });
  std::set<std::string> used_src;
  for (auto& pr : procs) {
    used_src.insert(pr.p.src);
    const TensorDecl* whole = pp.findOutputFromBody(pr.p.src);
    if (whole && !whole->shape_post.empty())
      withContext(pr.path + ".src", [&] {
        std::vector<std::string> pn;
        for (auto& p : whole->shape_post) pn.push_back(p.name);
        bad(fmt::format("output_from_body '{}' is split by shape_post; postprocess src must name its pieces ({}) (§5.2 "
                        "shape_post)",
                        pr.p.src, fmt::join(pn, ", ")));
      });
    if (sources.count(pr.p.src) || dest_by.count(pr.p.src)) continue;
    withContext(pr.path + ".src", [&] {
      if (chained)
        bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocessing src =/= postprocessing dest or "
                        "output_from_body name\nMake sure the postprocess \"src\" matches other postprocess \"dest\" or "
                        "output_from_body \"name\". (src '{}')",
                        pr.p.src));
      std::vector<std::string> sn;
      for (auto& [n, t] : sources) sn.push_back(n);
      bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocess src =/= output_from_body name\nMake sure the "
                      "postprocess \"src\" matches output_from_body \"name\". (src '{}'; output_from_body names{}: {})",
                      pr.p.src, sn.size() == pp.output_from_body.size() ? "" : " and shape_post pieces", fmt::join(sn, ", ")));
    });
  }
  for (auto& pr : procs)
    if (!contains(post_out, pr.p.dest) && !used_src.count(pr.p.dest))
      withContext(pr.path + ".dest", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocessing dest =/= output_from_post name\nMake sure "
                        "the postprocess \"dest\" matches output_from_post \"name\". (dest '{}'; output_from_post names: "
                        "{})",
                        pr.p.dest, fmt::join(post_out, ", ")));
      });
  for (auto& n : post_out)
    if (!dest_by.count(n))
      withContext("output_from_post", [&] {
        bad(fmt::format("[Error Y02] Error in prepost yaml file: postprocessing dest =/= output_from_post name\nMake sure "
                        "the postprocess \"dest\" matches output_from_post \"name\". (output_from_post '{}' is not the "
                        "dest of any postprocess entry)",
                        n));
      });
  // Every model output (each shape_post piece for a split one) must be read by postprocessing.
  std::vector<std::string> onnx_out = o.model_outputs.empty() ? names(pp.output_from_body) : o.model_outputs, missing;
  for (auto& n : onnx_out) {
    const TensorDecl* d = pp.findOutputFromBody(n);
    if (d && !d->shape_post.empty()) {
      for (auto& p : d->shape_post)
        if (!used_src.count(p.name)) missing.push_back(p.name + " (shape_post piece of " + n + ")");
    } else if (!used_src.count(n)) {
      missing.push_back(n);
    }
  }
  if (!missing.empty())
    withContext("postprocess", [&] {
      bad(fmt::format("[Error Y01] Error in prepost yaml file: postprocess src must include all name(s) of onnx output "
                      "node(s) listed below:\n{}\nMake sure that all of ONNX output node(s) name are already defined in "
                      "postprocess \"src\". (missing: {})",
                      lines(onnx_out), fmt::join(missing, ", ")));
    });
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------------------------
// Size of ONNX vs. YAML

namespace {

/// The model's dims as the YAML would write them for `order`: candidate shapes (NCHW → HWC, and NHWC as is).
std::vector<std::vector<int64_t>> yamlCandidates(std::vector<int64_t> dims, Order order) {
  if (dims.size() >= 2 && dims[0] <= 1) dims.erase(dims.begin());  // N (must be 1, or unknown)
  std::vector<std::vector<int64_t>> r;  // none: compare the element counts (always so for C, which is flat)
  if (order != Order::kC && dims.size() == 3) {
    if (order == Order::kHWC) {
      r.push_back({dims[1], dims[2], dims[0]});  // NCHW
      r.push_back(dims);                         // NHWC (Appendix B: channel-last model)
    } else {
      r.push_back(dims);
    }
  }
  return r;
}

bool dimsMatch(const std::vector<int64_t>& model, const std::vector<int64_t>& yaml) {
  if (model.size() != yaml.size()) return false;
  for (size_t i = 0; i < model.size(); ++i)
    if (model[i] > 0 && model[i] != yaml[i]) return false;
  return true;
}

void checkOneSize(const TensorDecl& d, const std::vector<ModelTensorShape>& model, const char* key, const char* side,
                  size_t index) {
  auto it = std::find_if(model.begin(), model.end(), [&](const ModelTensorShape& m) { return m.name == d.name; });
  std::string where = fmt::format("{}[{}] '{}'", key, index, d.name);
  if (it == model.end()) withContext(where, [&] { converter007(d.name, key, side); });
  const std::vector<int64_t>& dims = it->dims;
  auto cands = yamlCandidates(dims, d.order);
  bool ok = false;
  if (cands.empty()) {  // no dimension mapping for this rank: compare the element counts
    int64_t n = 1;
    bool known = true;
    for (int64_t x : dims) {
      if (x <= 0) known = false;
      n *= x;
    }
    ok = !known || n == d.info().elements();
  }
  for (auto& c : cands) ok = ok || dimsMatch(c, d.shape);
  if (!ok)
    withContext(where, [&] {
      bad(fmt::format("the size of ONNX vs. YAML does not match: the YAML shape is {} ({}), the ONNX {} has shape {}{} "
                      "(NCHW with N = 1 is written HWC in the YAML, Appendix B). Fix the YAML, or skip this check with "
                      "-NotCheckSizeONNXvsYAML",
                      shapeStr(d.shape), toString(d.order), side, shapeStr(dims),
                      cands.empty() ? "" : fmt::format(", i.e. {} in YAML order", shapeStr(cands.front()))));
    });
}

}  // namespace

void checkSizeOnnxVsYaml(const PrePost& pp, const std::vector<ModelTensorShape>& model_inputs,
                         const std::vector<ModelTensorShape>& model_outputs, bool skip) {
  if (skip) return;
  withContext(pp.source, [&] {
    for (size_t i = 0; i < pp.input_to_body.size(); ++i)
      checkOneSize(pp.input_to_body[i], model_inputs, "input_to_body", "input", i);
    for (size_t i = 0; i < pp.output_from_body.size(); ++i)
      checkOneSize(pp.output_from_body[i], model_outputs, "output_from_body", "output", i);
  });
}

}  // namespace npuc::prepost