// npuc tidl-import: TI TIDL's import configuration file (the TIDL user guide §3.15.1.4.7, shared/seeds/001_*), read
// as `tidl_model_import.out` reads it and mapped onto npuc's translation for the `tidl` target: `key = value` lines,
// '#' comments, strings in double quotes, lists of numbers separated by spaces. Every key of the guide's table is
// known; an unknown key, a value of the wrong kind or out of the guide's range, or a missing file is an error naming
// the file, the line and the key; modelType 0 reads a Caffe network (inputNetFile) and its weights (inputParamsFile),
// 1 a TensorFlow frozen graph (inputNetFile, .pb), 2 an ONNX model. What npuc does with
// each key is printed; the quantization keys set the int8-pow2 package's options and sampleInData its calibration;
// keys whose feature npuc does not have yet are accepted and said so.
#include "cli_common.hpp"
#include "tidl_frames.hpp"

#include "npuc/io.hpp"
#include "npuc/runtime.hpp"
#include "npuc/tidl_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

/// The largest list of pictures read: far more than any real one, a bound on a mistaken file.
constexpr uint64_t kMaxImportConfigBytes = tidl::kMaxImportConfigBytes;

using Config = tidl::ImportConfig;
using Entry = tidl::ConfigEntry;
using tidl::dropByteOrderMark;

/// What `read` reads from sampleInData's file; an error of the read is the key's (named with its line).
template <typename Read>
auto readSample(const Config& c, const Entry& e, Read read) {
  try {
    return read();
  } catch (const Error& err) {
    tidl::configError(c, e.line, "sampleInData", err.what());
  }
}

Config parse(const std::string& file) { return tidl::readImportConfig(file); }

}  // namespace

/// The calibration samples of sampleInData for the model's one input: a .npy file as it is (its first axis the
/// samples), or numSampleInData raw frames of 8-bit codes (uint8 or int8 as inElementType says) of the input's
/// [C, H, W], each value (v - inMean[c]) * inScale[c] when both are set, else v.
std::map<std::string, std::vector<Tensor>> calibrationOf(const Config& cfg, const Entry& e, const TranslateOptions& t, const Model& m,
                                                         int64_t count, bool raw, int element_type) {
  if (m.inputs().size() != 1) tidl::configError(cfg, e.line, "sampleInData", fmt::format("the model has {} inputs; sampleInData feeds one", m.inputs().size()));
  const std::string name = m.inputs()[0].name;
  Shape s = t.input_shapes.count(name) ? t.input_shapes.at(name) : m.inputs()[0].shape;
  if (fs::path(e.raw).extension() == ".npy") {
    Tensor x;
    try {
      x = readNpyFile(e.raw);
    } catch (const Error& err) {
      tidl::configError(cfg, e.line, "sampleInData", err.what());
    }
    // (samples stacked on the first axis: the other dimensions are the input's, when it has static ones)
    const Shape& xs = x.shape();
    bool fits = xs.size() == s.size() && !xs.empty();
    for (size_t i = 1; fits && i < s.size(); ++i) fits = s[i] < 1 || xs[i] == s[i];
    if (!fits)
      tidl::configError(cfg, e.line, "sampleInData", fmt::format("\"{}\" holds {} samples; the model's input '{}' is {}{}", e.raw, shapeStr(xs), name,
                                                   shapeStr(s), t.input_shapes.empty() ? "" : " (as inWidth / inHeight / inNumChannels set it)"));
    return {{name, {std::move(x)}}};
  }
  if (s.size() != 4 || s[1] < 1 || s[2] < 1 || s[3] < 1)
    tidl::configError(cfg, e.line, "sampleInData", fmt::format("the model's input {} is not a static [N, C, H, W] (set inWidth / inHeight / inNumChannels)", shapeStr(s)));
  return {{name, {tidlFrames(cfg, e, FrameKeys{"sampleInData", "rawSampleInData", "numSampleInData"}, s, count, raw, element_type)}}};
}

namespace {

/// One import: the configuration's keys checked and mapped onto a translation's options (`t`), with `plan` saying
/// what npuc does with each key.
/// Whether `path` (made absolute, `..` and links resolved as far as they exist) lies in folder `dir`.
bool within(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec), d = fs::weakly_canonical(fs::absolute(dir.empty() ? "." : dir), ec);
  const fs::path rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

class Import {
 public:
  Import(Config cfg, const std::string& target, bool output_anywhere) : cfg(std::move(cfg)), output_anywhere(output_anywhere) {
    t.target = target;
  }

  /// Refuses what npuc cannot import at all, before anything is read: another model format, a missing file, a
  /// value the guide's table refuses in combination with another.
  void checkKeys() {
    const int model_type = static_cast<int>(num("modelType", 0));
    const bool caffe = model_type == 0, tf = model_type == 1;  // (Caffe: the guide's default)
    if (!has("inputNetFile"))
      tidl::configError(cfg, 0, "inputNetFile", caffe ? "is required (the Caffe network, .prototxt)"
                                  : tf ? "is required (the TensorFlow frozen graph, .pb)"
                                  : model_type == 3 ? "is required (the TensorFlow Lite model, .tflite)" : "is required (the ONNX model)");
    const Entry& net = cfg.keys.at("inputNetFile");
    if (!fs::exists(net.raw)) tidl::configError(cfg, net.line, "inputNetFile", fmt::format("\"{}\" does not exist", net.raw));
    if (tf && fs::path(net.raw).extension() != ".pb")
      tidl::configError(cfg, net.line, "inputNetFile", fmt::format("\"{}\" is not a .pb file (modelType 1 is a TensorFlow frozen graph)", net.raw));
    if (model_type == 2 && fs::path(net.raw).extension() != ".onnx")
      tidl::configError(cfg, net.line, "inputNetFile", fmt::format("\"{}\" is not an .onnx file (modelType 2 is ONNX)", net.raw));
    if (model_type == 3 && fs::path(net.raw).extension() != ".tflite")
      tidl::configError(cfg, net.line, "inputNetFile", fmt::format("\"{}\" is not a .tflite file (modelType 3 is TensorFlow Lite)", net.raw));
    if (caffe) {  // Caffe: the network and its trained weights (inputParamsFile)
      if (!has("inputParamsFile"))
        tidl::configError(cfg, 0, "inputParamsFile", "is required with modelType 0 (Caffe): the trained weights, .caffemodel");
      const Entry& params = cfg.keys.at("inputParamsFile");
      if (!fs::exists(params.raw)) tidl::configError(cfg, params.line, "inputParamsFile", fmt::format("\"{}\" does not exist", params.raw));
    }
    if (has("sampleInData") && !fs::exists(cfg.keys.at("sampleInData").raw))
      tidl::configError(cfg, line("sampleInData"), "sampleInData", fmt::format("\"{}\" does not exist", cfg.keys.at("sampleInData").raw));
    if (num("quantizationStyle", 1) == 0)
      tidl::configError(cfg, line("quantizationStyle"), "quantizationStyle", "0 (fixed quantization by the training framework) is not "
          "supported: the guide says only dynamic quantization (1) is");
    if (num("preProcType", 0) > 6 && num("preProcType", 0) != 256 && num("rawSampleInData", 0) == 0)  // (raw data: ignored)
      tidl::configError(cfg, line("preProcType"), "preProcType", fmt::format("{} is a configuration error in the guide's table (0..6 or 256)", num("preProcType", 0)));
    if (num("preProcType", 0) == 256 && num("rawSampleInData", 0) == 0 && (!has("inMean") || !has("inScale")))
      tidl::configError(cfg, line("preProcType"), "preProcType", "256 takes inMean and inScale from the configuration: both must be set");
    if (has("inMean") && has("inScale") && cfg.keys.at("inMean").numbers.size() != cfg.keys.at("inScale").numbers.size())
      tidl::configError(cfg, line("inScale"), "inScale", fmt::format("{} values for {} inMean values", cfg.keys.at("inScale").numbers.size(),
                                                       cfg.keys.at("inMean").numbers.size()));
    if (has("inQuantFactor") && num("inQuantFactor", -1) <= 0 && num("inQuantFactor", -1) != -1)
      tidl::configError(cfg, line("inQuantFactor"), "inQuantFactor", "must be > 0, or -1 (the default)");
  }

  /// The model, the package's folder and name (outputNetFile) and the input's size keys.
  void readModelKeys() {
    const Entry& net = cfg.keys.at("inputNetFile");
    t.onnx = net.raw;
    if (num("modelType", 0) == 0) t.caffe_model = cfg.keys.at("inputParamsFile").raw;
    // The package: outputNetFile's folder and name (TIDL writes net and params files there).
    fs::path outnet = has("outputNetFile") ? fs::path(cfg.keys.at("outputNetFile").raw) : fs::path("tidl_net.bin");
    net_file = outnet;
    if (has("outputParamsFile")) params_file = cfg.keys.at("outputParamsFile").raw;
    t.prefix = outnet.stem().string();
    t.out_root = outnet.has_parent_path() ? outnet.parent_path() : fs::path(".");
    if (!outnet.has_filename() || t.prefix == "." || t.prefix == "..")
      tidl::configError(cfg, line("outputNetFile"), "outputNetFile",
          fmt::format("\"{}\" names a folder: give a file name, whose stem names the package's folder", outnet.string()));
    try {
      checkOutputName(t.prefix, "outputNetFile's name");
    } catch (const Error& e) {
      tidl::configError(cfg, line("outputNetFile"), "outputNetFile", e.what());
    }
    // A configuration decides where npuc writes only within its own folder or the current one (a configuration from
    // elsewhere must not create folders anywhere on the machine), unless the user says otherwise.
    if (!output_anywhere && !within(t.out_root, fs::current_path()) && !within(t.out_root, fs::path(cfg.file).parent_path()))
      tidl::configError(cfg, line("outputNetFile"), "outputNetFile",
          fmt::format("\"{}\" is outside the configuration's folder and the current folder; npuc writes there only with "
                      "--output-anywhere", outnet.string()));
    if (has("inWidth") || has("inHeight") || has("inNumChannels")) {
      const Model& m = inputModel();
      const char* size_key = has("inWidth") ? "inWidth" : has("inHeight") ? "inHeight" : "inNumChannels";
      if (m.inputs().size() != 1)
        tidl::configError(cfg, line(size_key), size_key,
            fmt::format("the model has {} inputs; inWidth / inHeight / inNumChannels describe one", m.inputs().size()));
      Shape s = m.inputs()[0].shape;
      const bool nhwc = num("modelType", 0) == 1 || num("modelType", 0) == 3;  // TensorFlow's input is [N, H, W, C]
      if (s.size() != 4)
        tidl::configError(cfg, line(size_key), size_key, fmt::format("the model's input {} is not [N, {}]", shapeStr(s), nhwc ? "H, W, C" : "C, H, W"));
      s[0] = 1;
      if (has("inNumChannels")) s[nhwc ? 3 : 1] = static_cast<int64_t>(num("inNumChannels", 0));
      if (has("inHeight")) s[nhwc ? 1 : 2] = static_cast<int64_t>(num("inHeight", 0));
      if (has("inWidth")) s[nhwc ? 2 : 3] = static_cast<int64_t>(num("inWidth", 0));
      if (s != m.inputs()[0].shape) t.input_shapes[m.inputs()[0].name] = s;  // (the same shape: nothing to set, or to blame)
    }
    // What npuc does with each key.
    const bool caffe = !t.caffe_model.empty(), tf = num("modelType", 0) == 1, tflite = num("modelType", 0) == 3;
    plan = fmt::format("{}: TIDL import configuration -> npuc translate {} {} {}{} --target {}{}\n", cfg.file, t.prefix,
                       caffe ? "-caffe" : tf ? "-tf" : tflite ? "-tflite" : "-onnx", t.onnx.string(),
                       caffe ? " " + t.caffe_model.string() : "", t.target, t.input_shapes.empty() ? "" : " --input-shape …");
    say("modelType", caffe ? "Caffe (docs/frontends.md)" : tf ? "TensorFlow frozen graph (docs/frontends.md)"
                     : tflite ? "TensorFlow Lite (docs/frontends.md)" : "ONNX");
    say("inputNetFile", caffe ? "the network (.prototxt)" : tf ? "the frozen graph (.pb)" : tflite ? "the model (.tflite)" : "the model");
    say("outputNetFile", fmt::format("the package: {}/{} (and here a reference to it, for netBinFile)", t.out_root.string(), t.prefix));
    say("outputParamsFile", "a reference to the package too (npuc's package holds the parameters with the network)");
    say("inputParamsFile", caffe ? "the trained weights (.caffemodel)"
                                 : tf ? "(a frozen graph holds its parameters: not read)"
                                 : tflite ? "(a .tflite holds its parameters: not read)" : "(ONNX holds its parameters: not read)");
    say("inWidth", "input width");
    say("inHeight", "input height");
    say("inNumChannels", "input channels");
    t.fold_batchnorm = num("foldBnInConv2D", 1) != 0;
    say("foldBnInConv2D", t.fold_batchnorm ? "BatchNormalization folded into the convolutions before it"
                                           : "BatchNormalization kept as layers of their own (depthwise 1x1 convolutions)");
  }

  /// int8-pow2 (docs/numerics.md): the quantization keys are translate's options of the same names.
  void readQuantizationKeys() {
    t.pow2.num_param_bits = static_cast<int>(num("numParamBits", 8));
    t.pow2.quant_round_add = static_cast<int>(num("quantRoundAdd", 50));
    t.pow2.in_element_type = inElementType();
    t.pow2.quant_history_param1 = static_cast<int>(num("quantHistoryParam1", 20));
    t.pow2.quant_history_param2 = static_cast<int>(num("quantHistoryParam2", 5));
    t.pow2.quant_margin = static_cast<int>(num("quantMargin", 0));
    if (num("inQuantFactor", -1) > 0) {
      int e = 0;
      if (std::frexp(num("inQuantFactor", -1), &e) != 0.5)
        tidl::configError(cfg, line("inQuantFactor"), "inQuantFactor",
            fmt::format("{} is not a power of two: npuc's int8-pow2 scales are powers of two (2^-q)", num("inQuantFactor", -1)));
      t.pow2.in_quant_factor = num("inQuantFactor", -1);
    }
    say("numParamBits", "weights in this many bits (int8-pow2)");
    say("quantRoundAdd", "added (/100) before flooring (int8-pow2)");
    say("inElementType", "the input's codes: 0 unsigned, 1 signed");
    say("inQuantFactor", "the input's fixed scale 1/inQuantFactor");
    say("quantHistoryParam1", "dynamic quantization: history weight, first frames");
    say("quantHistoryParam2", "dynamic quantization: history weight, later frames");
    say("quantMargin", "dynamic quantization: range margin");
    say("quantizationStyle", "1: dynamic quantization (npuc's int8-pow2 package)");
  }

  /// Calibration: sampleInData, numSampleInData frames of the model's input.
  void readCalibrationKeys() {
    if (has("sampleInData")) {
      const Entry& e = cfg.keys.at("sampleInData");
      t.calibration = calibrationOf(cfg, e, t, inputModel(), static_cast<int64_t>(num("numSampleInData", 1)), num("rawSampleInData", 0) != 0,
                                    inElementType());
    }
    const bool raw = num("rawSampleInData", 0) != 0;
    say("sampleInData", "calibration samples (.npy as they are; raw: 8-bit codes, inMean / inScale applied; encoded: a picture or a .txt "
                        "list of them, pre-processed as preProcType)");
    say("numSampleInData", "samples in sampleInData");
    say("rawSampleInData", raw ? "1: raw 8-bit frames" : "0: encoded pictures (JPEG, PNG, …), decoded here and pre-processed as preProcType");
    say("preProcType", raw ? "ignored: raw samples are not pre-processed (the guide's rawSampleInData = 1 row)"
                           : "the encoded pictures' pre-processing (the guide's table; docs/cli.md)");
    const bool pictures = !raw && has("sampleInData") && fs::path(cfg.keys.at("sampleInData").raw).extension() != ".npy";
    for (const char* k : {"inMean", "inScale"})
      say(k, pictures ? (num("preProcType", 0) == 256 ? "preProcType 256: (v - inMean) * inScale per plane"
                                                      : "ignored: preProcType is not 256")
                      : "applied to raw calibration frames, (v - inMean) * inScale, when both are set (npuc's use: the model's "
                        "input is float)");
    say("randParams", num("randParams", 0) == 0 ? "0: the model's own parameters" : "ignored: npuc quantizes the model's own parameters (no random ones)");
  }

  /// The per-layer lists: layersGroupId, conv2dKernelType.
  void readLayerKeys() {
    // layersGroupId: TIDL's input and output data layers are group 0, the first and the last value; the others list
    // one group per layer, in program order — the package's layers (manifest.json's, with its quantize / dequantize
    // layers). A 0 anywhere else is a mistake that would shift every later value: refused.
    if (has("layersGroupId")) {
      const std::vector<double>& g = cfg.keys.at("layersGroupId").numbers;
      for (size_t i = 0; i < g.size(); ++i) {
        const bool end = i == 0 || i + 1 == g.size();
        if (g[i] == 0 && !end)
          tidl::configError(cfg, line("layersGroupId"), "layersGroupId",
              fmt::format("value {} of {} is 0: group 0 is TIDL's input and output data layers, the first and the last value only", i + 1,
                          g.size()));
        if (g[i] != 0) t.layer_group_list.push_back(static_cast<int>(g[i]));
      }
      if (t.layer_group_list.empty())
        tidl::configError(cfg, line("layersGroupId"), "layersGroupId", "lists no layer besides the input and output data layers (group 0)");
    }
    say("layersGroupId", "the package's layers groups (the first and last 0, TIDL's input and output layers, dropped): one per "
                         "layer of the package (manifest.json), each group a pipeline stage (npuc bench --pipeline)");
    // conv2dKernelType: one value per layer as layersGroupId (TIDL's input and output data layers included: without
    // layersGroupId, the first and the last value are theirs).
    if (has("conv2dKernelType")) {
      const std::vector<double>& k = cfg.keys.at("conv2dKernelType").numbers;
      const std::vector<double>* groups = has("layersGroupId") ? &cfg.keys.at("layersGroupId").numbers : nullptr;
      for (size_t i = 0; i < k.size(); ++i) {
        const bool data_layer = groups ? i < groups->size() && (*groups)[i] == 0 : i == 0 || i + 1 == k.size();
        if (!data_layer) t.conv_kernel_list.push_back(static_cast<int>(k[i]));
      }
      if (t.conv_kernel_list.empty())
        tidl::configError(cfg, line("conv2dKernelType"), "conv2dKernelType",
            fmt::format("{} value(s), all the input and output layers' (one per layer, those two included)", k.size()));
    }
    say("conv2dKernelType", "the convolutions' kernels in the time estimate (0 sparse, 1 dense; the input and output layers' "
                            "values dropped, as layersGroupId's 0s): one per layer of the package, as layersGroupId");
    say("tidlStatsTool", "(TIDL's calibration executable: npuc calibrates itself)");
    if (has("layersGroupId") && has("conv2dKernelType") &&
        cfg.keys.at("layersGroupId").numbers.size() != cfg.keys.at("conv2dKernelType").numbers.size())
      tidl::configError(cfg, line("conv2dKernelType"), "conv2dKernelType",
          fmt::format("{} values, layersGroupId has {} (one per layer each)", cfg.keys.at("conv2dKernelType").numbers.size(),
                      cfg.keys.at("layersGroupId").numbers.size()));
  }

  /// Translates; an error that one of the keys caused is said at that key's line.
  TranslateResult translateWith() {
    try {
      return translate(t, [](const std::string& stage, double s) { fmt::print("  {:<9} {:8.3f} s\n", stage, s); });
    } catch (const Error& e) {
      // (what the groups' list breaks is said at its line)
      const std::string what = e.what();
      if (has("layersGroupId") && what.find("layers groups:") != std::string::npos) tidl::configError(cfg, line("layersGroupId"), "layersGroupId", what);
      if (has("conv2dKernelType") && what.find("convolution kernels:") != std::string::npos)
        tidl::configError(cfg, line("conv2dKernelType"), "conv2dKernelType", what);
      // (the package's folder is outputNetFile's: said in the configuration's terms)
      if (const size_t at = what.find("choose another PREFIX or --out"); at != std::string::npos)
        tidl::configError(cfg, line("outputNetFile"), "outputNetFile", what.substr(0, at) + "choose another outputNetFile");
      // (a model input the size keys made wrong)
      for (const char* k : {"inNumChannels", "inHeight", "inWidth"})
        if (has(k) && !t.input_shapes.empty() && (what.find("shape") != std::string::npos || what.find("channels") != std::string::npos))
          tidl::configError(cfg, line(k), k, what + " — inWidth / inHeight / inNumChannels set the model's input to 1 x C x H x W");
      throw;
    }
  }

  Config cfg;
  TranslateOptions t;
  std::string plan;
  fs::path net_file, params_file;  // outputNetFile, outputParamsFile: package references written there
  bool output_anywhere = false;  // --output-anywhere

 private:
  bool has(const char* k) const { return cfg.keys.count(k) != 0; }

 public:
  /// inElementType as the import reads it (the guide's default 1: signed).
  int inElementType() const { return static_cast<int>(num("inElementType", 1)); }
  /// What the package references record of how the calibration frames were read (tidl-sim and tidl-classify read
  /// theirs the same way unless told otherwise): inElementType, and preProcType, inMean, inScale when set.
  std::map<std::string, std::string> referenceKeys() const {
    std::map<std::string, std::string> k{{"inElementType", std::to_string(inElementType())}};
    for (const char* key : {"preProcType", "inMean", "inScale"})
      if (has(key)) k[key] = cfg.keys.at(key).raw;
    return k;
  }

 private:
  double num(const char* k, double def) const { return has(k) ? cfg.keys.at(k).numbers.at(0) : def; }
  int line(const char* k) const { return has(k) ? cfg.keys.at(k).line : 0; }
  void say(const char* k, const std::string& what) {
    if (has(k)) plan += fmt::format("  {:<18} = {:<12} {}\n", k, cfg.keys.at(k).raw, what);
  }
  /// The model, read once, for the keys that describe its input.
  const Model& inputModel() {
    if (!model) {
      LoadOptions lo;
      lo.require_static_inputs = false;
      lo.caffe_model = t.caffe_model;
      model = Model::load(t.onnx, lo);
    }
    return *model;
  }

  std::optional<Model> model;
};

/// TIDL's layer type for an npuc layer kind, for the import tool's trace (the guide's TIDL_*Layer names where one fits).
std::string tidlLayerName(const std::string& kind, const std::string& opexp) {
  static const std::map<std::string, std::string> names = {
      {"conv", "TIDL_ConvolutionLayer"}, {"conv_transpose", "TIDL_Deconv2DLayer"}, {"max_pool", "TIDL_PoolingLayer"},
      {"avg_pool", "TIDL_PoolingLayer"}, {"global_avg_pool", "TIDL_PoolingLayer"}, {"gemm", "TIDL_InnerProductLayer"},
      {"softmax", "TIDL_SoftMaxLayer"}, {"concat", "TIDL_ConcatLayer"}, {"arg_reduce", "TIDL_ArgMaxLayer"},
      {"batch_norm", "TIDL_BatchNormLayer"}, {"slice", "TIDL_SliceLayer"}, {"resize", "TIDL_ResizeLayer"},
      {"global_max_pool", "TIDL_PoolingLayer"}, {"detection_output", "TIDL_DetectionOutputLayer"},
      {"split", "TIDL_SliceLayer"}, {"flatten", "TIDL_FlattenLayer"}};
  if (auto it = names.find(kind); it != names.end()) return it->second;
  if (kind == "binary" && opexp.rfind("PRelu", 0) == 0) return "TIDL_BatchNormLayer";  // (TIDL's PReLU: its BatchNorm layer's)
  if (kind == "binary" && (opexp.rfind("Add", 0) == 0 || opexp.rfind("Mul", 0) == 0 || opexp.rfind("Max", 0) == 0)) return "TIDL_EltWiseLayer";
  return "npuc_" + kind;  // (no TIDL layer of its own: npuc's kind)
}

/// What TIDL's import tool leaves after its calibration run (§3.15.1.4.7.3), for a package of one input translated with
/// calibration samples: the frames run through the package one after the other (as the stats tool processes them,
/// the dynamic quantization carried), the layers printed (the guide's trace: index, TIDL layer type, input and output
/// dims N C H W), the last frame's data as tempDir/trace_dump_<n>_<W>x<H>.y (n 0: the input; n: layer n - 1 of the
/// package, as stored) and its outputs as stats_tool_out.bin — beside the package (outputNetFile's folder: npuc writes
/// where it was asked to), where TIDL writes into the current folder.
void calibrationRun(const TranslateOptions& t, const TranslateResult& r) {
  if (t.calibration.size() != 1 || t.calibration.begin()->second.size() != 1) return;
  const Tensor& frames = t.calibration.begin()->second[0];
  Runtime rt(r.dir);
  if (rt.inputs().size() != 1 || frames.shape().empty()) return;
  const RuntimeTensor& in = rt.inputs()[0];
  const int64_t n = frames.shape()[0], per = frames.numel() / std::max<int64_t>(n, 1);
  const fs::path base = r.dir.parent_path(), temp = base / "tempDir";
  makeOutputFolder(temp, "tempDir");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(temp, ec))  // (a previous run's traces: TIDL overwrites them too)
    if (e.path().filename().string().rfind("trace_dump_", 0) == 0 && e.path().extension() == ".y") fs::remove(e.path(), ec);
  auto dims = [](const Shape& s) {
    std::string o;
    for (size_t k = 0; k < 4; ++k) o += fmt::format("{:>6} ,", k + s.size() >= 4 ? s[k + s.size() - 4] : (s.empty() ? 0 : 1));
    return o;
  };
  auto traceName = [](int64_t id, const Shape& s) {
    const int64_t w = s.empty() ? 1 : s.back(), h = s.size() >= 2 ? s[s.size() - 2] : 1;
    return fmt::format("trace_dump_{}_{}x{}.y", id, w, h);
  };
  std::map<std::string, Shape> shape_of{{in.name, in.shape}};
  std::map<std::string, int> id_of{{in.name, 0}};  // the trace's data ids: a layer's output has the layer's id
  // The guide's trace line (T:L672-687): id, TIDL layer type, layers group (0: data layers, else the layer's, 1 where the
  // package has none), #inputs, #outputs, the 8 input ids (x: none), the output id, in N C H W, out N C H W.
  auto line = [&](int id, const std::string& type, int group, const std::vector<int>& ins, int outs, int out_id, const Shape& is,
                  const Shape& os) {
    std::string ids;
    for (size_t k = 0; k < 8; ++k) ids += k < ins.size() ? fmt::format("{:>3} ,", ins[k]) : std::string("  x ,");
    fmt::print("{:>3}, {:<28}, {:>2}, {:>3} , {:>2} ,{} {:>2} ,{} {}\n", id, type, group, static_cast<int>(ins.size()), outs, ids, out_id,
               dims(is), dims(os));
  };
  fmt::print("Processing the calibration frames ({}) through {}\n", n, r.dir.string());
  line(0, "TIDL_DataLayer", 0, {}, 1, 0, {}, in.shape);
  for (int64_t f = 0; f < n; ++f) {
    Tensor x(DType::kF32, in.shape);
    if (x.numel() != per) return;
    std::memcpy(x.data<float>(), frames.data<float>() + f * per, static_cast<size_t>(per) * sizeof(float));
    rt.setInput(in.name, x);
    if (f + 1 < n) {
      rt.run();
      continue;
    }
    std::ofstream(temp / traceName(0, in.shape), std::ios::binary).write(static_cast<const char*>(x.raw()), static_cast<std::streamsize>(x.nbytes()));
    rt.run([&](const RuntimeLayer& l, const Tensor& y) {
      if (l.output_index) return;
      const Shape& is = l.inputs.empty() || !shape_of.count(l.inputs[0]) ? Shape{} : shape_of.at(l.inputs[0]);
      shape_of[l.output.name] = y.shape();
      id_of[l.output.name] = l.seq + 1;
      std::vector<int> ins;
      for (const std::string& v : l.inputs)
        if (auto it = id_of.find(v); it != id_of.end()) ins.push_back(it->second);  // (weights and tables have no id)
      line(l.seq + 1, tidlLayerName(l.kind, l.opexp), l.group ? l.group : 1, ins, 1, l.seq + 1, is, y.shape());
      std::ofstream(temp / traceName(l.seq + 1, y.shape()), std::ios::binary).write(static_cast<const char*>(y.raw()), static_cast<std::streamsize>(y.nbytes()));
    });
  }
  int last_id = static_cast<int>(id_of.size());
  for (const RuntimeTensor& o : rt.outputs())  // (the output data layers, as the guide's trace ends)
    line(last_id++, "TIDL_DataLayer", 0, {id_of.count(o.name) ? id_of.at(o.name) : 0}, -1, 0, shape_of.count(o.name) ? shape_of.at(o.name) : Shape{}, {});
  std::string out;
  for (const RuntimeTensor& o : rt.outputs()) {
    const Tensor y = rt.output(o.name);
    out.append(static_cast<const char*>(y.raw()), static_cast<size_t>(y.nbytes()));
  }
  writeText(base / "stats_tool_out.bin", out);
  fmt::print("wrote {} (the last calibration frame's outputs) and {}/trace_dump_<n>_<W>x<H>.y (its layers)\n",
             (base / "stats_tool_out.bin").string(), temp.string());
}

/// The result: warnings, the unsupported nodes, the estimate and the files written.
void printImportResult(const std::string& target, const TranslateResult& r) {
  for (auto& w : r.warnings) fmt::print("warning: {}\n", w);
  if (!r.ok) {
    fmt::print("{} node(s) are not supported by {}:\n", r.errors.size(), target);
    for (auto& e : r.errors) fmt::print("  [{}] {} ({}): {} — actual: {}\n", e.index, e.node, e.op, e.rule, e.actual);
  }
  std::string single;
  for (auto& [eng, us] : r.single_core_us)
    if (us == us) single += fmt::format("{}{} {:.3f} us", single.empty() ? "" : ", ", eng, us);  // (NaN: n/a)
  fmt::print("estimated time: {:.3f} us{}\n", r.estimated_us, single.empty() ? "" : " (single core: " + single + ")");
  std::string multi;
  for (auto& [set, roi] : r.multi_core_roi_s)
    if (roi == roi) multi += fmt::format("{}{} {:.2f}", multi.empty() ? "" : ", ", set, roi);
  if (!multi.empty()) fmt::print("estimated throughput (roi/s): {}\n", multi);
  for (auto& f : r.files) fmt::print("wrote {}\n", (r.dir / f).string());
}

}  // namespace

void addTidlImport(Command& app, Action& run) {
  auto* c = app.subcommand("tidl-import", "Translate with TI TIDL's import configuration file (tidl_model_import.out's keys; the tidl target)");
  struct Opts {
    std::string config, target = "tidl";
    bool dry = false, output_anywhere = false;
  };
  auto o = std::make_shared<Opts>();
  c->option("config", o->config, "The import configuration (key = value lines, as the TIDL user guide §3.15.1.4.7)")->required();
  c->option("--target", o->target, "The target (default tidl)");
  c->flag("--dry-run", o->dry, "Check the configuration and print what npuc would do, without translating");
  c->flag("--output-anywhere", o->output_anywhere, "Let outputNetFile name a folder outside the configuration's folder and "
                                                      "the current folder (default: refused)");
  c->callback([o, &run] {
    run = [o] {
      Import im(parse(o->config), o->target, o->output_anywhere);
      im.checkKeys();
      im.readModelKeys();
      im.readQuantizationKeys();
      im.readCalibrationKeys();
      im.readLayerKeys();
      fmt::print("{}", im.plan);
      if (o->dry) return 0;
      TranslateResult r = im.translateWith();
      printImportResult(im.t.target, r);
      if (!r.ok) return 1;
      if (!r.content_hash.empty()) calibrationRun(im.t, r);
      // Where TIDL writes its network and parameter files: references to the package beside them (tidl-sim's netBinFile
      // and paramsBinFile, simulate, read them). Not where the name is the package folder's own, or another folder's.
      for (const fs::path& f : {im.net_file, im.params_file}) {
        if (f.empty()) continue;
        std::error_code ec;
        const bool beside = fs::weakly_canonical(fs::absolute(f.parent_path().empty() ? "." : f.parent_path()), ec) ==
                            fs::weakly_canonical(fs::absolute(r.dir.parent_path()), ec);
        if (!beside || f.filename() == r.dir.filename()) {
          fmt::print("note: no package reference at {} (not a file beside the package {})\n", f.string(), r.dir.string());
          continue;
        }
        // (with how the calibration frames were read, so that tidl-sim reads its frames the same way)
        writePackageReference(f, r.dir, r.content_hash, im.referenceKeys());
        fmt::print("wrote {} (a reference to the package {})\n", f.string(), r.dir.string());
      }
      return 0;
    };
  });
}

}  // namespace npuc::cli
