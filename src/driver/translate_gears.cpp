// translate() for gears (one package per batch or image size, --dynamic_batch_size / --dynamic_image_size) and for
// input-shape ranges (--input_shape LO~HI): both resolved to ordinary translations by the same stages.
#include "driver/translate_reports.hpp"
#include "driver/translation.hpp"

#include "kernels/aipp.hpp"
#include "package/gears.hpp"
#include "prepost/aipp.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

namespace npuc {

namespace {

/// The model's inputs as it declares them (open dimensions kept), read without resolving anything.
std::vector<TensorInfo> declaredInputs(const TranslateOptions& o) {
  LoadOptions lo = modelFiles(o);
  lo.require_static_inputs = false;
  lo.resolve = false;
  lo.optimize = false;
  return Model::load(o.onnx, lo).inputs();
}

/// The seed's rule for AIPP with --dynamic_image_size (rule aipp.dynamic_image_size, docs/aipp.md): a dynamic block
/// may not crop or pad, and the width and height it sets (srcImageSizeW/H) equal the largest gear's — the frame input
/// must then hold a picture of the largest gear, and a largest gear (at least as high and as wide as every other)
/// must exist. A static stage on the gear input must fit every gear (its output size is fixed in each gear's
/// package). Checked before any gear is translated; the runtime checks the block itself (Runtime::setDynamicAipp).
void checkAippWithImageGears(const TranslateOptions& o, const std::vector<TensorInfo>& declared, const std::string& input,
                             const Shape& shape) {
  const prepost::AippConfig cfg = prepost::loadAipp(o.aipp);
  std::vector<std::string> names;
  for (const TensorInfo& in : declared) names.push_back(in.name);
  auto gearName = [](std::pair<int64_t, int64_t> g) { return fmt::format("size_{}x{}", g.first, g.second); };
  for (const prepost::AippOp& op : cfg.ops) {
    if (op.related_input_rank < 0 || static_cast<size_t>(op.related_input_rank) >= names.size() ||
        names[static_cast<size_t>(op.related_input_rank)] != input)
      continue;
    const std::string what = fmt::format("{}:{}: aipp_op for input '{}' with --dynamic_image_size", cfg.source, op.line, input);
    if (!op.dynamic) {
      const auto hw = prepost::staticAippOutputSize(op);
      if (!hw) continue;  // sizes left to the model input: each gear's own
      for (const auto& g : o.dynamic_image_sizes)
        if (g != *hw)
          fail(ErrorCode::kInvalidArgument, "{}: aipp.dynamic_image_size: the static stage delivers {}x{} (H x W) whatever the gear, "
               "gear {} is {}x{}; leave its sizes to the model input (src_image_size 0, no crop or resize) or use dynamic AIPP",
               what, hw->first, hw->second, gearName(g), g.first, g.second);
      continue;
    }
    const int at = package::largestGear(o.dynamic_image_sizes);
    const std::pair<int64_t, int64_t>* largest = at < 0 ? nullptr : &o.dynamic_image_sizes[static_cast<size_t>(at)];
    if (!largest) {
      std::string list;
      for (const auto& g : o.dynamic_image_sizes) list += (list.empty() ? "" : ", ") + fmt::format("{}x{}", g.first, g.second);
      fail(ErrorCode::kInvalidArgument, "{}: aipp.dynamic_image_size: the seed sets the dynamic AIPP block's width and height to the "
           "largest gear's, and no gear is at least as high and as wide as every other (gears H x W: {})", what, list);
    }
    // The smallest picture of the largest gear in a format giving the input's channels.
    const int64_t channels = shape.size() == 4 ? shape[1] : 3;
    int64_t least = 0;
    const char* fmt_name = "";
    for (int c = 1; c <= 4; ++c) {
      const auto f = static_cast<kernels::AippFormat>(c);
      const int64_t b = kernels::aippImageBytes(f, largest->second, largest->first);
      if (kernels::aippChannels(f) == channels && b > 0 && (least == 0 || b < least)) least = b, fmt_name = kernels::aippFormatName(f);
    }
    if (least > op.max_src_image_size)
      fail(ErrorCode::kInvalidArgument, "{}: aipp.dynamic_image_size: the seed sets the dynamic AIPP block's width and height to the "
           "largest gear's, gear {} ({}x{}, H x W), whose smallest picture ({}) is {} bytes; max_src_image_size is {}", what,
           gearName(*largest), largest->first, largest->second, fmt_name, least, op.max_src_image_size);
  }
}

}  // namespace

/// translate() for a package with gears: one ordinary translation per gear into a sub-folder of the staging folder,
/// then gears.json; all published together (or nothing).
TranslateResult translateGears(const TranslateOptions& o, const std::function<void(const std::string&, double)>& progress) {
  const bool batch = !o.dynamic_batch_sizes.empty();
  if (batch && !o.dynamic_image_sizes.empty())
    fail(ErrorCode::kInvalidArgument, "--dynamic_batch_size and --dynamic_image_size cannot be combined (one kind of gears)");
  const size_t n = batch ? o.dynamic_batch_sizes.size() : o.dynamic_image_sizes.size();
  const char* opt = batch ? "--dynamic_batch_size" : "--dynamic_image_size";
  if (n > 100) fail(ErrorCode::kInvalidArgument, "{}: {} gears, at most 100", opt, n);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (size_t i = 0; i < n; ++i) {
    auto hw = batch ? std::pair<int64_t, int64_t>{o.dynamic_batch_sizes[i], 1} : o.dynamic_image_sizes[i];
    if (hw.first < 1 || hw.second < 1 || hw.first > 65536 || hw.second > 65536)
      fail(ErrorCode::kInvalidArgument, "{}: gear {} has a size outside [1, 65536]", opt, i + 1);
    if (!seen.insert(hw).second) fail(ErrorCode::kInvalidArgument, "{}: gear {} repeats an earlier size", opt, i + 1);
  }
  // The dynamic input: an input_shapes entry with -1 where the gears go, else the model's own open dimensions.
  std::map<std::string, Shape> shapes = o.input_shapes;
  const std::vector<TensorInfo> declared = declaredInputs(o);  // (read once: the AIPP check below names them too)
  for (const TensorInfo& in : declared)
    if (!shapes.count(in.name)) shapes[in.name] = in.shape;
  std::string input;                 // the first input the gears size (gears.json's "input")
  std::vector<std::string> inputs;   // every one: batch gears size each input with an open batch alike
  for (const auto& [name, shape] : shapes) {
    bool open = false;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0) {
        const bool ok = batch ? d == 0 : shape.size() == 4 && (d == 2 || d == 3);
        if (!ok)
          fail(ErrorCode::kInvalidArgument, "{}: input '{}' {} has an open dimension {} where {} sets none ({})", opt, name,
               shapeStr(shape), d, opt, batch ? "the batch is dimension 0" : "the image size is dimensions 2 and 3 of NCHW");
        open = true;
      }
    if (!open) continue;
    if (!batch && (shape[2] >= 0 || shape[3] >= 0))
      fail(ErrorCode::kInvalidArgument, "{}: input '{}' {} must leave both height and width open (-1)", opt, name, shapeStr(shape));
    if (!input.empty() && !batch)
      fail(ErrorCode::kInvalidArgument, "{}: inputs '{}' and '{}' both have open dimensions; image-size gears size one input",
           opt, input, name);
    if (input.empty()) input = name;
    inputs.push_back(name);
  }
  if (input.empty())
    fail(ErrorCode::kInvalidArgument, "{}: no input has an open dimension: give the dynamic input's shape with -1 where the gears go "
         "(--input_shape \"data:-1,3,224,224\" for batch gears, \"data:1,3,-1,-1\" for image-size gears)", opt);
  if (!batch && !o.aipp.empty()) checkAippWithImageGears(o, declared, input, shapes[input]);
  OutputDir out(o.out_root, o.prefix);
  package::Gears gears;
  gears.kind = batch ? "batch" : "image_size";
  gears.input = input;
  TranslateResult res;
  for (size_t i = 0; i < n; ++i) {
    TranslateOptions g = o;
    g.dynamic_batch_sizes.clear();
    g.dynamic_image_sizes.clear();
    g.out_root = out.path();
    package::Gear gear;
    g.input_shapes = shapes;
    for (const std::string& name : inputs) {
      Shape& s = g.input_shapes[name];
      if (batch) {
        gear.batch = s[0] = o.dynamic_batch_sizes[i];
        gear.dir = fmt::format("batch_{}", gear.batch);
      } else {
        gear.height = s[2] = o.dynamic_image_sizes[i].first;
        gear.width = s[3] = o.dynamic_image_sizes[i].second;
        gear.dir = fmt::format("size_{}x{}", gear.height, gear.width);
      }
    }
    g.prefix = gear.dir;
    if (progress) progress("gear " + gear.dir, 0.0);
    TranslateResult r = translate(g, progress);
    for (auto& f : r.files) res.files.push_back(gear.dir + "/" + f);
    res.warnings.insert(res.warnings.end(), r.warnings.begin(), r.warnings.end());
    res.estimated_us = std::max(res.estimated_us, r.estimated_us);
    if (res.single_core_us.empty()) res.single_core_us = r.single_core_us;
    for (size_t k = 0; k < res.single_core_us.size() && k < r.single_core_us.size(); ++k)
      res.single_core_us[k].second = std::max(res.single_core_us[k].second, r.single_core_us[k].second);
    res.activation_bytes = std::max(res.activation_bytes, r.activation_bytes);
    res.activation_lower_bound = std::max(res.activation_lower_bound, r.activation_lower_bound);
    res.calibration_samples = r.calibration_samples;
    res.quantized = r.quantized;
    res.bias_corrected_layers = r.bias_corrected_layers;
    res.bias_absorbed_layers = r.bias_absorbed_layers;
    if (!r.ok) {  // the gear's error report is published; no gears.json
      res.errors = r.errors;
      out.commit();
      res.dir = out.finalPath();
      return res;
    }
    gears.gears.push_back(gear);
  }
  writeFileAtomic(out.path() / package::kGearsFile, package::gearsJson(gears));
  res.files.push_back(package::kGearsFile);
  out.commit();
  res.dir = out.finalPath();
  res.ok = true;
  return res;
}

/// --input_shape ranges (docs/aipp.md, "Gears and shape ranges"): each ranged dimension takes, in this order, the size
/// the input's static AIPP stage delivers (height and width) or the size fixed for the input with --input-shape
/// (TranslateOptions::input_shapes, any dimension), which must lie in the range (the seed's rule: AIPP's output within
/// the range). Any other ranged dimension stays open: its largest size in the shapes returned, and a symbol in
/// `symbols` (a package serving every size of the range, translate_ranges.cpp), which needs an upper bound.
std::map<std::string, Shape> shapesFromRanges(const TranslateOptions& o, std::vector<package::RangeSymbol>* symbols) {
  std::map<std::string, Shape> shapes = o.input_shapes;
  std::optional<prepost::AippConfig> cfg;
  if (!o.aipp.empty()) cfg = prepost::loadAipp(o.aipp);
  std::vector<std::string> names;
  for (const TensorInfo& in : declaredInputs(o)) names.push_back(in.name);
  auto bound = [](int64_t v) { return v == std::numeric_limits<int64_t>::max() ? std::string("-1 (unbounded)") : std::to_string(v); };
  for (const auto& [name, ranges] : o.input_shape_ranges) {
    auto pos = std::find(names.begin(), names.end(), name);
    if (pos == names.end()) fail(ErrorCode::kInvalidArgument, "--input_shape names '{}', which is not an input of the model", name);
    const size_t index = static_cast<size_t>(pos - names.begin());
    int64_t aipp_h = 0, aipp_w = 0;  // what the input's static AIPP stage delivers (0: none)
    if (cfg)
      for (const prepost::AippOp& op : cfg->ops)
        if (op.related_input_rank == static_cast<int>(index))
          if (auto hw = prepost::staticAippOutputSize(op)) aipp_h = hw->first, aipp_w = hw->second;
    auto fixed = o.input_shapes.find(name);  // --input-shape NAME=DIMS
    if (fixed != o.input_shapes.end() && fixed->second.size() != ranges.size())
      fail(ErrorCode::kInvalidArgument, "--input_shape '{}' has {} dimensions, --input-shape gives {}", name, ranges.size(), shapeStr(fixed->second));
    Shape s;
    for (size_t d = 0; d < ranges.size(); ++d) {
      auto [lo, hi] = ranges[d];
      const std::string range = fmt::format("{}~{}", lo, bound(hi));
      if (lo < 1 || hi < lo) fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} range {} is empty", name, d, range);
      if (lo == hi) {
        s.push_back(lo);
        continue;
      }
      const bool image_dim = ranges.size() == 4 && (d == 2 || d == 3);
      int64_t v = 0;
      std::string from;
      if (image_dim && aipp_h) {
        v = d == 2 ? aipp_h : aipp_w;
        from = "the AIPP stage delivers";
      } else if (fixed != o.input_shapes.end() && fixed->second[d] > 0) {
        v = fixed->second[d];
        from = "--input-shape gives";
      } else {  // open: the package serves the range
        if (hi == std::numeric_limits<int64_t>::max())
          fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} is a range {}; a package serving a range is laid out for its "
               "largest size: give an upper bound (LO~HI), or fix the size with --input-shape {}=DIMS", name, d, range, name);
        if (hi - lo >= package::kMaxRangeSpan)
          fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} range {} spans {} sizes, at most {}", name, d, range,
               hi - lo + 1, package::kMaxRangeSpan);
        symbols->push_back({name, static_cast<uint32_t>(d), static_cast<uint32_t>(lo), static_cast<uint32_t>(hi), {}});
        s.push_back(hi);
        continue;
      }
      if (v < lo || v > hi)
        fail(ErrorCode::kInvalidArgument, "--input_shape '{}': {} {} {}, outside the range {} (the seed: AIPP's output height and "
             "width must lie in the --input_shape range)", name, from, d == 2 && image_dim ? "height" : d == 3 && image_dim ? "width" :
             fmt::format("dimension {}", d), v, range);
      s.push_back(v);
    }
    shapes[name] = s;
  }
  return shapes;
}

}  // namespace npuc
