// Ascend-style AIPP configurations (seed 004, docs/aipp.md): the `aipp_op { … }` text format, its validation, the
// conversion of a static configuration into the parameter block the kernels run (kernels/aipp.hpp), and the
// insertion of the AIPP stages in front of a model's inputs as ai.npuc.Aipp nodes.
//
// A configuration holds one or more aipp_op blocks, each for one model input (related_input_rank, 0-based).
// Every block is static or every block is dynamic (the seed: the two modes cannot be combined):
//  - static: the keys of docs/aipp.md (input_format, src_image_size_w/h, crop, resize, padding, rotation, csc_switch,
//    matrix_rXcY, input/output_bias_N, rbuv_swap_switch, ax_swap_switch, mean/min/var_reci_chn_N, …) are
//    validated against the model input and become a parameter block stored in the package;
//  - dynamic: only max_src_image_size (required), related_input_rank, support_rotation and padding_value; the
//    package gains a parameter input "<input>_aipp" that takes a kAippDynamicPara block on every inference.
// Errors are npuc::Error(kInvalidInput) naming the file, the line, the key and the rule.
#pragma once

#include "ir/graph.hpp"
#include "kernels/aipp.hpp"

#include <array>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace npuc::prepost {

/// One aipp_op block as written (0 / false / the template defaults for keys it does not set).
struct AippOp {
  int line = 0;   // of the 'aipp_op' keyword
  bool dynamic = false;
  int related_input_rank = 0;
  int64_t max_src_image_size = 0;  // dynamic only
  bool support_rotation = false;   // dynamic only (informational: every block may rotate)
  kernels::AippFormat input_format = kernels::AippFormat::kYUV420SP_U8;
  int64_t src_w = 0, src_h = 0;    // 0: the model input's size (only without crop and resize)
  bool crop = false;
  int64_t load_x = 0, load_y = 0, crop_w = 0, crop_h = 0;  // crop size 0: what fits the model input (without resize)
  bool resize = false;
  int64_t resize_w = 0, resize_h = 0;  // 0: what fits the model input
  bool padding = false;
  int64_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  std::array<float, 4> padding_value{};  // padding_value (every channel), padding_value_chn_K (channel K)
  int rotation = 0;  // degrees clockwise: 0, 90, 180, 270
  bool csc = false, rbuv_swap = false, ax_swap = false;
  std::array<std::array<int16_t, 3>, 3> matrix{{{298, 516, 0}, {298, -100, -208}, {298, 0, 409}}};
  std::array<uint8_t, 3> output_bias{16, 128, 128}, input_bias{16, 128, 128};
  std::array<int16_t, 4> mean{};
  std::array<float, 4> min{};
  std::array<float, 4> var_reci{1.f, 1.f, 1.f, 1.f};
  std::set<std::string> keys;  // the keys the block sets
};

struct AippConfig {
  std::string source;  // the file, for messages
  std::vector<AippOp> ops;
  bool dynamic() const { return !ops.empty() && ops.front().dynamic; }
};

/// Parses the text of a configuration (`source` names it in messages). Checks the syntax, the keys, their value
/// types and ranges, mode consistency and unique related_input_rank; not the model (insertAipp does).
AippConfig parseAipp(const std::string& text, const std::string& source);
AippConfig loadAipp(const std::filesystem::path& file);

/// The (height, width) a static block delivers whatever the model input is — from resize_output, else the crop size,
/// else the source size, rotated, plus the padding — or nothing when a size it needs is left to the model input (0).
std::optional<std::pair<int64_t, int64_t>> staticAippOutputSize(const AippOp& op);

/// The parameter block of a static block for a model input of shape [N, C, H, W] (all N images alike), checked
/// with kernels::checkAipp. `what` prefixes messages.
kernels::AippParams staticAippParams(const AippOp& op, const std::vector<int64_t>& model_input, const std::string& what);

/// Inserts the AIPP stages: for every block, the model input it names (float, [N, C, H, W]) is produced by an
/// ai.npuc.Aipp node from a new uint8 frame input that takes the input's name ([N, image bytes]; the body value
/// becomes "<input>/aipp"), plus, for a dynamic block, a uint8 parameter input "<input>_aipp".
void insertAipp(ir::Graph& g, const AippConfig& cfg);

/// A dynamic parameter block from YAML (`npuc simulate --aipp NAME=params.yaml`): the seed's field names
/// (inputFormat, cscSwitch, srcImageSizeW, cscMatrixR0C0, …, and a list `batch:` of records with cropSwitch, …,
/// dtcPixelMeanChn0, dtcPixelMinChn0 / dtcPixelVarReciChn0 as numbers, stored as float16); a single record may
/// be given at the top level instead of `batch:`. Unknown keys are errors.
kernels::AippParams aippParamsFromYaml(const std::string& text, const std::string& source);
/// The same block as YAML (every field), which aippParamsFromYaml reads back to the same bytes.
std::string aippParamsToYaml(const kernels::AippParams& p);

}  // namespace npuc::prepost
