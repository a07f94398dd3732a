// Helpers shared by the subcommands: option parsing (name=shape, name=file), printing, timing.
#pragma once

#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include "cli_args.hpp"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace npuc::cli {

/// Throws Error(code, the formatted message).
template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... a) {
  throw Error(code, fmt::format(f, std::forward<Args>(a)...));
}

/// "name=1,3,224,224" entries -> map (throws kInvalidArgument naming the bad entry).
std::map<std::string, Shape> parseShapes(const std::vector<std::string>& entries);
/// The real values an int8 layer output stands for: (code - zero_point) * scale, float32, with the scale of this frame
/// (Runtime::outputScale: int8-affine packages record it per layer, int8-pow2 ones move it from frame to frame); the
/// output itself for any other layer (scale 0).
Tensor realValues(const RuntimeLayer& l, const Tensor& y, double scale);
/// The package's input `name`, or an Error (kInvalidArgument) that says `what` named it and lists the inputs there are.
const RuntimeTensor& packageInput(const Runtime& rt, const std::string& name, const std::string& what);
/// --range TENSOR=LO,HI entries (LO <= HI, finite numbers; repeatable, one per tensor).
std::map<std::string, std::pair<double, double>> parseRanges(const std::vector<std::string>& entries);
/// "--aipp name=params.bin|yaml" entries -> frame input name -> the dynamic AIPP parameter block (docs/aipp.md).
std::map<std::string, std::vector<uint8_t>> parseAippParams(const std::vector<std::string>& entries);
/// "name=file.npy" entries -> tensors read from the files.
std::map<std::string, Tensor> parseInputs(const std::vector<std::string>& entries);
/// "name=file.npy" entries of an option that may repeat a name (--calib): the tensors of each name, in order. A folder
/// gives its .npy shards in name order; a folder of pictures (no .npy) is read by `pictures` (input name, the files in
/// name order) where the command can (it knows the model's input shapes), else it is an error saying so.
using PictureReader = std::function<Tensor(const std::string& input, const std::vector<std::filesystem::path>& files)>;
std::map<std::string, std::vector<Tensor>> parseTensorLists(const std::vector<std::string>& entries, const char* what,
                                                            const PictureReader& pictures = {});
/// The --calib-mean / --calib-scale / --calib-bgr options of a picture folder (docs/calibration.md) and the reader
/// they make for `model` (its input shapes with `shapes` applied; loaded when a folder of pictures is first read).
PictureReader pictureReader(const std::string& model, const std::map<std::string, Shape>& shapes, const std::string& mean,
                            const std::string& scale, bool bgr, const std::string& caffe_model = "");
/// Loads a model whose input shapes come from --input-shape entries, else from the given input tensors; with
/// `caffe_model`, `model` is a Caffe network description and this its weights.
Model loadForInputs(const std::string& model, const std::map<std::string, Tensor>& inputs,
                    const std::vector<std::string>& shape_entries, const std::string& caffe_model = {});
/// Seeded random inputs for every model input not in `given` (uniform in [0,1) for floats, 0 for ints).
void fillRandomInputs(const Model& m, std::map<std::string, Tensor>& given, uint32_t seed = 0);
/// A file-system friendly name for a tensor: letters, digits, '_', '-' and '.' kept, every other byte '_'.
std::string safeFileName(const std::string& name);
/// The file base names of tensors written side by side (docs/cli.md, "Output file names"): safeFileName of each,
/// distinct — a name that needs no change keeps it; one whose base is taken (by another tensor's base plus any of
/// `suffixes`, the file names each base makes) gets _2, _3, … Same names, same result.
std::vector<std::string> safeFileNames(const std::vector<std::string>& names, const std::vector<std::string>& suffixes = {""});
/// The DRP-AI Translator's own message for a broken rule, as its manual prints it (§9: "[Error(DRP Converter-003)] Not
/// support layer: 'Op'", "ONNX: Conv Minimum plane size violation …"), so that scripts that grep for them work; empty
/// for other targets and rules.
std::string drpaiManualMessage(const std::string& target, const CheckRow& r);
/// The same for an error (an op npuc cannot import: "ONNX: Not Support Layer Error: Not Support / Name / Op").
std::string drpaiManualMessage(const std::string& target, const std::string& error);
/// Text for HTML (element content and quoted attributes): < > & " ' escaped.
std::string htmlEscape(const std::string& s);
/// Writes a text file (kIo naming it when it cannot).
void writeText(const std::filesystem::path& p, const std::string& s);
/// A quantize layer writing unsigned codes clips negative inputs to code 0 (inElementType 0 declares the input
/// unsigned): said on stderr after a run, per layer, as "`who`: warning: …" (simulate's trace has the counts too).
void warnClippedInputs(const Runtime& rt, const char* who);
/// A package reference file (docs/cli.md, "tidl-import"): where TIDL's tools write or read a network file
/// (outputNetFile, netBinFile), a small text file naming the package folder beside it and its content hash, and
/// `keys` (what the import read its calibration frames as: inElementType).
void writePackageReference(const std::filesystem::path& file, const std::filesystem::path& package_dir, const std::string& content_hash,
                           const std::map<std::string, std::string>& keys = {});
/// The package `path` names: a package folder, or a package reference file (its folder, checked to hold the package of
/// the hash it records; `keys`, when given, gets the reference's other keys). Errors (kInvalidInput / kIo) name `what`
/// and the path.
std::filesystem::path packageFolder(const std::filesystem::path& path, const char* what,
                                    std::map<std::string, std::string>* keys = nullptr);
/// Whether `path` is a package reference file (its first line is the reference's magic), without reading more.
bool isPackageReference(const std::filesystem::path& path);
std::string humanCount(int64_t n);
std::string humanBytes(int64_t n);

double nowMs();

/// Adds --custom-op LIB.so (alias --register-op; repeatable) to a subcommand: plugins registered before it runs
/// (registerCustomOps).
void addCustomOpOption(Command* c);
/// The model positionals of the commands that import one (check, inspect, quantize, run): the model file (ONNX,
/// TensorFlow, TensorFlow Lite, or a Caffe .prototxt) and, for Caffe, its .caffemodel.
void addModelPositionals(Command* c, std::string& model, std::string& caffemodel);
/// The RKNN guide's spelling of the custom-op actions (§3.1.1: `--action/-a create|build`): the arguments after the
/// program name with `custom-op --action A` (`-a A`, `--action=A`) made `custom-op A`; others unchanged. An action
/// other than create or build is kInvalidArgument naming it.
std::vector<std::string> customOpActionAlias(std::vector<std::string> args);
/// Registers every plugin the command line named (main calls it after parsing, before the command runs).
void registerCustomOps();

// Subcommand registration: each adds its subcommand to `app` and sets `run` to its action.
using Action = std::function<int()>;
void addInspect(Command& app, Action& run);
void addRun(Command& app, Action& run);
void addBench(Command& app, Action& run);
void addEval(Command& app, Action& run);
void addQuantize(Command& app, Action& run);
void addConformance(Command& app, Action& run);
void addCheck(Command& app, Action& run);
void addTargets(Command& app, Action& run);
void addTranslate(Command& app, Action& run);
void addSimulate(Command& app, Action& run);
void addCompare(Command& app, Action& run);
void addView(Command& app, Action& run);
void addTidlImport(Command& app, Action& run);
void addTidlSim(Command& app, Action& run);
void addTidlClassify(Command& app, Action& run);
void addTidlSegment(Command& app, Action& run);
void addTidlDetect(Command& app, Action& run);
void addCustomOp(Command& app, Action& run);
void addTune(Command& app, Action& run);
void addBundle(Command& app, Action& run);

}  // namespace npuc::cli
