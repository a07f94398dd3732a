// The TIDL import configuration reader (include/npuc/tidl_config.hpp): the guide's table of keys, kinds and ranges.
#include "npuc/tidl_config.hpp"

#include "npuc/io.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace npuc::tidl {

void dropByteOrderMark(std::string& line) {
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
}

void configError(const ImportConfig& c, int line, const std::string& key, const std::string& why) {
  if (line > 0) throw Error(ErrorCode::kInvalidInput, fmt::format("{}:{}: {}: {}", c.file, line, key, why));
  throw Error(ErrorCode::kInvalidInput, fmt::format("{}: {}: {}", c.file, key, why));
}

namespace {

enum class Kind { kInt, kIntList, kNumberList, kNumber, kString, kFile };

constexpr int kImportFile = 1, kSimFile = 2, kBothFiles = 3;

struct KeySpec {
  Kind kind;
  double lo, hi;  // allowed range (numbers)
  const char* meaning;
  int files = kImportFile;  // the files it belongs to (kImportFile, kSimFile)
};

// The guide's table (§3.15.1.4.7.1), ranges as it states them.
const std::map<std::string, KeySpec>& specs() {
  static const std::map<std::string, KeySpec> k = {
      {"randParams", {Kind::kInt, 0, 1, "0: quantization parameters from the model, 1: random"}},
      {"modelType", {Kind::kInt, 0, 3, "0 Caffe, 1 TensorFlow, 2 ONNX, 3 TensorFlow Lite"}},
      {"quantizationStyle", {Kind::kInt, 0, 1, "0 fixed (by the training framework), 1 dynamic (by TIDL)"}},
      {"quantRoundAdd", {Kind::kInt, 0, 100, "quantRoundAdd/100 added when rounding to integer"}},
      {"numParamBits", {Kind::kInt, 4, 12, "bits of the quantized parameters"}},
      {"preProcType", {Kind::kInt, 0, 256, "image pre-processing 0..6, or 256 (inMean / inScale)", kBothFiles}},
      {"conv2dKernelType", {Kind::kIntList, 0, 1, "per layer: 0 sparse, 1 dense convolution"}},
      {"inElementType", {Kind::kInt, 0, 1, "0 8-bit unsigned, 1 8-bit signed input", kBothFiles}},
      {"inQuantFactor", {Kind::kNumber, -1, 1e30, "> 0, or -1 (default)"}},
      {"rawSampleInData", {Kind::kInt, 0, 1, "0 encoded input, 1 RAW input"}},
      {"numSampleInData", {Kind::kInt, 1, 1e9, "number of calibration samples"}},
      {"foldBnInConv2D", {Kind::kInt, 0, 1, "fold BatchNormalization into convolutions"}},
      {"inWidth", {Kind::kInt, 1, 1e9, "input width", kBothFiles}},
      {"inHeight", {Kind::kInt, 1, 1e9, "input height", kBothFiles}},
      {"inNumChannels", {Kind::kInt, 1, 1024, "input channels", kBothFiles}},
      {"sampleInData", {Kind::kFile, 0, 0, "calibration input data file"}},
      {"tidlStatsTool", {Kind::kString, 0, 0, "TIDL's calibration executable"}},
      {"inputNetFile", {Kind::kFile, 0, 0, "the model (ONNX for npuc)"}},
      {"inputParamsFile", {Kind::kString, 0, 0, "the parameters file (Caffe / TensorFlow)"}},
      {"outputNetFile", {Kind::kString, 0, 0, "the translated network"}},
      {"outputParamsFile", {Kind::kString, 0, 0, "the translated parameters"}},
      {"layersGroupId", {Kind::kIntList, 0, 1e9, "per layer: its group (0 input and output, 1 EVE, 2 DSP, …)"}},
      {"inMean", {Kind::kNumberList, -1e30, 1e30, "mean * 255 per channel", kBothFiles}},
      {"inScale", {Kind::kNumberList, -1e30, 1e30, "1 / (std * 255) per channel", kBothFiles}},
      // The dynamic quantization's parameters (§3.15.1.4.9): TIDL sets them on the device; npuc's package carries
      // them, so the import configuration takes them too.
      {"quantHistoryParam1", {Kind::kInt, 0, 100, "history weight (%) during the first frames"}},
      {"quantHistoryParam2", {Kind::kInt, 0, 100, "history weight (%) after the first frames"}},
      {"quantMargin", {Kind::kInt, 0, 1000, "margin (%) added to the ranges"}},
      // The simulation tool's configuration (§3.15.1.4.13).
      {"rawImage", {Kind::kInt, 0, 1, "1 raw 8-bit frames, 0 an encoded picture (or a .txt list of them)", kSimFile}},
      {"numFrames", {Kind::kInt, 1, 1e9, "frames to run", kSimFile}},
      {"inData", {Kind::kFile, 0, 0, "the input frames", kSimFile}},
      {"traceDumpBaseName", {Kind::kString, 0, 0, "the layers' traces: <base><layer>_<W>x<H>.y", kSimFile}},
      {"outData", {Kind::kString, 0, 0, "the outputs, frame after frame", kSimFile}},
      {"updateNetWithStats", {Kind::kInt, 0, 1, "write the range statistics back into the network", kSimFile}},
      {"netBinFile", {Kind::kString, 0, 0, "the translated network (tidl-import's outputNetFile)", kSimFile}},
      {"paramsBinFile", {Kind::kString, 0, 0, "the translated parameters (tidl-import's outputParamsFile)", kSimFile}},
  };
  return k;
}

}  // namespace

ImportConfig parseImportConfig(const std::string& text, const std::string& file, ConfigKind kind) {
  const int mine = kind == ConfigKind::kImport ? kImportFile : kSimFile;
  const char* table = kind == ConfigKind::kImport ? "import configuration table" : "simulation configuration (§3.15.1.4.13)";
  ImportConfig c;
  c.file = file;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) dropByteOrderMark(line);
    if (line.size() > 65536) configError(c, n, "(line)", "longer than 65536 characters");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A '#' outside quotes starts a comment.
    bool q = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') q = !q;
      if (line[i] == '#' && !q) {
        line.resize(i);
        break;
      }
    }
    size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) configError(c, n, line.substr(a), "expected key = value");
    std::string key = line.substr(a, eq - a);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    if (key.empty()) configError(c, n, "(key)", "a line starts with '='");
    auto spec = specs().find(key);
    if (spec != specs().end() && !(spec->second.files & mine))
      configError(c, n, key, kind == ConfigKind::kImport
                                 ? "a key of the simulation tool's configuration (npuc tidl-sim), not of the import configuration"
                                 : "a key of the import configuration (npuc tidl-import), not of the simulation tool's");
    if (spec == specs().end()) {
      // Suggest a key that differs only in letter case.
      std::string hint;
      for (auto& [k, s] : specs())
        if ((s.files & mine) && k.size() == key.size() &&
            std::equal(k.begin(), k.end(), key.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); }))
          hint = fmt::format(" (did you mean {}?)", k);
      configError(c, n, key, fmt::format("unknown key{} — the keys of the TIDL guide's {} are accepted", hint, table));
    }
    if (c.keys.count(key)) configError(c, n, key, fmt::format("set twice (first at line {})", c.keys[key].line));
    std::string v = line.substr(eq + 1);
    size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t");
    v = b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
    ConfigEntry en;
    en.line = n;
    if (v.empty()) configError(c, n, key, "has no value");
    if (v.front() == '"') {
      const size_t close = v.find('"', 1);
      if (close == std::string::npos) configError(c, n, key, "unterminated string");
      if (close + 1 != v.size()) configError(c, n, key, fmt::format("text after the closing quote: '{}'", v.substr(close + 1)));
      en.raw = v.substr(1, v.size() - 2);
      en.quoted = true;
    } else {
      en.raw = v;
    }
    const KeySpec& s = spec->second;
    if (s.kind == Kind::kString || s.kind == Kind::kFile) {
      if (en.raw.empty()) configError(c, n, key, "is an empty file name");
    } else {
      if (en.quoted) configError(c, n, key, "expects a number, got a string");
      std::istringstream ss(en.raw);
      std::string tok;
      while (ss >> tok) {
        char* end = nullptr;
        double x = std::strtod(tok.c_str(), &end);
        if (tok.empty() || *end != '\0' || !std::isfinite(x)) configError(c, n, key, fmt::format("'{}' is not a number", tok));
        if ((s.kind == Kind::kInt || s.kind == Kind::kIntList) && x != std::floor(x))
          configError(c, n, key, fmt::format("'{}' is not an integer", tok));
        if (x < s.lo || x > s.hi)
          configError(c, n, key, fmt::format("{} is outside the guide's range [{}, {}] ({})", tok, s.lo, s.hi, s.meaning));
        en.numbers.push_back(x);
      }
      if ((s.kind == Kind::kInt || s.kind == Kind::kNumber) && en.numbers.size() != 1)
        configError(c, n, key, fmt::format("expects one value, got {}", en.numbers.size()));
    }
    c.keys[key] = en;
  }
  return c;
}

ImportConfig readImportConfig(const std::string& file, ConfigKind kind) {
  const char* what = kind == ConfigKind::kImport ? "import configuration" : "simulation configuration";
  std::string text;
  try {
    text = readFileText(file, kMaxImportConfigBytes, what);
  } catch (const Error& e) {  // (missing, a folder, a FIFO, too large: said so, as the configuration it is)
    throw Error(e.code(), fmt::format("cannot read the {}: {}", what, e.what()));
  }
  return parseImportConfig(text, file, kind);
}

}  // namespace npuc::tidl
