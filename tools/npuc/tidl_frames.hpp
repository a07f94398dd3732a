// Input frames as TIDL's tools read them (tidl-import's sampleInData, tidl-sim's inData): raw 8-bit frames of the
// input's [C, H, W] (uint8, or int8 with inElementType = 1; (v - inMean[c]) * inScale[c] when both are set), or encoded
// pictures (one, or a .txt list of them) pre-processed as preProcType says.
#pragma once

#include "npuc/model.hpp"
#include "npuc/tidl_config.hpp"

namespace npuc::cli {

/// The configuration's keys for the frames: the data file, the raw switch and the count (their names in messages).
struct FrameKeys {
  const char* data;   // "sampleInData" / "inData"
  const char* raw;    // "rawSampleInData" / "rawImage"
  const char* count;  // "numSampleInData" / "numFrames"
};

/// The entries of a list file (TIDL's lists of pictures, labels, classes): one a line, surrounding spaces and a
/// byte-order mark dropped, blank lines and '#' comments skipped.
std::vector<std::string> listLines(const std::string& text);

/// `count` frames of `e` (the data key's entry) for an input of static shape `s` [N, C, H, W], as float32 [count, C, H,
/// W]. Errors name the configuration's file, line and key.
Tensor tidlFrames(const tidl::ImportConfig& cfg, const tidl::ConfigEntry& e, const FrameKeys& keys, const Shape& s, int64_t count,
                  bool raw, int element_type);

}  // namespace npuc::cli
