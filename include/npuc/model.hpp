// Public C++ API of the compiler side: load an ONNX model, inspect it, export it, run it on the reference
// engine. The CLI and the Python module are built on this header only.
#pragma once

#include "npuc/error.hpp"
#include "npuc/tensor.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace npuc {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;  // -1 for a dimension not known statically
};

struct NodeInfo {
  int index = 0;
  std::string name;
  std::string op;  // "Conv", or "domain.Op" outside ai.onnx
  std::vector<Shape> input_shapes;   // constant and activation inputs, in order (empty for an omitted input)
  std::vector<Shape> output_shapes;
  std::vector<std::string> inputs, outputs;  // value names; "" for an omitted optional input and for a constant
  int64_t macs = 0;
};

struct ModelStats {
  int nodes = 0;
  int64_t parameters = 0;        // elements of constant tensors used by nodes
  int64_t parameter_bytes = 0;
  int64_t macs = 0;
  int64_t activation_bytes = 0;  // bytes of every non-constant value (inputs and node outputs)
};

/// The framework a model file comes from (docs/frontends.md).
enum class ModelFormat : uint8_t {
  kAuto,        ///< decided by detectModelFormat
  kOnnx,        ///< .onnx (ModelProto)
  kCaffe,       ///< .prototxt + .caffemodel (LoadOptions::caffe_model)
  kTensorFlow,  ///< a frozen GraphDef (.pb)
  kTfLite,      ///< a TensorFlow Lite FlatBuffer (.tflite)
};
/// "ONNX", "Caffe", "TensorFlow", "TensorFlow Lite" ("auto" for kAuto).
const char* modelFormatName(ModelFormat f);
/// The format of a model file, by content where it tells and by extension otherwise: a FlatBuffer whose identifier
/// (bytes 4..7) is "TFL3" or a .tflite file is TensorFlow Lite; a .prototxt is Caffe; a .pb / .pbtxt, or a protobuf
/// whose first field is a GraphDef's node list (a first byte 0x0a) in a file not named .onnx, is TensorFlow;
/// everything else is ONNX (a ModelProto starts with its ir_version, 0x08), whose importer names what is wrong.
/// Throws kInvalidArgument when the file cannot be opened.
ModelFormat detectModelFormat(const std::filesystem::path& path);

struct LoadOptions {
  /// Input shapes by name (fixes dynamic dims; replaces declared shapes).
  std::map<std::string, Shape> input_shapes;
  /// For messages: the option that gave an entry of input_shapes ("--input" when it comes from an input file);
  /// entries not listed came from "--input-shape".
  std::map<std::string, std::string> input_shape_origin;
  /// Value of a dynamic first dimension when no shape is given.
  int64_t default_batch = 1;
  /// Fail on other dynamic input dims (true for the CLI).
  bool require_static_inputs = true;
  /// Run the resolve pipeline (shape inference, constant folding, dead-code elimination) after import.
  bool resolve = true;
  /// Then run the optimize pipeline (BatchNorm folded into convolutions). Changes results only by rounding.
  bool optimize = true;
  /// A Caffe model: when set, the path given to Model::load is its network description (.prototxt) and this its
  /// trained weights (.caffemodel) (docs/frontends.md, "Caffe"). Empty: the path is an ONNX model.
  std::filesystem::path caffe_model;
  /// The model's framework; kAuto: detectModelFormat (Caffe when caffe_model is set).
  ModelFormat format = ModelFormat::kAuto;
};

/// One broken rule of one node (the availability report's row).
struct CheckRow {
  int index = 0;       // node position in the optimized model
  std::string node;    // node name
  std::string op;
  std::string rule_id; // "drpai.conv.kernel"
  std::string rule;    // the rule, for people
  std::string actual;  // the node's actual values
  std::string fix;     // suggested fix (may be empty)
};

/// One place where pre/post-processing meets the model's body (Model::prePostBoundaries).
struct PrePostBoundary {
  bool input = false;          // input_to_body: the pre result feeds the model input; else output_from_body
  std::string model_value;     // the model's input / output, in the model's own layout
  std::string prepost_value;   // the same numbers in the declared order, shape and type
  std::string order;           // "HWC", "CHW" or "C"
  Shape shape;                 // the declared shape (no N)
  bool channel_last = false;   // the model's rank-4 tensor was read as NHWC (a channel-last export, Appendix B)
};
/// The verdict on one boundary, from the values of a run.
struct BoundaryCheck {
  PrePostBoundary boundary;
  bool checked = false;   // both values were present
  bool ok = false;        // the pre/post value is the model value in one arrangement the declaration allows
  std::string arrangement;  // "NCHW", "NHWC" or "flat" (the one that matched), or empty
  std::string message;      // for people: what matched, or what the values look like instead
};
/// Checks each boundary on `values` (by value name): the pre/post value must hold the model value's numbers in the
/// declared order — read channel-first ([1, C, H, W]) or channel-last ([1, H, W, C]), whichever the model's shape
/// allows; flat for other ranks — equal after rounding to the declared type. An independent check of the layout
/// bridges, for `npuc compare --prepost`.
std::vector<BoundaryCheck> checkPrePostBoundaries(const std::vector<PrePostBoundary>& boundaries,
                                                  const std::map<std::string, Tensor>& values);

struct TargetInfo {
  std::string name, description, numerics, file;
  std::vector<std::pair<std::string, std::string>> engines;  // its engines: name, kind ("mac" or "vector")
  /// The engine of layers group 1, 2, …: the pipeline order of the target's core sets of several engines (TIDL: eve,
  /// then dsp — the guide's "layergroup 1 is dispatched to EVE, and layergroup 2 to DSP"); empty when it has none or
  /// they disagree.
  std::vector<std::string> group_engines;
};

/// The most layers groups a package may have (TranslateOptions::layer_groups).
inline constexpr int kMaxLayerGroups = 16;

struct TranslateOptions {
  std::string prefix;                    // output goes to <out_root>/<prefix>/, files are named <prefix>_*
  std::filesystem::path onnx;            // the model; with caffe_model set, a Caffe network description (.prototxt)
  std::filesystem::path caffe_model;     // -caffe PROTOTXT CAFFEMODEL: the trained weights (LoadOptions::caffe_model)
  ModelFormat model_format = ModelFormat::kAuto;  // -tf PB, -tflite FILE (LoadOptions::format); kAuto: detected
  std::string target = "drpai";
  std::filesystem::path out_root = "output";
  std::map<std::string, Shape> input_shapes;
  bool relu6_to_relu = false;            // -RELU6toRELU
  /// false: BatchNormalizations stay layers of their own instead of folding into the convolution before them (TIDL's
  /// foldBnInConv2D = 0, --keep-batchnorm): an integer target runs each as a depthwise 1x1 convolution.
  bool fold_batchnorm = true;
  /// --relax: the target's relaxations (names of its `relaxations`, or "all") whose rules the check skips — what npuc
  /// runs beyond the vendor's manual (docs/targets.md). Empty: the target's rules as the vendor documents them.
  std::vector<std::string> relax;
  bool save_opt_onnx = false;            // -SaveOptOnnx: <prefix>_opt.onnx
  bool save_qdq_onnx = false;            // --save-qdq-onnx (int8-affine targets): <prefix>_qdq.onnx, the quantized
                                         // model as standard ONNX QuantizeLinear / DequantizeLinear pairs
  bool reuse_memory = false;             // place activations by liveness instead of one slot per layer output
  bool concat_copies = false;            // keep each Concat as a copy layer (default: its inputs written in place)
  std::filesystem::path addr_map;        // -addr: address map definition (§6); empty = the default map
  std::filesystem::path prepost;         // -prepost: pre/post-processing definition (§5); empty = none
  bool prepost_full = false;             // -PrePostFULL: the legacy full format (Appendix A)
  bool check_prepost = false;            // -CheckPrePost ON: body name mismatches as [Error Y01]
  bool not_check_size = false;           // -NotCheckSizeONNXvsYAML
  std::filesystem::path aipp;            // --aipp (ATC's --insert_op_conf): Ascend-style AIPP configuration
                                         // (docs/aipp.md); empty = none. Not combined with prepost.
  /// --calib: calibration samples for the bias correction of fp16 targets (docs/calibration.md). Per input of the
  /// ONNX model (what it reads, before any pre-processing), tensors each holding one or more samples stacked along
  /// the first axis (a multiple of the input's first dimension, the other dimensions equal); every input needs
  /// the same number of samples. Empty = weights are only rounded. fp32 targets store weights exactly and ignore
  /// it (with a warning); int8-affine targets (generic-int8) need it: the model is quantized on these samples
  /// (Model::quantizedQdq) before it is lowered; the tidl target does not use it yet.
  std::map<std::string, std::vector<Tensor>> calibration;
  std::string calib_method = "minmax";   // --calib-method: the int8 activation range method (docs/calibration.md)
  std::vector<std::string> keep_float;   // --keep-float NODE: layers of an int8 package kept in float32 (QuantizeOptions)
  /// --keep-float16 NODE: layers of an int8 package kept in float16 (mixed precision, docs/numerics.md): float16
  /// activations and weights, float32 biases, cast layers to and from the int8 conversions around them. Disjoint from
  /// keep_float.
  std::vector<std::string> keep_float16;
  /// --precision FILE: a precision file (docs/tune.md; what npuc tune writes) whose float32 layers join keep_float and
  /// float16 layers keep_float16
  std::filesystem::path precision;
  std::string equalize;  // --equalize relu|relu6: cross-layer equalization before calibration (QuantizeOptions::equalize)
  std::map<std::string, std::pair<double, double>> ranges;  // --range TENSOR=LO,HI: forced int8 ranges
  bool bias_correction = false;          // --bias-correction: int8-affine biases corrected for the weights' rounding
  bool adaround = false;                 // --adaround: int8 weights rounded by AdaRound (QuantizeOptions::adaround)
  bool absorb_bias = false;              // --absorb-bias: int8 targets: bias absorption (QuantizeOptions::absorb_bias)
  int threads = 0;                       // threads of the calibration runs (0: all cores)
  /// Calibration statistics measured elsewhere — calibrationPass over shards of the samples, merged with
  /// mergeCalibrationStats (docs/calibration.md, "Statistics in shards"): used instead of measuring them on
  /// `calibration`, for the graph they were measured on (another graph is measured as usual). The samples are still
  /// read for what else needs them (the quantization table's SNR, bias correction, AdaRound). Empty: measured here.
  std::vector<uint8_t> calibration_stats;
  /// Gears (Ascend ATC's --dynamic_batch_size / --dynamic_image_size; docs/package-format.md, "Gears"): one package
  /// per batch size, or per height x width, of the input whose input_shapes entry (or ONNX shape) leaves those
  /// dimensions open (-1: the batch; H and W of NCHW), in sub-folders of <out_root>/<prefix>/ with gears.json. At
  /// most one of the two; each needs 1 to 100 distinct sizes.
  std::vector<int64_t> dynamic_batch_sizes;
  std::vector<std::pair<int64_t, int64_t>> dynamic_image_sizes;  // (height, width)
  /// ATC's --input_shape ranges ("data:1,3,200~400,200~400"): per input, [lo, hi] per dimension (lo == hi for a
  /// fixed one). Packages have static shapes, so each open dimension must be set by something else: the height and
  /// width by the static AIPP stage of that input (which must lie in the range, the seed's rule); anything else is
  /// an error saying so. Not combined with gears.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> input_shape_ranges;
  /// int8-pow2 targets (tidl; docs/numerics.md "int8-pow2"), named as TIDL's import configuration keys. With
  /// calibration samples a package is written; without, reports only.
  struct Pow2 {
    int num_param_bits = 8;          // numParamBits: 4..12
    int quant_round_add = 50;        // quantRoundAdd: 0..100
    int in_element_type = 1;         // inElementType: 0 unsigned, 1 signed 8-bit input
    double in_quant_factor = -1;     // inQuantFactor: > 0 fixes the input scale at 1 / inQuantFactor (a power of two)
    int quant_history_param1 = 20;   // quantHistoryParam1: history weight (%) during the first boot_frames frames
    int quant_history_param2 = 5;    // quantHistoryParam2: after them
    int quant_margin = 0;            // quantMargin: % added to every range
    int boot_frames = 4;             // the guide's "initial few frames" (npuc's choice; not a TIDL key)
    bool dynamic = true;             // false: the calibrated ranges frozen (stateless)
  } pow2;
  /// Layers groups (TIDL's layersGroupId; docs/package-format.md, "Layers groups"): pipeline stages recorded in the
  /// package, each run by its own simulated core (npuc::Pipeline, runtime.hpp). At most one of the three:
  /// - layer_groups (--layer-group LAYER=ID): the layers named (the package's layer names, PREFIX_summary.csv) in
  ///   group ID; a layer not named takes the group of the layer before it (the first layer: 1);
  /// - layer_group_list: one ID per package layer in program order (tidl-import's layersGroupId without its 0s);
  /// - auto_layer_groups (--layer-groups auto): the cut the time estimate chose for the target's fastest core set of
  ///   two engines whose cut uses both (docs/cost-model.md): group 1 on its first engine, 2 on its second.
  /// Groups must not decrease in program order (a stage reads only what earlier stages wrote).
  std::map<std::string, int> layer_groups;
  std::vector<int> layer_group_list;
  bool auto_layer_groups = false;
  /// Convolution kernels of a target with a sparse kernel (TIDL's conv2dKernelType: 0 sparse, 1 dense; the time
  /// estimate, docs/cost-model.md). Default: dense for an output plane below 64 x 64, sparse otherwise. conv_kernel_all
  /// (-1: not given) sets every convolution; conv_kernel_list one value per layer of the package (as layer_group_list;
  /// the values of layers that are no convolution ignored); conv_kernels (--conv-kernel LAYER=sparse|dense) layers by
  /// name.
  int conv_kernel_all = -1;
  std::vector<int> conv_kernel_list;
  std::map<std::string, int> conv_kernels;
};

struct TranslateResult {
  bool ok = false;                       // false: the model has unsupported nodes (see errors)
  std::filesystem::path dir;             // the output folder
  std::vector<std::string> files;        // written, relative to dir
  std::vector<CheckRow> errors;
  double estimated_us = 0;
  std::vector<std::pair<std::string, double>> single_core_us;  // the estimate with every layer on one engine, by engine
  std::vector<std::pair<std::string, double>> multi_core_roi_s;  // frames per second per core set of the target (NaN: n/a)
  uint64_t activation_bytes = 0;         // bytes the activation plan uses
  uint64_t activation_lower_bound = 0;   // peak of simultaneously-live activation bytes
  std::string content_hash;              // of the object package ("sha256:…"); empty when none was written
  std::vector<std::string> warnings;     // e.g. an address-map size smaller than needed, ignored
  size_t calibration_samples = 0;        // samples the bias correction measured, or the int8 quantization (0: none)
  bool quantized = false;                // the model was quantized to int8-affine on the calibration samples
  int bias_corrected_layers = 0;         // layers whose float32 bias it changed
  int bias_absorbed_layers = 0;          // --absorb-bias: layers whose bias it lowered (into the layer after each)
};

/// Translates a model for a target: import, optimize, check, time estimate, reports. Everything is written to a
/// temporary folder that replaces <out_root>/<prefix>/ at the end, so a failed run never leaves a half-written
/// folder. `progress(stage, seconds)` is called after each stage. When nodes are unsupported the folder holds the
/// error report and ok is false; otherwise it holds the object package (docs/package-format.md), the address map
/// files and the time estimate. Targets with int8 numerics get the reports but no package yet (quantization).
TranslateResult translate(const TranslateOptions& opts,
                          const std::function<void(const std::string&, double)>& progress = {});

/// Calibration in shards (docs/calibration.md, "Statistics in shards"): one pass of the statistics translate(o) would
/// measure, on `o.calibration` (one shard of the samples) — pass 1 the ranges; pass 2 the histograms, begun from
/// `ranges` (pass 1 of every shard, merged). Nothing is written. The bytes merge with mergeCalibrationStats; the
/// merged pass 2 is TranslateOptions::calibration_stats, the same statistics as one pass over all the shards'
/// samples. Errors: a target whose translation measures none (fp32, fp16), ranges of another model or options.
std::vector<uint8_t> calibrationPass(const TranslateOptions& o, int pass, const std::vector<uint8_t>& ranges = {});
/// Merges the shards' statistics of one pass (each of the same model and options; pass 2 each begun from the same
/// ranges). Errors name the part and the rule.
std::vector<uint8_t> mergeCalibrationStats(const std::vector<std::vector<uint8_t>>& parts, int pass);

/// A registered custom op (docs/custom-ops.md).
struct CustomOpInfo {
  std::string name, domain;  // domain "" = ai.onnx
  std::string engine;        // what its definition names ("vector", "mac", or a target's engine)
  std::string library, sha256;
  std::string doc;
};
/// Registers the custom ops of a plugin library (include/npuc/custom_op.h) for the whole process: import, check,
/// the reference engine, translate and the runtime then know them. Throws npuc::Error naming the library and the
/// op for a file that is not a shared library, not an npuc plugin, of another ABI version, with a faulty op table,
/// or defining an op npuc implements itself. Registering the same file again does nothing. Returns its ops.
std::vector<CustomOpInfo> registerCustomOp(const std::filesystem::path& library);
/// Every registered custom op.
std::vector<CustomOpInfo> customOps();

/// `npuc custom-op create`: reads an op definition (the RKNN custom-op guide's YAML — name, framework: onnx,
/// target_platform, inputs, outputs, params with VX types — plus npuc's domain, engine, dtypes, input and required
/// keys; docs/custom-ops.md) and writes a buildable skeleton into op_path: op.yml (the definition as read),
/// <op>_op.cpp (the descriptor and the callbacks, stubbed to fail loudly until written), CMakeLists.txt (builds
/// lib<op>.so against npuc's include/npuc/custom_op.h) and test_<op>.cpp (a harness: infer, compute_ref and
/// compute_fast on a sample input, bits compared). Refuses to overwrite an existing source unless `force`. Errors
/// name the file, the key and the rule. Returns the files written, then notes for the user.
struct CustomOpSkeleton {
  std::string op_name, lib_name;  // "ResizeArea", "resize_area" (the library is lib<lib_name>.so)
  std::vector<std::filesystem::path> files;
  std::vector<std::string> notes;
};
CustomOpSkeleton createCustomOp(const std::filesystem::path& config, const std::filesystem::path& op_path, bool force);
/// `npuc custom-op build --test --param NAME=VALUE`: each assignment checked against the parameters the op definition
/// (`config`, an op folder's op.yml) declares — a declared name, given once, a value of its type (bool: true, false,
/// 1 or 0; int: an integer; float: a number; ints / floats: numbers separated by commas), within the range of its
/// VX type — and returned as the harness's arguments ("--param", "NAME=V1,V2", …). The harness takes numbers, so a
/// string or tensor parameter is refused. Errors (kInvalidArgument) name the parameter, the value and the rule.
std::vector<std::string> customOpTestArgs(const std::filesystem::path& config, const std::vector<std::string>& assignments);

/// Targets found in $NPUC_TARGETS_DIR and the built-in targets folder.
std::vector<TargetInfo> listTargets();
/// One target, by name (an unknown one is an Error naming the targets there are).
TargetInfo targetInfo(const std::string& name);

/// TIDL's pre-processing of an encoded calibration picture (`tidl-import` with rawSampleInData = 0; the TIDL guide's
/// preProcType table, §3.15.1.4.7, read as TI's import tool does where it is terse): the picture decoded as OpenCV's
/// imread gives it (B, G, R), then, for the input's height H and width W (docs/cli.md, tidl-import):
///   0 resize to 256x256 (INTER_AREA: kernels::resizeAreaHwc), the centre H x W;  1 the same, (104, 117, 123) subtracted;
///   2 RGB, the centred 7/8, resized to H x W, 128 subtracted;  3 RGB, resized to 32x32, the centre H x W;
///   4 resized to H x W;  5 RGB, resized to H x W, 128 subtracted;
///   6 RGB, resized to H x W where it differs, (v - (123.68, 116.28, 103.53)) / (58.395, 57.12, 57.375);
///   256 resized where it differs, (v - in_mean[c]) * in_scale[c] (B, G, R).
/// 1, 2 and 5 clamp the difference to [-128, 127] (TIDL's signed 8-bit input); a 1-channel input takes the first
/// plane. Returns the [1, channels, H, W] float32 sample. A picture that cannot be read or decoded is an Error of
/// kInvalidInput or kIo, one the rule cannot take (a crop larger than its frame) of kInvalidArgument; both name it.
Tensor tidlPreprocessPicture(const std::filesystem::path& picture, int pre_proc_type, int64_t channels, int64_t height, int64_t width,
                             const std::vector<double>& in_mean = {}, const std::vector<double>& in_scale = {});
/// The same for a decoded frame (a video's: 8-bit B, G, R interleaved, frame_height x frame_width, as OpenCV's
/// VideoCapture gives it); `name` names it in errors.
Tensor tidlPreprocessFrame(const uint8_t* bgr, int64_t frame_height, int64_t frame_width, const std::string& name, int pre_proc_type,
                           int64_t channels, int64_t height, int64_t width, const std::vector<double>& in_mean = {},
                           const std::vector<double>& in_scale = {});
/// A folder of pictures as calibration samples (translate / quantize --calib NAME=DIR; docs/calibration.md): how each
/// becomes a sample of the input. Decoded (JPEG, PNG, BMP, PGM/PPM, TGA), resized to the input's H x W with
/// INTER_AREA (kernels::resizeAreaHwc, OpenCV's bits), in R, G, B order (B, G, R with `bgr`; a 1-channel input takes
/// the luma, OpenCV's BGR2GRAY), then (v - mean[c]) * scale[c] per channel in double, rounded to float32 once (one
/// value: every channel).
struct PictureSamples {
  std::vector<double> mean{0.0}, scale{1.0 / 255.0};
  bool bgr = false;
};
/// The pictures as one float32 tensor of samples stacked on the first axis for an input of shape `input`: [1, C, H,
/// W] (C 1 or 3) or, channel last, [1, H, W, C]. Errors name the picture (not decodable) or the rule (the input's
/// shape, the number of mean / scale values).
Tensor picturesAsSamples(const std::vector<std::filesystem::path>& pictures, const Shape& input, const PictureSamples& o);
/// A folder given as samples (--calib NAME=DIR, tune's --eval; docs/calibration.md): its .npy shards (each stacks
/// samples along its first axis) or its pictures (.png, .jpg, .jpeg, .bmp, .pgm, .ppm, .tga; picturesAsSamples),
/// each kind in name order, the other empty. A folder of both kinds (kInvalidArgument: which would the user mean?)
/// or of neither (kInvalidInput) is an Error; its message does not name the folder (the caller's prefix does).
struct SampleFolder {
  std::vector<std::filesystem::path> shards, pictures;
};
SampleFolder sampleFolder(const std::filesystem::path& dir);

/// The supported-operator page of a target (Markdown).
std::string supportedOpsPage(const std::string& target);
/// Creates an output folder and its parents; an existing non-folder, or one that cannot be created (/proc, no
/// permission, a file on the way), is an Error (kIo) naming `what` and the path.
void makeOutputFolder(const std::filesystem::path& dir, const char* what);
/// Checks that a name given for output files (PREFIX) is one plain file-name component (not empty, not "." or "..",
/// no separator or control character, not starting with '.'); throws Error (kInvalidArgument) naming `what`.
void checkOutputName(const std::string& name, const char* what);
/// A CSV field (RFC 4180): as it is, or in double quotes with its quotes doubled when it holds a comma, a quote, a
/// carriage return or a newline. Every CSV file npuc writes goes through it.
std::string csvField(const std::string& s);
/// Writes PREFIX_error_report.csv, .json and .xlsx (each written atomically) into prefix's folder (created when
/// missing); prefix's last part must be a plain name (one file-name component). Returns the files written.
std::vector<std::string> writeCheckReport(const std::vector<CheckRow>& rows, const std::string& target,
                                          const std::string& model, const std::filesystem::path& prefix);

/// int8 quantization as QuantizeLinear / DequantizeLinear pairs (docs/numerics.md, "int8-affine as QDQ").
struct QuantizeOptions {
  /// Calibration samples per model input: tensors stacking samples of its shape along the first axis.
  std::map<std::string, std::vector<Tensor>> calibration;
  std::string method = "minmax";  // activation ranges: minmax | percentile | entropy | mse (docs/calibration.md)
  /// Activations: "affine" (scale and zero point spanning the range), "symmetric" (zero point 0, scale max|x| / 127) or
  /// "radix" (Kneron's int8-radix: zero point 0 and
  /// a power-of-two scale 2^-radix; docs/numerics.md). Weights are per-channel symmetric either way.
  std::string scheme = "affine";
  double percentile = 99.99;      // for method percentile
  bool per_channel = true;        // weights per output channel (opset >= 13), else per tensor
  int threads = 0;                // calibration threads (0: all cores)
  /// Also turn each DequantizeLinear -> Conv -> QuantizeLinear run into one integer convolution (ai.npuc QConv:
  /// int8 operands, int32 accumulation, multiplier + shift requantization; docs/numerics.md), and each such run
  /// around an Add of two same-shape tensors into an integer addition (ai.npuc QAdd), a Gemm / 2-D MatMul by
  /// constant weights into a 1x1 QConv, a GlobalAveragePool into an integer mean (ai.npuc QGlobalAvgPool) and an
  /// AveragePool into an integer windowed mean (ai.npuc QAvgPool), as int8-affine packages compute them. The result is then npuc's own model (not standard ONNX).
  bool integer_layers = false;
  /// When set: also write the quantized model as standard ONNX QuantizeLinear / DequantizeLinear pairs (before any
  /// integer-layer fusion) to this file, for any ONNX runtime.
  std::filesystem::path qdq_onnx;
  /// Per-layer overrides: layers kept in float32 (by node name: float weights, computed in float between dequantize
  /// and quantize conversions), and tensors quantized over a forced [lo, hi] (by name) instead of their calibrated
  /// range. Unknown names are errors.
  std::vector<std::string> keep_float;
  std::map<std::string, std::pair<double, double>> ranges;
  /// Bias correction (docs/calibration.md): each Conv / Gemm's float bias loses the mean shift its int8 weights cause
  /// on each output channel, measured with the float model's input means on the calibration samples.
  bool bias_correction = false;
  /// AdaRound (docs/calibration.md): each Conv / Gemm's int8 weights rounded up or down so that its output on the
  /// calibration samples (the float model's inputs, at most 64 samples) moves least, instead of to nearest. With
  /// bias_correction the bias then loses the mean shift the chosen codes leave.
  bool adaround = false;
  /// Cross-layer equalization before calibration (docs/calibration.md): "" off; "relu" consecutive convolutions
  /// through no activation, Relu or LeakyRelu (the same function); "relu6" Relu6 replaced by Relu first (the paper's
  /// choice: what the model computes changes where an activation exceeds 6), then as "relu".
  std::string equalize;
  /// Bias absorption after the equalization (docs/calibration.md; quant/bias_absorption.hpp): a channel a Relu never
  /// takes down to zero on the calibration samples gives its floor (less three standard deviations) to the next
  /// unpadded convolution's bias, so the activation between them is quantized over a narrower range.
  bool absorb_bias = false;
};
/// One tensor of the quantization table.
struct QuantizedTensor {
  std::string name, kind;  // kind: activation | weight | bias
  double lo = 0, hi = 0;   // the float range mapped onto int8 (weights: ±max|W| over their channels)
  double scale = 0;        // activations: the scale; weights / biases: the largest channel scale
  int zero_point = 0;
  int64_t channels = 1;
  std::string warning;
  std::string note;  // weights: what chose their codes besides rounding to nearest ("AdaRound: output error …")
  /// Activations: 10·log10(Σ float² / Σ (float − quantized)²) over up to 32 calibration samples, the float model's
  /// tensor against the quantized model's dequantized copy (the error of every layer up to here); NaN where the
  /// copy is gone (an integer layer reads the int8 tensor itself) or the float tensor is all zero.
  double snr_db = 0;
  double saturated = 0;  // activations: the fraction of calibration values outside [lo, hi] (clipped)
};
struct QuantizeReport {
  std::vector<QuantizedTensor> tensors;
  std::vector<std::string> warnings;
  size_t samples = 0;       // calibration samples used
  int integer_layers = 0;   // layers (convolutions, Gemms, additions, global and windowed average pools) turned into integer layers (QuantizeOptions::integer_layers)
  int bias_corrected = 0;   // layers whose bias the bias correction changed
  int bias_absorbed = 0;    // layers whose bias the bias absorption lowered (QuantizeOptions::absorb_bias)
};

/// The quantization table (name, kind, lo, hi, scale, zero_point, channels, snr_db, saturated, warning), written
/// atomically; the format follows the file's extension: .xlsx (a workbook), .html (one self-contained page: rows with
/// a warning highlighted, each activation's SNR as a bar), anything else CSV.
void writeQuantizeTable(const QuantizeReport& r, const std::filesystem::path& file);

class Model {
 public:
  static Model load(const std::filesystem::path& path, const LoadOptions& opts = {});
  /// A Caffe model: network description and trained weights (the same as load with opts.caffe_model set).
  static Model loadCaffe(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                         LoadOptions opts = {});
  static Model fromOnnxBytes(const std::string& bytes, const std::string& name, const LoadOptions& opts = {});

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  std::vector<NodeInfo> nodes() const;
  ModelStats stats() const;
  /// Text dump of the IR.
  std::string dump() const;
  /// The translator's graph optimizer applied to a copy: BatchNorm folding (unless fold_batchnorm is false), pattern
  /// detection (Swish, Mish, HardSwish, GlobalAveragePool and Flatten equivalents), activation fusion; optionally
  /// Relu6 -> Relu.
  Model optimized(bool relu6_to_relu = false, bool fold_batchnorm = true) const&;
  /// The same on a model not needed afterwards: its graph is optimized in place of a copy (unless shared).
  Model optimized(bool relu6_to_relu = false, bool fold_batchnorm = true) &&;
  /// A copy with a DRP-AI pre/post-processing definition (docs/prepost.md) inserted as graph nodes: the new inputs
  /// are the input_to_pre tensors (camera frames), the outputs the output_from_post ones. The definition is validated
  /// against this model first (the manual's messages; the ONNX-vs-YAML size check unless not_check_size).
  struct PrePostOptions {
    bool full_format = false;     // -PrePostFULL
    bool check_prepost = false;   // -CheckPrePost ON: name mismatches as [Error Y01]
    bool not_check_size = false;  // -NotCheckSizeONNXvsYAML
  };
  Model withPrePost(const std::filesystem::path& definition, const PrePostOptions& options) const;
  /// Where the pre/post-processing of a model made by withPrePost meets the original model (empty otherwise): per
  /// input_to_body / output_from_body declaration, the model's value and the value holding the same numbers in
  /// the declared order, shape and type (checkPrePostBoundaries checks them on a run's values).
  std::vector<PrePostBoundary> prePostBoundaries() const;
  /// A copy with Ascend-style AIPP stages (docs/aipp.md) in front of the inputs an `aipp_op { … }` configuration
  /// names: each such input becomes a uint8 frame input of the same name ([N, image bytes]), plus a parameter
  /// input "<input>_aipp" for a dynamic aipp_op. Static blocks are validated against the input here.
  Model withAipp(const std::filesystem::path& config) const;
  /// A copy quantized to int8-affine in QDQ form, calibrated on `o.calibration` with the reference engine: weights
  /// int8 per channel, biases int32, every stored activation int8 per tensor (docs/numerics.md). The copy runs on
  /// the engine (Session) and saves as standard ONNX (saveOnnx) that other runtimes run on their int8 paths.
  Model quantizedQdq(const QuantizeOptions& o, QuantizeReport* report = nullptr) const;
  /// Checks every node of the optimized model against a target's operator constraints (name or path of a
  /// targets/*.yaml). Empty when everything is supported. `relax`: the target's relaxations to apply (--relax; names
  /// of its `relaxations`, or "all"), whose rules are then not checked: what npuc runs beyond the vendor's manual.
  std::vector<CheckRow> check(const std::string& target, bool relu6_to_relu = false,
                              const std::vector<std::string>& relax = {}) const;
  /// The cost model's estimate of this model's nodes, as they are, on a target (docs/cost-model.md; on an optimized()
  /// model it is translate's, before lowering removes layers that become aliases): per node in graph order, the engine
  /// the target's table puts it on (name and kind; "folded", or "unsupported" with kind ""), its MACs and its time.
  struct NodeEstimate {
    std::string name, engine, engine_kind;
    int64_t macs = 0;
    double time_us = 0;
  };
  std::vector<NodeEstimate> estimate(const std::string& target) const;

  /// The model as ONNX (loads back with the same outputs and passes the ONNX checker).
  std::string toOnnxBytes() const;
  /// The model as an ONNX file for other tools: npuc's own fused forms written as standard ONNX ops where ONNX has
  /// them (a Conv with a fused activation as Conv and the activation, Swish / Mish / HardSwish, Focus, a MaxPool
  /// padded with a value); ops without an ONNX form (pre/post-processing, integer layers) stay in ai.npuc.
  void saveOnnx(const std::filesystem::path& path) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

/// A dynamic AIPP parameter block (the seed's kAippDynamicPara bytes) from a file: `.yaml` / `.yml` with the seed's
/// field names (docs/aipp.md), anything else taken as the raw bytes. Throws kInvalidInput naming the file and field.
std::vector<uint8_t> loadAippParams(const std::filesystem::path& file);

/// Runs a model on the reference engine (float32 oracle). One Session per thread; sessions are independent.
struct NodeProfile {
  std::string name;
  std::string op;
  double ms = 0;
};

class Session {
 public:
  explicit Session(const Model& model, int threads = 1, bool profile = false);
  /// Per-node wall times of the last run, in execution order (empty unless profiling was asked for).
  std::vector<NodeProfile> profile() const;
  ~Session();
  Session(Session&&) noexcept;
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  /// Runs and calls `cb(value_name, tensor)` for every node output as it is computed (for traces and layer
  /// comparisons; the tensor is valid during the call).
  using ValueCallback = std::function<void(const std::string& value, const Tensor& t)>;
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, const ValueCallback& cb);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads an ONNX TensorProto file (the .pb files of ONNX test data); `name` receives the tensor's name.
Tensor readOnnxTensor(const std::filesystem::path& path, std::string* name = nullptr);
/// Runs the ONNX checker over serialised model bytes; throws npuc::Error on failure.
void checkOnnx(const std::string& bytes, const std::string& name);

/// Reads / writes NumPy .npy files.
Tensor readNpyFile(const std::filesystem::path& path);
void writeNpyFile(const std::filesystem::path& path, const Tensor& t);

}  // namespace npuc
