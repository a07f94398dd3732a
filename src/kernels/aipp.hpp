// Ascend-style AIPP (AI pre-processing, seed 004 and docs/aipp.md): the numerics specification of one AIPP stage
// and the binary parameter block of dynamic AIPP, as IR-free functions. The reference engine (ai.npuc.Aipp), the
// package reader (static blocks are checked when a package loads) and the device runtime (dynamic blocks are
// checked on every inference) all call these, so a static configuration and the equivalent dynamic block give the
// same bits by construction.
//
// The parameter block is kAippDynamicPara followed by (batchNum - 1) kAippDynamicBatchPara records, little-endian,
// natural alignment, exactly the C structs of the seed: 160 bytes for one image, + 96 per further image. A static
// configuration is converted into the same block by the translator (prepost/aipp.hpp) and stored in the package.
//
// Order of the stages, per image (docs/aipp.md has the formulas):
//   source (input_format, src size; rbuv_swap / ax_swap select byte orders) -> crop -> CSC (8-bit, >> 8)
//   -> scf resize (uint8 bilinear, OpenCV INTER_LINEAR = kernels::resizeHwc) -> rotation (clockwise)
//   -> DTC: y = (float(v - mean) - min) * var_reci in float32 -> padding -> NCHW float32 / float16 output.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

/// aclAippInputFormat codes of the formats AIPP supports (the seed's inputFormat field).
enum class AippFormat : uint8_t {
  kYUV420SP_U8 = 1,  // NV12: Y plane (H x W), then H/2 rows of interleaved U V (NV21 with rbuv_swap); W, H even
  kXRGB8888_U8 = 2,  // 4 bytes per pixel [X R G B] ([R G B X] with ax_swap)
  kRGB888_U8 = 3,    // 3 bytes per pixel [R G B]
  kYUV400_U8 = 4,    // 1 byte per pixel (luma only): one output channel
};
bool isAippFormat(int code);
const char* aippFormatName(AippFormat f);                      // "YUV420SP_U8", …
bool aippFormatFromName(const std::string& name, AippFormat* f);  // false for an unknown name
/// Bytes of one W x H source image; 0 if the size does not suit the format (odd YUV420SP sides, non-positive).
int64_t aippImageBytes(AippFormat f, int64_t width, int64_t height);
/// Output channels of a format: 1 for YUV400_U8, else 3.
int aippChannels(AippFormat f);

/// kAippDynamicBatchPara: what may differ per image of a batch.
struct AippBatchParams {
  int8_t crop = 0, scf = 0, padding = 0, rotate = 0;  // padding: 0 off, 1 value, 2 edge copy (3, 4: refused)
  int32_t crop_x = 0, crop_y = 0, crop_w = 0, crop_h = 0;
  int32_t scf_in_w = 0, scf_in_h = 0, scf_out_w = 0, scf_out_h = 0;
  int32_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::array<int16_t, 4> mean{};
  std::array<uint16_t, 4> min{};       // float16 bits
  std::array<uint16_t, 4> var_reci{};  // float16 bits (1.0 = 0x3C00)
  bool operator==(const AippBatchParams&) const = default;
};
/// kAippDynamicPara without its batch records (batchNum = batch.size()).
struct AippParams {
  uint8_t input_format = 1;
  int8_t csc = 0, rbuv_swap = 0, ax_swap = 0;
  int32_t src_w = 0, src_h = 0;
  std::array<std::array<int16_t, 3>, 3> matrix{};
  std::array<uint8_t, 3> output_bias{}, input_bias{};
  std::vector<AippBatchParams> batch;
  bool operator==(const AippParams&) const = default;
};
inline constexpr size_t kAippParaSize = 160;       // kAippDynamicPara, with its first batch record
inline constexpr size_t kAippBatchParaSize = 96;   // each further kAippDynamicBatchPara
inline constexpr size_t kAippBatchOffset = 64;     // offset of the first batch record
/// Bytes of a block for `batch` images.
inline constexpr size_t aippBlockSize(int64_t batch) {
  return kAippParaSize + static_cast<size_t>(batch > 1 ? batch - 1 : 0) * kAippBatchParaSize;
}
/// The block's bytes (reserved fields zero). Same params, same bytes.
std::vector<uint8_t> encodeAipp(const AippParams& p);
/// Parses a block; the size must be aippBlockSize(batchNum) with batchNum >= 1, else npuc::Error (kInvalidInput)
/// with the rule 'aipp.block.size'. Values are not judged here (checkAipp does).
AippParams decodeAipp(const uint8_t* data, size_t size);

/// The seed's field names of a parameter block — kAippDynamicPara's (inputFormat, cscSwitch, srcImageSizeW,
/// cscMatrixR0C0, …) and kAippDynamicBatchPara's (cropSwitch, …, dtcPixelVarReciChn3) — in one table for every form
/// that names them: the YAML form of `npuc simulate --aipp` (prepost), Runtime::setDynamicAipp's fields (Python's
/// dicts) and the C API's setters. One field's value as written: a decimal integer within the field's C type, for
/// dtcPixelMinChnN / dtcPixelVarReciChnN a finite number within the float16 range (stored as float16), for
/// inputFormat also a format name (YUV420SP_U8, …).
struct AippFieldValue {
  std::string name;
  int image = -1;    // the record of a `batch` list it is given in (0-based); -1: at the top level
  std::string text;  // the value
};
/// Builds a block from named fields, as the YAML form lays them out: kAippDynamicPara's fields (and batchNum, which
/// must equal the number of records) at the top level; the records as a `batch` list of `batch_list` records (fields
/// with image >= 0), or without one (batch_list 0) a single record whose fields stand at the top level. Required:
/// inputFormat, srcImageSizeW and srcImageSizeH; in each record cropSizeW/H when cropSwitch is 1, scfInputSizeW/H
/// and scfOutputSizeW/H when scfSwitch is 1; the nine cscMatrixRxCy when cscSwitch is 1. Other fields are 0 unless
/// given, dtcPixelVarReciChnN 1.0. npuc::Error (kInvalidInput) "<field>: <why>" naming the field ("batch[1].cropSizeW")
/// for an unknown, repeated, missing or misplaced field or a value that does not fit it (`complete` false: missing
/// fields are not an error, for a block still being filled in). The values' rules (checkAipp) are not judged here.
AippParams aippParamsFromFields(const std::vector<AippFieldValue>& fields, size_t batch_list, bool complete = true);
/// Every field as (name, value text) in block order, the head's then each record's: aippParamsFromFields reads them
/// back (head fields at the top level, record i's with image i) to the same block.
std::vector<AippFieldValue> aippFields(const AippParams& p);
/// Whether `name` is a kAippDynamicBatchPara field.
bool isAippRecordField(const std::string& name);
/// A float16 field's value (dtcPixelMinChn*, dtcPixelVarReciChn*) as stored: refused unless finite and within
/// float16's range (kInvalidInput "<where>: <shown> is not a finite number within the float16 range").
uint16_t aippHalf(double v, const std::string& where, const std::string& shown);

/// What the translator fixed: the model input the stage writes ([n, channels, height, width]), the bytes each
/// image may occupy in the frame input (static: exactly the source image; dynamic: max_src_image_size) and the
/// values padding mode 1 writes into output channels 0..3 (sfr_filling_hblank_ch0..: the configuration's
/// padding_value / padding_value_chn_K; 0 unless set).
struct AippSetup {
  int64_t n = 1, channels = 3, height = 0, width = 0;
  int64_t image_bytes = 0;
  std::array<float, 4> padding_value{};
};
/// The channels a stage gives from `f`: 1 for YUV400_U8, 3 for the others, or 4 for XRGB8888_U8 into a model input of
/// 4 channels (R, G, B and then the frame's fourth byte X through its own DTC channel 3).
bool aippChannelsFit(AippFormat f, int64_t channels);
/// The padding values of channels 0..3: `per_channel` (the Aipp op's padding_values: 4 values) when given, else `all`
/// in each. Throws kInvalidArgument when per_channel holds another count.
std::array<float, 4> aippPaddingValues(float all, const std::vector<float>& per_channel);
/// Words of an aipp layer's parameter block before a static stage's kAippDynamicPara block: the dynamic flag, then
/// the four padding values.
inline constexpr size_t kAippHeaderWords = 5;
/// "" if `p` may run on `s`, else the first rule it breaks, as "aipp.<rule>: <what, with the values>" (the rules
/// are listed in docs/aipp.md: formats, switches, batch count, source size vs the frame, crop inside the source,
/// even YUV420SP crops, scf input = the cropped size and ratio within [1/16, 16], CSC not on YUV400, ax_swap only
/// on XRGB8888, padding sizes 0..32 and modes 0..2, finite DTC values, the output exactly the model input's size
/// and channel count).
std::string checkAipp(const AippParams& p, const AippSetup& s);
/// The height and width image `i` of `p` comes out at (crop, scf, rotation and padding applied; no check): a package
/// serving a shape range runs its body at the size the block gives.
std::pair<int64_t, int64_t> aippOutputSize(const AippParams& p, size_t i);
/// Runs the stage over s.n images: frame holds image i at i * s.image_bytes (the bytes beyond the source image
/// are ignored); dst is [n, channels, height, width]. `p` must pass checkAipp (throws kInvalidArgument otherwise).
/// Bit-identical for every thread count.
void aipp(const AippParams& p, const AippSetup& s, const uint8_t* frame, float* dst, ThreadPool* pool);
/// The same with float16 output: each float32 result rounded once (floatToHalf).
void aipp(const AippParams& p, const AippSetup& s, const uint8_t* frame, uint16_t* dst_fp16, ThreadPool* pool);

}  // namespace npuc::kernels
