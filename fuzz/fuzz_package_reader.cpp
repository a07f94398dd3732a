// libFuzzer target: damaged object packages through the package reader, and — when the reader accepts one — the
// simulator. Every outcome must be a loaded package (that runs) or an npuc::Error: never a crash, leak or UB.
//
// Input: byte 0 picks a file of a template package, bits 1 and 3 of byte 1 the template: the digits model behind
// the demo's YUY2 camera pipeline translated for drpai (both engines, fp16 body, uint8 frame, pre/post layers, an
// image input) or for generic (fp32 body with casts at its boundary, whose kernels read device memory directly);
// the AIPP test model with a static AIPP block (drpai) or a dynamic one (generic: a parameter-block input); with bit
// 4 of byte 1, the digits model as an int8-affine package (generic-int8: quantize / dequantize layers, int8
// convolutions with their requantization tables, an int8 max pool, the manifest's quantization records); with bit 5,
// the digits model as an int8-pow2 package (tidl: a quantize layer, codes at per-frame power-of-two scales, the
// layers' tables of slots, max pooling on codes, global pooling, an inner product, the manifest's pow2 options, and
// two layers groups: an accepted package with groups also runs through npuc::Pipeline); with bit 6, a Loop whose body
// holds an If (generic: control layers, their regions and moves; run with every input set to zeros).
// Bit 0 of byte 1 says whether to re-seal the manifest after the replacement (file sizes, hashes and the content
// hash recomputed, so that the damage reaches the decoders and the validator instead of stopping at the hashes), bit 2 runs the simulator on two threads,
// the rest replaces the file's bytes.
// With NPUC_FUZZ_SEED_DIR set, the initializer writes one seed per template file there (scripts/fuzz_smoke.sh).
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "package/package.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using Files = std::map<std::string, std::vector<uint8_t>>;

namespace {

constexpr int kTemplates = 7;
// prepost drpai (fp16), prepost generic (fp32), static AIPP drpai, dynamic AIPP generic, int8-affine digits,
// int8-pow2 digits, control layers
Files g_template[kTemplates];
std::vector<std::string> g_names;
fs::path g_dir;

/// Re-seals the manifest over the replaced file (when the manifest can be read) so that the damage reaches the
/// decoders and the validator.
void rehash(Files& f) {
  const auto& m = f.at("manifest.json");
  try {
    std::string s = npuc::package::resealManifest(std::string(m.begin(), m.end()), f);
    f["manifest.json"] = std::vector<uint8_t>(s.begin(), s.end());
  } catch (const npuc::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fs::path root = fs::temp_directory_path() / ("npuc-fuzz-package-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::ofstream(root / "static.cfg") << "aipp_op {\n aipp_mode: static\n input_format: YUV420SP_U8\n src_image_size_w: 48\n"
                                        " src_image_size_h: 40\n crop: true\n load_start_pos_w: 2\n load_start_pos_h: 4\n"
                                        " crop_size_w: 40\n crop_size_h: 36\n resize: true\n csc_switch: true\n"
                                        " padding: true\n top_padding_size: 1\n var_reci_chn_0: 0.0039\n}\n";
  std::ofstream(root / "dynamic.cfg") << "aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 4096\n}\n";
  for (int t = 0; t < kTemplates; ++t) {
    npuc::TranslateOptions o;
    o.prefix = "t";  // same prefix: the templates have the same file names
    if (t == 6) {
      o.onnx = NPUC_SOURCE_DIR "/tests/data/control_flow/nested.onnx";
    } else if (t == 4) {
      o.onnx = NPUC_SOURCE_DIR "/models/digits/digits_cnn.onnx";
      o.calibration["input"] = {npuc::readNpyFile(NPUC_SOURCE_DIR "/models/digits/test_x.npy")};
    } else if (t == 5) {
      o.onnx = NPUC_SOURCE_DIR "/models/digits/digits_cnn.onnx";
      o.calibration["input"] = {npuc::readNpyFile(NPUC_SOURCE_DIR "/models/digits/test_x.npy")};
      o.auto_layer_groups = true;  // (the estimate's EVE / DSP cut: two groups)
    } else if (t < 2) {
      o.onnx = NPUC_SOURCE_DIR "/models/digits/digits_cnn.onnx";
      o.prepost = NPUC_SOURCE_DIR "/models/digits/demo/prepost_yuy2.yaml";
    } else {
      o.onnx = NPUC_SOURCE_DIR "/tests/data/aipp/aipp_net.onnx";
      o.aipp = root / (t == 2 ? "static.cfg" : "dynamic.cfg");
    }
    o.target = t == 5 ? "tidl" : t == 4 ? "generic-int8" : t == 6 || t % 2 ? "generic" : "drpai";
    o.out_root = root / std::to_string(t);
    npuc::TranslateResult r = npuc::translate(o);
    for (auto& e : fs::directory_iterator(r.dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      g_template[t][e.path().filename().string()] = std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
    }
  }
  for (auto& [name, bytes] : g_template[0]) g_names.push_back(name);
  g_dir = root / "case";
  if (const char* seeds = std::getenv("NPUC_FUZZ_SEED_DIR")) {
    for (int t = 0; t < kTemplates; ++t)
      for (size_t i = 0; i < g_names.size(); ++i) {
        auto it = g_template[t].find(g_names[i]);
        if (it == g_template[t].end()) continue;
        std::ofstream out(fs::path(seeds) / ("seed_" + std::to_string(t) + "_" + std::to_string(i)), std::ios::binary);
        char head[2] = {static_cast<char>(i), static_cast<char>(t == 6 ? 1 | 64 : t == 5 ? 1 | 32 : t == 4 ? 1 | 16 : 1 | ((t & 1) << 1) | ((t & 2) << 2))};
        out.write(head, 2);
        const auto& b = it->second;
        out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
      }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || g_names.empty()) return 0;
  const bool control = data[1] & 64;
  Files f = g_template[control ? 6 : (data[1] & 32) ? 5 : (data[1] & 16) ? 4 : ((data[1] >> 1) & 1) | ((data[1] >> 2) & 2)];
  const std::string& name = g_names[data[0] % g_names.size()];
  f[name] = std::vector<uint8_t>(data + 2, data + size);
  if (data[1] & 1) rehash(f);  // also a replaced manifest: its fields then reach the validator
  try {
    npuc::package::readPackage(
        [&](const std::string& n, uint64_t) -> std::optional<std::vector<uint8_t>> {
          auto it = f.find(n);
          if (it == f.end()) return std::nullopt;
          return it->second;
        },
        "fuzz");
  } catch (const npuc::Error&) {
    return 0;
  }
  // Accepted: it must also load and run on the simulator.
  fs::remove_all(g_dir);
  fs::create_directories(g_dir);
  for (auto& [n, b] : f) {
    std::ofstream out(g_dir / n, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  try {
    npuc::Runtime rt(g_dir, {(data[1] & 4) ? 2 : 1, false});  // bit 2 of byte 1: two threads (parallel paths)
    if (control)
      for (const npuc::RuntimeTensor& in : rt.inputs()) rt.setInput(in.name, npuc::Tensor(in.dtype, in.shape));
    rt.run();
    npuc::Runtime exact(g_dir, {1, true});
    if (control)
      for (const npuc::RuntimeTensor& in : exact.inputs()) exact.setInput(in.name, npuc::Tensor(in.dtype, in.shape));
    exact.run();
    exact.run();  // int8-pow2: a second frame, from the first one's range history
    npuc::Pipeline pl(g_dir, {1, false});
    if (pl.groups().size() > 1) {
      std::vector<npuc::Tensor> frame;
      for (const npuc::RuntimeTensor& in : pl.inputs()) frame.emplace_back(npuc::DType::kF32, in.shape);
      (void)pl.run({frame, frame});
    }
  } catch (const npuc::Error&) {
  }
  return 0;
}
