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
// holds an If (generic: control layers, their regions and moves). With bit 7 of byte 1 and not bit 6 (the older
// templates' inputs never set bit 7; it overrides bits 4 and 5), bits 1 and 3 pick one of four more: a package serving
// shape ranges (ranges_net for generic at x:1,3,24~40,20~36: the manifest's shape_ranges symbols, functions, dims and io),
// an int8-affine LSTM (lstm_bidir for generic-int8: the recurrent layer's int8 form, ai.npuc QRecurrent, inputs-present
// bit 32), two inputs ranged alike behind a dynamic AIPP stage (aipp_net for generic at image:1,3,16~48,16~48 and
// mask:1,1,16~48,16~48: symbols of the AIPP layer's picture, `also` tying the mask's dims to them) and an int8-affine
// GRU (gru_bidir, QRecurrent's GRU form). An accepted range package is also specialized: setInputShape, setInput and
// (behind the AIPP stage) setDynamicAipp at the lowest sizes, a size the last byte picks, and just above and below the
// ranges, with a run at each size accepted. With bits 6 and 7 of byte 1 (bit 1 picks; bits 1 and 3 both: the third),
// one of three packages holding dynamic tensors (docs/package-format.md, "Dynamic tensors"), all for generic:
// nonzero_gather (NonZero -> Transpose -> GatherND: the nonzero layer's extent, the dynamic flag of transpose and
// gather_nd, outputs whose manifest entries carry an extent), sorted_boxes (Greater, NonZero, Transpose, two
// GatherNDs, Shape as a copy of an extent, TopK of a k the model computes, Gather: dynamic top_k and gather) and
// views_and_slices (Split as dynamic slices of bounds int64 [4, rank], Squeeze / Unsqueeze / Flatten / Reshape as
// reshape layers (kind 79, words of kernels::reshapeDims), Slice, ReduceMax / ReduceSum, a dynamic nms, and an if
// whose outputs include the extent of its dynamic output, its moves copying a branch's result and its extent). An
// accepted dynamic package also runs on inputs with no, some (-0.0 and NaN among them), all and two elements
// non-zero — for sorted_boxes and views_and_slices, scores none, some, all and two above the threshold 0.3, with ties
// (views_and_slices' If takes then_branch for more than three kept: some and all; else_branch, an empty constant, for
// none and two) —, each run's outputs read at the dims of their extents.
// An accepted package runs with every input set (the runtime refuses to run otherwise): zeros, and for a dynamic AIPP
// stage's parameter input a block whose picture is the stage's output size.
// Bit 0 of byte 1 says whether to re-seal the manifest after the replacement (file sizes, hashes and the content
// hash recomputed, so that the damage reaches the decoders and the validator instead of stopping at the hashes), bit 2
// runs the simulator on two threads, the rest replaces the file's bytes.
// With NPUC_FUZZ_SEED_DIR set, the initializer writes one seed per template file there (scripts/fuzz_smoke.sh).
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "package/package.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using Files = std::map<std::string, std::vector<uint8_t>>;

namespace {

constexpr int kTemplates = 14;
// prepost drpai (fp16), prepost generic (fp32), static AIPP drpai, dynamic AIPP generic, int8-affine digits,
// int8-pow2 digits, control layers; (bit 7) shape ranges, int8 LSTM, shape ranges behind dynamic AIPP, int8 GRU;
// (bits 6 and 7) dynamic tensors: nonzero_gather, sorted_boxes, views_and_slices
constexpr int kFirstDynamic = 11;
Files g_template[kTemplates];
std::vector<std::string> g_names;
fs::path g_dir;

/// The template that byte 1 picks.
int templateOf(uint8_t b) {
  const int low = ((b >> 1) & 1) | ((b >> 2) & 2);  // bits 1 and 3
  // (Inputs with bits 6 and 7 both set picked 7 + low before the dynamic templates came: a corpus of then moves.)
  // (views_and_slices came third: bits 1 and 3 both, which picked sorted_boxes before; bit 3 alone still ignored.)
  if ((b & 192) == 192) return kFirstDynamic + (low == 3 ? 2 : low & 1);
  if (b & 128) return 7 + low;
  return (b & 64) ? 6 : (b & 32) ? 5 : (b & 16) ? 4 : low;
}
/// Byte 1 of a template's seeds (bit 0: re-seal).
uint8_t headOf(int t) {
  if (t >= kFirstDynamic) return static_cast<uint8_t>(1 | 128 | 64 | (t == kFirstDynamic + 2 ? 2 | 8 : (t - kFirstDynamic) << 1));
  if (t >= 7) return static_cast<uint8_t>(1 | 128 | (((t - 7) & 1) << 1) | (((t - 7) & 2) << 2));
  return static_cast<uint8_t>(t == 6 ? 1 | 64 : t == 5 ? 1 | 32 : t == 4 ? 1 | 16 : 1 | ((t & 1) << 1) | ((t & 2) << 2));
}

std::vector<npuc::Tensor> samplesOf(const std::string& npy) {
  return {npuc::readNpyFile(fs::path(NPUC_SOURCE_DIR "/tests/data/recurrent") / npy)};
}

/// Sets every input (the runtime refuses to run with one never set): zeros, and for the parameter input of a dynamic
/// AIPP stage a block whose picture is the stage's output size (a YUV420SP frame of that size, neither cropped nor
/// resized).
void setInputs(npuc::Runtime& rt) {
  const std::vector<npuc::RuntimeTensor> inputs = rt.inputs();
  for (const npuc::RuntimeTensor& in : inputs) try {
      if (in.aipp_for.empty()) {
        rt.setInput(in.name, npuc::Tensor(in.dtype, in.shape));
        continue;
      }
      npuc::DynamicAippParams p;
      for (const npuc::RuntimeLayer& l : rt.layers())
        if (l.kind == "aipp" && std::find(l.inputs.begin(), l.inputs.end(), in.name) != l.inputs.end() && l.output.shape.size() == 4) {
          p.src_image_size_h = static_cast<int32_t>(l.output.shape[2]);
          p.src_image_size_w = static_cast<int32_t>(l.output.shape[3]);
        }
      rt.setDynamicAipp(in.aipp_for, p);
    } catch (const npuc::Error&) {
    }
}

/// An input whose elements are none (fill 0), some (1), all (2) or two (3) non-zero. float32 (the templates' type):
/// some are 0, 0.1 ... 0.9 by element, with -0.0 (zero) and NaN (not zero, never above a threshold) among them, so
/// that the scores pass 0.3 or not; all are 1, 1.5 or 2 (ties for TopK); two are elements 5 and 17 at 0.8 (then
/// views_and_slices' If takes else_branch with two kept). Another type (an input's type the damage changed): the
/// first byte of each element 0 or 1.
npuc::Tensor filled(const npuc::RuntimeTensor& in, int fill) {
  npuc::Tensor t(in.dtype, in.shape);
  if (fill == 0) return t;
  const int64_t n = t.numel();
  if (in.dtype == npuc::DType::kF32) {
    float* v = t.data<float>();
    for (int64_t i = 0; i < n; ++i)
      v[i] = fill == 3   ? (i == 5 || i == 17 ? 0.8f : 0.0f)
             : fill == 2 ? 1.0f + 0.5f * static_cast<float>(i % 3)
             : i % 20 == 10 ? -0.0f
             : i % 20 == 13 ? std::numeric_limits<float>::quiet_NaN()
                            : static_cast<float>(i * 7 % 10) / 10.0f;
    return t;
  }
  const size_t size = npuc::dtypeSize(in.dtype);
  auto* bytes = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < n && size > 0; ++i)
    bytes[static_cast<size_t>(i) * size] = fill == 3 ? i == 5 || i == 17 : fill == 2 || i % 3 == 1;
  return t;
}

/// A package with dynamic tensors: runs on inputs with none, some, all and two elements non-zero, every output read at
/// the dims of its extent (Runtime::output: an extent past the capacity must be an error, never a read beyond it).
void exerciseDynamic(npuc::Runtime& rt) {
  for (int fill = 0; fill < 4; ++fill) try {
      for (const npuc::RuntimeTensor& in : rt.inputs())
        if (in.aipp_for.empty()) rt.setInput(in.name, filled(in, fill));
      rt.run();
      for (const npuc::RuntimeTensor& out : rt.outputs()) (void)rt.output(out.name);
    } catch (const npuc::Error&) {
    }
}

/// A package serving shape ranges: sizes inside and outside the ranges selected through setInputShape, setInput and
/// (for a range of a dynamic AIPP stage's picture) setDynamicAipp, each accepted one run. Sizes: k = 0 the lowest,
/// 1 one that `pick` says, 2 above the ranges, 3 below them (even sizes: a YUV420SP picture's).
void exerciseRanges(npuc::Runtime& rt, uint8_t pick) {
  const std::vector<npuc::RuntimeRange> ranges = rt.shapeRanges();
  if (ranges.empty()) return;
  for (int k = 0; k < 4; ++k) {
    auto sizeOf = [&](const npuc::RuntimeRange& r) -> int64_t {
      if (k == 0) return r.lo;
      if (k == 1) return r.lo + 2 * (pick % ((r.hi - r.lo) / 2 + 1));
      return k == 2 ? r.hi + 2 : r.lo - 2;
    };
    const std::vector<npuc::RuntimeTensor> inputs = rt.inputs();  // (a size selected changes them)
    bool selected = false;
    for (const npuc::RuntimeTensor& in : inputs) {
      if (!in.aipp_for.empty()) {
        // The picture of the AIPP stage: a YUV420SP frame of the range's height x width, neither cropped nor resized.
        npuc::DynamicAippParams p;
        for (const npuc::RuntimeRange& r : ranges) {
          if (r.dim == 2) p.src_image_size_h = static_cast<int32_t>(sizeOf(r));
          if (r.dim == 3) p.src_image_size_w = static_cast<int32_t>(sizeOf(r));
        }
        try {
          rt.setDynamicAipp(in.aipp_for, p);
          selected = true;
        } catch (const npuc::Error&) {
        }
        continue;
      }
      npuc::Shape shape = in.shape;
      bool ranged = false, positive = true;
      for (size_t d = 0; d < shape.size(); ++d)
        for (const npuc::RuntimeRange& r : ranges)
          if (r.covers(in.name, static_cast<int64_t>(d))) shape[d] = sizeOf(r), ranged = true;
      if (!ranged) continue;
      for (int64_t v : shape) positive = positive && v > 0;
      try {
        rt.setInputShape(in.name, shape);
        selected = true;
      } catch (const npuc::Error&) {
      }
      if (!positive) continue;
      try {
        rt.setInput(in.name, npuc::Tensor(in.dtype, shape));  // (the selection setInput makes itself)
        selected = true;
      } catch (const npuc::Error&) {
      }
    }
    if (!selected) continue;
    try {
      rt.run();
      for (const npuc::RuntimeTensor& out : rt.outputs()) (void)rt.output(out.name);
    } catch (const npuc::Error&) {
    }
  }
}

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

/// Whether template t holds what it is here for: the shape ranges table, the recurrent layer's int8 form, a nonzero
/// layer with layers of the dynamic flag after it (sorted_boxes: top_k and gather among them) and outputs with
/// extents; views_and_slices: dynamic reshape layers, a dynamic slice of bounds int64 [4, rank], a dynamic nms, and an
/// if layer one of whose outputs is an output's extent (its moves copy a branch's result and its extent).
bool standsFor(int t, const npuc::package::Package& pkg) {
  using npuc::package::LayerKind;
  bool int8_recurrent = false, nonzero = false, extents = false, bounds = false, if_extent = false;
  std::set<LayerKind> dynamic;
  const auto same = [](const npuc::package::TensorRef& a, const npuc::package::TensorRef& b) {
    return a.addr == b.addr && a.bytes == b.bytes;
  };
  for (const auto* stream : {&pkg.mac, &pkg.vec})
    for (const npuc::package::Descriptor& d : *stream) {
      int8_recurrent |= d.kind == LayerKind::kRecurrent && d.in(0).type == npuc::DType::kI8;
      nonzero |= d.kind == LayerKind::kNonZero;
      if (d.flags & npuc::package::kFlagDynamic) dynamic.insert(d.kind);
      if (d.kind == LayerKind::kSlice && (d.flags & npuc::package::kFlagDynamic)) {
        const npuc::package::Descriptor v = npuc::package::dataView(d);
        bounds |= v.n_in == 2 && v.in(1).type == npuc::package::ElemType::kI64 && v.in(1).rank == 2 && v.in(1).dims[0] == 4;
      }
      if (d.kind == LayerKind::kIf)
        for (const npuc::package::IoTensor& out : pkg.outputs)
          for (int j = 0; j < d.n_out && out.extent; ++j) if_extent |= same(d.out(j), *out.extent);
    }
  for (const npuc::package::IoTensor& out : pkg.outputs) extents |= out.extent.has_value();
  if (t == 7 || t == 9) return pkg.ranges && !pkg.ranges->symbols.empty();
  if (t == 8 || t == 10) return int8_recurrent;
  if (t < kFirstDynamic) return true;
  const bool base = nonzero && extents && dynamic.count(LayerKind::kTranspose) && dynamic.count(LayerKind::kGatherNd);
  if (t == kFirstDynamic) return base;
  if (t == kFirstDynamic + 1) return base && dynamic.count(LayerKind::kTopK) && dynamic.count(LayerKind::kGather);
  return base && dynamic.count(LayerKind::kReshape) && dynamic.count(LayerKind::kNonMaxSuppression) &&
         dynamic.count(LayerKind::kReduce) && bounds && if_extent;
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
    if (t >= kFirstDynamic) {
      o.onnx = t == kFirstDynamic       ? NPUC_SOURCE_DIR "/tests/data/dynamic/nonzero_gather.onnx"
               : t == kFirstDynamic + 1 ? NPUC_SOURCE_DIR "/tests/data/dynamic/sorted_boxes.onnx"
                                        : NPUC_SOURCE_DIR "/tests/data/dynamic/views_and_slices.onnx";
    } else if (t == 7) {
      o.onnx = NPUC_SOURCE_DIR "/tests/data/ranges/ranges_net.onnx";
      o.input_shape_ranges["x"] = {{1, 1}, {3, 3}, {24, 40}, {20, 36}};
    } else if (t == 9) {
      o.onnx = NPUC_SOURCE_DIR "/tests/data/aipp/aipp_net.onnx";
      o.aipp = root / "dynamic.cfg";
      o.input_shape_ranges = {{"image", {{1, 1}, {3, 3}, {16, 48}, {16, 48}}}, {"mask", {{1, 1}, {1, 1}, {16, 48}, {16, 48}}}};
    } else if (t == 8) {
      o.onnx = NPUC_SOURCE_DIR "/tests/data/recurrent/lstm_bidir.onnx";
      o.calibration = {{"x", samplesOf("lstm_bidir.in.npy")}, {"h0", samplesOf("lstm_bidir.h0.npy")},
                       {"c0", samplesOf("lstm_bidir.c0.npy")}};
    } else if (t == 10) {
      o.onnx = NPUC_SOURCE_DIR "/tests/data/recurrent/gru_bidir.onnx";
      o.calibration = {{"x", samplesOf("gru_bidir.in.npy")}, {"h0", samplesOf("gru_bidir.h0.npy")}};
    } else if (t == 6) {
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
    o.target = t == 8 || t == 10 ? "generic-int8" : t >= 6 ? "generic" : t == 5 ? "tidl" : t == 4 ? "generic-int8" : t % 2 ? "generic" : "drpai";
    o.out_root = root / std::to_string(t);
    npuc::TranslateResult r = npuc::translate(o);
    if (!standsFor(t, npuc::package::readPackage(r.dir))) {
      std::fprintf(stderr, "fuzz_package_reader: template %d lacks what it stands for\n", t);
      std::abort();
    }
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
        char head[2] = {static_cast<char>(i), static_cast<char>(headOf(t))};
        out.write(head, 2);
        const auto& b = it->second;
        out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
      }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || g_names.empty()) return 0;
  const int t = templateOf(data[1]);
  Files f = g_template[t];
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
    setInputs(rt);
    try {
      rt.run();
    } catch (const npuc::Error&) {
    }
    exerciseRanges(rt, data[size - 1]);
    if (t >= kFirstDynamic) exerciseDynamic(rt);
    npuc::Runtime exact(g_dir, {1, true});
    setInputs(exact);
    if (t >= kFirstDynamic) exerciseDynamic(exact);
    exact.run();
    exact.run();  // int8-pow2: a second frame, from the first one's range history
    if (!rt.shapeRanges().empty()) return 0;  // (no pipeline: its stages would all take one size)
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
