// `npuc custom-op create`: an op definition (YAML, the RKNN custom-op guide's format plus npuc's keys) to a
// buildable plugin skeleton (docs/custom-ops.md).
#include "npuc/custom_op_definition.hpp"
#include "npuc/model.hpp"

#include "plugin/plugin.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace npuc {

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxPorts = 64;    // tensor inputs, and outputs, of one op
constexpr size_t kMaxParams = 256;  // parameters of one op

struct Port {
  std::string name;
  std::vector<std::string> dtypes;  // element type names ("float32", …)
};
struct ParamDef {
  std::string name, vx_type;
  int32_t type = 0;
  int input = -1;
  bool required = false;
};
struct Definition {
  std::string name, domain, engine = "vector", framework = "onnx", target_platform, doc;
  std::vector<Port> inputs, outputs;
  std::vector<ParamDef> params;
};

const std::vector<std::pair<std::string, const char*>>& elemNames() {
  static const std::vector<std::pair<std::string, const char*>> v = {
      {"float32", "NPUC_ELEM_FLOAT32"}, {"float16", "NPUC_ELEM_FLOAT16"}, {"uint8", "NPUC_ELEM_UINT8"},
      {"int8", "NPUC_ELEM_INT8"},       {"uint16", "NPUC_ELEM_UINT16"},   {"int16", "NPUC_ELEM_INT16"},
      {"int32", "NPUC_ELEM_INT32"},     {"int64", "NPUC_ELEM_INT64"},     {"bool", "NPUC_ELEM_BOOL"}};
  return v;
}

bool plainName(const std::string& s, bool dots) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (dots && (c == '.' || c == '-'));
  });
}

/// "ResizeArea" -> "resize_area".
std::string snake(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0 && (std::islower(static_cast<unsigned char>(s[i - 1])) ||
                    (i + 1 < s.size() && std::islower(static_cast<unsigned char>(s[i + 1])) && r.back() != '_')))
        r += '_';
      r += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      r += c;
    }
  }
  return r;
}

/// The rules of a whole definition, once it is read (the limits on counts are checked while reading).
void checkDefinition(const Definition& d, const fs::path& file, std::vector<std::string>& notes) {
  auto bad = [](const std::string& key, const std::string& why) -> void { fail(ErrorCode::kInvalidInput, "field '{}': {}", key, why); };
  if (d.name.empty()) bad("name", "is required: the op's name as the model's nodes give it (their op_type)");
  if (!plainName(d.name, false) || !std::isalpha(static_cast<unsigned char>(d.name[0])))
    bad("name", fmt::format("'{}' is not an op name (a letter, then letters, digits and '_')", d.name));
  if (d.framework != "onnx" && d.framework != "tensorflow")
    bad("framework", fmt::format("'{}': onnx (the nodes' op_type in the domain 'domain' names) or tensorflow (the "
                                 "GraphDef nodes' op type; its feature maps passed NCHW, as the RKNN guide's kernels "
                                 "see them)", d.framework));
  if (!d.domain.empty() && !plainName(d.domain, true)) bad("domain", "letters, digits, '_', '.' and '-'");
  if (d.framework == "tensorflow" && !d.domain.empty())
    bad("domain", "a TensorFlow op has none (its GraphDef nodes name the op type only): leave domain out");
  if (d.domain == "ai.npuc") bad("domain", "ai.npuc is npuc's own");
  if (!plainName(d.engine, false)) bad("engine", "an engine name (vector, mac, or a target's engine)");
  if (d.outputs.empty()) bad("outputs", "the op needs at least one output");
  if (d.inputs.empty()) bad("inputs", "the op needs at least one tensor input");
  for (auto& p : d.params)
    if (p.input >= 0 && p.input < static_cast<int>(d.inputs.size()))
      bad("params." + p.name + ".input",
          fmt::format("input {} is one of the op's tensor inputs (parameters read inputs {} and after)", p.input, d.inputs.size()));
  if (std::any_of(d.doc.begin(), d.doc.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    bad("doc", "one line of text (no control characters)");
  if (d.doc.find("??") != std::string::npos) bad("doc", "two question marks in a row would start a C trigraph in the generated source");
  if (!d.target_platform.empty() && !plainName(d.target_platform, true))
    bad("target_platform", "a platform name (letters, digits, '_', '.', '-')");
  if (!d.target_platform.empty())
    notes.push_back(fmt::format("{}: target_platform '{}' is informative; npuc's targets are chosen at translate time "
                                "(--target), and the op runs on the engine 'engine' names ('{}')",
                                file.string(), d.target_platform, d.engine));
}

Definition parseDefinitionText(const std::string& text, const fs::path& file, std::vector<std::string>& notes) {
  return withContext(file.string(), [&] {
    Definition d;
    YAML::Node root = loadYaml(text);
    if (!root.IsMap()) fail(ErrorCode::kInvalidInput, "the op definition must be a YAML map (name, inputs, outputs, params)");
    auto bad = [](const std::string& key, const std::string& why) -> void {
      fail(ErrorCode::kInvalidInput, "field '{}': {}", key, why);
    };
    auto scalar = [&](const YAML::Node& n, const std::string& key) {
      if (!n.IsScalar()) bad(key, "must be a single value");
      return n.as<std::string>();
    };
    std::map<const std::vector<Port>*, std::set<std::string>> port_names;  // (names seen: no quadratic search)
    std::set<std::string> param_names;
    auto ports = [&](const YAML::Node& n, const std::string& key, std::vector<Port>& out) {
      if (!n.IsMap()) bad(key, "must map each tensor's name to its definition ({name: {type: VX_TYPE_TENSOR}})");
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (out.size() == kMaxPorts) bad(key, "at most 64 tensors");  // (before reading more: a huge list stops here)
        Port p;
        p.name = scalar(it->first, key);
        const std::string k = key + "." + p.name;
        if (!plainName(p.name, false)) bad(k, "a name is letters, digits and '_'");
        if (!port_names[&out].insert(p.name).second) bad(k, "two tensors have this name");
        const YAML::Node v = it->second;
        if (!v.IsMap()) bad(k, "must be a map (type: VX_TYPE_TENSOR)");
        for (auto f = v.begin(); f != v.end(); ++f) {
          const std::string fk = scalar(f->first, k);
          if (fk == "type") {
            if (scalar(f->second, k + ".type") != "VX_TYPE_TENSOR") bad(k + ".type", "inputs and outputs are VX_TYPE_TENSOR");
          } else if (fk == "dtype" || fk == "dtypes") {
            std::vector<std::string> names;
            const YAML::Node list = f->second;  // (a range-for over f->second would outlive yaml-cpp's proxy)
            if (list.IsSequence())
              for (auto e : list) names.push_back(scalar(e, k + "." + fk));
            else
              names.push_back(scalar(list, k + "." + fk));
            for (auto& t : names) {
              if (std::none_of(elemNames().begin(), elemNames().end(), [&](auto& e) { return e.first == t; }))
                bad(k + "." + fk, fmt::format("unknown element type '{}' (float32, float16, uint8, int8, uint16, int16, "
                                               "int32, int64, bool)", t));
              if (std::find(p.dtypes.begin(), p.dtypes.end(), t) == p.dtypes.end()) p.dtypes.push_back(t);
            }
          } else {
            bad(k + "." + fk, "unknown key (type, dtype)");
          }
        }
        if (p.dtypes.empty()) p.dtypes.push_back("float32");
        out.push_back(std::move(p));
      }
    };
    auto param = [&](const std::string& name, const YAML::Node& v, const std::string& key) {
      if (d.params.size() == kMaxParams) bad("params", "at most 256 parameters");
      ParamDef p;
      p.name = name;
      if (!plainName(p.name, false)) bad(key, "a parameter's name is letters, digits and '_'");
      if (!param_names.insert(p.name).second) bad(key, "two parameters have this name");
      if (!v.IsMap()) bad(key, "must be a map (type: VX_TYPE_…)");
      for (auto f = v.begin(); f != v.end(); ++f) {
        const std::string fk = scalar(f->first, key);
        const std::string k = key + "." + fk;
        if (fk == "type") {
          p.vx_type = scalar(f->second, k);
          p.type = plugin::paramTypeFromName(p.vx_type);
          if (!p.type)
            bad(k, fmt::format("unknown type '{}' (VX_TYPE_ARRAY, VX_TYPE_TENSOR, VX_TYPE_BOOL, a scalar VX type such "
                               "as VX_TYPE_INT32 or VX_TYPE_FLOAT32; or bool, int, float, string, ints, floats, tensor)",
                               p.vx_type));
        } else if (fk == "input") {
          const std::string s = scalar(f->second, k);
          try {
            size_t used = 0;
            p.input = std::stoi(s, &used);
            if (used != s.size() || p.input < 0 || p.input > 255) throw std::out_of_range(s);
          } catch (const std::exception&) {
            bad(k, fmt::format("'{}' is not an input index (0..255)", s));
          }
        } else if (fk == "required") {
          const std::string s = scalar(f->second, k);
          if (s != "true" && s != "false") bad(k, "true or false");
          p.required = s == "true";
        } else {
          bad(k, "unknown key (type, input, required)");
        }
      }
      if (!p.type) bad(key, "has no type");
      if (p.type == NPUC_PARAM_TENSOR && p.input < 0)
        bad(key, "a VX_TYPE_TENSOR parameter is a constant input of the node: give its index (input: N)");
      d.params.push_back(std::move(p));
    };
    std::vector<std::pair<std::string, YAML::Node>> loose;  // top-level parameter definitions (the guide's layout)
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = scalar(it->first, "(root)");
      const YAML::Node v = it->second;
      if (key == "name") d.name = scalar(v, key);
      else if (key == "framework") {
        d.framework = scalar(v, key);
        std::transform(d.framework.begin(), d.framework.end(), d.framework.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      }
      else if (key == "target_platform") d.target_platform = scalar(v, key);
      else if (key == "domain") d.domain = v.IsNull() ? std::string() : scalar(v, key);
      else if (key == "engine") d.engine = scalar(v, key);
      else if (key == "doc") d.doc = scalar(v, key);
      else if (key == "inputs") ports(v, key, d.inputs);
      else if (key == "outputs") ports(v, key, d.outputs);
      else if (key == "params") {
        if (v.IsNull()) continue;
        if (!v.IsMap()) bad(key, "must map each parameter's name to its definition ({size: {type: VX_TYPE_ARRAY}})");
        for (auto p = v.begin(); p != v.end(); ++p) {
          const std::string name = scalar(p->first, key);
          param(name, p->second, key + "." + name);
        }
      } else if (key == "out_binary" || key == "op_py_file" || key == "vx_file" || key == "kernel index" ||
                 key == "kernel_index" || key == "source") {
        notes.push_back(fmt::format("{}: '{}' (written by a generator) is not part of the definition; npuc custom-op "
                                    "create ignores it", file.string(), key));
      } else if (v.IsMap() && v["type"]) {
        loose.emplace_back(key, v);
      } else {
        bad(key, "unknown key (name, framework, target_platform, inputs, outputs, params; npuc's domain, engine, doc)");
      }
    }
    for (auto& [key, v] : loose) {
      param(key, v, key);
      notes.push_back(fmt::format("{}: '{}' is at the top level, as the RKNN guide's example prints it; it is read as a "
                                  "parameter (op.yml lists it under params)", file.string(), key));
    }
    checkDefinition(d, file, notes);
    return d;
  });
}

Definition parseDefinition(const fs::path& file, std::vector<std::string>& notes) {
  return parseDefinitionText(readFileText(file, kMaxConfigBytes), file, notes);
}

/// A C string literal (and a YAML double-quoted scalar) of s: '"' and '\\' escaped; s has no control characters.
std::string cStr(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

/// Text for a comment: printable ASCII, anything else (and a backslash, which would continue the line) as '?'.
std::string commentText(const std::string& s) {
  std::string r;
  for (char c : s) r += c >= 0x20 && c < 0x7f && c != '\\' ? c : '?';
  return r;
}

std::string opYml(const Definition& d, const std::string& lib) {
  std::string s = "# The op's definition as npuc read it (npuc custom-op create); the source's descriptor mirrors it.\n";
  s += fmt::format("name: {}\nframework: {}\n", d.name, d.framework);
  if (!d.target_platform.empty()) s += fmt::format("target_platform: {}\n", d.target_platform);
  s += fmt::format("domain: {}\nengine: {}\n", cStr(d.domain), d.engine);
  if (!d.doc.empty()) s += fmt::format("doc: {}\n", cStr(d.doc));
  for (auto [key, ports] : {std::pair{"inputs", &d.inputs}, {"outputs", &d.outputs}}) {
    s += fmt::format("{}:\n", key);
    for (auto& p : *ports) {
      s += fmt::format("  {}:\n    type: VX_TYPE_TENSOR\n    dtypes: [", p.name);
      for (size_t k = 0; k < p.dtypes.size(); ++k) s += (k ? ", " : "") + p.dtypes[k];
      s += "]\n";
    }
  }
  s += d.params.empty() ? "params: {}\n" : "params:\n";
  for (auto& p : d.params) {
    s += fmt::format("  {}:\n    type: {}\n", p.name, p.vx_type);
    if (p.input >= 0) s += fmt::format("    input: {}\n", p.input);
    if (p.required) s += "    required: true\n";
  }
  s += fmt::format("out_binary: lib{}.so\nsource: {}_op.cpp\n", lib, lib);
  return s;
}

const char* paramEnum(int32_t t) {
  switch (t) {
    case NPUC_PARAM_BOOL: return "NPUC_PARAM_BOOL";
    case NPUC_PARAM_INT: return "NPUC_PARAM_INT";
    case NPUC_PARAM_FLOAT: return "NPUC_PARAM_FLOAT";
    case NPUC_PARAM_STRING: return "NPUC_PARAM_STRING";
    case NPUC_PARAM_INTS: return "NPUC_PARAM_INTS";
    case NPUC_PARAM_FLOATS: return "NPUC_PARAM_FLOATS";
    default: return "NPUC_PARAM_TENSOR";
  }
}

std::string source(const Definition& d, const std::string& lib, const std::string& config) {
  auto elem = [](const std::string& n) {
    for (auto& [k, v] : elemNames())
      if (k == n) return v;
    return "NPUC_ELEM_FLOAT32";
  };
  std::string s = fmt::format(R"GEN(// {name}: a custom operator for npuc, generated by `npuc custom-op create` from {config}.
//
// Write the functions marked TODO (infer and compute_ref are required; init/destroy and compute_fast are optional),
// then `npuc custom-op build --op-path .` builds lib{lib}.so, and `--custom-op lib{lib}.so` registers it with npuc
// (check, translate, run, simulate, compare, …). docs/custom-ops.md walks through an example.
//
// Conventions: tensors are row-major, {layout}; a callback returns NPUC_OP_OK, or calls
// ctx->set_error(ctx, "what is wrong") and returns NPUC_OP_ERROR. Write every element of every output and nothing
// outside it: npuc checks the bytes around each output, and compares compute_fast with compute_ref bit for bit.
#include <npuc/custom_op.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {{

// ---- the definition (from op.yml; keep the two in step) ------------------------------------------------------
)GEN", fmt::arg("name", d.name), fmt::arg("config", config), fmt::arg("lib", lib),
                   fmt::arg("layout", d.framework == "tensorflow"
                                          ? "NCHW for images (a TensorFlow graph's NHWC feature maps as well)"
                                          : "NCHW for images"));
  auto portArrays = [&](const std::vector<Port>& ports, const char* what) {
    for (size_t k = 0; k < ports.size(); ++k) {
      s += fmt::format("const int32_t k{}Types{}[] = {{", what, k);
      for (size_t t = 0; t < ports[k].dtypes.size(); ++t) s += (t ? ", " : "") + std::string(elem(ports[k].dtypes[t]));
      s += "};\n";
    }
    s += fmt::format("const npuc_port_def k{}[] = {{\n", what);
    for (size_t k = 0; k < ports.size(); ++k)
      s += fmt::format("    {{{}, {}, k{}Types{}}},\n", cStr(ports[k].name), ports[k].dtypes.size(), what, k);
    s += "};\n";
  };
  portArrays(d.inputs, "Inputs");
  portArrays(d.outputs, "Outputs");
  if (!d.params.empty()) {
    s += "// name, type, input (-1: the node attribute of that name; N: the node's constant input N), required, VX type\n";
    s += "const npuc_param_def kParams[] = {\n";
    for (auto& p : d.params)
      s += fmt::format("    {{{}, {}, {}, {}, {}}},\n", cStr(p.name), paramEnum(p.type), p.input, p.required ? 1 : 0, cStr(p.vx_type));
    s += "};\n";
  }
  s += "\n// ---- callbacks -----------------------------------------------------------------------------------------------\n\n";
  std::string hints;
  for (auto& p : d.params)
    hints += fmt::format("  //   const npuc_param* {0} = npuc_param_find(ctx, \"{0}\");  // {1}{2}\n", p.name,
                         plugin::paramTypeName(p.type),
                         p.type == NPUC_PARAM_INTS ? ": ->count items in ->ints" :
                         p.type == NPUC_PARAM_FLOATS ? ": ->count items in ->floats" :
                         p.type == NPUC_PARAM_FLOAT ? ": ->f" : p.type == NPUC_PARAM_STRING ? ": ->s" :
                         p.type == NPUC_PARAM_TENSOR ? ": ->tensor" : ": ->i");
  s += fmt::format(R"GEN(/// Output element types and shapes from the inputs' (in[i].elem_type, .rank, .dims; .data only for constants) and
/// the parameters (ctx->params, in the definition's order; ->present is 0 when the node does not give one).
int32_t infer(npuc_op_context* ctx, const npuc_tensor* in, uint32_t num_in, npuc_tensor* out, uint32_t num_out) {{
  // TODO: set out[k].elem_type, out[k].rank and out[k].dims for every output. The parameters:
{hints}  (void)in, (void)num_in, (void)out, (void)num_out;
  ctx->set_error(ctx, "{name}: infer is not written yet (edit {lib}_op.cpp)");
  return NPUC_OP_ERROR;
}}

/// The reference computation: the specification of the op's numerics. Inputs are read-only; write every element of
/// every output (out[k].data, out[k].bytes).
int32_t compute_ref(npuc_op_context* ctx, const npuc_tensor* in, uint32_t num_in, npuc_tensor* out, uint32_t num_out) {{
  // TODO: compute the outputs.
  (void)in, (void)num_in, (void)out, (void)num_out;
  ctx->set_error(ctx, "{name}: compute_ref is not written yet (edit {lib}_op.cpp)");
  return NPUC_OP_ERROR;
}}

}}  // namespace

extern "C" NPUC_PLUGIN_EXPORT const npuc_custom_op_library* npuc_custom_op_library_get(void) {{
  static const npuc_custom_op ops[] = {{{{
      sizeof(npuc_custom_op),
      {cname},  // name (the nodes' op_type)
      {cdomain},  // domain ("" = ai.onnx)
      {cengine},  // engine
      {nin}, kInputs,
      {nout}, kOutputs,
      {npar}, {params},
      infer,
      nullptr,  // init (optional): per-layer state, made once the shapes are known
      nullptr,  // destroy (with init)
      compute_ref,
      nullptr,  // compute_fast (optional): the same bits as compute_ref, faster
      {cdoc},
  }}}};
  static const npuc_custom_op_library library = {{NPUC_CUSTOM_OP_ABI_VERSION, 1, ops}};
  return &library;
}}
)GEN",
                   fmt::arg("hints", hints), fmt::arg("name", d.name), fmt::arg("lib", lib), fmt::arg("cname", cStr(d.name)),
                   fmt::arg("cdomain", cStr(d.domain)), fmt::arg("cengine", cStr(d.engine)),
                   fmt::arg("nin", d.inputs.size()), fmt::arg("nout", d.outputs.size()),
                   fmt::arg("npar", d.params.size()), fmt::arg("params", d.params.empty() ? "nullptr" : "kParams"),
                   fmt::arg("cdoc", cStr(d.doc)));
  return s;
}

std::string cmakeLists(const Definition& d, const std::string& lib) {
  return fmt::format(R"GEN(# Builds lib{lib}.so, the npuc plugin of the custom op {name}, and test_{lib}, its harness
# (generated by `npuc custom-op create`; `npuc custom-op build --op-path DIR` runs this with NPUC_INCLUDE_DIR set).
cmake_minimum_required(VERSION 3.16)
project({lib}_op CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
# The folder holding npuc/custom_op.h: the only thing of npuc a plugin needs (it links nothing of npuc).
find_path(NPUC_INCLUDE_DIR npuc/custom_op.h)
if(NOT NPUC_INCLUDE_DIR)
  message(FATAL_ERROR "npuc/custom_op.h not found: pass -DNPUC_INCLUDE_DIR=<npuc's include folder>")
endif()
# -ffp-contract=off: no fused multiply-adds the source does not write, so compute_ref's bits are its source's.
set(OP_FLAGS -Wall -Wextra -ffp-contract=off)
# (targets prefixed: an op's name may be one CMake reserves, such as all, test or install)
add_library(npucop_{lib} SHARED {lib}_op.cpp)
target_include_directories(npucop_{lib} PRIVATE ${{NPUC_INCLUDE_DIR}})
target_compile_options(npucop_{lib} PRIVATE ${{OP_FLAGS}})
set_target_properties(npucop_{lib} PROPERTIES OUTPUT_NAME {lib} CXX_VISIBILITY_PRESET hidden)
add_executable(test_{lib} test_{lib}.cpp {lib}_op.cpp)
target_include_directories(test_{lib} PRIVATE ${{NPUC_INCLUDE_DIR}})
target_compile_options(test_{lib} PRIVATE ${{OP_FLAGS}})
)GEN",
                     fmt::arg("lib", lib), fmt::arg("name", d.name));
}

std::string harness(const Definition& d, const std::string& lib) {
  return fmt::format(R"GEN(// test_{lib}: runs the op {name} outside npuc — infer, then compute_ref and (when written) compute_fast on a
// deterministic input, and compares their bits (generated by `npuc custom-op create`).
//   test_{lib} [--shape D0,D1,...] [--param NAME=V1,V2,...]...
// Each tensor input gets the shape (default 1,3,8,8) and values sin(i); parameters are given as numbers.
#include <npuc/custom_op.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" const npuc_custom_op_library* npuc_custom_op_library_get(void);

namespace {{
std::string g_error;
void setError(npuc_op_context*, const char* m) {{ g_error = m ? m : ""; }}
std::vector<double> numbers(const char* s) {{
  std::vector<double> v;
  while (*s) {{
    char* end = nullptr;
    v.push_back(std::strtod(s, &end));
    if (end == s) break;
    s = *end == ',' ? end + 1 : end;
  }}
  return v;
}}
size_t elemSize(int32_t t) {{
  switch (t) {{
    case NPUC_ELEM_FLOAT32: case NPUC_ELEM_INT32: return 4;
    case NPUC_ELEM_FLOAT16: case NPUC_ELEM_INT16: case NPUC_ELEM_UINT16: return 2;
    case NPUC_ELEM_INT64: return 8;
    default: return 1;
  }}
}}
}}  // namespace

int main(int argc, char** argv) {{
  const npuc_custom_op_library* lib = npuc_custom_op_library_get();
  if (!lib || lib->abi_version != NPUC_CUSTOM_OP_ABI_VERSION || lib->num_ops < 1) {{
    std::fprintf(stderr, "FAIL: the library table is missing or of another ABI version\n");
    return 1;
  }}
  const npuc_custom_op& op = lib->ops[0];
  std::vector<double> shape = {{1, 3, 8, 8}};
  std::vector<std::vector<double>> given(op.num_params);
  std::vector<bool> has(op.num_params, false);
  for (int a = 1; a < argc; ++a) {{
    if (!std::strcmp(argv[a], "--shape") && a + 1 < argc) {{
      shape = numbers(argv[++a]);
      bool bad = shape.size() > NPUC_OP_MAX_RANK;
      for (double d : shape) bad = bad || !(d >= 0 && d <= 1e6);
      if (bad) {{ std::fprintf(stderr, "FAIL: --shape takes up to %d dims of 0..1000000\n", NPUC_OP_MAX_RANK); return 2; }}
    }} else if (!std::strcmp(argv[a], "--param") && a + 1 < argc) {{
      std::string kv = argv[++a];
      size_t eq = kv.find('=');
      bool found = false;
      for (uint32_t k = 0; k < op.num_params && eq != std::string::npos; ++k)
        if (kv.substr(0, eq) == op.params[k].name) {{
          if (op.params[k].type == NPUC_PARAM_TENSOR || op.params[k].type == NPUC_PARAM_STRING) {{
            std::fprintf(stderr, "FAIL: the harness gives numbers only; '%s' is a tensor or string parameter\n", op.params[k].name);
            return 2;
          }}
          given[k] = numbers(kv.c_str() + eq + 1), has[k] = true, found = true;
        }}
      if (!found) {{ std::fprintf(stderr, "FAIL: no parameter '%s'\n", kv.c_str()); return 1; }}
    }} else {{
      std::fprintf(stderr, "usage: %s [--shape D0,D1,...] [--param NAME=V1,V2,...]...\n", argv[0]);
      return 2;
    }}
  }}
  std::vector<npuc_param> params(op.num_params);
  std::vector<std::vector<int64_t>> ints(op.num_params);
  for (uint32_t k = 0; k < op.num_params; ++k) {{
    npuc_param& p = params[k];
    std::memset(&p, 0, sizeof p);
    p.name = op.params[k].name;
    p.type = op.params[k].type;
    p.s = "";
    p.present = has[k] ? 1 : 0;
    for (double v : given[k]) ints[k].push_back(static_cast<int64_t>(v));
    if (!given[k].empty()) p.i = ints[k][0], p.f = given[k][0];
    p.count = given[k].size();
    p.ints = ints[k].data();
    p.floats = given[k].data();
  }}
  npuc_op_context ctx;
  std::memset(&ctx, 0, sizeof ctx);
  ctx.struct_size = sizeof ctx;
  ctx.node_name = "test";
  ctx.params = params.data();
  ctx.num_params = op.num_params;
  ctx.num_threads = 1;
  ctx.set_error = setError;
  std::vector<npuc_tensor> in(op.num_inputs), out(op.num_outputs);
  std::vector<std::vector<unsigned char>> in_data(op.num_inputs);
  for (uint32_t i = 0; i < op.num_inputs; ++i) {{
    npuc_tensor& t = in[i];
    std::memset(&t, 0, sizeof t);
    t.elem_type = op.inputs[i].num_types ? op.inputs[i].types[0] : NPUC_ELEM_FLOAT32;
    t.rank = static_cast<int32_t>(shape.size());
    for (int32_t k = 0; k < t.rank; ++k) t.dims[k] = static_cast<int64_t>(shape[k]);
  }}
  if (op.infer(&ctx, in.data(), op.num_inputs, out.data(), op.num_outputs) != NPUC_OP_OK) {{
    std::fprintf(stderr, "FAIL: infer: %s\n", g_error.c_str());
    return 1;
  }}
  for (uint32_t k = 0; k < op.num_outputs; ++k) {{
    bool bad = out[k].rank < 0 || out[k].rank > NPUC_OP_MAX_RANK;
    for (int32_t d = 0; !bad && d < out[k].rank; ++d) bad = out[k].dims[d] < 0 || out[k].dims[d] > (int64_t{{1}} << 32);
    if (bad) {{
      std::fprintf(stderr, "FAIL: infer gave output %u rank %d or a dim out of range\n", k, out[k].rank);
      return 1;
    }}
  }}
  for (uint32_t i = 0; i < op.num_inputs; ++i) {{
    npuc_tensor& t = in[i];
    const int64_t n = npuc_tensor_numel(&t);
    in_data[i].assign(static_cast<size_t>(n) * elemSize(t.elem_type), 0);
    if (t.elem_type == NPUC_ELEM_FLOAT32)
      for (int64_t e = 0; e < n; ++e) reinterpret_cast<float*>(in_data[i].data())[e] = static_cast<float>(std::sin(0.37 * e + i));
    else if (t.elem_type != NPUC_ELEM_FLOAT16)  // integers: a byte pattern (float16 stays zero: no converter here)
      for (size_t b = 0; b < in_data[i].size(); ++b) in_data[i][b] = static_cast<unsigned char>((b * 37 + i) & 0x7f);
    t.data = in_data[i].data();
    t.bytes = in_data[i].size();
  }}
  void* state = nullptr;
  if (op.init && op.init(&ctx, in.data(), op.num_inputs, out.data(), op.num_outputs, &state) != NPUC_OP_OK) {{
    std::fprintf(stderr, "FAIL: init: %s\n", g_error.c_str());
    return 1;
  }}
  const bool has_state = op.init != nullptr;  // destroy gets what a successful init stored, even NULL (as in npuc)
  ctx.state = state;
  std::vector<std::vector<unsigned char>> ref(op.num_outputs), fast(op.num_outputs);
  for (int pass = 0; pass < 2; ++pass) {{
    npuc_compute_fn fn = pass == 0 ? op.compute_ref : op.compute_fast;
    if (!fn) continue;
    auto& bufs = pass == 0 ? ref : fast;
    for (uint32_t k = 0; k < op.num_outputs; ++k) {{
      bufs[k].assign(static_cast<size_t>(npuc_tensor_numel(&out[k])) * elemSize(out[k].elem_type), 0xA5);
      out[k].data = bufs[k].data();
      out[k].bytes = bufs[k].size();
    }}
    if (fn(&ctx, in.data(), op.num_inputs, out.data(), op.num_outputs) != NPUC_OP_OK) {{
      std::fprintf(stderr, "FAIL: %s: %s\n", pass == 0 ? "compute_ref" : "compute_fast", g_error.c_str());
      return 1;
    }}
  }}
  if (has_state && op.destroy) op.destroy(state);
  for (uint32_t k = 0; k < op.num_outputs; ++k) {{
    std::printf("output %u: rank %d, %zu bytes\n", k, out[k].rank, ref[k].size());
    if (op.compute_fast && ref[k] != fast[k]) {{
      std::fprintf(stderr, "FAIL: compute_fast differs from compute_ref at output %u\n", k);
      return 1;
    }}
  }}
  std::printf("OK: {name}%s\n", op.compute_fast ? " (compute_fast gives compute_ref's bits)" : "");
  return 0;
}}
)GEN",
                     fmt::arg("lib", lib), fmt::arg("name", d.name));
}

}  // namespace

namespace {

/// The skeleton's files of a definition, by name.
std::vector<std::pair<std::string, std::string>> skeletonFiles(const Definition& d, const std::string& config_name) {
  const std::string lib = snake(d.name);
  return {{"op.yml", opYml(d, lib)},
          {lib + "_op.cpp", source(d, lib, commentText(config_name))},
          {"CMakeLists.txt", cmakeLists(d, lib)},
          {"test_" + lib + ".cpp", harness(d, lib)}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> customOpSkeletonFiles(const std::string& yaml_text, const std::string& name) {
  std::vector<std::string> notes;
  return skeletonFiles(parseDefinitionText(yaml_text, name, notes), fs::path(name).filename().string());
}

CustomOpSkeleton createCustomOp(const fs::path& config, const fs::path& op_path, bool force) {
  CustomOpSkeleton r;
  const Definition d = parseDefinition(config, r.notes);
  r.op_name = d.name;
  r.lib_name = snake(d.name);
  makeFolder(op_path, "--op-path");
  std::vector<std::pair<fs::path, std::string>> files;
  for (auto& [f, text] : skeletonFiles(d, config.filename().string())) files.emplace_back(op_path / f, std::move(text));
  if (!force)
    for (auto& [p, text] : files)
      if (fs::exists(p))
        fail(ErrorCode::kInvalidArgument, "{} already exists: npuc custom-op create does not overwrite code (--force "
             "does; or give another --op-path)", p.string());
  for (auto& [p, text] : files) {
    writeFileAtomic(p, text);
    r.files.push_back(p);
  }
  return r;
}

std::vector<std::string> customOpTestArgs(const fs::path& config, const std::vector<std::string>& assignments) {
  std::vector<std::string> notes;
  const Definition d = parseDefinition(config, notes);
  std::vector<std::string> args, seen;
  for (const std::string& a : assignments) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(ErrorCode::kInvalidArgument, "--param '{}': give NAME=VALUE (e.g. --param size=5,7)", a);
    const std::string name = a.substr(0, eq), value = a.substr(eq + 1);
    auto p = std::find_if(d.params.begin(), d.params.end(), [&](const ParamDef& q) { return q.name == name; });
    if (p == d.params.end()) {
      std::string known;
      for (auto& q : d.params) known += (known.empty() ? "" : ", ") + q.name;
      fail(ErrorCode::kInvalidArgument, "--param {}: op {} has no parameter '{}' ({}: {})", a, d.name, name,
           config.string(), known.empty() ? "it declares none" : "it declares " + known);
    }
    if (std::count(seen.begin(), seen.end(), name))
      fail(ErrorCode::kInvalidArgument, "--param {}: parameter '{}' is given twice", a, name);
    seen.push_back(name);
    const std::string what = fmt::format("--param {}: parameter '{}' ({})", a, name, p->vx_type);
    auto bad = [&](const std::string& rule) { fail(ErrorCode::kInvalidArgument, "{}: {}", what, rule); };
    auto integer = [&](const std::string& v) {
      int64_t i = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), i);
      if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size()) bad(fmt::format("'{}' is not an integer", v));
      if (std::string range = plugin::outsideDeclaredRange(p->vx_type.c_str(), static_cast<double>(i), false); !range.empty())
        bad(fmt::format("{} is beyond the type (its range is {})", v, range));
      return v;
    };
    auto number = [&](const std::string& v) {
      char* end = nullptr;
      const double f = v.empty() || std::isspace(static_cast<unsigned char>(v[0])) ? 0 : std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size()) bad(fmt::format("'{}' is not a number", v));
      if (std::string range = plugin::outsideDeclaredRange(p->vx_type.c_str(), f, true); !range.empty())
        bad(fmt::format("{} is beyond the type (its range is {})", v, range));
      return v;
    };
    auto list = [&](auto item) {
      std::string r;
      size_t from = 0;
      for (;;) {
        const size_t comma = value.find(',', from);
        r += (from ? "," : "") + item(value.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
        if (comma == std::string::npos) return r;
        from = comma + 1;
      }
    };
    std::string v;
    switch (p->type) {
      case NPUC_PARAM_BOOL:
        if (value == "true" || value == "1") v = "1";
        else if (value == "false" || value == "0") v = "0";
        else bad(fmt::format("'{}' is not a bool (true, false, 1 or 0)", value));
        break;
      case NPUC_PARAM_INT: v = integer(value); break;
      case NPUC_PARAM_FLOAT: v = number(value); break;
      case NPUC_PARAM_INTS: v = list(integer); break;
      case NPUC_PARAM_FLOATS: v = list(number); break;
      default:
        bad(fmt::format("the harness takes numbers; a {} parameter cannot be given on the command line",
                        plugin::paramTypeName(p->type)));
    }
    args.push_back("--param");
    args.push_back(name + "=" + v);
  }
  return args;
}

}  // namespace npuc
