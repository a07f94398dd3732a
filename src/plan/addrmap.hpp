// The address map: the user's definition (DRP-AI Translator manual §6), its layout from the sizes the
// translation needs, and the PREFIX_addrmap_intm.{yaml,txt} files.
//
// A definition is a list of Sub-Spaces in ascending address order, each a contiguous run of Element-Spaces
// (data_in, data, data_out, work, weight, drp_config, drp_param, desc_aimac, desc_drp, each exactly once).
// Element addresses may be given or computed; sizes may be given (a size smaller than needed is ignored with a
// warning) or computed.
#pragma once

#include "npuc/error.hpp"

#include "target/target.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace npuc::plan {

/// The nine Element-Spaces, in the manual's canonical order.
const std::vector<std::string>& elementSpaceNames();

struct AddrMapRules {
  uint64_t subspace_align = 64;                  // Sub-Space addr (§6: 64-byte boundary)
  uint64_t element_addr_align = 64;              // element start addresses (as the §6.5 examples place them)
  std::map<std::string, uint64_t> size_align;    // element sizes rounded up to these (§6.4 table)
  int address_bits = 32;
  uint64_t base = 0x4000'0000;                   // where the default map starts
  /// DRP-AI's rules (§6; the defaults of a target file's address_map block).
  static AddrMapRules drpai();
  /// The rules a target file declares (address_map, address_bits).
  static AddrMapRules forTarget(const target::Target& t);
};

struct ElementDef {
  std::string name;
  std::optional<uint64_t> addr, size;
};

struct SubSpaceDef {
  std::string name;
  uint64_t addr = 0;
  std::vector<ElementDef> elements;
};

struct AddrMapDef {
  std::vector<SubSpaceDef> subspaces;
  std::string source;  // file, for messages
};

/// Parses a definition (YAML text; integers may be hex with '_' separators: 0x40_000_000) and checks the §6
/// rules; errors name the file, the Sub-Space, the element and the rule.
AddrMapDef parseAddrMapDef(const std::string& yaml, const std::string& source, const AddrMapRules& rules);
AddrMapDef loadAddrMapDef(const std::filesystem::path& path, const AddrMapRules& rules);
/// The map used without a definition file: one Sub-Space at `base` holding all nine in canonical order.
AddrMapDef defaultAddrMapDef(uint64_t base = 0x4000'0000);

struct Element {
  std::string name;
  uint64_t addr = 0, size = 0;
};
struct SubSpace {
  std::string name;
  uint64_t addr = 0, size = 0;  // size = span of its elements
  std::vector<Element> elements;
};
struct AddressMap {
  std::vector<SubSpace> subspaces;
  std::vector<std::string> warnings;  // e.g. a user size smaller than needed, ignored
  const Element* find(const std::string& name) const;
};

/// The §9 "Address area overflow" error, carrying the layout that overflowed (addresses past 2^address_bits
/// included) so that the translator can write the PREFIX_addrmap_intm files the message tells the user to check.
class AddressMapOverflow : public Error {
 public:
  AddressMapOverflow(std::string message, AddressMap m) : Error(ErrorCode::kInvalidInput, std::move(message)), map(std::move(m)) {}
  AddressMap map;
};

/// Lays out the definition for the bytes each element needs. Throws AddressMapOverflow (naming `yaml_name`, the
/// intm file the user should look at) when an address reaches 2^address_bits, and an error when user addresses
/// make elements overlap.
AddressMap layoutAddrMap(const AddrMapDef& def, const std::map<std::string, uint64_t>& needed, const AddrMapRules& rules,
                         const std::string& yaml_name);

/// "0x4000_0000": lowercase hex, '_' every four digits from the right.
std::string hexGrouped(uint64_t v);
/// PREFIX_addrmap_intm.yaml and .txt contents, in the manual's formats.
std::string addrMapYaml(const AddressMap& m);
std::string addrMapTxt(const AddressMap& m);

}  // namespace npuc::plan
