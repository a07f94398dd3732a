// TI TIDL's import configuration file (the TIDL user guide §3.15.1.4.7): `key = value` lines, '#' comments, strings
// in double quotes, lists of numbers separated by spaces, every key of the guide's table with its kind and range.
// `npuc tidl-import` maps a configuration onto a translation for the `tidl` target (docs/cli.md); this is its reader.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace npuc::tidl {

/// The largest configuration (or list of pictures) read: far more than any real one, a bound on a mistaken file.
constexpr uint64_t kMaxImportConfigBytes = 16u << 20;

struct ConfigEntry {
  int line = 0;
  std::string raw;              // the value as written (quotes removed for strings)
  bool quoted = false;
  std::vector<double> numbers;  // numeric values (one, or a list)
};

struct ImportConfig {
  std::string file;
  std::map<std::string, ConfigEntry> keys;
};

/// Which of the guide's files: the import tool's configuration (§3.15.1.4.7) or the simulation tool's (§3.15.1.4.13:
/// rawImage, numFrames, inData, traceDumpBaseName, outData, updateNetWithStats, netBinFile, paramsBinFile, and the
/// input keys both share). A key of the other file is an error saying which file it belongs to.
enum class ConfigKind { kImport, kSimulation };

/// Parses a configuration's text (`file` names it in messages): an unknown key (with the key of another letter case
/// suggested), a key set twice, a value of the wrong kind or outside the guide's range, an unterminated string, a
/// line over 65536 characters is an npuc::Error (kInvalidInput) naming the file, the line and the key.
ImportConfig parseImportConfig(const std::string& text, const std::string& file, ConfigKind kind = ConfigKind::kImport);
/// Reads and parses a configuration file (at most kMaxImportConfigBytes; a FIFO, a folder or a missing file is an
/// error saying so).
ImportConfig readImportConfig(const std::string& file, ConfigKind kind = ConfigKind::kImport);
/// An error at `line` of the configuration (0: a key that is missing, named without a line).
[[noreturn]] void configError(const ImportConfig& c, int line, const std::string& key, const std::string& why);
/// Drops a UTF-8 byte-order mark (as some editors save) from the start of a file's first line.
void dropByteOrderMark(std::string& line);

}  // namespace npuc::tidl
