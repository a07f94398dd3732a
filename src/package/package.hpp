// The npuc object package: what the compiler writes into output/PREFIX/ and the runtime loads. It is the only
// thing the compiler and the runtime share. The format is documented in docs/package-format.md; this header is
// its definition in code. Everything is little-endian.
//
// Files (version 1):
//   manifest.json       format, version, target, numerics, address map, inputs/outputs, layers (descriptor ->
//                       ONNX nodes), every file's size and SHA-256, and the content hash over them
//   aimac_desc.bin      MAC-engine descriptor stream   (loaded at desc_aimac)
//   drp_desc.bin        vector-engine descriptor stream (loaded at desc_drp)
//   drp_param.bin       layer parameters, an image of the drp_param space
//   PREFIX_weight.dat   weights and biases, an image of the weight space
//   PREFIX_drpcfg.mem   the vector-engine library table, an image of the drp_config space
//   drp_lib_info.txt    per library: calls and how many end with an interrupt (informational)
#pragma once

#include "kernels/detection.hpp"
#include "kernels/layers.hpp"
#include "kernels/pow2.hpp"
#include "kernels/recurrent.hpp"
#include "npuc/dtype.hpp"
#include "package/shape_ranges.hpp"
#include "plugin/param.hpp"
#include "support/numerics.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace npuc::package {

inline constexpr uint32_t kFormatVersion = 2;  // 2: the manifest is covered by content_hash; unused references zero
inline constexpr uint64_t kMaxManifestBytes = 64u << 20;  // a manifest is refused above this size
inline constexpr int kMaxJsonDepth = 16;                  // and above this nesting (the format needs 4)
inline constexpr char kDescMagic[8] = {'N', 'P', 'U', 'C', 'D', 'E', 'S', 'C'};
inline constexpr char kCfgMagic[8] = {'N', 'P', 'U', 'C', 'D', 'C', 'F', 'G'};
inline constexpr uint32_t kNoWait = 0xFFFF'FFFFu;
inline constexpr int kMaxRank = 6;   // dims in a TensorRef
inline constexpr int kMaxRefs = 8;   // tensor references per descriptor (inputs + outputs)

/// Element types are npuc's one DType (include/npuc/dtype.hpp); a package holds float32, float16, int8/uint8,
/// int16/uint16, int32 and int64 tensors, encoded on disk with ONNX TensorProto's codes (1, 10, 3, 2, 5, 4, 6, 7).
using ElemType = DType;
bool isPackageType(ElemType t);
size_t elemSize(ElemType t);       // 0 for a type a package cannot hold
std::string_view elemName(ElemType t);  // "float32", "float16", …
bool elemTypeValid(uint8_t code);  // an on-disk code of a type a package can hold

enum class Engine : uint8_t { kMac = 0, kVector = 1 };
const char* engineName(Engine e);  // "mac" / "vector"

/// Layer kinds: the enum and everything about a kind's identity come from layer_kinds.def (one line per kind: code,
/// name, engine, inputs, parameter words, class, doc — docs/package-format.md shows the same table).
enum class LayerKind : uint16_t {
#define NPUC_LAYER_KIND(E, code, name, engine, in_min, in_max, out_max, words, per_rank, cls, in_doc, param_doc) E = code,
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
};
/// Where a kind may run: one engine, or either (the target decides).
enum class EngineClass : uint8_t { Mac, Vector, Either };
/// What a kind does to its data: computes, moves bytes (no activation, any element type), or is a pre/post-
/// processing step (no activation, the element types of its reference kernel).
enum class KindClass : uint8_t { Compute, Moves, PrePost };
/// One row of layer_kinds.def.
struct LayerKindInfo {
  LayerKind kind;
  const char* name;
  EngineClass engine;
  int min_inputs, max_inputs;
  int max_outputs;            // outputs 1..max_outputs
  int words, words_per_rank;  // words = -1: computed (expectedParamWords)
  KindClass cls;
  const char* inputs_doc;
  const char* params_doc;
};
/// Every kind, in code order.
const std::vector<LayerKindInfo>& layerKinds();
/// The row of a kind, or nullptr for an unknown code.
const LayerKindInfo* layerKindInfo(LayerKind k);
const char* layerKindName(LayerKind k);  // "conv", "max_pool", … (nullptr for an unknown code)
/// The engine a kind runs on by default, and whether it may run on `e` (pooling may run on either engine: DRP-AI
/// pools on its DRP, TIDL on its EVE; the target decides).
Engine layerEngine(LayerKind k);
bool layerAllowedOn(LayerKind k, Engine e);
/// The table of docs/package-format.md ("### Layer kinds" and the unary / binary op codes), generated from the
/// .def files.
std::string layerKindsMarkdown();

/// The parameter words of a `detection_output` layer (layer_kinds.def gives the layout) and back; images and priors
/// come from the layer's tensors.
inline constexpr int kSsdWords = 10;
std::vector<uint32_t> ssdParams(const kernels::SsdParams& p);
kernels::SsdParams ssdFromParams(const uint32_t* w, int64_t images, int64_t priors);

/// The parameter words of a `recurrent` layer (layer_kinds.def gives the layout) and back: `inputs` / `outputs` the
/// present-flags words (kRnnIn*, kRnnOut*). rnnFromParams fills the cell, directions, layout, clip, the GRU / LSTM
/// flags, hidden and the activations; seq, batch and input come from the layer's tensors. It reads the words as they
/// are: the reader's check (validate_nn.cpp) bounds them first.
inline constexpr int kRnnWords = 34, kRnnMaxActivations = 6;
inline constexpr uint32_t kRnnInB = 1, kRnnInP = 2, kRnnInSeqLens = 4, kRnnInH0 = 8, kRnnInC0 = 16;
/// The int8 form (int8-affine packages): x int8, input 1 int8 [W | R], input 2 float32 [B | P | W's row scales | R's
/// row scales | x's scale | x's zero point], then the optional inputs (kernels::RnnTensors::xq).
inline constexpr uint32_t kRnnInInt8 = 32;
inline constexpr uint32_t kRnnOutY = 1, kRnnOutYh = 2, kRnnOutYc = 4;
std::vector<uint32_t> rnnParams(const kernels::RnnShape& s, uint32_t inputs, uint32_t outputs);
kernels::RnnShape rnnFromParams(const uint32_t* w);

/// Control layers (`if`, `loop`, `scan`; docs/package-format.md, "Control layers"): their parameter block is a header
/// (layer_kinds.def names its words; n_moves is the last) and n_moves moves of kMoveWords words each. A move copies
/// `rows` rows of `row_bytes` bytes, row r from src + t·src_step + r·src_row_stride to dst + t·dst_step +
/// r·dst_row_stride, at step t (count − 1 − step when `reverse`); a move whose steps are both 0 is the same copy at
/// every step (count 1). The regions are the descriptors that follow the layer in program order.
inline constexpr int kMoveWords = 11;
struct ControlMove {
  uint32_t phase = 0, count = 1, reverse = 0, src = 0, dst = 0, rows = 1, row_bytes = 0;
  uint32_t src_row_stride = 0, dst_row_stride = 0, src_step = 0, dst_step = 0;
  bool indexed() const { return src_step != 0 || dst_step != 0; }
};
/// The header words of a control kind (if 3, loop 7, scan 3), 0 for another kind.
uint32_t controlHeaderWords(LayerKind k);
/// The lengths of a control layer's regions (if: then, else; loop, scan: the body) from its words (checked first).
std::vector<uint32_t> controlRegions(LayerKind k, const std::vector<uint32_t>& words);
/// Move i of a control layer's words (checked first) and a move as words.
ControlMove controlMove(LayerKind k, const std::vector<uint32_t>& words, uint32_t i);
void appendMove(std::vector<uint32_t>& words, const ControlMove& m);
/// The bytes a move's source (or `destination`) spans from its first address over every step and row, saturated at
/// 2^64 − 1 (the reader refuses a range beyond the 32-bit address space).
uint64_t controlMoveSpan(const ControlMove& m, bool destination);
inline constexpr uint32_t kLoopWordIteration = 3, kLoopWordCondIn = 4, kLoopWordCondOut = 5;
/// Control layers nest at most this deep (the reader refuses more: the runtime runs a region from its control layer).
inline constexpr size_t kMaxControlDepth = 32;

/// The parameter words of a `resize` layer and back (layer_kinds.def gives the layout).
std::vector<uint32_t> resizeParams(const kernels::ResizeSpec& s);
kernels::ResizeSpec resizeSpecFromParams(const std::vector<uint32_t>& w, size_t rank);

/// The code of a reduction (ONNX op name "ReduceMean", …) in a kReduce descriptor, or nullopt.
std::optional<uint32_t> reduceOpCode(const std::string& onnx_op);

/// Operations of kUnary and kBinary descriptors, by code (the index in these lists; format version 1). Names
/// are the ONNX op names; the runtime maps them onto its kernels by name.
const std::vector<std::string>& unaryOpNames();
/// Per unary op code: the ONNX attributes its alpha and beta words come from ("" when none).
const std::vector<std::pair<std::string, std::string>>& unaryOpAttrs();
const std::vector<std::string>& binaryOpNames();

/// Fused activation of a descriptor (applied to the fp32 result before the output is stored).
enum class Act : uint8_t { kNone = 0, kRelu = 1, kClip = 2, kLeakyRelu = 3 };

/// How a reference's bytes lie in memory (byte 10 of a tensor reference). kRowMajor: as its dims say. kChannelLast: a
/// layer reads (or writes) the tensor of dims [N, C, S1, …] — what its kind computes on — while memory holds it as
/// [N, S1, …, C] (rank >= 3): a channel-last model's boundary (Appendix B of the DRP-AI manual), with no Transpose
/// layer. Inputs of any layer but a control layer; output 0 of a layer with one output.
enum class RefLayout : uint8_t { kRowMajor = 0, kChannelLast = 1 };

struct TensorRef {
  uint32_t addr = 0;   // absolute address in the address map
  uint32_t bytes = 0;  // numel * elemSize
  ElemType type = ElemType::kF32;
  uint8_t rank = 0;
  RefLayout layout = RefLayout::kRowMajor;
  std::array<uint32_t, kMaxRank> dims{};
  uint64_t numel() const;
};
/// The dims of the bytes in memory: `dims`, or [N, S1, …, C] for a kChannelLast reference.
std::vector<int64_t> storedDims(const TensorRef& r);
/// The transposes between a channel-last tensor's memory [N, S1, …, C] and the channels-first [N, C, S1, …] a layer
/// computes on, for rank r >= 3: {0, r-1, 1, …, r-2} reads memory as the layer's; {0, 2, …, r-1, 1} back.
std::vector<int64_t> channelLastToLayer(size_t rank);
std::vector<int64_t> layerToChannelLast(size_t rank);

/// One descriptor: 352 bytes on disk (see docs/package-format.md for the byte layout).
struct Descriptor {
  uint32_t seq = 0;        // global program order: all descriptors of both engines are numbered 0..N-1
  uint32_t wait = kNoWait; // seq of the other engine's descriptor that must finish first
  LayerKind kind = LayerKind::kCopy;
  uint16_t lib = 0;        // vector engine: library id (an entry of the drp_config table); MAC engine: 0
  Act act = Act::kNone;
  uint8_t n_in = 0, n_out = 0;
  uint8_t flags = 0;       // bit 0: raise an interrupt when done
  float act_a = 0, act_b = 0;
  uint32_t param_addr = 0, param_size = 0;  // parameter block (absolute address, bytes)
  std::array<TensorRef, kMaxRefs> refs{};   // inputs then outputs
  const TensorRef& in(int i) const { return refs[static_cast<size_t>(i)]; }
  const TensorRef& out(int i) const { return refs[static_cast<size_t>(n_in + i)]; }
};
inline constexpr uint8_t kFlagInterrupt = 1;
/// A layer computing on dynamic tensors (docs/package-format.md, "Dynamic tensors"): its references are its data
/// inputs, then one extent (int64 [rank]) per data input, its data outputs, then one extent per data output; the data
/// references give capacities. Only kinds for which layerTakesDynamic holds.
inline constexpr uint8_t kFlagDynamic = 2;
/// The kinds that take the dynamic flag (their reader's check holds at capacity; the runtime has their shape function).
bool layerTakesDynamic(LayerKind k);
/// A dynamic layer's data references only (inputs [0, n_in / 2), outputs [0, n_out / 2)), the flag cleared; the
/// descriptor itself otherwise.
Descriptor dataView(const Descriptor& d);
inline constexpr size_t kDescHeaderSize = 32;
inline constexpr size_t kTensorRefSize = 36;
inline constexpr size_t kDescriptorSize = 64 + kMaxRefs * kTensorRefSize;  // 352

/// A vector-engine library (the drp_config table entry descriptors name by id).
struct Library {
  uint16_t id = 0;
  uint16_t version = 1;
  std::string name;  // <= 23 characters
};
inline constexpr size_t kLibraryRecordSize = 32;

struct Element {
  std::string name;
  uint64_t addr = 0, size = 0;
};
struct SubSpace {
  std::string name;
  uint64_t addr = 0, size = 0;
  std::vector<Element> elements;
};

/// What an input fed by pre-processing holds (a camera frame), for tools that make frames from pictures
/// (`npuc simulate --input NAME=photo.jpg`).
struct ImageInfo {
  std::string format;  // "RGB", "BGR", "GRAY", or a YUV format name (kernels::yuvFormatName); empty: not an image
  uint32_t height = 0, width = 0;
  bool chw = false;    // RGB/BGR/GRAY stored planes first ([C, H, W]); otherwise HWC
  bool operator==(const ImageInfo&) const = default;
};

struct IoTensor {
  std::string name;
  TensorRef ref;
  ImageInfo image;  // inputs only
  // Outputs of a shape the data decide (a dynamic tensor: docs/package-format.md, "Dynamic tensors"): `ref` is its
  // capacity, and `extent` the int64 [rank] its layer writes with the actual dims (the tensor row-major at those
  // dims from its first byte). Absent: a static output.
  std::optional<TensorRef> extent{};
};

/// A parameter of a custom layer as the manifest records it (docs/custom-ops.md): the value npuc resolved for the
/// node (plugin::ParamValue); a tensor parameter is the descriptor's input `input`.
struct CustomParam : plugin::ParamValue {
  int32_t input = -1;
  bool operator==(const CustomParam&) const = default;
};
/// What runs a custom layer: the op, the plugin it was translated with, its parameters.
struct CustomLayer {
  std::string op, domain;         // domain "" = ai.onnx
  std::string library, sha256;    // the plugin's file name and the SHA-256 of its bytes
  uint32_t abi_version = 0;       // NPUC_CUSTOM_OP_ABI_VERSION it was translated with
  std::vector<CustomParam> params;
  bool operator==(const CustomLayer&) const = default;
};

/// What the manifest says about one descriptor.
struct LayerInfo {
  uint32_t seq = 0;
  Engine engine = Engine::kMac;
  uint32_t index = 0;  // position in its engine's stream
  std::string name;    // the layer (the optimized graph's node name)
  std::string opexp;   // fused ONNX ops, "Conv+BatchNormalization+Relu"
  std::vector<std::string> onnx_nodes;  // the source nodes: the optimized node, then those folded into it
  std::string output;  // name of the value it writes (its first, for a layer with several outputs)
  // A custom layer with several outputs (n_out > 1): the names of outputs 1 … n_out − 1. Written to the manifest as
  // "outputs", the list of every output's name, only when not empty.
  std::vector<std::string> extra_outputs;
  // int8-affine packages: the output is int8 codes of the float tensor `float_value`, real = (q - zero_point) *
  // scale (scale 0: not quantized). Written to the manifest as "quantization" only when set. int8-pow2 packages:
  // codes of `float_value` with scale 0 (2^-q is the runtime's, per frame), written as "codes_of".
  double scale = 0;
  int32_t zero_point = 0;
  std::string float_value;
  std::optional<CustomLayer> custom;  // custom layers only
  /// Its layers group (TIDL's layersGroupId: a pipeline stage, one simulated core each; runtime::Pipeline): 1 to
  /// kMaxGroups, non-decreasing in program order, on every layer or none (0: the package has no groups).
  uint32_t group = 0;
};
inline constexpr uint32_t kMaxGroups = 16;

/// The form a descriptor of an int8-pow2 package has: none (its float or data-movement form), max pooling over codes
/// (no table: the output keeps the input's slot), or a form whose last input is its table (conv, gemm and binary
/// add over codes, global average pooling over codes, quantize, dequantize). One definition for the reader and the
/// runtime.
enum class Pow2Form { kNone, kCodes, kTable };
Pow2Form pow2Form(Numerics numerics, const Descriptor& d);

/// int8-pow2 packages (docs/numerics.md): the numerics' options and how many slots (tensors with a q of their own)
/// its layers' tables use. Written to the manifest as "pow2".
struct Pow2Info {
  kernels::pow2::Options options;
  uint32_t slots = 0;
  bool operator==(const Pow2Info&) const = default;
};

struct Package {
  uint32_t version = kFormatVersion;
  std::string prefix, target;
  Numerics numerics = Numerics::kFp32;  // a family with packages (NumericsTraits::packages)
  std::string producer = "npuc";
  std::vector<SubSpace> address_map;
  std::vector<IoTensor> inputs, outputs;
  std::vector<Descriptor> mac, vec;
  std::vector<LayerInfo> layers;  // by seq
  std::vector<Library> libraries;
  std::vector<uint8_t> weights, params;  // images of the weight and drp_param spaces (may be shorter)
  std::optional<Pow2Info> pow2;          // int8-pow2 packages only
  std::optional<ShapeRanges> ranges;     // a package serving the sizes of ranged dimensions (shape_ranges.hpp)
  std::string content_hash;              // filled by write / read

  const Element* element(const std::string& name) const;
};

/// Serialises the binary streams (for writing and for tests).
std::vector<uint8_t> encodeDescriptors(const std::vector<Descriptor>& d, Engine e);
std::vector<uint8_t> encodeLibraries(const std::vector<Library>& libs);
/// The manifest's content_hash: SHA-256 over (name, NUL, the file's SHA-256 hex, newline) per listed file, in
/// order, then the same line for "manifest.json" with the SHA-256 of the manifest itself in canonical form (its
/// JSON without the content_hash field, compact, keys in file order): every byte the runtime reads is covered.
std::string contentHash(const std::vector<std::pair<std::string, std::string>>& name_and_sha256,
                        const std::string& manifest_sha256);
/// For tools and tests that change a package on purpose: the manifest text with each listed file's size and
/// SHA-256 and the content_hash recomputed from `files` (name -> bytes). Throws npuc::Error on a manifest it
/// cannot read.
std::string resealManifest(const std::string& manifest_json, const std::map<std::string, std::vector<uint8_t>>& files);

/// Writes every file of the package into `dir` (which must exist) and returns their names in writing order.
/// Sets p.content_hash. Same package, same bytes.
std::vector<std::string> writePackage(Package& p, const std::filesystem::path& dir);

/// Reads and validates a package directory. Treats every file as untrusted: sizes, versions, magic, the
/// address map (aligned, non-overlapping, inside 32 bits), every descriptor (kind, counts, types, shapes vs
/// bytes, every reference and parameter block inside the element space it must be in, program order and
/// waits), file hashes. Throws npuc::Error (kInvalidInput) naming the file, the field and the rule.
Package readPackage(const std::filesystem::path& dir);
/// The same from any file source (tests, the fuzzer): `source(name, max_bytes)` returns a file's bytes, or nullopt
/// when it does not exist; a file of more than max_bytes (the size the manifest declares) must be refused before
/// it is read (throw npuc::Error). `where` names the package in messages.
using FileSource = std::function<std::optional<std::vector<uint8_t>>(const std::string& name, uint64_t max_bytes)>;
Package readPackage(const FileSource& source, const std::string& where);

/// Validates a package in memory (what readPackage runs after parsing; writePackage runs it too).
void validatePackage(const Package& p, const std::string& where);

/// The parameter block of a descriptor as 32-bit words (validated: inside drp_param). Floats are stored as
/// their bits: use paramFloat.
std::vector<uint32_t> paramWords(const Package& p, const Descriptor& d);
float paramFloat(uint32_t word);
uint32_t floatParam(float f);
/// The window of a max_pool / avg_pool descriptor (4-D x and y; `words` its parameters: kh kw sh sw dh dw pt pl pb pr
/// count_include_pad pad_value) as the pooling kernels take it.
kernels::Pool2dShape poolShapeOf(const Descriptor& d, const std::vector<uint32_t>& words);
/// The number of parameter words a descriptor of this kind needs (depends on the rank of its first input).
uint32_t expectedParamWords(const Descriptor& d);

}  // namespace npuc::package
