// npuc translate: the DRP-AI Translator command line —
//   npuc translate PREFIX -onnx MODEL [-prepost P | --aipp C] [-addr A] [-RELU6toRELU] [-SaveOptOnnx]
//                  [-CheckPrePost ON|OFF] [-PrePostFULL] [-NotCheckSizeONNXvsYAML]
// — plus long options (--onnx, --target, --out, --input-shape, …). Arguments are parsed here, not by CLI11,
// because the manual's single-dash long options and its error messages (§9) are the specification.
#include "cli_common.hpp"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <vector>

namespace npuc::cli {

namespace {

namespace fs = std::filesystem;

const char* kHelp = R"(npuc translate — translate an ONNX model for a target (DRP-AI Translator style)

usage: npuc translate PREFIX [-onnx MODEL] [options]    (the manual's three cases: PREFIX with -onnx MODEL;
                                                         PREFIX alone, the model ./onnx/PREFIX.onnx; and
       npuc translate                                    with no arguments: PREFIX and a sample model asked on stdin)

  PREFIX                      output goes to <out>/PREFIX/, files are named PREFIX_*
  -onnx, --onnx MODEL         the ONNX model (default: ./onnx/PREFIX.onnx, the "simple specification case")
  -caffe PROTOTXT CAFFEMODEL  a Caffe model instead: network description and trained weights
  -tf PB, -tflite FILE        a TensorFlow frozen graph or a TensorFlow Lite model instead (-onnx with any model
                              file also detects its format by content)
  --target, -t NAME           target name or .yaml path (default: drpai; see `npuc targets`)
  --out DIR                   output root folder (default: output)
  --input-shape NAME=DIMS     fix an input's shape (repeatable)
  -RELU6toRELU, --relu6-to-relu     replace Relu6 by Relu (says so)
  --keep-batchnorm            BatchNormalizations stay layers of their own, not folded into the convolution before
                              them (TIDL's foldBnInConv2D = 0; an integer target runs each as a depthwise 1x1 conv)
  --relax NAME[,NAME...]      relaxations of the target (or all; repeatable): rules of the vendor's manual not
                              checked, because npuc runs more (`npuc targets --supported-ops T` lists them; docs/targets.md)
  -SaveOptOnnx, --save-opt-onnx     also write PREFIX_opt.onnx (the optimized model; report indices refer to it)
  -SaveQdqOnnx, --save-qdq-onnx     int8-affine targets: also write PREFIX_qdq.onnx, the quantized model as standard
                                    ONNX QuantizeLinear / DequantizeLinear pairs (any ONNX runtime runs it on its
                                    int8 path; without the pre/post-processing)
  -prepost, --prepost FILE    pre/post-processing definition (default: ./UserConfig/prepost_MODEL.yaml, MODEL the
                              ONNX file's name as in the manual's simple case, else prepost_PREFIX.yaml; -prepot too)
  --aipp, --insert_op_conf FILE
                              Ascend-style AIPP configuration (aipp_op blocks, static or dynamic; docs/aipp.md);
                              not combined with -prepost
  -addr, --addr FILE          address map definition (default: ./UserConfig/addrmap_in_MODEL.yaml, else
                              addrmap_in_PREFIX.yaml)
  -CheckPrePost ON|OFF        validate the pre/post definition (ON implies -SaveOptOnnx)
  --reuse-memory              place activations by liveness (default: every layer output keeps its own slot)
  --concat-copies             keep each Concat as a copy layer (default: where a Concat's inputs lie end to end
                              in its result, their layers write them there and the Concat has no layer;
                              docs/memory-planning.md)
  --calib NAME=FILE.npy       calibration samples of model input NAME (repeatable; a file may stack several along
                              its first axis; NAME=DIR: the folder's .npy shards in name order): fp16 targets correct each Conv / Gemm bias for the rounding of its
                              weights to float16, measured on these samples (docs/calibration.md); int8-affine
                              targets (generic-int8) quantize the model on them (required there)
  --calib-method M            int8 activation ranges: minmax (default), percentile, entropy, mse
  --calib NAME=DIR            a folder of pictures (.png, .jpg, .bmp, .pgm, .ppm, .tga; no .npy) as samples of input
                              NAME: each resized to its H x W (INTER_AREA), RGB (a 1-channel input: luma), then
  --calib-mean M[,M,M]        (v - M) per channel (default 0) and
  --calib-scale S[,S,S]       times S (default 1/255); --calib-bgr: B, G, R order (docs/calibration.md)
  --keep-float NODE           int8-affine, int8-pow2: keep this layer (node name of the optimized model, as in the
                              summary) in float32: float weights, computed between dequantize / quantize layers
                              (repeatable); the estimate times it at float32's cost (docs/cost-model.md)
  --keep-float16 NODE         int8 targets: keep this layer in float16 instead (float16 activations and weights,
                              cast layers around it; repeatable; docs/numerics.md "Mixed precision")
  --equalize relu|relu6       int8 targets: cross-layer equalization before calibration (consecutive convolutions:
                              weight ranges made equal per channel; relu6: Relu6 made Relu first; docs/calibration.md)
  --precision FILE            the layers of a precision file (`layers: {NODE: float32|float16}`, what npuc tune
                              writes) kept at those widths, as --keep-float / --keep-float16 (docs/tune.md)
  --range TENSOR=LO,HI        int8-affine: quantize this tensor over [LO, HI] instead of its calibrated range
                              (repeatable)
  --absorb-bias               int8 targets: a channel a Relu never takes to zero on the calibration samples gives its floor
                              to the next unpadded convolution's bias (after --equalize; docs/calibration.md)
  --bias-correction           int8-affine, int8-pow2: correct each Conv / Gemm bias for the mean shift of its int8 weights,
                              measured on the calibration samples
  --adaround                  int8-affine, -radix, -pow2: round each Conv / Gemm's weights up or down so that its output on
                              the calibration samples moves least (AdaRound; docs/calibration.md; not with --bias-correction)
  --threads N                 threads of the calibration runs (default: all cores; the package is the same)
  int8-pow2 targets (tidl; docs/numerics.md), TIDL's import keys:
  --numParamBits N            bits of the weights, 4..12 (default 8)
  --quantRoundAdd N           quantRoundAdd/100 is added before flooring, 0..100 (default 50: round half up)
  --inElementType 0|1         the input's 8-bit codes: 0 unsigned, 1 signed (default 1)
  --inQuantFactor F           the input's scale is 1/F (a power of two); default: from calibration
  --quantHistoryParam1 N      dynamic quantization: the range history's weight (%) in the first frames (default 20)
  --quantHistoryParam2 N      … after them (default 5)
  --quantMargin N             % added to every range (default 0)
  --boot-frames N             how many frames use quantHistoryParam1 (default 4; the guide says "initial few")
  --static-quant              the calibrated ranges frozen: stateless, every frame alike
  Layers groups (TIDL's layersGroupId: pipeline stages, one simulated core each; docs/package-format.md):
  --layer-group LAYER=ID      put LAYER (a name of PREFIX_summary.csv) and the layers after it in group ID, up to
                              the next layer named (repeatable; the first layers: group 1)
  --layer-groups auto         the estimate's cut for the target's fastest two-engine core set (tidl: EVE then DSP)
  --conv-kernel K             TIDL's conv2dKernelType in the time estimate (docs/cost-model.md): K = sparse or dense
                              (every convolution) or LAYER=sparse|dense (repeatable); default: dense below a 64x64
                              output plane, sparse above (the sparse kernel skips zero weights)
  --input_shape "NAME:D0,D1,...;..."
                              Ascend ATC's input shapes; -1 marks the dimensions the gears below set; a range
                              LO~HI (-1 beside a range: unbounded) takes the size that fixes it, which must lie in
                              the range: for an image's height / width the size its static AIPP stage delivers, else
                              --input-shape NAME=DIMS; a range nothing fixes makes one package serving every size in
                              it (float targets; each size chosen per inference by the input's shape or the dynamic
                              AIPP block; docs/aipp.md "Gears and shape ranges")
  --input_shape_range "NAME:[D0,D1,...];..."
                              ATC's older spelling of ranges (LO~HI, N, or -1 unbounded per dimension)
  --dynamic_batch_size "1,2,4"  gears: one package per batch size of the input whose batch is -1, selected per
                              inference (Runtime::setDynamicBatchSize, simulate --dynamic-batch-size)
  --dynamic_image_size "H,W;H,W"
                              gears: one package per height x width of the input whose H and W are -1
                              (Runtime::setDynamicHWSize, simulate --dynamic-image-size)
  --custom-op, --register-op LIB.so
                              register a custom-op plugin before the model is read (repeatable; docs/custom-ops.md):
                              its ops are checked, translated as `custom` layers and recorded with the plugin's SHA-256
  -PrePostFULL                the definition is in the legacy full format (Appendix A)
  -NotCheckSizeONNXvsYAML     skip the ONNX-vs-YAML size check
  -h, --help                  this text

Writes today: PREFIX_summary.{csv,md,xlsx} (time estimate per layer), PREFIX_opt.onnx with -SaveOptOnnx, and
PREFIX_error_report.{csv,json,xlsx} when a node is unsupported (exit status 1).
Output (fp32, fp16, int8-affine, int8-radix targets, and int8-pow2 with --calib; with it PREFIX_pow2_table.csv): the object package (manifest.json, aimac_desc.bin, drp_desc.bin, drp_param.bin,
PREFIX_weight.dat, PREFIX_drpcfg.mem, drp_lib_info.txt; docs/package-format.md), the address map files
(PREFIX_addrmap_intm.{yaml,txt}, PREFIX_tbl_addr_*.txt, PREFIX_data_{in,out}_list.txt) and the time estimate.
generic-int8 (int8-affine) quantizes on --calib samples (or keeps a QDQ model's own scales), kneron (int8-radix) the
same with power-of-two activation scales (+ PREFIX_radix_scale_info.txt); both write PREFIX_quant_table.{csv,xlsx,html}.
tidl (int8-pow2, TIDL's power-of-two scales: docs/numerics.md) writes its package with --calib, the check and the
estimate only without.
Pre/post-processing: -prepost definitions (current format, or the legacy one with -PrePostFULL) are parsed and
validated against the model with the manual's messages ([Error Y01..Y03], KeyError, Converter-007, the size
check unless -NotCheckSizeONNXvsYAML), then put into the package as vector-engine layers: data_in holds the raw
frame, data_out the post-processed result, PREFIX_prepost_opt.yaml records what was fused (docs/prepost.md).
AIPP: --aipp puts an Ascend-style AIPP stage in front of each model input an aipp_op names: the input takes the
raw uint8 frame; a static block is validated now and stored in the package, a dynamic one adds the input
"<input>_aipp" for the kAippDynamicPara parameter block, checked on every inference (npuc simulate --aipp).
Output is written to a temporary folder and renamed into place, so a failed run leaves no half-written folder.
)";

[[noreturn]] void argError(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, "[ERROR] : " + msg); }

std::vector<std::string> splitOn(const std::string& s, char sep) {
  std::vector<std::string> r;
  if (s.empty()) return r;
  size_t i = 0;
  for (;;) {
    size_t j = s.find(sep, i);
    r.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) return r;
    i = j + 1;
  }
}

/// "1,2,4" (ATC's list syntax): positive integers; -1 too when `open` (an ATC --input_shape dimension left to gears).
std::vector<int64_t> parseAtcList(const std::string& text, const char* what, bool open = false) {
  std::vector<int64_t> r;
  if (text.empty()) argError(fmt::format("Invalid argument: {}: an empty list of values", what));
  for (const std::string& d : splitOn(text, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || (v < 1 && !(open && v == -1)) || v > (1ll << 31))
      argError(fmt::format("Invalid argument: {} '{}': '{}' is not a {}", what, text, d, open ? "dimension (a positive integer, or -1)" : "positive integer"));
    r.push_back(v);
  }
  return r;
}

/// ATC's --input_shape "name:d0,d1,...;name2:..." (-1 marks a dimension the gears set; lo~hi a range): the shapes
/// without ranges into `shapes`, those with one into `ranges` (in an entry with a range, -1 is an unbounded
/// dimension, 1~infinity, as ATC reads it). `range_option` (ATC's --input_shape_range "name:[d0,d1,...];…"): every
/// entry is a range entry, its dimensions in brackets.
void parseAtcShapes(const std::string& text, std::map<std::string, Shape>& shapes,
                    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>& ranges, bool range_option = false) {
  const char* opt = range_option ? "--input_shape_range" : "--input_shape";
  for (const std::string& e : splitOn(text, ';')) {
    size_t colon = e.rfind(':');
    if (colon == std::string::npos || colon == 0)
      argError(fmt::format("Invalid argument: {} '{}': expected name:{} (ATC's syntax)", opt, e, range_option ? "[d0,d1,...]" : "d0,d1,..."));
    std::string name = e.substr(0, colon), dims = e.substr(colon + 1);
    if (range_option) {
      if (dims.size() < 2 || dims.front() != '[' || dims.back() != ']')
        argError(fmt::format("Invalid argument: --input_shape_range '{}': expected name:[d0,d1,...] (ATC's syntax)", e));
      dims = dims.substr(1, dims.size() - 2);
    } else if (dims.find('~') == std::string::npos) {
      shapes[name] = parseAtcList(dims, "--input_shape", true);
      continue;
    }
    if (ranges.count(name)) argError(fmt::format("Invalid argument: {}: input '{}' is given a range twice", opt, name));
    std::vector<std::pair<int64_t, int64_t>> r;
    for (const std::string& d : splitOn(dims, ',')) {
      if (d == "-1") {  // unbounded
        r.push_back({1, std::numeric_limits<int64_t>::max()});
        continue;
      }
      size_t t = d.find('~');
      auto lo = parseAtcList(t == std::string::npos ? d : d.substr(0, t), opt);
      auto hi = t == std::string::npos ? lo : parseAtcList(d.substr(t + 1), opt);
      r.push_back({lo.at(0), hi.at(0)});
    }
    ranges[name] = r;
  }
}

/// An integer option's value in [lo, hi]; an argument error naming the option otherwise.
int intValue(const std::string& opt, const std::string& v, int lo, int hi) {
  try {
    size_t used = 0;
    const int n = std::stoi(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return n;
  } catch (const std::exception&) {
  }
  argError(fmt::format(" {} takes a whole number from {} to {} (got '{}')", opt, lo, hi, v));
}
/// A number option's value.
double numberValue(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    const double n = std::stod(v, &used);
    if (used == v.size() && std::isfinite(n)) return n;
  } catch (const std::exception&) {
  }
  argError(fmt::format(" {} takes a number (got '{}')", opt, v));
}

/// " (did you mean -prepost?)" for an option within two edits of a known one (case-insensitive), else "".
std::string closestOption(const std::string& s) {
  static const char* known[] = {"-onnx", "-caffe", "-tf", "-tflite", "-prepost", "-addr", "-RELU6toRELU", "-SaveOptOnnx", "-CheckPrePost", "-PrePostFULL", "--custom-op", "--register-op",
                                "-NotCheckSizeONNXvsYAML", "--target", "--out", "--input-shape", "--aipp", "--insert_op_conf",
                                "--reuse-memory", "--concat-copies", "--calib", "--calib-method", "--calib-mean", "--calib-scale", "--calib-bgr", "--keep-float", "--keep-float16", "--precision", "--equalize", "--range", "--threads",
                                "-SaveQdqOnnx", "--save-qdq-onnx", "--save-opt-onnx", "--relu6-to-relu", "--input_shape",
                                "--dynamic_batch_size", "--dynamic_image_size", "--input_shape_range", "--numParamBits", "--quantRoundAdd",
                                "--inElementType", "--inQuantFactor", "--quantHistoryParam1", "--quantHistoryParam2",
                                "--quantMargin", "--boot-frames", "--static-quant", "--bias-correction", "--absorb-bias", "--adaround", "--layer-group",
                                "--layer-groups", "--relax", "--keep-batchnorm"};
  auto lower = [](std::string x) {
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x;
  };
  auto dist = [](const std::string& a, const std::string& b) {  // Levenshtein
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  const char* best = nullptr;
  size_t best_d = 3;
  for (const char* k : known)
    if (size_t d = dist(lower(s), lower(k)); d < best_d) best = k, best_d = d;
  return best ? fmt::format(" (did you mean {}?)", best) : std::string();
}

/// The manual's sample-model mode (§7.1: the script without arguments asks for PREFIX and a model number): the
/// same questions on stdin, over the manual's four samples (resnet50v1, VGG16, tiny_yolov2, yolov2: random-weight
/// models made by models/drpai_samples/make_samples.py, with their pre/post and address map definitions under
/// drpai_samples/UserConfig/sample/) and npuc's own models, in NPUC_SAMPLES_DIR, else the source tree's models/;
/// returns the arguments of the translation they select.
std::vector<std::string> sampleModelArgs() {
  const char* env = std::getenv("NPUC_SAMPLES_DIR");
  fs::path dir = env && *env ? fs::path(env) : fs::path(NPUC_DEFAULT_SAMPLES_DIR);
  struct Sample {
    const char* name;
    const char* file;
    const char* what;
    bool manual;  // one of the manual's: made by make_samples.py, with the sample definitions
  };
  const Sample samples[] = {
      {"resnet50v1", "drpai_samples/onnx/resnet50v1.onnx", "random weights: models/drpai_samples/make_samples.py", true},
      {"VGG16", "drpai_samples/onnx/vgg16.onnx", "random weights: models/drpai_samples/make_samples.py", true},
      {"tiny_yolov2", "drpai_samples/onnx/tiny_yolov2.onnx", "random weights: models/drpai_samples/make_samples.py", true},
      {"yolov2", "drpai_samples/onnx/yolov2.onnx", "random weights: models/drpai_samples/make_samples.py", true},
      {"digits_cnn", "digits/digits_cnn.onnx", "8x8 digits CNN, trained (Included in npuc)", false},
      {"fashion_resnet", "fashion/fashion_resnet.onnx", "Fashion-MNIST ResNet, trained (Included in npuc)", false},
      {"fashion_mbv2", "fashion/fashion_mbv2.onnx", "Fashion-MNIST MobileNetV2, trained (Included in npuc)", false}};
  fmt::print("[npuc translate] sample models\n Please input PREFIX.\n >>> ");
  std::fflush(stdout);
  std::string prefix, pick;
  if (!std::getline(std::cin, prefix) || prefix.empty()) {
    fmt::print("\n");
    argError(" PREFIX is not set");
  }
  fmt::print("    PREFIX: {}\n Please select model No\n", prefix);
  for (size_t i = 0; i < std::size(samples); ++i) fmt::print("   {}: {:<15} ({})\n", i + 1, samples[i].name, samples[i].what);
  fmt::print(" >>> ");
  std::fflush(stdout);
  std::getline(std::cin, pick);
  fmt::print("\n");
  size_t k = pick.size() == 1 && pick[0] >= '1' && pick[0] <= '0' + static_cast<int>(std::size(samples)) ? static_cast<size_t>(pick[0] - '1')
                                                                                                        : std::size(samples);
  if (k >= std::size(samples)) argError(fmt::format(" Please select a model number from 1 to {} (got '{}')", std::size(samples), pick));
  const Sample& s = samples[k];
  fs::path model = dir / s.file;
  if (!fs::exists(model))
    argError(fmt::format(" {} file is not exist. ({})", model.string(),
                         s.manual ? fmt::format("the manual downloads it from the ONNX model zoo, which npuc does not reach: "
                                                "make it, with random weights, by /usr/bin/python3 "
                                                "models/drpai_samples/make_samples.py --out {} {}",
                                                (dir / "drpai_samples").string(), model.stem().string())
                                  : fmt::format("the sample models are found in NPUC_SAMPLES_DIR, else {}", NPUC_DEFAULT_SAMPLES_DIR)));
  std::vector<std::string> args = {prefix, "-onnx", model.string()};
  if (s.manual) {  // the sample's own definitions, as the manual's banner shows them
    const fs::path config = dir / "drpai_samples/UserConfig/sample";
    args.insert(args.end(), {"-prepost", (config / ("prepost_" + model.stem().string() + ".yaml")).string(), "-addr",
                             (config / ("addrmap_in_" + model.stem().string() + ".yaml")).string()});
  }
  return args;
}

bool looksLikeFile(const std::string& s) {
  auto ext = fs::path(s).extension().string();
  return s.find('/') != std::string::npos || ext == ".onnx" || ext == ".yaml" || ext == ".yml";
}

/// What the command line says: the driver's options as given, and what this command resolves into them first
/// (PREFIX, the definitions' default files, ATC's shape syntax, the calibration files).
struct TranslateArgs {
  TranslateOptions o;
  std::string onnx, prepost, addr, aipp, check_prepost = "OFF", atc_shapes, atc_ranges, dyn_batch, dyn_image, calib_mean, calib_scale;
  bool calib_bgr = false;
  std::vector<std::string> prefixes, shapes, calib, ranges;
  bool help = false;  // -h / --help: the help text and nothing else
};

/// The options, in the manual's single-dash spelling, npuc's long one and ATC's.
TranslateArgs readArgs(const std::vector<std::string>& args) {
  TranslateArgs t;
  // "--opt=value" (ATC's spelling: --input_shape="data:1,3,224,224") is "--opt value".
  std::vector<std::string> split;
  for (const std::string& x : args) {
    const size_t eq = x.find('=');
    if (x.size() > 2 && x[0] == '-' && eq != std::string::npos && eq > 1) {
      split.push_back(x.substr(0, eq));
      split.push_back(x.substr(eq + 1));
    } else {
      split.push_back(x);
    }
  }
  const auto& a = split;
  auto value = [&](size_t& i) -> std::string {
    if (i + 1 >= a.size() || a[i + 1].empty() || a[i + 1][0] == '-')
      argError(fmt::format("Invalid argument: option {} needs a value{}", a[i],
                           i + 1 < a.size() ? fmt::format(" (got '{}')", a[i + 1]) : std::string(" (none given)")));
    return a[++i];
  };
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string& s = a[i];
    if (s == "-h" || s == "--help") {
      t.help = true;  // the help text, whatever follows
      return t;
    }
    if (s.empty() || s[0] != '-') {
      if (looksLikeFile(s)) argError("Please add option name (-addr or -prepost or -onnx) before the file");
      t.prefixes.push_back(s);
    } else if (s == "-onnx" || s == "--onnx") t.onnx = value(i);
    else if (s == "-caffe" || s == "--caffe") t.onnx = value(i), t.o.caffe_model = value(i);  // PROTOTXT CAFFEMODEL
    else if (s == "-tf" || s == "--tf") t.onnx = value(i), t.o.model_format = ModelFormat::kTensorFlow;
    else if (s == "-tflite" || s == "--tflite") t.onnx = value(i), t.o.model_format = ModelFormat::kTfLite;
    else if (s == "-prepost" || s == "--prepost" || s == "-prepot") t.prepost = value(i);  // (-prepot: the manual's §7.3 table)
    else if (s == "-addr" || s == "--addr") t.addr = value(i);
    else if (s == "--aipp" || s == "--insert_op_conf" || s == "-insert_op_conf") t.aipp = value(i);
    else if (s == "--target" || s == "-t") t.o.target = value(i);
    else if (s == "--out") t.o.out_root = value(i);
    else if (s == "--input-shape") t.shapes.push_back(value(i));
    else if (s == "--input_shape" || s == "-input_shape") t.atc_shapes = value(i);
    else if (s == "--input_shape_range" || s == "-input_shape_range") t.atc_ranges = value(i);
    else if (s == "--dynamic_batch_size" || s == "-dynamic_batch_size") t.dyn_batch = value(i);
    else if (s == "--dynamic_image_size" || s == "-dynamic_image_size") t.dyn_image = value(i);
    else if (s == "-RELU6toRELU" || s == "--relu6-to-relu") t.o.relu6_to_relu = true;
    else if (s == "--keep-batchnorm") t.o.fold_batchnorm = false;
    else if (s == "--relax") t.o.relax.push_back(value(i));
    else if (s == "-SaveOptOnnx" || s == "--save-opt-onnx") t.o.save_opt_onnx = true;
    else if (s == "-SaveQdqOnnx" || s == "--save-qdq-onnx") t.o.save_qdq_onnx = true;
    else if (s == "--reuse-memory") t.o.reuse_memory = true;
    else if (s == "--concat-copies") t.o.concat_copies = true;
    else if (s == "--calib") t.calib.push_back(value(i));
    else if (s == "--custom-op" || s == "--register-op" || s == "-custom_op") registerCustomOp(value(i));
    else if (s == "--calib-method") t.o.calib_method = value(i);
    else if (s == "--calib-mean") t.calib_mean = value(i);
    else if (s == "--calib-scale") t.calib_scale = value(i);
    else if (s == "--calib-bgr") t.calib_bgr = true;
    else if (s == "--numParamBits") t.o.pow2.num_param_bits = intValue(s, value(i), 4, 12);
    else if (s == "--quantRoundAdd") t.o.pow2.quant_round_add = intValue(s, value(i), 0, 100);
    else if (s == "--inElementType") t.o.pow2.in_element_type = intValue(s, value(i), 0, 1);
    else if (s == "--inQuantFactor") t.o.pow2.in_quant_factor = numberValue(s, value(i));
    else if (s == "--quantHistoryParam1") t.o.pow2.quant_history_param1 = intValue(s, value(i), 0, 100);
    else if (s == "--quantHistoryParam2") t.o.pow2.quant_history_param2 = intValue(s, value(i), 0, 100);
    else if (s == "--quantMargin") t.o.pow2.quant_margin = intValue(s, value(i), 0, 1000);
    else if (s == "--boot-frames") t.o.pow2.boot_frames = intValue(s, value(i), 0, 1000000);
    else if (s == "--static-quant") t.o.pow2.dynamic = false;
    else if (s == "--bias-correction") t.o.bias_correction = true;
    else if (s == "--adaround") t.o.adaround = true;
    else if (s == "--absorb-bias") t.o.absorb_bias = true;
    else if (s == "--layer-group") {
      const std::string v = value(i);
      const size_t eq = v.rfind('=');
      if (eq == std::string::npos || eq == 0) argError(fmt::format(" --layer-group takes LAYER=ID (got '{}')", v));
      t.o.layer_groups[v.substr(0, eq)] = intValue(s, v.substr(eq + 1), 1, kMaxLayerGroups);
    } else if (s == "--conv-kernel") {
      const std::string v = value(i);
      const size_t eq = v.rfind('=');
      const std::string kind = eq == std::string::npos ? v : v.substr(eq + 1);
      if (kind != "sparse" && kind != "dense")
        argError(fmt::format(" --conv-kernel takes sparse, dense or LAYER=sparse|dense (got '{}')", v));
      if (eq == std::string::npos) t.o.conv_kernel_all = kind == "sparse" ? 0 : 1;
      else if (eq == 0) argError(fmt::format(" --conv-kernel LAYER=KIND needs a layer name (got '{}')", v));
      else t.o.conv_kernels[v.substr(0, eq)] = kind == "sparse" ? 0 : 1;
    } else if (s == "--layer-groups") {
      if (value(i) != "auto") argError(fmt::format(" --layer-groups takes 'auto' (got '{}'); --layer-group LAYER=ID names groups", a[i]));
      t.o.auto_layer_groups = true;
    }
    else if (s == "--keep-float") t.o.keep_float.push_back(value(i));
    else if (s == "--keep-float16") t.o.keep_float16.push_back(value(i));
    else if (s == "--precision") t.o.precision = value(i);
    else if (s == "--equalize") t.o.equalize = value(i);
    else if (s == "--range") t.ranges.push_back(value(i));
    else if (s == "--threads") t.o.threads = intValue(s, value(i), 1, 256);
    else if (s == "-PrePostFULL" || s == "--prepost-full") t.o.prepost_full = true;
    else if (s == "-NotCheckSizeONNXvsYAML" || s == "--not-check-size-onnx-vs-yaml") t.o.not_check_size = true;
    else if (s == "-CheckPrePost" || s == "--check-prepost") {
      if (i + 1 >= a.size() || (a[i + 1] != "ON" && a[i + 1] != "OFF")) argError("Please choose ON/OFF for -CheckPrePost option");
      t.check_prepost = a[++i];
    } else {
      argError(fmt::format("Invalid option name: {}{} (npuc translate -h lists the options)", s, closestOption(s)));
    }
  }
  return t;
}

/// The driver's options from the arguments: PREFIX, the definitions the simple specification case finds (shown in
/// the manual's banner, each of them checked to exist), the input shapes, gears and calibration files.
void resolveArgs(TranslateArgs& t) {
  if (t.prefixes.empty()) argError(" PREFIX is not set");
  if (t.prefixes.size() > 1) argError(" Please enter only 1 prefix name");
  t.o.prefix = t.prefixes[0];
  // Simple specification case (§7.2.1): the definitions are found under ./UserConfig by the model's name
  // (./onnx/modelA.onnx -> prepost_modelA.yaml, addrmap_in_modelA.yaml); npuc also looks for PREFIX-keyed files.
  if (t.onnx.empty()) t.onnx = "./onnx/" + t.o.prefix + ".onnx";
  const std::string model_name = fs::path(t.onnx).stem().string();
  auto userConfig = [&](const std::string& kind) {
    for (const std::string& key : {model_name, t.o.prefix})
      if (std::string f = "./UserConfig/" + kind + key + ".yaml"; fs::exists(f)) return f;
    return std::string();
  };
  // With a ./UserConfig folder (the manual's layout) a definition the simple case names must be there: the
  // manual stops with "file is not exist" (§7.2.2, §9). Without one, npuc's relaxation: none, said in the banner.
  std::error_code uc_ec;
  const bool user_config = fs::is_directory("./UserConfig", uc_ec);
  std::string prepost_note, addr_note;
  if (t.prepost.empty() && t.aipp.empty()) {
    t.prepost = userConfig("prepost_");
    if (t.prepost.empty() && user_config) t.prepost = "./UserConfig/prepost_" + model_name + ".yaml";
    if (t.prepost.empty()) prepost_note = "none (no ./UserConfig folder): no pre/post-processing";
  }
  if (t.addr.empty()) {
    t.addr = userConfig("addrmap_in_");
    if (t.addr.empty() && user_config) t.addr = "./UserConfig/addrmap_in_" + model_name + ".yaml";
    if (t.addr.empty()) addr_note = "none (no ./UserConfig folder): the default address map";
  }
  // The manual's banner: the version, then which files this run uses.
  fmt::print("[Run npuc translate] Ver. {}\n", NPUC_VERSION_STRING);
  fmt::print("[Input file information]\n   {:<21} : {}\n   {:<21} : {}\n   {:<21} : {}\n   {:<21} : {}\n", "PREFIX", t.o.prefix,
             "ONNX Model", t.onnx, t.aipp.empty() ? "Prepost file" : "AIPP configuration",
             t.aipp.empty() ? (t.prepost.empty() ? prepost_note : t.prepost) : t.aipp, "Address mapping file",
             t.addr.empty() ? addr_note : t.addr);
  for (const std::string* f : {&t.onnx, &t.prepost, &t.addr, &t.aipp})
    if (!f->empty() && !fs::exists(*f)) argError(" " + *f + " file is not exist.");
  t.o.prepost = t.prepost;
  t.o.aipp = t.aipp;
  t.o.check_prepost = t.check_prepost == "ON";
  t.o.addr_map = t.addr;
  if (t.check_prepost == "ON") t.o.save_opt_onnx = true;
  t.o.onnx = t.onnx;
  t.o.input_shapes = parseShapes(t.shapes);
  parseAtcShapes(t.atc_shapes, t.o.input_shapes, t.o.input_shape_ranges);
  parseAtcShapes(t.atc_ranges, t.o.input_shapes, t.o.input_shape_ranges, true);
  if (!t.dyn_batch.empty()) t.o.dynamic_batch_sizes = parseAtcList(t.dyn_batch, "--dynamic_batch_size");
  for (const std::string& g : splitOn(t.dyn_image, ';')) {
    auto hw = parseAtcList(g, "--dynamic_image_size");
    if (hw.size() != 2) argError(fmt::format("Invalid argument: --dynamic_image_size gear '{}' is not HEIGHT,WIDTH", g));
    t.o.dynamic_image_sizes.push_back({hw[0], hw[1]});
  }
  t.o.calibration = parseTensorLists(t.calib, "--calib", pictureReader(t.onnx, t.o.input_shapes, t.calib_mean, t.calib_scale,
                                                                     t.calib_bgr, t.o.caffe_model.string()));
  t.o.ranges = parseRanges(t.ranges);
}

/// Runs the translation, saying what it does; an error goes up after the manual's text (and hint) for it.
TranslateResult runTranslation(const TranslateOptions& o) {
  fmt::print("npuc translate: PREFIX {}, model {}, target {}\n", o.prefix, o.onnx.string(), o.target);
  if (o.relu6_to_relu) fmt::print("-RELU6toRELU: Relu6 layers are replaced by Relu\n");
  if (!o.relax.empty()) {
    std::string names;
    for (auto& x : o.relax) names += (names.empty() ? "" : ",") + x;
    fmt::print("--relax {}: rules of target {} not checked (npuc runs more than the vendor documents)\n", names, o.target);
  }
  TranslateResult r = [&] {
    try {
      return translate(o, [](const std::string& stage, double s) { fmt::print("  {:<9} {:8.3f} s\n", stage, s); });
    } catch (const Error& e) {
      // The manual's hint (§7.3): an error that seems to come from the definition disagreeing with the model.
      std::string what = e.what();
      fmt::print("{}", drpaiManualMessage(o.target, what));  // (the manual's text for an op it cannot import)
      if (!o.prepost.empty() && !o.check_prepost && what.find(o.prepost.string()) != std::string::npos)
        fmt::print(stderr, "hint: the pre/post-processing definition {} may disagree with the model; run again with "
                           "-CheckPrePost ON to check them ([Error Ynn] messages; the optimized model is saved to "
                           "compare with)\n", o.prepost.string());
      throw;
    }
  }();
  return r;
}

/// The result as the manual's script shows it: the unsupported nodes, or the estimate; then the files written.
void printResult(const TranslateOptions& o, const TranslateResult& r) {
  if (!r.ok) {
    fmt::print("{} node(s) are not supported by {}:\n", r.errors.size(), o.target);
    for (auto& e : r.errors) {
      fmt::print("{}", drpaiManualMessage(o.target, e));
      fmt::print("  [{}] {} ({}): {} — actual: {}\n", e.index, e.node, e.op, e.rule, e.actual);
    }
  } else {
    for (auto& w : r.warnings) fmt::print("warning: {}\n", w);
    if (r.quantized && r.calibration_samples) {
      fmt::print("quantized: {}, ranges from {} calibration sample(s) ({})\n", o.target == "kneron" ? "int8-radix" : "int8",
                 r.calibration_samples, o.calib_method);
      if (o.bias_correction) fmt::print("bias correction: {} layer(s)\n", r.bias_corrected_layers);
      if (o.absorb_bias) fmt::print("bias absorption: {} layer(s)\n", r.bias_absorbed_layers);
    }
    else if (r.quantized)
      fmt::print("quantized: the model's own QuantizeLinear / DequantizeLinear scales\n");
    else if (r.calibration_samples)
      fmt::print("bias correction: {} layer(s), input means of {} calibration sample(s)\n", r.bias_corrected_layers, r.calibration_samples);
    std::string single;
    for (auto& [eng, us] : r.single_core_us)
      if (!std::isnan(us)) single += fmt::format("{}{} {:.3f} us", single.empty() ? "" : ", ", eng, us);
    fmt::print("estimated time: {:.3f} us{}\n", r.estimated_us, single.empty() ? "" : " (single core: " + single + ")");
    std::string multi;
    for (auto& [set, roi] : r.multi_core_roi_s)
      if (!std::isnan(roi)) multi += fmt::format("{}{} {:.2f}", multi.empty() ? "" : ", ", set, roi);
    if (!multi.empty()) fmt::print("estimated throughput (roi/s): {}\n", multi);
    if (!r.content_hash.empty()) fmt::print("package: {}\n", r.content_hash);
    fmt::print("activations: {} bytes ({}), lower bound {} bytes, {:.1f}% above it\n", r.activation_bytes,
               o.reuse_memory ? "reused by liveness" : "one slot per layer output", r.activation_lower_bound,
               r.activation_lower_bound ? 100.0 * (static_cast<double>(r.activation_bytes) / static_cast<double>(r.activation_lower_bound) - 1.0) : 0.0);
  }
  for (auto& f : r.files) fmt::print("wrote {}\n", (r.dir / f).string());
}

int translateCommand(const std::vector<std::string>& args) {
  std::vector<std::string> sample_args;
  if (args.empty()) sample_args = sampleModelArgs();  // the manual's sample-model mode (§7.1)
  TranslateArgs t = readArgs(args.empty() ? sample_args : args);
  if (t.help) {
    fmt::print("{}", kHelp);
    return 0;
  }
  resolveArgs(t);
  TranslateResult r = runTranslation(t.o);
  printResult(t.o, r);
  return r.ok ? 0 : 1;
}

}  // namespace

void addTranslate(Command& app, Action& run) {
  auto* c = app.subcommand("translate", "Translate a model for a target (DRP-AI Translator style; see `npuc translate -h`)");
  c->passThrough();  // -h / --help are handled below with the full text
  auto args = std::make_shared<std::vector<std::string>>();
  c->callback([c, args, &run] {
    *args = c->remaining();
    run = [args] { return translateCommand(*args); };
  });
}

}  // namespace npuc::cli
