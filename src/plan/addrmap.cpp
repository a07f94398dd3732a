// Address map: definition parsing and validation, layout, and the manual's output formats.
#include "plan/addrmap.hpp"
#include "plan/memory.hpp"

#include "support/error.hpp"
#include "support/file.hpp"
#include "support/yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

namespace npuc::plan {

const std::vector<std::string>& elementSpaceNames() {
  static const std::vector<std::string> n = {"data_in",    "data",      "data_out",   "work",    "weight",
                                             "drp_config", "drp_param", "desc_aimac", "desc_drp"};
  return n;
}

AddrMapRules AddrMapRules::drpai() { return forTarget(target::Target{}); }

AddrMapRules AddrMapRules::forTarget(const target::Target& t) {
  AddrMapRules r;
  const target::AddressRules& a = t.address_rules;
  r.subspace_align = a.subspace_align;
  r.element_addr_align = a.element_align;
  for (auto& n : elementSpaceNames()) {
    auto it = a.size_align_of.find(n);
    r.size_align[n] = it == a.size_align_of.end() ? a.size_align : it->second;
  }
  r.address_bits = t.address_bits;
  r.base = a.base;
  return r;
}

const Element* AddressMap::find(const std::string& name) const {
  for (auto& s : subspaces)
    for (auto& e : s.elements)
      if (e.name == name) return &e;
  return nullptr;
}

namespace {

uint64_t parseInt(const YAML::Node& n, const std::string& field, int address_bits) {
  if (!n.IsScalar()) fail(ErrorCode::kInvalidInput, "field '{}' must be an integer", field);
  std::string s;
  for (char c : n.Scalar())
    if (c != '_') s += c;
  int base = 10;
  size_t start = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    start = 2;
  }
  if (start >= s.size()) fail(ErrorCode::kInvalidInput, "field '{}': '{}' is not an integer", field, n.Scalar());
  uint64_t v = 0;
  for (size_t i = start; i < s.size(); ++i) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    int d = c >= '0' && c <= '9' ? c - '0' : (base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
    if (d < 0) fail(ErrorCode::kInvalidInput, "field '{}': '{}' is not an integer", field, n.Scalar());
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
      fail(ErrorCode::kInvalidInput, "field '{}': '{}' is too large", field, n.Scalar());
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  // An address is below 2^bits; a size at most 2^bits (what a Sub-Space can hold).
  const uint64_t space = uint64_t{1} << address_bits;
  if (field == "size" ? v > space : v >= space)
    fail(ErrorCode::kInvalidInput, "field '{}': {} is beyond the {}-bit address space (at most {})", field, n.Scalar(), address_bits,
         hexGrouped(field == "size" ? space : space - 1));
  return v;
}

std::string str(const YAML::Node& m, const char* field, const std::string& where) {
  if (!m[field]) fail(ErrorCode::kInvalidInput, "{}: field '{}' is required", where, field);
  if (!m[field].IsScalar()) fail(ErrorCode::kInvalidInput, "{}: field '{}' must be a string", where, field);
  return m[field].Scalar();
}

void checkRules(const AddrMapDef& d, const AddrMapRules& r) {
  std::map<std::string, std::pair<size_t, size_t>> where;  // element -> (subspace, position)
  uint64_t prev = 0;
  for (size_t si = 0; si < d.subspaces.size(); ++si) {
    const SubSpaceDef& s = d.subspaces[si];
    std::string sw = "Sub-Space '" + s.name + "'";
    if (s.addr % r.subspace_align)
      fail(ErrorCode::kInvalidInput, "{}: addr {} must be aligned on a {}-byte boundary (§6)", sw, hexGrouped(s.addr), r.subspace_align);
    if (si && s.addr <= prev)
      fail(ErrorCode::kInvalidInput, "{}: Sub-Spaces must be defined in the order of their addresses (§6); {} follows {}", sw,
           hexGrouped(s.addr), hexGrouped(prev));
    prev = s.addr;
    if (s.elements.empty()) fail(ErrorCode::kInvalidInput, "{}: a Sub-Space needs at least one Element-Space (§6)", sw);
    if (s.elements[0].addr && *s.elements[0].addr != s.addr)
      fail(ErrorCode::kInvalidInput, "{}: the first Element-Space '{}' addr {} must match the Sub-Space addr {} (§6)", sw,
           s.elements[0].name, hexGrouped(*s.elements[0].addr), hexGrouped(s.addr));
    for (size_t ei = 0; ei < s.elements.size(); ++ei) {
      const std::string& n = s.elements[ei].name;
      if (std::find(elementSpaceNames().begin(), elementSpaceNames().end(), n) == elementSpaceNames().end())
        fail(ErrorCode::kInvalidInput, "{}: unknown Element-Space '{}' (expected one of {})", sw, n, fmt::join(elementSpaceNames(), ", "));
      if (where.count(n)) fail(ErrorCode::kInvalidInput, "{}: Element-Space '{}' is defined twice", sw, n);
      where[n] = {si, ei};
    }
  }
  for (auto& n : elementSpaceNames())
    if (!where.count(n)) fail(ErrorCode::kInvalidInput, "Element-Space '{}' is missing from the definition", n);
  // drp_config, drp_param, desc_aimac, desc_drp: same Sub-Space, in this order, at its bottom (§6.5 notes).
  static const std::vector<std::string> group = {"drp_config", "drp_param", "desc_aimac", "desc_drp"};
  size_t gs = where["drp_config"].first;
  const SubSpaceDef& s = d.subspaces[gs];
  for (auto& n : group) {
    size_t sub = where[n].first;
    if (sub != gs)
      fail(ErrorCode::kInvalidInput,
           "Element-Spaces drp_config, drp_param, desc_aimac and desc_drp must be in the same Sub-Space; '{}' is in '{}', "
           "drp_config in '{}' (§6.5)", n, d.subspaces[sub].name, s.name);
  }
  for (size_t i = 0; i < group.size(); ++i)
    if (where[group[i]].second != s.elements.size() - group.size() + i)
      fail(ErrorCode::kInvalidInput,
           "Sub-Space '{}': drp_config, drp_param, desc_aimac, desc_drp must be the last Element-Spaces, in this order (§6.5)", s.name);
  if (d.subspaces.size() == 1) {
    for (size_t i = 0; i < elementSpaceNames().size(); ++i)
      if (s.elements[i].name != elementSpaceNames()[i])
        fail(ErrorCode::kInvalidInput, "Sub-Space '{}': with one Sub-Space the order must be {} (§6.5)", s.name,
             fmt::join(elementSpaceNames(), ", "));
  }
}

}  // namespace

std::string hexGrouped(uint64_t v) {
  std::string h = fmt::format("{:x}", v), out;
  for (size_t i = 0; i < h.size(); ++i) {
    if (i && (h.size() - i) % 4 == 0) out += '_';
    out += h[i];
  }
  return "0x" + out;
}

AddrMapDef parseAddrMapDef(const std::string& yaml, const std::string& source, const AddrMapRules& rules) {
  return withContext(source, [&] { return readingYaml([&] {
    YAML::Node root = loadYaml(yaml);
    if (!root.IsSequence()) fail(ErrorCode::kInvalidInput, "the address map must be a YAML list of Sub-Spaces (§6)");
    AddrMapDef d;
    d.source = source;
    const int bits = std::clamp(rules.address_bits, 1, 48);
    for (size_t i = 0; i < root.size(); ++i) {
      YAML::Node s = root[i];
      std::string where = fmt::format("Sub-Space {}", i + 1);
      if (!s.IsMap()) fail(ErrorCode::kInvalidInput, "{}: must be a map with name, addr and lst_elemsp", where);
      SubSpaceDef sd;
      sd.name = str(s, "name", where);
      where = "Sub-Space '" + sd.name + "'";
      if (!s["addr"]) fail(ErrorCode::kInvalidInput, "{}: field 'addr' is required", where);
      sd.addr = withContext(where, [&] { return parseInt(s["addr"], "addr", bits); });
      if (!s["lst_elemsp"] || !s["lst_elemsp"].IsSequence())
        fail(ErrorCode::kInvalidInput, "{}: field 'lst_elemsp' must be a list of Element-Spaces", where);
      for (auto e : s["lst_elemsp"]) {
        if (!e.IsMap()) fail(ErrorCode::kInvalidInput, "{}: each Element-Space must be a map with a name", where);
        ElementDef ed;
        ed.name = str(e, "name", where);
        std::string ew = where + ", Element-Space '" + ed.name + "'";
        if (e["addr"]) ed.addr = withContext(ew, [&] { return parseInt(e["addr"], "addr", bits); });
        if (e["size"]) ed.size = withContext(ew, [&] { return parseInt(e["size"], "size", bits); });
        sd.elements.push_back(ed);
      }
      d.subspaces.push_back(std::move(sd));
    }
    checkRules(d, rules);
    return d;
  }); });
}

AddrMapDef loadAddrMapDef(const std::filesystem::path& path, const AddrMapRules& rules) {
  return parseAddrMapDef(readFileText(path, kMaxConfigBytes, "an address map definition"), path.string(), rules);
}

AddrMapDef defaultAddrMapDef(uint64_t base) {
  AddrMapDef d;
  d.source = "(default address map)";
  SubSpaceDef s;
  s.name = "all";
  s.addr = base;
  for (auto& n : elementSpaceNames()) s.elements.push_back({n, std::nullopt, std::nullopt});
  d.subspaces.push_back(s);
  return d;
}

AddressMap layoutAddrMap(const AddrMapDef& def, const std::map<std::string, uint64_t>& needed, const AddrMapRules& rules,
                         const std::string& yaml_name) {
  AddressMap m;
  // Definitions are parsed with every address and size below 2^address_bits (<= 2^32 here), and the needs of a
  // package are far below 2^48: the layout's arithmetic cannot wrap. An overflow is reported after the whole map is
  // laid out, so that it can be written for the user to look at.
  const uint64_t limit = uint64_t{1} << std::min(rules.address_bits, 48);
  bool overflowed = false;
  auto overflow = [&] { overflowed = true; };
  for (const SubSpaceDef& sd : def.subspaces) {
    SubSpace s;
    s.name = sd.name;
    s.addr = sd.addr;
    uint64_t cursor = sd.addr;
    for (const ElementDef& ed : sd.elements) {
      uint64_t need = needed.count(ed.name) ? needed.at(ed.name) : 0;
      uint64_t align = rules.size_align.count(ed.name) ? rules.size_align.at(ed.name) : 64;
      uint64_t size = alignUp(need, align);
      if (ed.size) {
        if (*ed.size < size)
          m.warnings.push_back(fmt::format("{}: Element-Space '{}': size {} is smaller than the {} needed; the given size is ignored",
                                           def.source, ed.name, hexGrouped(*ed.size), hexGrouped(size)));
        else
          size = alignUp(*ed.size, align);
      }
      uint64_t addr = alignUp(cursor, rules.element_addr_align);
      if (ed.addr) {
        if (*ed.addr < cursor)
          fail(ErrorCode::kInvalidInput, "{}: Element-Space '{}' at {} overlaps the previous one, which ends at {}", def.source,
               ed.name, hexGrouped(*ed.addr), hexGrouped(cursor));
        // A given address on the Element-Space's own boundary (§6.4's table: 16 bytes for drp_param, desc_aimac and
        // desc_drp, 64 for the others); addresses npuc places itself stay on element_addr_align (the §6.5 examples).
        if (*ed.addr % align)
          fail(ErrorCode::kInvalidInput, "{}: Element-Space '{}' addr {} must be aligned on a {}-byte boundary (§6.4)", def.source,
               ed.name, hexGrouped(*ed.addr), align);
        addr = *ed.addr;
      }
      if (addr >= limit || size > limit - addr) overflow();
      s.elements.push_back({ed.name, addr, size});
      cursor = addr + size;
    }
    s.size = cursor - s.addr;
    if (!m.subspaces.empty() && s.addr < m.subspaces.back().addr + m.subspaces.back().size)
      fail(ErrorCode::kInvalidInput, "{}: Sub-Space '{}' at {} overlaps Sub-Space '{}', which ends at {}", def.source, s.name,
           hexGrouped(s.addr), m.subspaces.back().name, hexGrouped(m.subspaces.back().addr + m.subspaces.back().size));
    m.subspaces.push_back(std::move(s));
  }
  if (overflowed)
    throw AddressMapOverflow(fmt::format("Address area overflow.\nPlease check {} file. Ensure that all addr in lst_elemsp are smaller "
                                         "than 0x0_FFFF_FFFF by modifying addr in input address mapping file", yaml_name),
                             std::move(m));
  return m;
}

std::string addrMapYaml(const AddressMap& m) {
  std::string out;
  for (auto& s : m.subspaces) {
    out += fmt::format("- \n  name: {} \n  addr: {} \n  size: {:>11} \n  lst_elemsp: \n", s.name, hexGrouped(s.addr), hexGrouped(s.size));
    for (auto& e : s.elements)
      out += fmt::format("    - {{ name: {:<18}addr: {}, size: {:>11} }} \n", e.name + ",", hexGrouped(e.addr), hexGrouped(e.size));
  }
  return out;
}

std::string addrMapTxt(const AddressMap& m) {
  std::string out;
  for (auto& s : m.subspaces)
    for (auto& e : s.elements) out += fmt::format("{} {:x} {:x}\n", e.name, e.addr, e.size);
  return out;
}

}  // namespace npuc::plan
