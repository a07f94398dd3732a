// npuc runtime: loads an object package (output/PREFIX/) and runs it on the simulated device, bit-exactly to the
// package's numerics (docs/simulator.md). It depends on the package format and the kernels only — never on the
// compiler — so it can ship alone.
//
//   npuc::Runtime rt("output/resnet50", {.threads = 2});
//   rt.setInput("input", tensor);          // float32 is converted to the package's element type
//   rt.run();
//   npuc::Tensor y = rt.outputFloat("logits");
//
// One Runtime is used by one thread at a time; several Runtimes in one process are independent.
#pragma once

#include "npuc/error.hpp"
#include "npuc/tensor.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace npuc {

struct RuntimeOptions {
  int threads = 1;     // worker threads of this runtime (its own pool)
  bool exact = false;  // run the scalar reference kernels (the specification) instead of the SIMD ones, on `threads` too
  bool profile = false;  // record each layer's wall time (layerTimes())
};

/// The camera frame a pre-processed input holds (empty format: the input is not an image).
struct RuntimeImage {
  std::string format;  // "RGB", "BGR", "GRAY", or a YUV format: "YUYV", "UYVY", "NV12", "IYUV", … (docs/package-format.md)
  int64_t height = 0, width = 0;
  bool chw = false;    // RGB/BGR/GRAY planes first
};

struct RuntimeTensor {
  std::string name;
  DType dtype = DType::kUndefined;  // element type in device memory (float16 for fp16 packages)
  Shape shape;
  uint64_t address = 0;
  RuntimeImage image;  // inputs fed by pre-processing
  std::string aipp_for;  // the parameter input of a dynamic AIPP stage: the frame input it configures (setDynamicAipp)
  bool channel_last = false;  // a layer's output written channel-last ([N, S…, C]: a channel-last model's boundary)
  // An output whose shape the data decide (NonZero's): `shape` is its capacity; Runtime::output returns it at the
  // dims of the last run, read from its extent (int64 [rank] at extent_address). docs/package-format.md.
  bool dynamic = false;
  uint64_t extent_address = 0;
};

struct RuntimeLayer {
  int seq = 0;            // program order
  std::string engine;     // "mac" | "vector"
  int index = 0;          // position in its engine's descriptor stream
  std::string kind;       // "conv", "binary", …
  std::string name;       // layer name (the optimized graph's node)
  std::string opexp;      // fused ONNX ops
  std::vector<std::string> onnx_nodes;
  RuntimeTensor output;   // the value it writes (name = the ONNX value name); a layer of several outputs: its first
  std::vector<RuntimeTensor> more_outputs;  // a custom layer of several outputs: outputs 1, 2, … (empty otherwise)
  int output_index = 0;   // in a LayerCallback: which of the layer's outputs `output` is (0: output, k: more_outputs[k-1])
  std::vector<std::string> inputs;  // the values it reads: package inputs and earlier layers' outputs, in operand order
  int group = 0;          // its layers group (a pipeline stage: Pipeline), 0 when the package has none
  // int8-affine packages: an int8 output is the codes of the float tensor `float_value`, real = (q - zero_point) *
  // scale (scale 0 otherwise). int8-pow2 packages: a layer writing codes names `float_value` with scale 0 (its scale
  // 2^-q changes from frame to frame: Runtime::outputScale).
  double scale = 0;
  int zero_point = 0;
  std::string float_value;
};

/// One gear of a package with gears (translated with --dynamic_batch_size or --dynamic_image_size): the batch size, or
/// the height and width, of the dynamic input.
struct RuntimeGear {
  int64_t batch = 0;
  int64_t height = 0, width = 0;
};
/// A ranged dimension of a package serving a shape range (translated with --input_shape LO~HI; docs/aipp.md, "Gears
/// and shape ranges"): dimension `dim` of `value` — a package input, or the picture a dynamic AIPP stage makes — takes
/// any size in [lo, hi].
struct RuntimeRange {
  std::string value;
  int64_t dim = 0, lo = 0, hi = 0;
  /// Other ranged dims the model needs of the same size (an image and its mask): they take this one's size.
  std::vector<std::pair<std::string, int64_t>> also;
  /// Whether dimension `d` of `name` is this range's.
  bool covers(const std::string& name, int64_t d) const {
    if (name == value && d == dim) return true;
    for (const auto& [v, k] : also)
      if (v == name && k == d) return true;
    return false;
  }
};
/// Dynamic AIPP (docs/aipp.md) by field: one image's kAippDynamicBatchPara, the seed's fields in the seed's types
/// (dtc_pixel_min_chn and dtc_pixel_var_reci_chn as numbers, stored in the block as float16).
struct DynamicAippImage {
  int8_t crop_switch = 0, scf_switch = 0;
  int8_t padding_switch = 0;  // 0 off, 1 padding_value, 2 edge copy, 3 block copy, 4 mirror copy
  int8_t rotate_switch = 0;   // 0..3: 0, 90, 180, 270 degrees clockwise
  int32_t crop_start_pos_w = 0, crop_start_pos_h = 0, crop_size_w = 0, crop_size_h = 0;
  int32_t scf_input_size_w = 0, scf_input_size_h = 0, scf_output_size_w = 0, scf_output_size_h = 0;
  int32_t padding_size_top = 0, padding_size_bottom = 0, padding_size_left = 0, padding_size_right = 0;
  std::array<int16_t, 4> dtc_pixel_mean_chn{};
  std::array<float, 4> dtc_pixel_min_chn{};
  std::array<float, 4> dtc_pixel_var_reci_chn{1.f, 1.f, 1.f, 1.f};
  bool operator==(const DynamicAippImage&) const = default;
};
/// kAippDynamicPara by field, with one record per image of the batch (batchNum = batch.size()).
struct DynamicAippParams {
  uint8_t input_format = 1;  // aclAippInputFormat: 1 YUV420SP_U8, 2 XRGB8888_U8, 3 RGB888_U8, 4 YUV400_U8
  int8_t csc_switch = 0, rbuv_swap_switch = 0, ax_swap_switch = 0;
  int32_t src_image_size_w = 0, src_image_size_h = 0;
  std::array<std::array<int16_t, 3>, 3> csc_matrix{};  // [row][column], in 1/256
  std::array<uint8_t, 3> csc_output_bias{}, csc_input_bias{};
  std::vector<DynamicAippImage> batch = std::vector<DynamicAippImage>(1);
  bool operator==(const DynamicAippParams&) const = default;

  /// The kAippDynamicPara bytes (160 + 96 (batch.size() - 1); reserved bytes zero; min / var_reci rounded to float16
  /// to nearest even). kInvalidArgument for an empty batch or more than 127 images (batchNum is an int8).
  std::vector<uint8_t> encode() const;
  /// A block's fields (kInvalidInput for a block whose size does not follow from its batchNum).
  static DynamicAippParams decode(const std::vector<uint8_t>& block);
  /// From the seed's field names, as the YAML form of `npuc simulate --aipp` lays them out (docs/aipp.md; one table of
  /// names for YAML, this, Python's dicts and the C API): `fields` the top level (name, value as text: a decimal
  /// integer, a number for dtcPixelMin/VarReciChnN, a format name or code for inputFormat; batchNum, if given, must
  /// equal the number of records); `batch` the records of a `batch` list, or empty for one record whose fields
  /// stand at the top level. kInvalidInput naming the field ("batch[1].cropSizeW: …") for an unknown, repeated,
  /// missing (inputFormat, srcImageSizeW/H; cropSizeW/H with cropSwitch 1, scfInput/OutputSizeW/H with scfSwitch 1,
  /// the nine cscMatrixRxCy with cscSwitch 1) or misplaced field, or a value that does not fit the field's type.
  static DynamicAippParams fromFields(const std::vector<std::pair<std::string, std::string>>& fields,
                                      const std::vector<std::vector<std::pair<std::string, std::string>>>& batch = {});
};

/// Called after every layer with the layer and a view of its output in device memory (valid during the call); for a
/// layer of several outputs, once per output in order, `output` and `output_index` naming the one the view holds.
using LayerCallback = std::function<void(const RuntimeLayer&, const Tensor& output)>;

class Runtime {
 public:
  /// Loads and validates a package directory; throws npuc::Error (kInvalidInput, naming the file, the field and
  /// the rule) for anything malformed.
  explicit Runtime(const std::filesystem::path& package_dir, RuntimeOptions opts = {});
  /// Registers the custom ops of a plugin library (docs/custom-ops.md) for every Runtime of this process: a package
  /// with custom layers loads only once the plugin it was translated with (same SHA-256) is registered. Throws
  /// npuc::Error naming the library for a file that is not a shared library, not an npuc plugin, of another ABI
  /// version, or with a faulty op table. Registering the same file again does nothing.
  static void registerCustomOp(const std::filesystem::path& library);
  ~Runtime();
  Runtime(Runtime&&) noexcept;
  Runtime& operator=(Runtime&&) noexcept;

  const std::string& target() const;
  const std::string& numerics() const;  // "fp32" | "fp16"
  const std::string& contentHash() const;
  const std::vector<RuntimeTensor>& inputs() const;
  const std::vector<RuntimeTensor>& outputs() const;
  const std::vector<RuntimeLayer>& layers() const;
  /// Wall time of each layer in the last run, in ms, by seq (empty unless RuntimeOptions::profile).
  const std::vector<double>& layerTimes() const;
  /// The real value of one step of layer `seq`'s int8 codes as of now (in a LayerCallback: the frame just computed;
  /// real = (code - zero_point) * scale): int8-affine, its fixed scale (RuntimeLayer::scale); int8-pow2, 2^-q with q
  /// the dynamic quantization's q of those codes this frame (zero point 0); 0 for an output that is not codes.
  double outputScale(int seq) const;
  /// How many values of layer `seq`'s float input were negative in the last run where the layer turns them into
  /// unsigned codes (an int8-pow2 quantize whose codes are unsigned: an inElementType 0 input, or a tensor calibrated
  /// >= 0): each became code 0. 0 for every other layer.
  int64_t clippedInputs(int seq) const;

  /// Copies an input into data_in. Accepts the device element type, or for a float input float32, float16 or
  /// bfloat16 (widened exactly, or rounded to the device type, to nearest even). The shape must match exactly (another shape with the same element count is refused too),
  /// or, for a package serving shape ranges, lie inside them (setInputShape first).
  void setInput(const std::string& name, const Tensor& t);
  /// The same from raw memory: `data` holds the tensor's elements of `dtype` in `shape`, row-major (copied once,
  /// into the device memory).
  void setInput(const std::string& name, DType dtype, const Shape& shape, const void* data);
  /// For inputs that hold a camera frame (RuntimeTensor::image): a JPEG or PNG picture made into that frame — decoded
  /// to RGB, resized to the frame's size (bilinear), converted to its format (YUV: ITU-R BT.601 limited range) and
  /// element type. The result goes to setInput. Throws (kInvalidInput) naming the file for an unreadable picture,
  /// (kInvalidArgument) for an input that is not an image.
  Tensor imageInput(const std::string& name, const std::filesystem::path& picture) const;
  /// Dynamic AIPP (docs/aipp.md): sets the parameter block of the AIPP stage that reads `input` (the frame input, or
  /// the parameter input "<input>_aipp" itself) — the kAippDynamicPara bytes of the seed, 160 + 96 * (N - 1) bytes.
  /// With batch gears the block is for the largest batch (the seed: batchSize set to the maximum) and each gear takes
  /// its first records; with image-size gears it is set on the selected gear and may not crop or pad (the seed).
  /// Checked here (kInvalidArgument with the rule broken) and again by the stage on every run, which refuses a block
  /// written by setInput that breaks a rule (kInvalidInput). The block stays until it is set again.
  void setDynamicAipp(const std::string& input, const std::vector<uint8_t>& params);
  /// The same by field: params.encode(), then the same checks.
  void setDynamicAipp(const std::string& input, const DynamicAippParams& params);
  /// Packages with gears (docs/package-format.md, "Gears"; Ascend's aclmdlSetDynamicBatchSize / aclmdlSetDynamicHWSize):
  /// the gears, in the order translated (empty for an ordinary package), the kind ("batch" | "image_size") and the
  /// input they size. A runtime starts on the first gear; selecting another switches every other call (inputs,
  /// outputs, layers, run, …) to that gear's program. Inputs set and the dynamic AIPP block stay with each gear.
  const std::vector<RuntimeGear>& gears() const;
  const std::string& gearKind() const;
  const std::string& gearInput() const;
  /// Selects the gear of batch size `n` / of height x width; kInvalidArgument listing the gears for any other.
  void setDynamicBatchSize(int64_t n);
  void setDynamicHWSize(int64_t height, int64_t width);
  /// Packages serving shape ranges (docs/package-format.md, "Shape ranges"; Ascend's --input_shape LO~HI): the ranged
  /// dimensions (empty for any other package). A runtime starts at every range's largest size. setInput with a shape
  /// inside the ranges, setInputShape, or (behind a dynamic AIPP stage) setDynamicAipp with a block whose picture is of
  /// another size inside them switches every other call (inputs, outputs, layers, run, …) to the package at those
  /// sizes: its tensors' dims from the package's table, checked by the package reader's rules, made on first use and
  /// kept (the last few). Inputs already set whose shape does not move with the ranges, and the AIPP block, go along.
  const std::vector<RuntimeRange>& shapeRanges() const;
  /// Selects the sizes of input `name`'s ranged dimensions; kInvalidArgument for a shape outside the ranges (or that
  /// differs from the input's elsewhere).
  void setInputShape(const std::string& name, const Shape& shape);
  /// Runs every descriptor of both engines in program order. Throws (kInvalidInput) on a device fault.
  /// int8-pow2 packages (TIDL's dynamic quantization, docs/numerics.md) are not stateless: each run is one frame,
  /// and the range history it leaves sets the next frame's scales.
  void run(const LayerCallback& cb = {});
  /// int8-pow2 packages: forgets the frames run so far (every tensor's range back to its calibrated one), as a
  /// freshly loaded runtime. Other packages have no state: nothing to do.
  void resetState();
  /// An output in the device element type / converted to float32.
  Tensor output(const std::string& name) const;
  Tensor outputFloat(const std::string& name) const;

  /// Convenience: inputs in order (float32 or device type), run, float32 outputs in order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const LayerCallback& cb = {});

  struct Impl;

 private:
  friend class Pipeline;
  std::unique_ptr<Impl> impl_;
};

/// Model bundles (Kneron's multi-model NEF, whose model_id picks a model; docs/package-format.md, "Model bundles"): a
/// folder of packages each under an id, listed by its models.json. bundleModelIds: the ids in `dir` (empty when it
/// is no bundle); bundleModel: the package folder of model `id` (kInvalidArgument naming the ids for another).
/// A Runtime opened on a bundle refuses it, naming the ids.
std::vector<int64_t> bundleModelIds(const std::filesystem::path& dir);
std::filesystem::path bundleModel(const std::filesystem::path& dir, int64_t id);
/// Writes the bundle <root>/<name>/ of `models` (id, package folder: an ordinary package or one with gears, each read
/// and checked first), each copied into model_<id>/, and its models.json; published atomically (nothing half-written
/// on an error). Returns the bundle's folder.
std::filesystem::path writeBundle(const std::filesystem::path& root, const std::string& name,
                                  const std::vector<std::pair<int64_t, std::filesystem::path>>& models);

/// A package whose layers are in groups (TIDL's layersGroupId: `translate --layer-group` / `--layer-groups auto`;
/// docs/runtime-api.md, "Pipelines") run as a pipeline of simulated cores: one Runtime per group, each on its own
/// thread, every frame handed from group to group — the bytes the later groups read (a core-to-core transfer) and
/// the int8-pow2 scales of the tensors they read — so that group 2 works on frame i while group 1 works on frame
/// i + 1. The outputs are those of Runtime::run on the same frames in the same order, bit for bit, dynamic
/// quantization included. A package without groups runs as one stage. Not for packages with gears.
class Pipeline {
 public:
  /// opts.threads: worker threads of each stage's runtime.
  explicit Pipeline(const std::filesystem::path& package_dir, RuntimeOptions opts = {});
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// The group of each stage, in pipeline order.
  const std::vector<int>& groups() const;
  const std::vector<RuntimeTensor>& inputs() const;
  const std::vector<RuntimeTensor>& outputs() const;
  /// Runs frames[i] (one tensor per package input, in inputs() order) through the stages; returns each frame's
  /// outputs as float32 (in outputs() order). Throws what a stage throws (the other stages stopped; every stage's
  /// state then reset, as by resetState()).
  std::vector<std::vector<Tensor>> run(const std::vector<std::vector<Tensor>>& frames);
  /// Of the last run: each stage's mean busy time per frame (ms: its layers and the hand-over into it), the run's
  /// wall time (ms) and the bytes handed into each stage per frame.
  const std::vector<double>& stageMs() const;
  double wallMs() const;
  const std::vector<uint64_t>& handoffBytes() const;
  /// int8-pow2: every stage's dynamic quantization back to the calibrated ranges (Runtime::resetState).
  void resetState();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace npuc
