// Dynamic AIPP parameters by field (include/npuc/runtime.hpp: DynamicAippParams): the public struct <-> the kernels'
// block (kernels/aipp.hpp), and the named form through the kernels' one table of the seed's field names.
#include "npuc/runtime.hpp"

#include "kernels/aipp.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"

namespace npuc {

namespace {

kernels::AippParams toKernel(const DynamicAippParams& d) {
  if (d.batch.empty() || d.batch.size() > 127)
    fail(ErrorCode::kInvalidArgument, "aipp.block.size: DynamicAippParams holds {} image record(s), must be 1..127 (batchNum is an int8)",
         d.batch.size());
  kernels::AippParams p;
  p.input_format = d.input_format;
  p.csc = d.csc_switch;
  p.rbuv_swap = d.rbuv_swap_switch;
  p.ax_swap = d.ax_swap_switch;
  p.src_w = d.src_image_size_w;
  p.src_h = d.src_image_size_h;
  p.matrix = d.csc_matrix;
  p.output_bias = d.csc_output_bias;
  p.input_bias = d.csc_input_bias;
  for (const DynamicAippImage& i : d.batch) {
    kernels::AippBatchParams b;
    b.crop = i.crop_switch, b.scf = i.scf_switch, b.padding = i.padding_switch, b.rotate = i.rotate_switch;
    b.crop_x = i.crop_start_pos_w, b.crop_y = i.crop_start_pos_h, b.crop_w = i.crop_size_w, b.crop_h = i.crop_size_h;
    b.scf_in_w = i.scf_input_size_w, b.scf_in_h = i.scf_input_size_h;
    b.scf_out_w = i.scf_output_size_w, b.scf_out_h = i.scf_output_size_h;
    b.pad_top = i.padding_size_top, b.pad_bottom = i.padding_size_bottom;
    b.pad_left = i.padding_size_left, b.pad_right = i.padding_size_right;
    b.mean = i.dtc_pixel_mean_chn;
    for (size_t c = 0; c < 4; ++c) {  // (refused beyond float16's range, as the field form refuses them)
      const std::string at = fmt::format("batch[{}].", p.batch.size());
      b.min[c] = kernels::aippHalf(i.dtc_pixel_min_chn[c], at + "dtcPixelMinChn" + std::to_string(c), fmt::format("{}", i.dtc_pixel_min_chn[c]));
      b.var_reci[c] = kernels::aippHalf(i.dtc_pixel_var_reci_chn[c], at + "dtcPixelVarReciChn" + std::to_string(c),
                                        fmt::format("{}", i.dtc_pixel_var_reci_chn[c]));
    }
    p.batch.push_back(b);
  }
  return p;
}

DynamicAippParams fromKernel(const kernels::AippParams& p) {
  DynamicAippParams d;
  d.input_format = p.input_format;
  d.csc_switch = p.csc;
  d.rbuv_swap_switch = p.rbuv_swap;
  d.ax_swap_switch = p.ax_swap;
  d.src_image_size_w = p.src_w;
  d.src_image_size_h = p.src_h;
  d.csc_matrix = p.matrix;
  d.csc_output_bias = p.output_bias;
  d.csc_input_bias = p.input_bias;
  d.batch.clear();
  for (const kernels::AippBatchParams& b : p.batch) {
    DynamicAippImage i;
    i.crop_switch = b.crop, i.scf_switch = b.scf, i.padding_switch = b.padding, i.rotate_switch = b.rotate;
    i.crop_start_pos_w = b.crop_x, i.crop_start_pos_h = b.crop_y, i.crop_size_w = b.crop_w, i.crop_size_h = b.crop_h;
    i.scf_input_size_w = b.scf_in_w, i.scf_input_size_h = b.scf_in_h;
    i.scf_output_size_w = b.scf_out_w, i.scf_output_size_h = b.scf_out_h;
    i.padding_size_top = b.pad_top, i.padding_size_bottom = b.pad_bottom;
    i.padding_size_left = b.pad_left, i.padding_size_right = b.pad_right;
    i.dtc_pixel_mean_chn = b.mean;
    for (size_t c = 0; c < 4; ++c) {
      i.dtc_pixel_min_chn[c] = halfToFloat(b.min[c]);
      i.dtc_pixel_var_reci_chn[c] = halfToFloat(b.var_reci[c]);
    }
    d.batch.push_back(i);
  }
  return d;
}

}  // namespace

std::vector<uint8_t> DynamicAippParams::encode() const { return kernels::encodeAipp(toKernel(*this)); }

DynamicAippParams DynamicAippParams::decode(const std::vector<uint8_t>& block) {
  return fromKernel(kernels::decodeAipp(block.data(), block.size()));
}

DynamicAippParams DynamicAippParams::fromFields(const std::vector<std::pair<std::string, std::string>>& fields,
                                                const std::vector<std::vector<std::pair<std::string, std::string>>>& batch) {
  std::vector<kernels::AippFieldValue> all;
  for (const auto& [name, text] : fields) all.push_back({name, -1, text});
  for (size_t i = 0; i < batch.size(); ++i)
    for (const auto& [name, text] : batch[i]) all.push_back({name, static_cast<int>(i), text});
  return fromKernel(kernels::aippParamsFromFields(all, batch.size()));
}

}  // namespace npuc
