// Input frames as TIDL's tools read them (tidl_frames.hpp).
#include "tidl_frames.hpp"

#include "npuc/error.hpp"
#include "npuc/io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

/// What `read` reads from the data key's file; an error of the read is the key's (named with its line).
template <typename Read>
auto readData(const tidl::ImportConfig& c, const tidl::ConfigEntry& e, const FrameKeys& keys, Read read) {
  try {
    return read();
  } catch (const Error& err) {
    tidl::configError(c, e.line, keys.data, err.what());
  }
}

}  // namespace

std::vector<std::string> listLines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  bool first = true;
  for (std::string l; std::getline(in, l); first = false) {
    if (first) tidl::dropByteOrderMark(l);
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.pop_back();
    l.erase(0, std::min(l.size(), l.find_first_not_of(" \t")));
    if (!l.empty() && l[0] != '#') out.push_back(l);
  }
  return out;
}

Tensor tidlFrames(const tidl::ImportConfig& cfg, const tidl::ConfigEntry& e, const FrameKeys& keys, const Shape& s, int64_t count,
                  bool raw, int element_type) {
  if (!raw) {
    // Encoded pictures (rawSampleInData = 0): one picture, or a .txt list of them (one path a line, relative to the
    // list's folder), each pre-processed as preProcType says.
    std::vector<fs::path> pictures;
    if (fs::path(e.raw).extension() == ".txt") {
      for (const std::string& l : listLines(readData(cfg, e, keys, [&] { return readFileText(e.raw, tidl::kMaxImportConfigBytes, "a list of pictures"); }))) {
        if (pictures.size() == static_cast<size_t>(count)) break;
        const fs::path f(l);
        pictures.push_back(f.is_absolute() ? f : fs::path(e.raw).parent_path() / f);
      }
      if (static_cast<int64_t>(pictures.size()) < count)
        tidl::configError(cfg, e.line, keys.data, fmt::format("\"{}\" lists {} picture(s); {} is {}", e.raw, pictures.size(), keys.count, count));
    } else {
      if (count != 1)
        tidl::configError(cfg, e.line, keys.data, fmt::format("one picture is one frame, and {} is {}: list the pictures, one a line, in a .txt file", keys.count, count));
      pictures.push_back(e.raw);
    }
    const int pre = cfg.keys.count("preProcType") ? static_cast<int>(cfg.keys.at("preProcType").numbers.at(0)) : 0;
    const int at = cfg.keys.count("preProcType") ? cfg.keys.at("preProcType").line : e.line;
    std::vector<double> mean, scale;
    if (cfg.keys.count("inMean")) mean = cfg.keys.at("inMean").numbers;
    if (cfg.keys.count("inScale")) scale = cfg.keys.at("inScale").numbers;
    Tensor x(DType::kF32, {count, s[1], s[2], s[3]});
    const int64_t frame = s[1] * s[2] * s[3];
    for (int64_t i = 0; i < count; ++i) {
      try {
        Tensor one = tidlPreprocessPicture(pictures[static_cast<size_t>(i)], pre, s[1], s[2], s[3], mean, scale);
        std::memcpy(x.data<float>() + i * frame, one.data<float>(), static_cast<size_t>(frame) * sizeof(float));
      } catch (const Error& err) {
        // (what the rule cannot take is preProcType's; a picture that cannot be read or decoded, the data key's)
        if (err.code() == ErrorCode::kInvalidArgument && cfg.keys.count("preProcType")) tidl::configError(cfg, at, "preProcType", err.what());
        tidl::configError(cfg, e.line, keys.data,
            std::string(err.what()) + (cfg.keys.count(keys.raw) ? "" : fmt::format(" ({} is 0, the guide's default: encoded pictures; set "
                                                                                  "{} = 1 for raw frames)", keys.raw, keys.raw)));
      }
    }
    return x;
  }
  const int64_t frame = s[1] * s[2] * s[3];
  // (the frames it needs, and nothing past them: a larger file, or one without an end, is not read whole)
  const std::vector<uint8_t> bytes = readData(cfg, e, keys, [&] { return readFilePrefix(e.raw, static_cast<uint64_t>(frame * count)); });
  if (static_cast<int64_t>(bytes.size()) < frame * count)
    tidl::configError(cfg, e.line, keys.data, fmt::format("\"{}\" has {} bytes; {} frames of {}x{}x{} need {}", e.raw, bytes.size(), count, s[1], s[2], s[3], frame * count));
  std::vector<double> mean, scale;
  if (cfg.keys.count("inMean") && cfg.keys.count("inScale")) {
    mean = cfg.keys.at("inMean").numbers;
    scale = cfg.keys.at("inScale").numbers;
    if (static_cast<int64_t>(mean.size()) != s[1]) tidl::configError(cfg, cfg.keys.at("inMean").line, "inMean", fmt::format("{} values for {} channels", mean.size(), s[1]));
  }
  Tensor x(DType::kF32, {count, s[1], s[2], s[3]});
  float* p = x.data<float>();
  for (int64_t i = 0; i < count * frame; ++i) {
    const double v = element_type == 1 ? static_cast<double>(static_cast<int8_t>(bytes[static_cast<size_t>(i)]))
                                       : static_cast<double>(static_cast<uint8_t>(bytes[static_cast<size_t>(i)]));
    const size_t c = static_cast<size_t>((i % frame) / (s[2] * s[3]));
    p[i] = static_cast<float>(mean.empty() ? v : (v - mean[c]) * scale[c]);
  }
  return x;
}

}  // namespace npuc::cli
