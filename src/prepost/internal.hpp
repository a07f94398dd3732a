// What the parts of a DRP-AI pre/post-processing definition share, inside src/prepost/ only: prepost.cpp (names
// and the entry points), parse.cpp (YAML to the typed definition), validate.cpp (names against each other and the
// model, §9) and shapes.cpp (each operation's checks and output, propagated through the entries).
#pragma once

#include "prepost/prepost.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npuc::prepost::detail {

/// Every rule a definition breaks is reported as kInvalidInput with this message.
[[noreturn]] void bad(const std::string& msg);
std::string shapeStr(const std::vector<int64_t>& s);
size_t orderRank(Order o);
std::string_view section(Stage s);
const TensorDecl* findDecl(const std::vector<TensorDecl>& v, const std::string& name);

/// The per-entry / per-operation declarations of the full format (Appendix A), each a list of one.
struct LegacyIo {
  std::vector<int64_t> shape_in, shape_out;
  ElemType dtype_in{}, dtype_out{};
  Order dorder_in{}, dorder_out{};
};

/// One preprocess / postprocess entry as read, with the key paths its later errors name.
struct ParsedProcess {
  Process p;
  std::string path;
  std::vector<std::string> op_paths;
  std::optional<LegacyIo> io;
  std::vector<LegacyIo> op_io;
};

/// A definition as read (parse.cpp): the boundary tensors in `pp`; the entries, whose names are checked
/// (validate.cpp) and whose operations are run (shapes.cpp) before they become pp's preprocess / postprocess.
struct ParsedDefinition {
  PrePost pp;
  std::vector<ParsedProcess> pre, post;
};

ParsedDefinition parseDefinition(const std::string& yaml_text, const std::string& source_name, bool full_format);

void checkModelNames(const PrePost& pp, const ParseOptions& o);
void checkPreNames(const PrePost& pp, const std::vector<ParsedProcess>& procs, const ParseOptions& o);
/// Names a postprocess src may use: body outputs passed whole, and shape_post pieces → their tensors.
std::map<std::string, TensorInfo> postSources(const PrePost& pp);
void checkPostNames(const PrePost& pp, const std::vector<ParsedProcess>& procs, const ParseOptions& o,
                    const std::map<std::string, TensorInfo>& sources);

/// Runs every entry's operations from its src (postprocess entries once the entry they read has run), checks that
/// each reaches its declared dest, and moves the entries, every operation's in / out filled, into d.pp.
void propagate(ParsedDefinition& d, const std::map<std::string, TensorInfo>& sources);

}  // namespace npuc::prepost::detail
