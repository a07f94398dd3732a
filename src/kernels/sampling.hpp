// Sampling a feature map at computed positions: ONNX's RoiAlign, GridSample and MaxUnpool. IR-free reference
// kernels in float32, as ONNX Runtime (RoiAlign) and PyTorch (GridSample, whose definition ONNX adopts) compute them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::kernels {

struct RoiAlignParams {
  int64_t images = 0, channels = 0, height = 0, width = 0;  // of X [N, C, H, W]
  int64_t rois = 0, out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;  // 0: ceil(roi size / output size) samples per bin and axis
  float spatial_scale = 1.0f;
  bool half_pixel = true;      // coordinate_transformation_mode half_pixel (else output_half_pixel: no shift, bins >= 1)
  bool max_mode = false;       // mode max: the largest weighted corner over a bin's samples (ONNX Runtime's)
};
/// y [rois, C, out_h, out_w]; rois [rois, 4] (x1, y1, x2, y2), batch [rois]: one outside [0, images) fails
/// (ErrorCode::kInvalidInput) before anything is written.
void roiAlign(const RoiAlignParams& p, const float* x, const float* rois, const int64_t* batch, float* y);

struct GridSampleParams {
  int64_t n = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  enum class Mode : uint8_t { kBilinear, kNearest, kBicubic } mode = Mode::kBilinear;
  enum class Padding : uint8_t { kZeros, kBorder, kReflection } padding = Padding::kZeros;
  bool align_corners = false;
};
/// ONNX GridSample's mode (bilinear / linear, nearest, bicubic / cubic: opset 20 renamed two) and padding_mode
/// (zeros, border, reflection) into p; false for another name.
bool gridSampleModes(const std::string& mode, const std::string& padding, GridSampleParams& p);
/// y [N, C, out_h, out_w] from x [N, C, in_h, in_w] at grid [N, out_h, out_w, 2] ((x, y) in [-1, 1]).
void gridSample(const GridSampleParams& p, const float* x, const float* grid, float* y);

/// MaxUnpool: y (of shape `out`) zeroed, then each of the `n` values x[i] written where index[i] points. Indices are
/// MaxPool's: flattened over the pooled map's input, whose shape is `pooled_from` (the unpooled shape the attributes
/// give); an output_shape larger than that keeps each value at the same coordinates (ONNX's test data). Returns false
/// when an index is outside `pooled_from` or its coordinates outside `out`.
bool maxUnpool(const float* x, const int64_t* index, int64_t n, float* y, const std::vector<int64_t>& out,
               const std::vector<int64_t>& pooled_from);

}  // namespace npuc::kernels
