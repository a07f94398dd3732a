// Pre/post-processing kernels of the DRP-AI (translator manual §5.3 / §5.4): the numerics specification of every
// operation a pre/post definition (src/prepost/, docs/prepost.md) can contain, as IR-free functions on plain
// arrays. The device simulator (src/runtime/) and the reference engine call them, so both compute the same bytes.
//
// Conventions (docs/prepost.md, docs/prepost-kernels.md):
//   - images are HWC, row-major, unless a function says otherwise (crop and argMinMax also take CHW);
//   - uint8 data is uint8_t; fp16 data is IEEE binary16 bits in uint16_t (support/fp16.hpp: floatToHalf rounds to
//     nearest even, NaN and infinity preserved); fp32 is float;
//   - the enums carry the manual's parameter codes, so a parsed parameter converts with static_cast;
//   - a parallel call (pool non-null) gives every output element to one thread and computes it exactly as the
//     serial call does: results are bit-identical for every thread count;
//   - invalid geometry (negative sizes, an odd width where a packed YUV format needs pairs, a crop window outside
//     the input, …) throws npuc::Error(kInvalidArgument). The manual's limitations (4 <= W, 5 <= H, C <= 4096, …)
//     are checked by the parser (prepost/prepost.hpp), not here: the kernels accept every size the formula covers.
//
// Where OpenCV has the operation, the formula is OpenCV's integer arithmetic (checked against cv2 4.6 by
// tests/data/prepost_golden/make_golden.py; exact equality unless a function says otherwise).
// Post transpose (HWC -> CHW fp16) and pre transpose (CHW -> HWC uint8) are kernels::transpose (layers.hpp) with
// elem_size 2 / 1; softmax is kernels::softmax through softmaxFp16 below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

/// Dimension order of an image buffer.
enum class ImageLayout { kHWC = 0, kCHW = 1 };

// ---------------------------------------------------------------------------------------------------------
// conv_yuv2rgb.

/// DIN_YUV_FORMAT codes (manual §5.3.2 table). Byte orders are in memory order; W = width, H = height,
/// CH = ceil(H / 2) chroma rows of a 4:2:0 format, every chroma sample covers 2 pixels horizontally (and 2 rows
/// vertically for 4:2:0). No format pads its rows or planes.
enum class YuvFormat : int32_t {
  kYUYV = 0,       // "Y0UY1V" (YUY2): packed 4:2:2, per pixel pair [Y0 U Y1 V]; 2*W*H bytes
  kYVYU = 1,       // "Y0VY1U": [Y0 V Y1 U]
  kUYVY = 2,       // "UY0VY1": [U Y0 V Y1]
  kVUYY = 3,       // "VUY1Y0", read literally: [V U Y1 Y0] (Y1 = the right pixel's luma, stored before Y0)
  kYUYV420 = 4096, // "Y0UY1V" (YUY2) with 4:2:0 chroma: a YUYV buffer whose row 2k carries the chroma of rows
                   // 2k and 2k+1; the chroma bytes of odd rows are ignored; 2*W*H bytes
  kUYVY420 = 4097, // "UY0VY1" with 4:2:0 chroma, as kYUYV420
  kYV12 = 4098,    // planar: Y (H x W), V (CH x W/2), U (CH x W/2); W*H + 2*CH*(W/2) bytes
  kIYUV = 4099,    // planar I420: Y, U, V
  kNV12 = 4100,    // Y, then CH rows of W bytes interleaved [U V U V ...]; W*H + CH*W bytes
  kNV21 = 4101,    // Y, then interleaved [V U V U ...]
  kIMC1 = 4102,    // Y, V (CH rows, stride W, W/2 samples used), U (same); W*H + 2*CH*W bytes
  kIMC2 = 4103,    // Y, then CH rows of stride W: W/2 V samples, then W/2 U samples; W*H + CH*W bytes
  kIMC3 = 4104,    // as IMC1 with U before V
  kIMC4 = 4105,    // as IMC2 with U before V in each row
};
/// Whether `code` is a DIN_YUV_FORMAT value.
bool isYuvFormat(int32_t code);
/// The format's name ("YUYV", "YVYU", "UYVY", "VUYY", "YUYV420", "UYVY420", "YV12", "IYUV", "NV12", "NV21",
/// "IMC1".."IMC4"; nullptr for an unknown code) and back (false for an unknown name).
const char* yuvFormatName(YuvFormat f);
bool yuvFormatFromName(const std::string& name, YuvFormat* f);
/// The other direction, for making test frames from pictures (`npuc simulate --input name=photo.jpg`): RGB HWC
/// to format `f` with ITU-R BT.601 limited range (the inverse of yuvToRgb's matrix, rounded), chroma as the mean
/// of the pixels each sample covers. Not bit-exact through a round trip (chroma subsampling loses detail).
void rgbToYuv(YuvFormat f, int64_t height, int64_t width, const uint8_t* rgb, uint8_t* dst);
/// Bytes of an H x W image in format `f` (what yuvToRgb reads). Throws for an odd or non-positive width.
int64_t yuvBufferSize(YuvFormat f, int64_t height, int64_t width);

struct Rgb8 {
  uint8_t r, g, b;
  bool operator==(const Rgb8&) const = default;
};
/// One pixel, BT.601 video range in OpenCV's fixed point (cvtColor COLOR_YUV2RGB_*, 20-bit coefficients):
///   c = max(0, Y - 16) * 1220542,  u = U - 128,  v = V - 128,  h = 1 << 19
///   R = sat((c + h + 1673527 * v) >> 20)
///   G = sat((c + h - 852492 * v - 409993 * u) >> 20)
///   B = sat((c + h + 2116026 * u) >> 20)
/// (>> is an arithmetic shift, i.e. floor; sat clamps to [0, 255]). Equal to cv2 for all 2^24 (Y, U, V).
Rgb8 yuvPixelToRgb(uint8_t y, uint8_t u, uint8_t v);
/// dst: H x W x 3 uint8, RGB (bgr = false, DOUT_RGB_FORMAT 0) or BGR. Pixel (r, x) converts its own Y with the U, V
/// of its pair (x / 2) in its chroma row (r for 4:2:2, r / 2 — or row r & ~1 of a packed 4:2:0 buffer — for 4:2:0);
/// no chroma interpolation (as OpenCV). Width must be even and > 0; any height > 0 (an odd H has CH = (H + 1) / 2).
void yuvToRgb(YuvFormat f, bool bgr, int64_t height, int64_t width, const uint8_t* src, uint8_t* dst,
              ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// conv_x2gray.

/// DIN_FORMAT codes: the packed 4:2:2 orders of YuvFormat 0-3, and 24-bit RGB / BGR (3 channels).
enum class GrayFormat : int32_t { kYUYV = 0, kYVYU = 1, kUYVY = 2, kVUYY = 3, kRGB24 = 4096, kBGR24 = 4097 };
bool isGrayFormat(int32_t code);
/// OpenCV's COLOR_RGB2GRAY for uint8 (15-bit coefficients 0.299 / 0.587 / 0.114):
/// gray = (9798 * R + 19235 * G + 3735 * B + (1 << 14)) >> 15. Equal to cv2 for all 2^24 (R, G, B).
uint8_t rgbToGrayPixel(uint8_t r, uint8_t g, uint8_t b);
/// dst: H x W x 1 uint8. YUV input: gray = the pixel's Y byte (OpenCV's COLOR_YUV2GRAY_*: luma copied, no range
/// expansion; width even). RGB24 / BGR24 input (H x W x 3): rgbToGrayPixel with the channels in that order.
void toGray(GrayFormat f, int64_t height, int64_t width, const uint8_t* src, uint8_t* dst, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// crop.

struct CropGeometry {
  int64_t height = 0, width = 0, channels = 0;  // of the input
  int64_t pos_y = 0, pos_x = 0;                 // CROP_POS_Y, CROP_POS_X: top-left corner of the window
  int64_t out_height = 0, out_width = 0;        // shape_out
};
/// dst[y, x, c] = src(pos_y + y, pos_x + x, c): the window copied bit for bit, output always HWC (the input is HWC
/// or CHW = [C, H, W]). elem_size: 1 (uint8) or 2 (fp16 / uint16), any size works. The window must lie inside the
/// input.
void crop(ImageLayout in_layout, const CropGeometry& g, size_t elem_size, const void* src, void* dst,
          ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// resize_hwc.

enum class ResizeAlg { kNearest = 0, kBilinear = 1 };
struct ResizeGeometry {
  int64_t in_height = 0, in_width = 0, channels = 0;
  int64_t out_height = 0, out_width = 0;
};
/// uint8 HWC resize, exactly cv2.resize (checked with OpenCV 4.6, whose vector code and scalar tail compute the same):
///  - kNearest = INTER_NEAREST (not half-pixel): s = min(floor(d * (1.0 / (double(out) / in))), in - 1), in double.
///  - kBilinear = INTER_LINEAR, half-pixel. Per axis, in float32 from double:
///      f = float((d + 0.5) * (1.0 / (double(out) / in)) - 0.5);  s = floor(f);  f -= s;
///    the x axis clamps (s < 0 -> s = 0, f = 0; s >= in - 1 -> s = in - 1, f = 0); the y axis keeps f and
///    clamps only the row indices s, s + 1 to [0, in - 1]. Weights w0 = rne((1 - f) * 2048), w1 = rne(f * 2048).
///    Row pass (exact): t = w0x * S[sx] + w1x * S[sx + 1]. Column pass, OpenCV's 8-bit fixed point:
///      dst = (((w0y * (t0 >> 4)) >> 16) + ((w1y * (t1 >> 4)) >> 16) + 2) >> 2.
///    (Where OpenCV switches to INTER_AREA — exactly 2x down — this formula gives the same (a+b+c+d+2)>>2.)
void resizeHwc(ResizeAlg alg, const ResizeGeometry& g, const uint8_t* src, uint8_t* dst, ThreadPool* pool);
/// uint8 HWC resize as cv2.resize's INTER_AREA (OpenCV 4.6, resize.cpp), for pictures on the host (tidl-import's
/// calibration pictures; no package layer uses it, so there is no fast variant):
///  - shrinking both axes by whole factors kx, ky: each block's sum; 2x2 with 1, 3 or 4 channels (sum + 2) >> 2 (OpenCV's
///    vector path), else sum * (1.f / (kx * ky)) rounded to nearest even;
///  - shrinking both axes otherwise: OpenCV's area table per axis (a source pixel's share of the output pixel's
///    extent, float32) and its order of sums: per source row, buf[x] += S * alpha over the x table; per output row,
///    sum = Σ beta * buf in row order; the float sum rounded to nearest even;
///  - enlarging either axis: INTER_LINEAR's fixed point (resizeHwc kBilinear) with INTER_AREA's taps (linearTaps'
///    `area`).
void resizeAreaHwc(const ResizeGeometry& g, const uint8_t* src, uint8_t* dst);
/// fp16 HWC resize (DATA_TYPE 1; src / dst are fp16 bits). kNearest: the same source pixel as the uint8 kernel,
/// bits copied. kBilinear: the same taps with float32 weights w0 = 1 - f, w1 = f; in float32, each product and
/// sum rounded (no fma): t = S0 * w0x + S1 * w1x; v = t0 * w0y + t1 * w1y; dst = floatToHalf(v). This is OpenCV's
/// float INTER_LINEAR on the widened input followed by one rounding to fp16 (OpenCV's exact-2x-down INTER_AREA
/// sums the four taps in another order; the fp16 results agree on every golden case, see the docs).
void resizeHwc(ResizeAlg alg, const ResizeGeometry& g, const uint16_t* src_fp16, uint16_t* dst_fp16,
               ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// cast_any_to_fp16 (DIN_FORMAT 0 uint8, 1 fp16, 2 fp32), cast_fp16_fp32 (CAST_MODE 0 / 1).

/// uint8 -> fp16: exact (0..255 are fp16 integers).
void castAnyToFp16(int64_t n, const uint8_t* src, uint16_t* dst_fp16, ThreadPool* pool);
/// fp16 -> fp16: the bits copied.
void castAnyToFp16(int64_t n, const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool);
/// fp32 -> fp16: floatToHalf (round to nearest even; overflow to infinity; NaN stays NaN).
void castAnyToFp16(int64_t n, const float* src, uint16_t* dst_fp16, ThreadPool* pool);
/// uint8 -> fp32: exact.
void castU8ToFp32(int64_t n, const uint8_t* src, float* dst, ThreadPool* pool);
/// CAST_MODE 0: fp16 -> fp32, exact (halfToFloat).
void castFp16ToFp32(int64_t n, const uint16_t* src_fp16, float* dst, ThreadPool* pool);
/// CAST_MODE 1: fp32 -> fp16, floatToHalf.
void castFp32ToFp16(int64_t n, const float* src, uint16_t* dst_fp16, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// normalize.

/// fp16 HWC, `pixels` = H * W, `channels` = C. Manual: Dout = (Din + cof_add) * cof_mul, per channel, with
/// DOUT_RGB_ORDER 1 swapping R and B and the coefficients given in the order after the swap:
///   dst[p, c] = floatToHalf((halfToFloat(src[p, s(c)]) + cof_add[c]) * cof_mul[c])
/// in float32 (the add rounded, the multiply rounded, then one rounding to fp16), s(c) = swap_rb ? 2 - c : c.
/// swap_rb needs channels == 3. The coefficients are float32: the parsed YAML numbers converted with
/// static_cast<float> (round to nearest).
void normalize(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul,
               const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool);
/// cast_any_to_fp16 (uint8) and normalize in one pass: the same bits as castAnyToFp16 then normalize (the uint8 ->
/// fp16 cast is exact), without the intermediate image.
void normalize(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul,
               const uint8_t* src, uint16_t* dst_fp16, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// memcopy (WORD_SIZE 2).

/// dst = src, `words` 2-byte words.
void memcopy(int64_t words, const uint16_t* src, uint16_t* dst, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// softmax (post, order C).

/// Over all n elements ("the input as flatten data in the C dimension"): widen to float32, kernels::softmax
/// (max, sum of exp(x - max) in index order, exp(x - max) / sum), then DOUT_FORMAT 0: floatToHalf per element ...
void softmaxFp16(int64_t n, const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool);
/// ... or DOUT_FORMAT 1: the float32 result itself.
void softmaxFp16(int64_t n, const uint16_t* src_fp16, float* dst, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// argminmax (post).

enum class ArgAxis { kChannel = 0, kWidth = 1, kHeight = 2 };
enum class ArgMode { kArgMax = 0, kArgMin = 1 };
/// src: fp16, HWC ([H, W, C]) or CHW ([C, H, W]). dst: the index along `axis` of the maximum (kArgMax) or minimum
/// of every line, in the input's layout with the reduced axis kept as size 1 (HWC: [H, W, 1], [H, 1, C],
/// [1, W, C]; CHW: [1, H, W], [C, H, 1], [C, 1, W]). Values compare as numbers (-0 == +0); ties go to the first
/// (lowest) index; a NaN wins at once (the first NaN's index, as numpy.argmax / argmin). The index must fit
/// the output type (reduced axis <= 256 for uint8, <= 65536 for uint16; the manual allows <= 256 for both).
void argMinMax(ImageLayout layout, int64_t height, int64_t width, int64_t channels, ArgAxis axis, ArgMode mode,
               const uint16_t* src_fp16, uint8_t* dst, ThreadPool* pool);
void argMinMax(ImageLayout layout, int64_t height, int64_t width, int64_t channels, ArgAxis axis, ArgMode mode,
               const uint16_t* src_fp16, uint16_t* dst, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------------------
// Fast variants (x86/prepost_fast.cpp): the same bits as the functions above, for the simulator's fast mode.

void yuvToRgbFast(YuvFormat f, bool bgr, int64_t height, int64_t width, const uint8_t* src, uint8_t* dst, ThreadPool* pool);
/// uint8 resize: bilinear with 1 or 3 channels row passes specialised and the column pass in AVX2, each source row
/// computed once for consecutive output rows; other cases run the reference.
void resizeHwcFast(ResizeAlg alg, const ResizeGeometry& g, const uint8_t* src, uint8_t* dst, ThreadPool* pool);
void normalizeFast(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul,
                   const uint16_t* src_fp16, uint16_t* dst_fp16, ThreadPool* pool);
void normalizeFast(int64_t pixels, int64_t channels, bool swap_rb, const float* cof_add, const float* cof_mul,
                   const uint8_t* src, uint16_t* dst_fp16, ThreadPool* pool);

}  // namespace npuc::kernels
