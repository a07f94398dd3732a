// Target loading: YAML -> Target, inheritance, validation with errors naming the file and the field.
#include "target/target.hpp"

#include "ops/custom.hpp"
#include "ops/registry.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"
#include "target/check.hpp"

#include <onnx/defs/schema.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <cstdlib>
#include <set>

namespace npuc::target {

namespace fs = std::filesystem;

const OpSupport* Target::findOp(const std::string& op) const {
  auto it = ops.find(op);
  if (it != ops.end()) return &it->second;
  if (default_engine.empty()) return nullptr;
  static thread_local OpSupport any;
  any = OpSupport{op, {}, default_engine, "", {}};
  return &any;
}

std::string Target::customOpEngine(const std::string& wanted) const {
  if (engines.count(wanted)) return wanted;
  for (auto& [name, e] : engines)
    if (e.kind == wanted) return name;
  return "";
}

const OpSupport* Target::supportOf(const ir::Node& n) const {
  if (const plugin::CustomOp* c = ops::customOpOf(n)) {
    const std::string e = customOpEngine(c->engine());
    if (e.empty()) return nullptr;
    static thread_local OpSupport custom;
    custom = OpSupport{c->qualifiedName(), {}, e, c->label(), {}};
    return &custom;
  }
  return findOp(n.domain.empty() || n.domain == "ai.npuc" ? n.op : n.domain + "." + n.op);
}

std::vector<fs::path> targetDirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("NPUC_TARGETS_DIR"); env && *env) dirs.emplace_back(env);
#ifdef NPUC_DEFAULT_TARGETS_DIR
  dirs.emplace_back(NPUC_DEFAULT_TARGETS_DIR);
#endif
  return dirs;
}

std::vector<std::string> listTargets() {
  std::set<std::string> names;
  for (auto& d : targetDirs()) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    for (auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".yaml") names.insert(e.path().stem().string());
  }
  return {names.begin(), names.end()};
}

namespace {

fs::path findTarget(const std::string& name) {
  if (name.find('/') != std::string::npos || fs::path(name).extension() == ".yaml") {
    if (!fs::exists(name)) fail(ErrorCode::kIo, "{}: target file not found", name);
    return name;
  }
  for (auto& d : targetDirs())
    if (fs::exists(d / (name + ".yaml"))) return d / (name + ".yaml");
  std::string known;
  for (auto& n : listTargets()) known += (known.empty() ? "" : ", ") + n;
  fail(ErrorCode::kInvalidArgument, "unknown target '{}' (known: {})", name, known.empty() ? "none" : known);
}

std::string str(const YAML::Node& n, const std::string& field, const std::string& def = "") {
  if (!n[field]) return def;
  if (!n[field].IsScalar()) fail(ErrorCode::kInvalidInput, "field '{}' must be a string", field);
  return n[field].as<std::string>();
}

double num(const YAML::Node& n, const std::string& field, double def = 0) {
  if (!n[field]) return def;
  double v = 0;
  try {
    v = n[field].as<double>();
  } catch (const YAML::Exception&) {
    fail(ErrorCode::kInvalidInput, "field '{}' must be a number, got '{}'", field, n[field].IsScalar() ? n[field].Scalar() : "a list or map");
  }
  if (!std::isfinite(v)) fail(ErrorCode::kInvalidInput, "field '{}' must be a finite number, got '{}'", field, n[field].Scalar());
  return v;
}

/// The attribute names ONNX defines for an op (any domain, any opset version), and those npuc's own ops declare with a
/// default (ai.npuc's DetectionOutput): facts a rule may read by name.
const std::set<std::string>& onnxAttributes(const std::string& op) {
  static const std::map<std::string, std::set<std::string>> table = [] {
    std::map<std::string, std::set<std::string>> t;
    for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas_with_history())
      for (auto& [name, attr] : s.attributes()) {
        t[s.Name()].insert(name);
        t[""].insert(name);  // "": the union, for rules that apply to every op
      }
    for (const ops::OpSchema* s : ops::registry().all())
      if (s->domain == "ai.npuc")
        for (auto& [name, value] : s->defaults) t[s->name].insert(name), t[""].insert(name);
    return t;
  }();
  static const std::set<std::string> none;
  auto it = table.find(op);
  return it == table.end() ? none : it->second;
}

/// Every name a rule reads must be a fact some node can have: a derived fact, a value its op's lookup tables
/// set, or an ONNX attribute of its op. A misspelt name is an error of the target file, not of the model.
void checkRuleNames(const Target& t) {
  auto checkExpr = [](const Expr& e, const std::set<std::string>& lookups, const std::string& op, const char* field) {
    for (const std::string& name : e.names())
      if (!derivedFactNames().count(name) && !lookups.count(name) && !onnxAttributes(op).count(name))
        fail(ErrorCode::kInvalidInput, "field '{}': '{}' is not a fact a node can have (the facts npuc derives are listed in "
             "docs/targets.md; besides them, a lookup table's values and the ONNX attributes of {})", field, name,
             op.empty() ? "any op" : "'" + op + "'");
  };
  auto checkRules = [&](const std::vector<Rule>& rules, const std::set<std::string>& lookups, const std::string& op) {
    for (const Rule& r : rules)
      withContext("rule '" + r.id + "'", [&] {
        checkExpr(r.when, lookups, op, "when");
        checkExpr(r.require, lookups, op, "require");
      });
  };
  std::set<std::string> all_lookups;
  for (const auto& entry : t.ops) {
    const std::string& op = entry.first;  // (not a structured binding: lambdas cannot capture those before C++20)
    const OpSupport& s = entry.second;
    withContext("op '" + op + "'", [&] {
      std::set<std::string> lookups;
      for (const Lookup& l : s.lookups) {
        for (const std::string& k : l.key)
          if (!derivedFactNames().count(k) && !onnxAttributes(op).count(k))
            fail(ErrorCode::kInvalidInput, "field 'lookup': key '{}' is not a fact npuc derives or an attribute of '{}'", k, op);
        lookups.insert(l.values.begin(), l.values.end());
      }
      all_lookups.insert(lookups.begin(), lookups.end());
      checkRules(s.rules, lookups, op);
    });
  }
  withContext("graph_rules", [&] { checkRules(t.graph_rules, all_lookups, ""); });
}

/// A non-negative integer, decimal or hexadecimal with '_' separators (0x4000_0000), below 2^40.
uint64_t address(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) fail(ErrorCode::kInvalidInput, "field '{}' must be an integer", field);
  std::string s;
  for (char c : n.Scalar())
    if (c != '_') s += c;
  int base = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10;
  size_t i = base == 16 ? 2 : 0;
  uint64_t v = 0;
  if (i >= s.size()) fail(ErrorCode::kInvalidInput, "field '{}': '{}' is not an integer", field, n.Scalar());
  for (; i < s.size(); ++i) {
    int d = std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0'
            : base == 16 && std::isxdigit(static_cast<unsigned char>(s[i])) ? std::tolower(s[i]) - 'a' + 10 : -1;
    if (d < 0) fail(ErrorCode::kInvalidInput, "field '{}': '{}' is not an integer", field, n.Scalar());
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    if (v >= (uint64_t{1} << 40)) fail(ErrorCode::kInvalidInput, "field '{}': {} is too large", field, n.Scalar());
  }
  return v;
}

void parseAddressRules(const YAML::Node& n, AddressRules& r) {
  if (!n.IsMap()) fail(ErrorCode::kInvalidInput, "must be a map (base, subspace_align, element_align, size_align)");
  auto alignment = [&](const YAML::Node& v, const std::string& field) {
    uint64_t a = address(v, field);
    if (a < 1 || (a & (a - 1))) fail(ErrorCode::kInvalidInput, "field '{}' must be a power of two, got {}", field, a);
    return a;
  };
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = it->first.as<std::string>();
    YAML::Node v = it->second;
    if (k == "base") r.base = address(v, k);
    else if (k == "subspace_align") r.subspace_align = alignment(v, k);
    else if (k == "element_align") r.element_align = alignment(v, k);
    else if (k == "size_align") {
      if (v.IsScalar()) {
        r.size_align = alignment(v, k);
        continue;
      }
      if (!v.IsMap()) fail(ErrorCode::kInvalidInput, "field 'size_align' must be a number or a map of Element-Space -> alignment");
      for (auto e = v.begin(); e != v.end(); ++e) {
        std::string space = e->first.as<std::string>();
        if (space == "default") r.size_align = alignment(e->second, "size_align.default");
        else r.size_align_of[space] = alignment(e->second, "size_align." + space);
      }
    } else {
      fail(ErrorCode::kInvalidInput, "unknown field '{}' (base, subspace_align, element_align, size_align)", k);
    }
  }
  if (r.base % r.subspace_align) fail(ErrorCode::kInvalidInput, "base 0x{:x} is not aligned to subspace_align {}", r.base, r.subspace_align);
}

Expr expr(const YAML::Node& n, const std::string& field) {
  if (!n[field]) return Expr();
  if (!n[field].IsScalar()) fail(ErrorCode::kInvalidInput, "field '{}' must be an expression string", field);
  return withContext("field '" + field + "'", [&] { return Expr::parse(n[field].as<std::string>()); });
}

Rule parseRule(const YAML::Node& n) {
  if (!n.IsMap()) fail(ErrorCode::kInvalidInput, "a rule must be a map with id, text, require");
  Rule r;
  r.id = str(n, "id");
  if (r.id.empty()) fail(ErrorCode::kInvalidInput, "a rule has no 'id'");
  return withContext("rule '" + r.id + "'", [&] {
    r.text = str(n, "text");
    if (r.text.empty()) fail(ErrorCode::kInvalidInput, "field 'text' is required");
    r.when = expr(n, "when");
    r.require = expr(n, "require");
    if (r.require.empty()) fail(ErrorCode::kInvalidInput, "field 'require' is required");
    r.actual = str(n, "actual");
    r.fix = str(n, "fix");
    r.relaxation = str(n, "relaxation");
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = it->first.as<std::string>();
      if (k != "id" && k != "text" && k != "when" && k != "require" && k != "actual" && k != "fix" && k != "relaxation")
        fail(ErrorCode::kInvalidInput, "unknown field '{}' (a rule has id, text, when, require, actual, fix, relaxation)", k);
    }
    return r;
  });
}

std::vector<Rule> parseRules(const YAML::Node& n, const std::string& where) {
  std::vector<Rule> rules;
  if (!n) return rules;
  if (!n.IsSequence()) fail(ErrorCode::kInvalidInput, "{}: 'rules' must be a list", where);
  for (auto r : n) rules.push_back(parseRule(r));
  return rules;
}

Value toValue(const YAML::Node& n) {
  if (n.IsSequence()) {
    std::vector<Value> l;
    for (auto e : n) l.push_back(toValue(e));
    return Value(std::move(l));
  }
  if (!n.IsScalar()) fail(ErrorCode::kInvalidInput, "table entries must be numbers, strings or lists");
  std::string s = n.Scalar();
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return Value(static_cast<int64_t>(v));
  } catch (const std::exception&) {
  }
  return Value(s);
}

std::vector<std::string> names(const YAML::Node& n, const char* field) {
  std::vector<std::string> r;
  if (!n[field] || !n[field].IsSequence()) fail(ErrorCode::kInvalidInput, "field '{}' must be a list of fact names", field);
  for (auto e : n[field]) r.push_back(e.as<std::string>());
  return r;
}

Lookup parseLookup(const YAML::Node& n) {
  Lookup l;
  l.key = names(n, "key");
  l.values = names(n, "values");
  if (n["default"]) {
    Value d = toValue(n["default"]);
    if (!d.isList() || std::get<std::vector<Value>>(d.v).size() != l.values.size())
      fail(ErrorCode::kInvalidInput, "field 'default' must list one value per name in 'values'");
    l.defaults = std::get<std::vector<Value>>(d.v);
  }
  if (!n["rows"] || !n["rows"].IsSequence()) fail(ErrorCode::kInvalidInput, "field 'rows' must be a list of [key, values]");
  for (auto row : n["rows"]) {
    if (!row.IsSequence() || row.size() != 2) fail(ErrorCode::kInvalidInput, "each row must be [key, values]");
    Value k = toValue(row[0]), v = toValue(row[1]);
    if (!k.isList() || std::get<std::vector<Value>>(k.v).size() != l.key.size() || !v.isList() ||
        std::get<std::vector<Value>>(v.v).size() != l.values.size())
      fail(ErrorCode::kInvalidInput, "row {} does not have {} key and {} value entries", k.str(), l.key.size(), l.values.size());
    l.rows.emplace_back(k, std::get<std::vector<Value>>(v.v));
  }
  return l;
}

/// One engine of the target file's 'engines' map: its kind, rates and costs, each checked.
Engine parseEngine(const std::string& name, YAML::Node en) {  // (en a copy: the caller's it->second refers into a temporary)
  Engine eng;
  eng.name = name;
  eng.kind = str(en, "kind");
  if (eng.kind != "mac" && eng.kind != "vector")
    fail(ErrorCode::kInvalidInput, "field 'kind' must be mac or vector, got '{}'", eng.kind);
  eng.clock_mhz = num(en, "clock_mhz");
  eng.macs_per_cycle = num(en, "macs_per_cycle");
  eng.elems_per_cycle = num(en, "elems_per_cycle");
  eng.bytes_per_cycle = num(en, "bytes_per_cycle");
  eng.overhead_us = num(en, "overhead_us");
  eng.cycles_per_tap = num(en, "cycles_per_tap");
  eng.narrow_macs_per_cycle = num(en, "narrow_macs_per_cycle");
  eng.pointwise_macs_per_cycle = num(en, "pointwise_macs_per_cycle");
  const double narrow = num(en, "narrow_group_channels");
  if (!(narrow >= 0 && narrow <= 1e9 && narrow == std::floor(narrow)))
    fail(ErrorCode::kInvalidInput, "field 'narrow_group_channels' must be a whole number of channels >= 0, got {}", narrow);
  eng.narrow_group_channels = static_cast<int64_t>(narrow);
  if ((eng.narrow_group_channels > 0) != (eng.narrow_macs_per_cycle > 0))
    fail(ErrorCode::kInvalidInput, "fields 'narrow_group_channels' and 'narrow_macs_per_cycle' go together (both positive, or neither given)");
  if (en["sparse_fixed_fraction"]) {
    eng.sparse_kernel = true;
    eng.sparse_fixed_fraction = num(en, "sparse_fixed_fraction");
    if (!(eng.sparse_fixed_fraction >= 0 && eng.sparse_fixed_fraction <= 1))
      fail(ErrorCode::kInvalidInput, "field 'sparse_fixed_fraction' must be in [0, 1], got {}", eng.sparse_fixed_fraction);
  }
  const double per_op = num(en, "cycles_per_emulated_op");
  if (per_op < 0) fail(ErrorCode::kInvalidInput, "field 'cycles_per_emulated_op' must not be negative, got {}", per_op);
  if (en["cycles_per_emulated_op"] && !en["emulated_ops"])
    fail(ErrorCode::kInvalidInput, "field 'cycles_per_emulated_op' without 'emulated_ops' (the ops it applies to)");
  if (auto ops = en["emulated_ops"]) {
    if (ops.IsSequence()) {
      if (ops.size() > 0 && !en["cycles_per_emulated_op"])
        fail(ErrorCode::kInvalidInput, "a list of 'emulated_ops' needs 'cycles_per_emulated_op' (or give a map op: cycles)");
      for (auto o : ops) eng.emulated_ops[o.as<std::string>()] = per_op;
    } else if (ops.IsMap()) {
      if (en["cycles_per_emulated_op"])
        fail(ErrorCode::kInvalidInput, "field 'cycles_per_emulated_op' goes with a list of 'emulated_ops', not a map (which gives each op its cycles)");
      for (auto o = ops.begin(); o != ops.end(); ++o) {
        const std::string op = o->first.as<std::string>();
        const double c = num(ops, op.c_str());
        if (c < 0) fail(ErrorCode::kInvalidInput, "field 'emulated_ops.{}' must not be negative, got {}", op, c);
        eng.emulated_ops[op] = c;
      }
    } else {
      fail(ErrorCode::kInvalidInput, "field 'emulated_ops' must be a list of op names or a map op: cycles per operation");
    }
  }
  if (eng.cycles_per_tap < 0) fail(ErrorCode::kInvalidInput, "field 'cycles_per_tap' must not be negative, got {}", eng.cycles_per_tap);
  eng.note = str(en, "note");
  if (eng.clock_mhz <= 0) fail(ErrorCode::kInvalidInput, "field 'clock_mhz' must be positive");
  for (auto [field, v] : {std::pair{"macs_per_cycle", eng.macs_per_cycle}, {"elems_per_cycle", eng.elems_per_cycle},
                          {"bytes_per_cycle", eng.bytes_per_cycle}, {"overhead_us", eng.overhead_us},
                          {"narrow_macs_per_cycle", eng.narrow_macs_per_cycle},
                          {"pointwise_macs_per_cycle", eng.pointwise_macs_per_cycle}})
    if (v < 0) fail(ErrorCode::kInvalidInput, "field '{}' must not be negative, got {}", field, v);
  // The throughput the time estimate divides by.
  if (eng.kind == "mac" && eng.macs_per_cycle <= 0)
    fail(ErrorCode::kInvalidInput, "field 'macs_per_cycle' must be positive for a mac engine (got {})", eng.macs_per_cycle);
  if (eng.kind == "vector" && eng.elems_per_cycle <= 0)
    fail(ErrorCode::kInvalidInput, "field 'elems_per_cycle' must be positive for a vector engine (got {})", eng.elems_per_cycle);
  return eng;
}

void loadInto(Target& t, const fs::path& file, std::set<std::string>& seen) {
  std::string key = fs::weakly_canonical(file).string();
  if (seen.count(key)) fail(ErrorCode::kInvalidInput, "{}: inheritance cycle", file.string());
  seen.insert(key);
  YAML::Node root = withContext(file.string(), [&] { return loadYaml(readFileText(file, kMaxConfigBytes, "a target file")); });
  withContext(file.string(), [&] { readingYaml([&] {
    if (!root.IsMap()) fail(ErrorCode::kInvalidInput, "a target file must be a YAML map");
    static const std::set<std::string> known = {"name", "inherits", "description", "numerics", "address_bits", "address_map",
                                                "engines", "ops", "graph_rules", "default_engine", "core_sets", "group_switch_us",
                                                "relaxations", "boundary_transposes", "core_memory_mb", "group_engines"};
    for (auto it = root.begin(); it != root.end(); ++it)
      if (!known.count(it->first.as<std::string>()))
        fail(ErrorCode::kInvalidInput, "unknown field '{}'", it->first.as<std::string>());
    if (root["inherits"]) {
      std::string parent = str(root, "inherits");
      t.inherits.push_back(parent);
      loadInto(t, findTarget(parent), seen);  // parent first; this file overrides below
    }
    t.name = str(root, "name", t.name);
    t.description = str(root, "description", t.description);
    if (root["numerics"]) {
      std::string n = str(root, "numerics");
      auto num = numericsFromName(n);
      if (!num) fail(ErrorCode::kInvalidInput, "field 'numerics' must be one of {}, got '{}'", numericsNames(), n);
      t.numerics = *num;
    }
    if (root["address_bits"]) {
      double bits = num(root, "address_bits");
      if (bits != std::floor(bits) || bits < 16 || bits > 32)
        fail(ErrorCode::kInvalidInput, "field 'address_bits' must be an integer from 16 to 32 (npuc packages address 32 bits), "
             "got {}", root["address_bits"].Scalar());
      t.address_bits = static_cast<int>(bits);
    }
    t.default_engine = str(root, "default_engine", t.default_engine);
    if (auto am = root["address_map"]) withContext("field 'address_map'", [&] { parseAddressRules(am, t.address_rules); });
    if (auto e = root["engines"]) {
      if (!e.IsMap()) fail(ErrorCode::kInvalidInput, "field 'engines' must be a map");
      for (auto it = e.begin(); it != e.end(); ++it) {
        std::string name = it->first.as<std::string>();
        withContext("engine '" + name + "'", [&] { t.engines[name] = parseEngine(name, it->second); });
      }
    }
    if (root["graph_rules"]) t.graph_rules = parseRules(root["graph_rules"], "graph_rules");
    if (auto rx = root["relaxations"]) {
      if (!rx.IsMap()) fail(ErrorCode::kInvalidInput, "field 'relaxations' must be a map from a relaxation's name to what it allows");
      for (auto it = rx.begin(); it != rx.end(); ++it) {
        const std::string name = it->first.as<std::string>();
        withContext("relaxation '" + name + "'", [&] {
          bool plain = !name.empty() && name != "all" && name.size() <= 64;
          for (char ch : name) plain &= std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '-';
          if (!plain) fail(ErrorCode::kInvalidInput, "a relaxation's name is lower-case letters, digits and '-' (and not 'all')");
          if (!it->second.IsScalar() || it->second.Scalar().empty())
            fail(ErrorCode::kInvalidInput, "must be a text saying what it allows beyond the vendor's documentation");
          t.relaxations[name] = it->second.Scalar();
        });
      }
    }
    if (root["boundary_transposes"]) {
      const std::string b = str(root, "boundary_transposes");
      if (b != "absorb" && b != "layer")
        fail(ErrorCode::kInvalidInput, "field 'boundary_transposes' must be 'absorb' or 'layer', got '{}'", b);
      t.absorb_boundary_transposes = b == "absorb";
    }
    if (auto ge = root["group_engines"]) {
      if (!ge.IsSequence() || ge.size() == 0) fail(ErrorCode::kInvalidInput, "field 'group_engines' must be a list of engine names (group 1's first)");
      t.group_engines.clear();
      for (auto e : ge) t.group_engines.push_back(e.as<std::string>());
    }
    if (root["core_memory_mb"]) {
      t.core_memory_mb = num(root, "core_memory_mb");
      if (!(t.core_memory_mb > 0) || t.core_memory_mb > 1e9) fail(ErrorCode::kInvalidInput, "field 'core_memory_mb' must be a positive size in MiB");
    }
    if (root["group_switch_us"]) {
      t.group_switch_us = num(root, "group_switch_us");
      if (t.group_switch_us < 0) fail(ErrorCode::kInvalidInput, "field 'group_switch_us' must not be negative");
    }
    if (auto cs = root["core_sets"]) {
      if (!cs.IsSequence()) fail(ErrorCode::kInvalidInput, "field 'core_sets' must be a list");
      t.core_sets.clear();
      for (auto c : cs) {
        CoreSet set;
        set.name = str(c, "name");
        withContext("core set '" + set.name + "'", [&] {
          YAML::Node cores = c["cores"];
          if (!cores || !cores.IsSequence() || cores.size() < 1 || cores.size() > 2)
            fail(ErrorCode::kInvalidInput, "field 'cores' must list one or two engines with their counts (the layers groups in order)");
          for (auto e : cores) {
            const std::string eng = str(e, "engine");
            const double n = num(e, "count");
            if (!t.engines.count(eng)) fail(ErrorCode::kInvalidInput, "engine '{}' is not one of the target's", eng);
            if (n < 1 || n > 64 || n != std::floor(n)) fail(ErrorCode::kInvalidInput, "count {} must be a whole number from 1 to 64", n);
            set.cores.emplace_back(eng, static_cast<int>(n));
          }
          if (set.cores.size() == 2 && set.cores[0].first == set.cores[1].first)
            fail(ErrorCode::kInvalidInput, "the two layers groups must be on two engines");
        });
        t.core_sets.push_back(std::move(set));
      }
    }
    if (auto ops = root["ops"]) {
      if (!ops.IsMap()) fail(ErrorCode::kInvalidInput, "field 'ops' must be a map from op name to its support");
      for (auto it = ops.begin(); it != ops.end(); ++it) {
        std::string op = it->first.as<std::string>();
        withContext("op '" + op + "'", [&] {
          YAML::Node on = it->second;  // a copy: it->second refers into a temporary
          OpSupport s;
          s.op = op;
          if (on.IsNull()) {
            fail(ErrorCode::kInvalidInput, "needs at least 'engine'");
          }
          s.engine = str(on, "engine");
          s.note = str(on, "note");
          s.rules = parseRules(on["rules"], "rules");
          if (auto lk = on["lookup"]) {
            if (!lk.IsSequence()) fail(ErrorCode::kInvalidInput, "field 'lookup' must be a list of tables");
            for (auto e : lk) s.lookups.push_back(withContext("field 'lookup'", [&] { return parseLookup(e); }));
          }
          t.ops[op] = std::move(s);
        });
      }
    }
  }); });
}

}  // namespace

Target loadTarget(const std::string& name_or_path) {
  fs::path file = findTarget(name_or_path);
  Target t;
  std::set<std::string> seen;
  loadInto(t, file, seen);
  t.file = file;
  if (t.name.empty()) t.name = file.stem().string();
  withContext(file.string(), [&] {
    if (std::string why = whyNotPlainName(t.name); !why.empty()) fail(ErrorCode::kInvalidInput, "field 'name': '{}' {}", t.name, why);
    checkRuleNames(t);
    for (const std::string& e : t.group_engines)
      if (!t.engines.count(e)) fail(ErrorCode::kInvalidInput, "group_engines: '{}' is not declared under 'engines'", e);
    if (!t.default_engine.empty() && !t.engines.count(t.default_engine))
      fail(ErrorCode::kInvalidInput, "default_engine '{}' is not declared under 'engines'", t.default_engine);
    for (auto& [op, s] : t.ops)
      if (s.engine != "folded" && !t.engines.count(s.engine))
        fail(ErrorCode::kInvalidInput, "op '{}': engine '{}' is not declared under 'engines'", op, s.engine);
    auto declared = [&](const std::vector<Rule>& rules, const std::string& where) {
      for (const Rule& r : rules)
        if (!r.relaxation.empty() && !t.relaxations.count(r.relaxation))
          fail(ErrorCode::kInvalidInput, "{}rule '{}': relaxation '{}' is not declared under 'relaxations'", where, r.id, r.relaxation);
    };
    declared(t.graph_rules, "graph_rules: ");
    for (auto& [op, s] : t.ops) declared(s.rules, "op '" + op + "': ");
  });
  return t;
}

namespace {

std::vector<std::string> splitRelaxations(const std::vector<std::string>& options) {
  std::vector<std::string> names;
  for (const std::string& o : options) {
    size_t start = 0;
    while (start <= o.size()) {
      size_t comma = o.find(',', start);
      if (comma == std::string::npos) comma = o.size();
      std::string name = o.substr(start, comma - start);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.erase(name.begin());
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      start = comma + 1;
    }
  }
  return names;
}

}  // namespace

void relax(Target& t, const std::vector<std::string>& options) {
  std::set<std::string> off;
  for (const std::string& name : splitRelaxations(options)) {
    if (name == "all") {
      for (auto& [n, text] : t.relaxations) off.insert(n);
      continue;
    }
    if (!t.relaxations.count(name)) {
      std::string known;
      for (auto& [n, text] : t.relaxations) known += (known.empty() ? "" : ", ") + n;
      fail(ErrorCode::kInvalidArgument, "--relax: target '{}' has no relaxation '{}' ({})", t.name, name,
           known.empty() ? "it has none: its rules are the vendor's only" : "its relaxations: " + known + ", or all");
    }
    off.insert(name);
  }
  auto drop = [&](std::vector<Rule>& rules) {
    rules.erase(std::remove_if(rules.begin(), rules.end(), [&](const Rule& r) { return off.count(r.relaxation) != 0; }), rules.end());
  };
  drop(t.graph_rules);
  for (auto& [op, s] : t.ops) drop(s.rules);
  for (const std::string& n : off)
    if (std::find(t.relaxed.begin(), t.relaxed.end(), n) == t.relaxed.end()) t.relaxed.push_back(n);
}

}  // namespace npuc::target
