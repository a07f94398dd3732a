// npuc::translate: import -> optimize -> check -> lower (memory plan, address map, descriptors) -> time estimate
// -> package and reports, written atomically into <out_root>/<prefix>/.
#include "npuc/model.hpp"

#include "codegen/cost.hpp"
#include "codegen/lower.hpp"
#include "kernels/prepost.hpp"
#include "package/gears.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "prepost/aipp.hpp"
#include "package/package.hpp"
#include "passes/pass.hpp"
#include "plan/addrmap.hpp"
#include "plan/memory.hpp"
#include "prepost/prepost.hpp"
#include "quant/bias_correction.hpp"
#include "quant/pow2.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "support/thread_pool.hpp"
#include "target/check.hpp"
#include "target/target.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xlsxwriter.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unistd.h>

namespace npuc {

namespace fs = std::filesystem;

// Defined in model.cpp: the optimized graph of a Model, for the codegen stages; the availability report's rows
// (the target's rules and the nodes without a package form).
const ir::Graph& graphOf(const Model& m);
ir::Graph& mutableGraphOf(Model& m);
std::vector<CheckRow> checkRows(const ir::Graph& g, const target::Target& t);
int integerLayers(ir::Graph& g);

namespace {

struct Stopwatch {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double lap() {
    auto t = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(t - t0).count();
    t0 = t;
    return s;
  }
};

/// The package's layers groups from the options (TranslateOptions::layer_groups / layer_group_list /
/// auto_layer_groups); errors name the layer and the rule.
void assignLayerGroups(const TranslateOptions& o, const codegen::Estimate& e, package::Package& p) {
  static_assert(kMaxLayerGroups == static_cast<int>(package::kMaxGroups));
  const int given = !o.layer_groups.empty() + !o.layer_group_list.empty() + o.auto_layer_groups;
  if (given == 0) return;
  if (given > 1) fail(ErrorCode::kInvalidArgument, "layers groups: give --layer-group, a layersGroupId list or --layer-groups auto, not several");
  auto check = [](int g, const std::string& what) {
    if (g < 1 || g > static_cast<int>(package::kMaxGroups))
      fail(ErrorCode::kInvalidArgument, "layers groups: {}: group {} is outside [1, {}]", what, g, package::kMaxGroups);
  };
  std::vector<uint32_t> groups(p.layers.size(), 1);
  if (!o.layer_groups.empty()) {
    std::set<std::string> unknown;
    for (auto& [name, g] : o.layer_groups) {
      check(g, "layer '" + name + "'");
      unknown.insert(name);
    }
    uint32_t cur = 1;
    for (size_t i = 0; i < p.layers.size(); ++i) {
      auto it = o.layer_groups.find(p.layers[i].name);
      if (it != o.layer_groups.end()) {
        cur = static_cast<uint32_t>(it->second);
        unknown.erase(it->first);
      }
      groups[i] = cur;
    }
    if (!unknown.empty())
      fail(ErrorCode::kInvalidArgument, "layers groups: the package has no layer '{}' (its layers: PREFIX_summary.csv, column name)", *unknown.begin());
  } else if (!o.layer_group_list.empty()) {
    if (o.layer_group_list.size() != p.layers.size()) {
      // (the layers named, so that the list can be written: manifest.json's, which PREFIX_summary.csv lists without the
      // quantize / dequantize layers at the inputs and outputs)
      std::string names;
      for (size_t i = 0; i < p.layers.size(); ++i) {
        if (p.layers.size() > 40 && i == 20) {
          names += fmt::format(", … {} more …", p.layers.size() - 30);
          i = p.layers.size() - 10;
        }
        names += fmt::format("{}{} {}", i ? ", " : "", i, p.layers[i].name);
      }
      fail(ErrorCode::kInvalidArgument,
           "layers groups: {} groups listed for the package's {} layers (one per layer in program order, as manifest.json lists "
           "them: {})", o.layer_group_list.size(), p.layers.size(), names);
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      check(o.layer_group_list[i], fmt::format("layer {} ('{}')", i, p.layers[i].name));
      groups[i] = static_cast<uint32_t>(o.layer_group_list[i]);
    }
  } else {
    // The estimate's cut for the fastest core set of two engines whose cut uses both (else the fastest of two
    // engines): its first `first_group_layers` timed layers (the estimate's names are the package's) on the first
    // engine; everything up to the last of them is group 1.
    std::vector<std::string> timed;
    for (auto& l : e.layers)
      if (!l.single_core_us.empty()) timed.push_back(l.name);
    const codegen::Estimate::CoreSetEstimate* best = nullptr;
    auto splits = [&](const codegen::Estimate::CoreSetEstimate& c) {
      return c.first_group_layers > 0 && c.first_group_layers < static_cast<int>(timed.size());
    };
    for (auto& c : e.multi_core)
      if (c.first_group_layers >= 0 && !std::isnan(c.roi_per_s) &&
          (!best || splits(c) > splits(*best) || (splits(c) == splits(*best) && c.roi_per_s > best->roi_per_s)))
        best = &c;
    if (!best) fail(ErrorCode::kInvalidArgument, "--layer-groups auto: target '{}' has no core set of two engines", p.target);
    const int s = best->first_group_layers;
    int64_t last = -1;  // the last package layer of group 1
    if (s >= static_cast<int>(timed.size())) {
      last = static_cast<int64_t>(p.layers.size()) - 1;
    } else if (s > 0) {
      for (size_t i = 0; i < p.layers.size(); ++i)
        if (p.layers[i].name == timed[static_cast<size_t>(s - 1)]) last = static_cast<int64_t>(i);
      if (last < 0) fail(ErrorCode::kInternal, "--layer-groups auto: layer '{}' of the estimate is not in the package", timed[static_cast<size_t>(s - 1)]);
    }
    // (a cut that leaves the first engine idle: every layer on the second, one group)
    for (size_t i = 0; i < groups.size(); ++i) groups[i] = last < 0 || static_cast<int64_t>(i) <= last ? 1 : 2;
  }
  for (size_t i = 1; i < groups.size(); ++i)
    if (groups[i] < groups[i - 1])
      fail(ErrorCode::kInvalidArgument,
           "layers groups: layer {} ('{}') is in group {} after layer '{}' in group {}: groups are pipeline stages, non-decreasing in program order",
           i, p.layers[i].name, groups[i], p.layers[i - 1].name, groups[i - 1]);
  for (size_t i = 0; i < groups.size(); ++i) p.layers[i].group = groups[i];
}

std::string kerStr(const codegen::LayerEstimate& l) {
  return l.ker_w ? fmt::format("{},{},{},{},{},{},{},{}", l.ker_w, l.ker_h, l.stride, l.dilation, l.pad_l, l.pad_r, l.pad_t, l.pad_b)
                 : ",,,,,,,";
}

/// Layers the summary workbook lists one per row; a larger model's workbook ends with a row pointing to the CSV.
constexpr size_t kXlsxMaxLayers = 20000;

void writeSummary(const codegen::Estimate& e, const target::Target& t, const fs::path& base) {
  std::string csv = "ith,name,opexp,engine,ker_w,ker_h,ker_st,ker_dil,pad_l,pad_r,pad_t,pad_b,in_ch,in_w,in_h,out_ch,out_w,out_h,MACs,time[us]\n";
  std::string md = fmt::format("# Time estimate: {}\n\nTarget `{}` ({}). Cost model: docs/cost-model.md. Not considering bus congestion "
                               "or memory outside the accelerator.\n\n| ith | name | opexp | engine | ker (w,h,st,dil,l,r,t,b) | in (ch,w,h) | out (ch,w,h) | MACs | time [us] |\n"
                               "|---|---|---|---|---|---|---|---|---|\n",
                               base.filename().string(), t.name, numericsName(t.numerics));
  auto csv_out = std::back_inserter(csv);
  auto md_out = std::back_inserter(md);
  for (auto& l : e.layers) {
    const std::string ker = kerStr(l);
    fmt::format_to(csv_out, "{},{},{},{},{},{},{},{},{},{},{},{},{:.3f}\n", l.ith, csvField(l.name), csvField(l.opexp), l.engine, ker,
                   l.in_c, l.in_w, l.in_h, l.out_c, l.out_w, l.out_h, l.macs, l.time_us);
    fmt::format_to(md_out, "| {} | {} | {} | {} | {} | {},{},{} | {},{},{} | {} | {:.3f} |\n", l.ith, l.name, l.opexp,
                   l.engine, l.ker_w ? ker : "", l.in_c, l.in_w, l.in_h, l.out_c, l.out_w, l.out_h, l.macs, l.time_us);
  }
  csv += fmt::format("total,,,,,,,,,,,,,,,,,,,{:.3f}\n", e.total_us);
  md += fmt::format("\n**Total: {:.3f} us**", e.total_us);
  for (auto& [eng, us] : e.per_engine_us) md += fmt::format(" — {}: {:.3f} us", eng, us);
  md += "\n\nSingle core (every layer on one engine; n/a: the engine has no MAC rate for the model's MAC layers):";
  for (auto& [eng, us] : e.single_core_us) md += std::isnan(us) ? fmt::format(" {}: n/a;", eng) : fmt::format(" {}: {:.3f} us;", eng, us);
  md += "\n";
  int sparse = 0, dense = 0;
  for (auto& l : e.layers) (l.conv_kernel == "sparse" ? sparse : dense) += !l.conv_kernel.empty();
  if (sparse + dense > 0) {
    md += fmt::format("\nConvolution kernels (TIDL's conv2dKernelType; docs/cost-model.md): {} sparse, {} dense —", sparse, dense);
    for (auto& l : e.layers)
      if (!l.conv_kernel.empty()) md += fmt::format(" {} {} (weights {:.0f} % nonzero);", l.name, l.conv_kernel, 100 * l.weight_density);
    md += "\n";
  }
  if (!e.multi_core.empty()) {
    md += "\nMulti-core throughput (docs/cost-model.md; two layers groups: the first N layers on the first engine, the "
          "rest pipelined on the second):\n\n| cores | roi/s | period [us] | first group |\n|---|---|---|---|\n";
    for (auto& c : e.multi_core)
      md += fmt::format("| {} | {} | {:.1f} | {} |\n", c.name, std::isnan(c.roi_per_s) ? std::string("n/a") : fmt::format("{:.2f}", c.roi_per_s),
                        c.period_us, c.first_group_layers < 0 ? std::string("—") : fmt::format("{} layers", c.first_group_layers));
  }
  writeFileAtomic(base.string() + "_summary.csv", csv);
  writeFileAtomic(base.string() + "_summary.md", md);

  std::string xlsx = base.string() + "_summary.xlsx";
  lxw_workbook* wb = workbook_new(xlsx.c_str());
  if (!wb) fail(ErrorCode::kIo, "{}: cannot create the workbook", xlsx);
  lxw_doc_properties props = {};
  char title[] = "npuc time estimate";
  props.title = title;
  props.created = 946684800;  // fixed: reproducible zip entries
  workbook_set_properties(wb, &props);
  lxw_worksheet* ws = workbook_add_worksheet(wb, "summary");
  const char* head[] = {"ith", "name", "opexp", "engine", "ker w", "ker h", "st", "dil", "pad l", "pad r", "pad t",
                        "pad b", "in ch", "in w", "in h", "out ch", "out w", "out h", "MACs", "time[us]"};
  for (int c = 0; c < 20; ++c) worksheet_write_string(ws, 0, static_cast<lxw_col_t>(c), head[c], nullptr);
  lxw_row_t r = 1;
  for (auto& l : e.layers) {
    if (r > kXlsxMaxLayers) {  // the rest is in the CSV and Markdown files (a workbook of 4M cells takes seconds)
      worksheet_write_string(ws, r++, 1, fmt::format("… {} more layers: see {}_summary.csv", e.layers.size() - kXlsxMaxLayers,
                                                   base.filename().string()).c_str(), nullptr);
      break;
    }
    worksheet_write_number(ws, r, 0, l.ith, nullptr);
    worksheet_write_string(ws, r, 1, l.name.c_str(), nullptr);
    worksheet_write_string(ws, r, 2, l.opexp.c_str(), nullptr);
    worksheet_write_string(ws, r, 3, l.engine.c_str(), nullptr);
    int64_t nums[] = {l.ker_w, l.ker_h, l.stride, l.dilation, l.pad_l, l.pad_r, l.pad_t, l.pad_b,
                      l.in_c,  l.in_w,  l.in_h,   l.out_c,    l.out_w, l.out_h, l.macs};
    for (int c = 0; c < 15; ++c) worksheet_write_number(ws, r, static_cast<lxw_col_t>(4 + c), static_cast<double>(nums[c]), nullptr);
    worksheet_write_number(ws, r, 19, l.time_us, nullptr);
    ++r;
  }
  worksheet_write_string(ws, r, 0, "total", nullptr);
  worksheet_write_number(ws, r, 19, e.total_us, nullptr);
  if (workbook_close(wb) != LXW_NO_ERROR) fail(ErrorCode::kIo, "{}: cannot write the workbook", xlsx);
}

/// A model quantized elsewhere, translated for int8-radix: every QuantizeLinear must already be in radix form (zero
/// point 0, a power-of-two scale); otherwise an error naming the tensor and how to get that form.
void requireRadixForm(const ir::Graph& g, const std::string& file) {
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    if (n.op != "QuantizeLinear" || !n.domain.empty()) continue;
    const Tensor* sc = n.hasInput(1) ? ir::constantInput(g, n, 1, DType::kF32) : nullptr;
    const ir::Value* zp = n.hasInput(2) ? &g.value(n.inputs[2]) : nullptr;
    bool ok = sc && sc->numel() == 1;
    if (ok) {
      int e = 0;
      ok = std::frexp(sc->data<float>()[0], &e) == 0.5f;
    }
    if (ok && zp) {
      const std::vector<double> z = zp->isConstant() ? zp->constant->toDouble() : std::vector<double>{1};
      ok = std::all_of(z.begin(), z.end(), [](double v) { return v == 0; });
    }
    if (!ok)
      fail(ErrorCode::kUnsupported, "{}: tensor '{}' is quantized with a scale or zero point that is not in int8-radix form (zero point 0, "
           "a power-of-two scale): quantize the float model with `npuc quantize --scheme radix`, or translate it with --calib",
           file, g.value(n.inputs[0]).name);
  }
}

/// PREFIX_radix_scale_info.txt of an int8-radix package (Kneron's per-output radix and scale: float = fixed / scale /
/// 2^radix): "<output> <radix> <scale>" per output, from the record of the int8 codes the output dequantizes.
std::string radixScaleInfo(const package::Package& p) {
  std::string s = "# output radix scale (float = fixed / scale / 2^radix; npuc int8-radix)\n";
  for (const package::IoTensor& out : p.outputs) {
    const package::LayerInfo* rec = nullptr;
    for (const package::LayerInfo& l : p.layers)
      if (l.scale > 0 && l.float_value == out.name) rec = &l;
    if (!rec) {
      s += fmt::format("{} float\n", out.name);
      continue;
    }
    int e = 0;
    std::frexp(rec->scale, &e);
    s += fmt::format("{} {} 1\n", out.name, 1 - e);
  }
  return s;
}

/// The frame each pre-processed input holds, from its declaration and its first operation (the YUV code of
/// conv_yuv2rgb / conv_x2gray).
std::map<std::string, package::ImageInfo> inputImages(const prepost::PrePost& pp) {
  std::map<std::string, package::ImageInfo> res;
  for (const prepost::Process& pr : pp.preprocess) {
    const prepost::TensorDecl* d = pp.findInputToPre(pr.src);
    if (!d) continue;
    prepost::TensorInfo t = d->info();
    package::ImageInfo im;
    im.height = static_cast<uint32_t>(t.height());
    im.width = static_cast<uint32_t>(t.width());
    im.chw = t.order == prepost::Order::kCHW;
    const prepost::Operation* first = pr.operations.empty() ? nullptr : &pr.operations.front();
    int32_t yuv = -1;
    if (first && first->kind == prepost::OpKind::kConvYuv2Rgb) {
      yuv = static_cast<int32_t>(std::get<prepost::ConvYuv2RgbParams>(first->params).din_yuv_format);
      im.height = static_cast<uint32_t>(first->out.height());
      im.width = static_cast<uint32_t>(first->out.width());
    } else if (first && first->kind == prepost::OpKind::kConvX2Gray) {
      int32_t c = static_cast<int32_t>(std::get<prepost::ConvX2GrayParams>(first->params).din_format);
      if (c < 4096) yuv = c;
      else im.format = c == 4096 ? "RGB" : "BGR";
    }
    if (yuv >= 0) im.format = kernels::yuvFormatName(static_cast<kernels::YuvFormat>(yuv));
    else if (im.format.empty()) {
      switch (t.format) {
        case prepost::ImageFormat::kRGB: im.format = "RGB"; break;
        case prepost::ImageFormat::kBGR: im.format = "BGR"; break;
        case prepost::ImageFormat::kGray: im.format = "GRAY"; break;
        case prepost::ImageFormat::kYUY2: im.format = "YUYV"; break;
        case prepost::ImageFormat::kNone: break;
      }
    }
    if (!im.format.empty()) res[pr.src] = im;
  }
  return res;
}

/// PREFIX_prepost_opt.yaml: the definition as translated (every parameter written out; parsePrePost reads it back),
/// headed by comments saying what the translator changed and which package layers run each part.
std::string prepostOptYaml(const TranslateOptions& o, const prepost::PrePost& pp, const codegen::Lowered& low) {
  std::string s = fmt::format("# {}_prepost_opt.yaml: the pre/post-processing of {} as npuc translated it for target {} ({}).\n"
                              "# The definition below is {} in the current format with every parameter written out.\n"
                              "# Optimizations:\n",
                              o.prefix, o.prefix, low.pkg.target, numericsName(low.pkg.numerics), o.prepost.filename().string());
  for (auto& f : low.fusions) s += fmt::format("#   - {}: {}\n", f.layer, f.what);
  size_t aliases = 0;
  for (auto& a : low.aliased)
    if (a.find("/pre") != std::string::npos || a.find("/post") != std::string::npos || a.find("_memcopy") != std::string::npos) ++aliases;
  if (aliases)
    s += fmt::format("#   - {} reshape/memcopy/same-type cast/in-place concat step{} between pre/post operations and the body take no layer "
                     "(the next layer reads the same bytes)\n", aliases, aliases > 1 ? "s" : "");
  s += "#   - normalize is not folded into the first convolution: the reference normalizes in float16 before the\n"
       "#     convolution, and folding the coefficients into its weights would change the rounding (npuc keeps the\n"
       "#     package bit-exact to the reference pipeline)\n";
  if (low.fusions.empty() && !aliases) s += "#   - none\n";
  s += "# Layers of the package that run pre/post-processing (seq, engine, kind, name):\n";
  for (const package::LayerInfo& l : low.pkg.layers) {
    const auto& stream = l.engine == package::Engine::kMac ? low.pkg.mac : low.pkg.vec;
    const package::Descriptor& d = stream[l.index];
    bool pp_kind = package::layerKindInfo(d.kind)->cls == package::KindClass::PrePost;
    bool pp_name = l.name.find("/pre") != std::string::npos || l.name.find("/post") != std::string::npos;
    bool is_output = std::any_of(low.pkg.outputs.begin(), low.pkg.outputs.end(), [&](auto& t) { return t.name == l.output; });
    if (pp_kind || pp_name || (is_output && d.kind == package::LayerKind::kCopy))
      s += fmt::format("#   {:>4} {:<6} {:<13} {}\n", l.seq, package::engineName(l.engine), package::layerKindName(d.kind), l.name);
  }
  return s + prepost::toYaml(pp);
}

}  // namespace


/// TranslateOptions::Pow2 (TIDL's keys) as the quantizer's and the runtime's options; bad values are errors naming
/// the key.
struct Pow2Setup {
  quant::Pow2Options quant;
  kernels::pow2::Options runtime;
};
Pow2Setup pow2Options(const TranslateOptions& o) {
  Pow2Setup p;
  const TranslateOptions::Pow2& t = o.pow2;
  if (t.num_param_bits < 4 || t.num_param_bits > 12) fail(ErrorCode::kInvalidArgument, "numParamBits {} is outside 4..12", t.num_param_bits);
  if (t.in_element_type != 0 && t.in_element_type != 1) fail(ErrorCode::kInvalidArgument, "inElementType {} is not 0 (unsigned) or 1 (signed)", t.in_element_type);
  if (!(t.in_quant_factor > 0) && t.in_quant_factor != -1) fail(ErrorCode::kInvalidArgument, "inQuantFactor {} must be > 0 (or -1: from calibration)", t.in_quant_factor);
  p.runtime.round_add = t.quant_round_add;
  p.runtime.dynamic = t.dynamic;
  p.runtime.history1 = t.quant_history_param1;
  p.runtime.history2 = t.quant_history_param2;
  p.runtime.margin = t.quant_margin;
  p.runtime.boot_frames = t.boot_frames;
  if (std::string why = kernels::pow2::checkOptions(p.runtime); !why.empty()) fail(ErrorCode::kInvalidArgument, "{}", why);
  if (!quant::rangeMethodFromName(o.calib_method, &p.quant.method))
    fail(ErrorCode::kInvalidArgument, "unknown range method '{}' (minmax, percentile, entropy, mse)", o.calib_method);
  p.quant.param_bits = t.num_param_bits;
  p.quant.input_signed = t.in_element_type == 1;
  p.quant.in_quant_factor = t.in_quant_factor;
  p.quant.margin = t.quant_margin;
  p.quant.keep_float.insert(o.keep_float.begin(), o.keep_float.end());
  p.quant.ranges = o.ranges;
  return p;
}

/// PREFIX_pow2_table.csv: every slot (tensor, signedness, calibrated range, starting q) and every layer's form.
std::string pow2TableCsv(const quant::Pow2Report& r) {
  std::string s = "kind,name,op,signed,lo,hi,q,qw,qb,note\n";
  for (size_t i = 0; i < r.slots.size(); ++i) {
    const quant::Pow2Slot& x = r.slots[i];
    s += fmt::format("slot,{},{},{},{},{},{},,,{}\n", csvField(x.tensor), i, x.is_signed ? 1 : 0, x.lo, x.hi, x.q, csvField(x.warning));
  }
  for (const quant::Pow2Layer& l : r.layers)
    s += fmt::format("layer,{},{},,,,,{},{},{}\n", csvField(l.name), l.op, l.op == "conv" || l.op == "gemm" ? std::to_string(l.qw) : "",
                     l.op == "conv" || l.op == "gemm" ? std::to_string(l.qb) : "", csvField(l.note));
  return s;
}

/// The calibration tensors of TranslateOptions as samples of the model's inputs: each tensor stacks one or more
/// samples along its first axis (views, nothing copied). Also used by Model::quantizedQdq (model.cpp).
std::vector<std::map<std::string, Tensor>> calibrationSamples(const ir::Graph& g, const std::map<std::string, std::vector<Tensor>>& data) {
  for (const auto& entry : data) {
    const std::string& name = entry.first;  // (not a structured binding: the lambda below captures it)
    bool known = std::any_of(g.inputs().begin(), g.inputs().end(), [&](ir::ValueId v) { return g.value(v).name == name; });
    if (!known) fail(ErrorCode::kInvalidArgument, "calibration data for '{}': the model has no input of that name", name);
  }
  std::vector<std::map<std::string, Tensor>> samples;
  std::string first;
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& in = g.value(v);
    auto it = data.find(in.name);
    if (it == data.end() || it->second.empty()) fail(ErrorCode::kInvalidArgument, "calibration data: input '{}' has none (every input needs samples)", in.name);
    const Shape& s = in.type.shape;
    std::vector<Tensor> mine;
    for (size_t f = 0; f < it->second.size(); ++f) {
      const Tensor& t = it->second[f];
      auto where = [&] { return fmt::format("calibration data for '{}' (tensor {})", in.name, f + 1); };
      if (t.dtype() != in.type.dtype)
        fail(ErrorCode::kInvalidInput, "{}: {} values, the input is {}", where(), dtypeName(t.dtype()), dtypeName(in.type.dtype));
      bool fits = t.rank() == static_cast<int>(s.size()) && !s.empty() && s[0] > 0 && t.dim(0) > 0 && t.dim(0) % s[0] == 0 &&
                  std::equal(s.begin() + 1, s.end(), t.shape().begin() + 1);
      if (!fits)
        fail(ErrorCode::kInvalidInput, "{}: shape {} does not stack samples of the input's shape {} (the first dimension a "
             "multiple of {}, the others equal)", where(), shapeStr(t.shape()), shapeStr(s), s.empty() ? 0 : s[0]);
      size_t bytes = t.nbytes() / static_cast<size_t>(t.dim(0) / s[0]);
      for (int64_t k = 0; k < t.dim(0) / s[0]; ++k)
        mine.emplace_back(t.dtype(), s, t.buffer(), t.offset() + static_cast<size_t>(k) * bytes);
    }
    if (first.empty()) {
      samples.resize(mine.size());
      first = in.name;
    } else if (mine.size() != samples.size()) {
      fail(ErrorCode::kInvalidInput, "calibration data: input '{}' has {} samples, input '{}' {} (they go together)", in.name,
           mine.size(), first, samples.size());
    }
    for (size_t k = 0; k < mine.size(); ++k) samples[k][in.name] = mine[k];
  }
  return samples;
}

namespace {

/// The seed's rule for AIPP with --dynamic_image_size (rule aipp.dynamic_image_size, docs/aipp.md): a dynamic block
/// may not crop or pad, and the width and height it sets (srcImageSizeW/H) equal the largest gear's — the frame input
/// must then hold a picture of the largest gear, and a largest gear (at least as high and as wide as every other)
/// must exist. A static stage on the gear input must fit every gear (its output size is fixed in each gear's
/// package). Checked before any gear is translated; the runtime checks the block itself (Runtime::setDynamicAipp).
void checkAippWithImageGears(const TranslateOptions& o, const std::string& input, const Shape& shape) {
  const prepost::AippConfig cfg = prepost::loadAipp(o.aipp);
  std::vector<std::string> names;
  {
    LoadOptions lo;
    lo.require_static_inputs = false;
    lo.resolve = false;
    lo.optimize = false;
    for (const TensorInfo& in : Model::load(o.onnx, lo).inputs()) names.push_back(in.name);
  }
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
  {
    LoadOptions lo;
    lo.require_static_inputs = false;
    lo.resolve = false;
    lo.optimize = false;
    Model m = Model::load(o.onnx, lo);
    for (const TensorInfo& in : m.inputs())
      if (!shapes.count(in.name)) shapes[in.name] = in.shape;
  }
  std::string input;
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
    if (!input.empty())
      fail(ErrorCode::kInvalidArgument, "{}: inputs '{}' and '{}' both have open dimensions; npuc's gears size one input", opt, input, name);
    input = name;
  }
  if (input.empty())
    fail(ErrorCode::kInvalidArgument, "{}: no input has an open dimension: give the dynamic input's shape with -1 where the gears go "
         "(--input_shape \"data:-1,3,224,224\" for batch gears, \"data:1,3,-1,-1\" for image-size gears)", opt);
  if (!batch && !o.aipp.empty()) checkAippWithImageGears(o, input, shapes[input]);
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
    Shape s = shapes[input];
    if (batch) {
      gear.batch = s[0] = o.dynamic_batch_sizes[i];
      gear.dir = fmt::format("batch_{}", gear.batch);
    } else {
      gear.height = s[2] = o.dynamic_image_sizes[i].first;
      gear.width = s[3] = o.dynamic_image_sizes[i].second;
      gear.dir = fmt::format("size_{}x{}", gear.height, gear.width);
    }
    g.input_shapes = shapes;
    g.input_shapes[input] = s;
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

/// --input_shape ranges resolved to static shapes (docs/aipp.md, "Shape ranges"): each ranged dimension takes, in
/// this order, the size the input's static AIPP stage delivers (height and width), the size fixed for the input with
/// --input-shape (TranslateOptions::input_shapes, any dimension), or for an input with a dynamic AIPP stage the model's
/// own static height / width; the size must lie in the range (the seed's rule: AIPP's output within the range; a
/// dynamic block must then deliver exactly that size, aipp.output_size). Any other ranged dimension is an error.
std::map<std::string, Shape> shapesFromRanges(const TranslateOptions& o) {
  std::map<std::string, Shape> shapes = o.input_shapes;
  std::optional<prepost::AippConfig> cfg;
  if (!o.aipp.empty()) cfg = prepost::loadAipp(o.aipp);
  std::vector<std::string> names;
  std::vector<Shape> model_shapes;
  {
    LoadOptions lo;
    lo.require_static_inputs = false;
    lo.resolve = false;
    lo.optimize = false;
    for (const TensorInfo& in : Model::load(o.onnx, lo).inputs()) names.push_back(in.name), model_shapes.push_back(in.shape);
  }
  auto bound = [](int64_t v) { return v == std::numeric_limits<int64_t>::max() ? std::string("-1 (unbounded)") : std::to_string(v); };
  for (const auto& [name, ranges] : o.input_shape_ranges) {
    auto pos = std::find(names.begin(), names.end(), name);
    if (pos == names.end()) fail(ErrorCode::kInvalidArgument, "--input_shape names '{}', which is not an input of the model", name);
    const size_t index = static_cast<size_t>(pos - names.begin());
    int64_t aipp_h = 0, aipp_w = 0;  // what the input's static AIPP stage delivers (0: none)
    bool dynamic_aipp = false;
    if (cfg)
      for (const prepost::AippOp& op : cfg->ops)
        if (op.related_input_rank == static_cast<int>(index)) {
          dynamic_aipp = op.dynamic;
          if (auto hw = prepost::staticAippOutputSize(op)) aipp_h = hw->first, aipp_w = hw->second;
        }
    auto fixed = o.input_shapes.find(name);  // --input-shape NAME=DIMS
    if (fixed != o.input_shapes.end() && fixed->second.size() != ranges.size())
      fail(ErrorCode::kInvalidArgument, "--input_shape '{}' has {} dimensions, --input-shape gives {}", name, ranges.size(), shapeStr(fixed->second));
    const Shape& own = model_shapes[index];
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
      } else if (image_dim && dynamic_aipp && own.size() == 4 && own[d] > 0) {
        v = own[d];
        from = "the model's own size (its dynamic AIPP block must deliver it) is";
      } else if (dynamic_aipp && image_dim) {
        fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} is a range {}, and the input's dynamic AIPP stage sets its "
             "output size per inference; npuc packages have static shapes: fix the size inside the range with --input-shape {}=DIMS "
             "(the block must then deliver it), or give the sizes as gears with --dynamic_image_size (the seed's rules for them)",
             name, d, range, name);
      } else if (!image_dim || !cfg) {
        fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} is a range {}; npuc packages have static shapes, and "
             "only the height and width of an image input can be set by its static AIPP stage (fix it inside the range with "
             "--input-shape {}=DIMS, or give the sizes as gears with --dynamic_batch_size / --dynamic_image_size)", name, d, range, name);
      } else {
        fail(ErrorCode::kInvalidArgument, "--input_shape '{}': dimension {} is a range {}, and no static AIPP stage of this input "
             "gives its size (npuc packages have static shapes: a static aipp_op with its output size, --input-shape {}=DIMS, or gears)",
             name, d, range, name);
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

}  // namespace

TranslateResult translate(const TranslateOptions& o, const std::function<void(const std::string&, double)>& progress) {
  if (!o.input_shape_ranges.empty()) {
    if (!o.dynamic_batch_sizes.empty() || !o.dynamic_image_sizes.empty())
      fail(ErrorCode::kInvalidArgument, "--input_shape ranges and gears (--dynamic_batch_size / --dynamic_image_size) cannot be combined");
    TranslateOptions fixed = o;
    fixed.input_shapes = shapesFromRanges(o);
    fixed.input_shape_ranges.clear();
    return translate(fixed, progress);
  }
  if (!o.dynamic_batch_sizes.empty() || !o.dynamic_image_sizes.empty()) return translateGears(o, progress);
  auto report = [&](const char* stage, double s) {
    if (progress) progress(stage, s);
  };
  Stopwatch sw;
  TranslateResult res;
  // Memory released by the stages goes back to the system (peak RSS matters for big models).
  struct CacheOff {
    size_t old = Buffer::setCacheLimit(0);
    ~CacheOff() { Buffer::setCacheLimit(old); }
  } cache_off;
  if (!o.aipp.empty() && !o.prepost.empty())
    fail(ErrorCode::kInvalidArgument, "--aipp and -prepost cannot be combined: each puts its own pre-processing in front of the inputs");
  target::Target t = target::loadTarget(o.target);
  target::relax(t, o.relax);
  // int8-pow2: TIDL's options, checked before any work is done.
  const std::optional<Pow2Setup> pow2 = t.numerics == Numerics::kInt8Pow2 ? std::optional(pow2Options(o)) : std::nullopt;
  if (!pow2) {  // (TIDL's keys given for another target: said, not silently dropped)
    const TranslateOptions::Pow2 def, &p = o.pow2;
    std::vector<std::string> set;
    auto note = [&](bool changed, const char* name) {
      if (changed) set.push_back(name);
    };
    note(p.num_param_bits != def.num_param_bits, "numParamBits");
    note(p.quant_round_add != def.quant_round_add, "quantRoundAdd");
    note(p.in_element_type != def.in_element_type, "inElementType");
    note(p.in_quant_factor != def.in_quant_factor, "inQuantFactor");
    note(p.quant_history_param1 != def.quant_history_param1, "quantHistoryParam1");
    note(p.quant_history_param2 != def.quant_history_param2, "quantHistoryParam2");
    note(p.quant_margin != def.quant_margin, "quantMargin");
    note(p.boot_frames != def.boot_frames, "boot-frames");
    note(p.dynamic != def.dynamic, "static-quant");
    if (!set.empty())
      res.warnings.push_back(fmt::format("{} set, but target '{}' has {} numerics: the int8-pow2 options apply to int8-pow2 "
                                         "targets (tidl) only, ignored", fmt::join(set, ", "), t.name, numericsName(t.numerics)));
  }
  // The output folder is built beside <out>/PREFIX and swapped in at the end (OutputDir: PREFIX is one plain
  // name, only a folder npuc wrote is replaced, a killed run leaves the old folder in place); checked before any
  // work is done.
  OutputDir out(o.out_root, o.prefix);
  const fs::path& tmp = out.path();
  LoadOptions lo;
  lo.input_shapes = o.input_shapes;
  lo.optimize = false;  // the translate pipeline below folds BatchNorm and removes dead code itself
  // int8-affine: the model may hold its own quantization, whose weights' DequantizeLinear the resolve pipeline would
  // fold into float32 constants before its convolutions can become integer layers; resolved below instead.
  lo.resolve = !isInt8AffineFamily(t.numerics);
  // The imported model is released once optimized (constants the optimizer kept are shared, not copied).
  std::optional<quant::InputMeans> means;  // for the bias correction of fp16 weights
  std::optional<std::map<std::string, quant::TensorStats>> pow2_stats;  // int8-pow2: the calibration statistics
  std::string put_pow2_table;                                           // and its PREFIX_pow2_table.csv
  bool prequantized = false;               // an int8-affine target's model that holds its own quantization
  // A model that cannot be imported or prepared (malformed, an unknown op, a pre/post definition that does not fit)
  // gets the error report too: one row with the message, published before the error goes up (exit status 2).
  auto reportFailure = [&](const Error& e, const char* stage, const char* verb) {
    try {
      std::vector<CheckRow> rows;
      if (const auto* u = dynamic_cast<const onnx_io::UnknownOpsError*>(&e)) {
        // Each node of an op npuc cannot import, by its place in the model (the manual's node_idx, name, op_type).
        for (const auto& n : u->nodes())
          rows.push_back({n.index, n.name, n.op, t.name + "." + stage, "Not Support Layer Error: npuc does not implement this operator",
                          "op " + n.op, "an op of your own can be added as a plugin: docs/custom-ops.md, --custom-op LIB.so"});
      } else {
        rows.push_back({-1, "", "", t.name + "." + stage, fmt::format("the model must {} ({})", verb, errorCodeName(e.code())), e.what(), ""});
      }
      writeCheckReport(rows, t.name, o.onnx.string(), tmp / o.prefix);
      out.commit();
    } catch (const Error&) {  // the original error is the one to report
    }
  };
  Model opt = [&] {
    Model m = [&] {
      try {
        return Model::load(o.onnx, lo);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kInvalidInput || e.code() == ErrorCode::kUnsupported) reportFailure(e, "import", "import");
        throw;
      }
    }();
    report("import", sw.lap());
    // A model quantized elsewhere (QuantizeLinear / DequantizeLinear pairs, e.g. `npuc quantize`) keeps its own
    // scales on int8-affine targets: its convolutions become integer layers before the optimizer folds the weights'
    // DequantizeLinear, and nothing is calibrated.
    if (isInt8AffineFamily(t.numerics)) {
      for (const NodeInfo& n : m.nodes()) prequantized |= n.op == "QuantizeLinear";
      if (prequantized) {
        if (!o.calibration.empty())
          res.warnings.push_back("the model is already quantized (QuantizeLinear / DequantizeLinear): its own scales are "
                                 "used, the calibration samples are not");
        if (t.numerics == Numerics::kInt8Radix) requireRadixForm(graphOf(m), o.onnx.string());
        if (o.save_qdq_onnx) m.saveOnnx(tmp / (o.prefix + "_qdq.onnx"));  // (the model as given: already QDQ)
        withContext(o.onnx.string(), [&] { integerLayers(mutableGraphOf(m)); });
        res.quantized = true;
        report("integer", sw.lap());
      }
      withContext(o.onnx.string(), [&] {  // what Model::load skipped (LoadOptions::resolve)
        passes::PassContext ctx;
        passes::PassManager(passes::resolvePipeline()).runToFixpoint(mutableGraphOf(m), ctx);
        ir::markChannelLastBoundaries(mutableGraphOf(m));
      });
    }
    if (o.save_qdq_onnx && !isInt8AffineFamily(t.numerics))
      res.warnings.push_back(fmt::format("--save-qdq-onnx is ignored: target '{}' has {} numerics (the QDQ model is "
                                         "the int8-affine quantization)", t.name, numericsName(t.numerics)));
    // --save-qdq-onnx: the model as `npuc quantize` loads it (standard ONNX ops, batch norms folded) is quantized on the same samples
    // with the same method; the tensors the package stores get the same scales (the same statistics), while ops
    // the optimizer fuses (Conv + activation, HardSwish, …) keep standard ONNX form.
    std::optional<Model> standard;
    if (o.save_qdq_onnx && isInt8AffineFamily(t.numerics) && !prequantized) {
      LoadOptions so = lo;  // the load pipeline: shapes resolved, batch norms folded, ONNX ops only
      so.resolve = so.optimize = true;
      standard = Model::load(o.onnx, so);
    }
    Model body = std::move(m).optimized(o.relu6_to_relu);
    if (t.numerics == Numerics::kInt8Pow2 || (isInt8AffineFamily(t.numerics) && !prequantized && graphOf(body).opset >= 13)) {
      // The integer numerics have no channel-affine layer of their own: a BatchNormalization no Conv absorbed runs as
      // a depthwise 1x1 convolution (TIDL's BatchNorm layer; int8-affine's per-channel weight scales, opset 13 on,
      // hold each factor to its rounding), the activation after it fused (docs/numerics.md).
      withContext(o.onnx.string(), [&] {
        passes::PassContext ctx;
        passes::PassManager({"batchnorm-to-conv", "fuse-activations", "dce"}).runToFixpoint(mutableGraphOf(body), ctx);
      });
    }
    report("optimize", sw.lap());
    if (isInt8AffineFamily(t.numerics) && !prequantized) {
      // Quantized as QDQ on the optimized model (its fused layers' outputs are what the device stores), then the
      // weights' DequantizeLinear folded into float32 constants: the package holds int8 activations between
      // quantize / dequantize layers (docs/numerics.md).
      if (o.calibration.empty())
        fail(ErrorCode::kInvalidArgument, "target '{}' has {} numerics: translate needs calibration samples "
             "(--calib NAME=FILE.npy, docs/calibration.md)", t.name, numericsName(t.numerics));
      QuantizeOptions qo;
      qo.calibration = o.calibration;
      qo.method = o.calib_method;
      qo.scheme = t.numerics == Numerics::kInt8Radix ? "radix" : "affine";
      qo.threads = o.threads;
      qo.keep_float = o.keep_float;
      qo.ranges = o.ranges;
      qo.bias_correction = o.bias_correction;
      if (standard) {
        QuantizeOptions so = qo;
        so.qdq_onnx = tmp / (o.prefix + "_qdq.onnx");
        // Override names are the optimized model's: those the standard model lacks (nodes and tensors the optimizer
        // made) are left out of the QDQ file, and said so.
        std::map<std::string, std::string> nodes;  // name -> op
        for (const NodeInfo& n : standard->nodes()) nodes[n.name] = n.op;
        so.keep_float.clear();
        for (const std::string& k : qo.keep_float) {
          auto n = nodes.find(k);
          if (n != nodes.end() && (n->second == "Conv" || n->second == "Gemm" || n->second == "MatMul")) so.keep_float.push_back(k);
          else if (n != nodes.end())  // (a batch norm the package runs as a depthwise convolution: float there already)
            res.warnings.push_back(fmt::format("--keep-float '{}' is not applied to {}_qdq.onnx (the standard model's node is a {}, "
                                               "which has no weights to keep in float)", k, o.prefix, n->second));
          else res.warnings.push_back(fmt::format("--keep-float '{}' is not applied to {}_qdq.onnx (the standard model has no such node)", k, o.prefix));
        }
        for (auto it = so.ranges.begin(); it != so.ranges.end();)
          if (!graphOf(*standard).findValue(it->first)) {
            res.warnings.push_back(fmt::format("--range '{}' is not applied to {}_qdq.onnx (the standard model has no such tensor)", it->first, o.prefix));
            it = so.ranges.erase(it);
          } else {
            ++it;
          }
        withContext(o.onnx.string(), [&] { standard->quantizedQdq(so); });
        report("save-qdq", sw.lap());
      }
      qo.integer_layers = true;
      QuantizeReport qr;
      body = body.quantizedQdq(qo, &qr);
      // The quantization table beside the package: csv, xlsx and html (docs/calibration.md).
      for (const char* ext : {".csv", ".xlsx", ".html"}) {
        writeQuantizeTable(qr, tmp / (o.prefix + "_quant_table" + ext));
        res.files.push_back(o.prefix + "_quant_table" + ext);
      }
      res.calibration_samples = qr.samples;
      res.bias_corrected_layers = qr.bias_corrected;
      res.quantized = true;
      res.warnings.insert(res.warnings.end(), qr.warnings.begin(), qr.warnings.end());
      withContext(o.onnx.string(), [&] {
        passes::PassContext ctx;
        passes::PassManager({"fold-constants", "dce"}).runToFixpoint(mutableGraphOf(body), ctx);
      });
      report("quantize", sw.lap());
    } else if (!o.calibration.empty()) {
      // Measured on the optimized model alone (its inputs are what the samples give), applied below by layer name.
      auto samples = calibrationSamples(graphOf(body), o.calibration);
      const int threads = o.threads > 0 ? o.threads : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, ThreadPool::kMaxThreads);
      if (t.numerics == Numerics::kFp16) {
        means = quant::measureInputMeans(graphOf(body), samples, threads);
        report("calibrate", sw.lap());
      } else if (t.numerics == Numerics::kInt8Pow2) {
        // The statistics of every tensor of the optimized model; quantized where it is lowered (below).
        pow2_stats = withContext(o.onnx.string(), [&] { return quant::collectStats(graphOf(body), samples, threads); });
        res.calibration_samples = samples.size();
        report("calibrate", sw.lap());
      } else {
        res.warnings.push_back(fmt::format("calibration data is not used: target '{}' has {} numerics ({})", t.name,
                                           numericsName(t.numerics), t.numerics == Numerics::kFp32 ? "weights are stored exactly"
                                                                                                  : "quantization is not implemented yet"));
      }
    }
    if (!o.aipp.empty()) {
      // Ascend-style AIPP stages in front of the inputs the configuration names (static blocks checked here).
      Model with = body.withAipp(o.aipp);
      report("aipp", sw.lap());
      return with;
    }
    if (o.prepost.empty()) return body;
    // Validated against the model (names, §9 messages, sizes) and inserted around the optimized body: the
    // pre/post nodes keep their exact types (uint8 frames, float16 images) whatever the target's numerics.
    Model with = [&] {
      try {
        return body.withPrePost(o.prepost, {o.prepost_full, o.check_prepost, o.not_check_size});
      } catch (const Error& e) {
        if (!o.check_prepost) throw;
        // -CheckPrePost ON (§7.3): the optimized model is saved to compare with the definition, as the manual's hint
        // promises, published on its own in the output folder before the error goes up.
        const fs::path saved = tmp / (o.prefix + "_opt.onnx");
        try {
          body.saveOnnx(saved);
          out.commit();
        } catch (const Error&) {
          throw e;
        }
        throw Error(e.code(), fmt::format("{}\n(-CheckPrePost ON: the optimized model is saved as {} to compare with the definition)",
                                          e.what(), (out.finalPath() / saved.filename()).string()));
      }
    }();
    report("prepost", sw.lap());
    return with;
  }();
  res.errors = checkRows(graphOf(opt), t);
  report("check", sw.lap());

  {
    fs::path base = tmp / o.prefix;
    auto add = [&](const std::string& f) { res.files.push_back(fs::path(f).filename().string()); };
    if (o.save_qdq_onnx && res.quantized) add(base.string() + "_qdq.onnx");  // (written when quantized, above)
    if (o.save_opt_onnx) {
      opt.saveOnnx(base.string() + "_opt.onnx");
      add(base.string() + "_opt.onnx");
      report("save-opt", sw.lap());
    }
    if (!res.errors.empty()) {
      for (auto& f : writeCheckReport(res.errors, t.name, o.onnx.string(), base)) add(f);
    } else {
      codegen::Estimate e = codegen::estimate(graphOf(opt), t);
      // The convolution kernels chosen for all and by name now (a bad choice refused before the quantization and
      // the lowering); a list by layer once the package's layers exist (below: chooseConvKernels is idempotent).
      codegen::chooseConvKernels(e, t, o.conv_kernel_all, {}, {}, o.conv_kernels);
      std::future<void> summary;  // after e: destroyed (joined) first
      bool emit = numericsHasPackages(t.numerics) && (t.numerics != Numerics::kInt8Pow2 || pow2_stats);
      if (emit && pow2_stats) {
        // int8-pow2 (docs/numerics.md): the check and the estimate above saw the float model; the package holds its
        // quantized form. The table of slots and layers goes beside it.
        quant::Pow2Report pr = withContext(o.onnx.string(), [&] {
          return quant::quantizeToPow2(mutableGraphOf(opt), *pow2_stats, pow2->quant);
        });
        passes::PassContext ctx;
        passes::PassManager({"dce"}).runToFixpoint(mutableGraphOf(opt), ctx);
        put_pow2_table = pow2TableCsv(pr);
        res.quantized = true;
        res.warnings.insert(res.warnings.end(), pr.warnings.begin(), pr.warnings.end());
        report("quantize", sw.lap());
      }
      if (emit) {
        if (means) {
          // After -SaveOptOnnx: the optimized model stays the float model; only the package's biases change.
          quant::BiasCorrection bc = quant::correctBias(mutableGraphOf(opt), *means, quant::roundToHalf);
          res.calibration_samples = means->samples;
          res.bias_corrected_layers = bc.layers;
          report("bias", sw.lap());
        }
        codegen::LowerOptions lo2;
        lo2.prefix = o.prefix;
        if (pow2) lo2.pow2 = pow2->runtime;
        lo2.reuse_memory = o.reuse_memory;
        lo2.concat_in_place = !o.concat_copies;
        lo2.intm_yaml_name = (out.finalPath() / (o.prefix + "_addrmap_intm.yaml")).string();
        // The definition, already validated against the model by withPrePost, read once more here for the
        // manifest's frame descriptions and PREFIX_prepost_opt.yaml.
        std::optional<prepost::PrePost> def;
        if (!o.prepost.empty()) {
          prepost::ParseOptions po;
          po.full_format = o.prepost_full;
          po.check_prepost = o.check_prepost;
          def = prepost::loadPrePost(o.prepost, po);
          lo2.input_images = inputImages(*def);
        }
        if (!o.addr_map.empty()) lo2.addr_def = plan::loadAddrMapDef(o.addr_map, plan::AddrMapRules::forTarget(t));
        // The optimized graph is not needed after this: its constants are released as they are copied.
        codegen::Lowered low = [&] {
          try {
            return codegen::lowerConsuming(mutableGraphOf(opt), t, lo2);
          } catch (const plan::AddressMapOverflow& e) {
            // The message sends the user to the intm files: they are written (with the addresses that overflowed)
            // and published, in place of the package.
            writeFileAtomic(base.string() + "_addrmap_intm.yaml", plan::addrMapYaml(e.map));
            writeFileAtomic(base.string() + "_addrmap_intm.txt", plan::addrMapTxt(e.map));
            out.commit();
            throw;
          } catch (const Error& e) {
            // What the per-node check (packageGaps) could not foresee: a failure of the whole graph's lowering.
            if (e.code() == ErrorCode::kUnsupported) reportFailure(e, "lowering", "lower");
            throw;
          }
        }();
        // Nodes that became no descriptor (aliases, a cast fused into normalize) take no device time.
        std::set<std::string> gone(low.aliased.begin(), low.aliased.end());
        for (auto& f : low.fusions) gone.insert(f.absorbed.begin(), f.absorbed.end());
        codegen::dropLayers(e, gone);
        std::vector<std::string> layer_names;
        for (const package::LayerInfo& l : low.pkg.layers) layer_names.push_back(l.name);
        codegen::chooseConvKernels(e, t, -1, o.conv_kernel_list, layer_names, o.conv_kernels);  // (by name over the list)
        codegen::throughput(e, t);
        assignLayerGroups(o, e, low.pkg);
        // The summary (csv, md, xlsx: about as long to write as the package for a large model) is written on a
        // second thread meanwhile; its future joins on every way out of this block.
        summary = std::async(std::launch::async, [&e, &t, base] { writeSummary(e, t, base); });
        res.activation_bytes = low.data_bytes;
        res.activation_lower_bound = low.data_lower_bound;
        res.warnings.insert(res.warnings.end(), low.map.warnings.begin(), low.map.warnings.end());
        report("plan", sw.lap());
        for (auto& f : package::writePackage(low.pkg, tmp)) res.files.push_back(f);
        res.content_hash = low.pkg.content_hash;
        auto put = [&](const std::string& suffix, const std::string& text) {
          writeFileAtomic(base.string() + suffix, text);
          add(base.string() + suffix);
        };
        put("_addrmap_intm.yaml", plan::addrMapYaml(low.map));
        put("_addrmap_intm.txt", plan::addrMapTxt(low.map));
        for (auto& [sp, text] : codegen::tblAddrTexts(low)) put("_tbl_addr_" + sp + ".txt", text);
        if (def) put("_prepost_opt.yaml", prepostOptYaml(o, *def, low));
        if (t.numerics == Numerics::kInt8Radix) put("_radix_scale_info.txt", radixScaleInfo(low.pkg));
        if (!put_pow2_table.empty()) put("_pow2_table.csv", put_pow2_table);
        put("_data_in_list.txt", codegen::ioListText(low, true));
        put("_data_out_list.txt", codegen::ioListText(low, false));
        report("package", sw.lap());
      } else {
        if (!o.conv_kernel_list.empty())
          fail(ErrorCode::kInvalidArgument, "convolution kernels: a list by layer counts the package's layers, and target '{}' writes "
               "no package without calibration samples (--calib, tidl-import's sampleInData); name layers instead "
               "(--conv-kernel LAYER=sparse|dense)", t.name);
        {
          // Nodes a package holds as aliases (the same bytes under another shape: no descriptor) take no device time
          // here either, so that the estimate is the same whether a package is written or not.
          const ir::Graph& g = graphOf(opt);
          const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
          std::set<std::string> views;
          for (ir::NodeId id : g.order()) {
            const ir::Node& n = g.node(id);
            if (codegen::isViewOp(n) && n.outputs.size() == 1 && !outputs.count(n.outputs[0])) views.insert(n.name);
          }
          codegen::dropLayers(e, views);
        }
        codegen::throughput(e, t);  // (the kernels chosen above)
        if (!o.layer_groups.empty() || !o.layer_group_list.empty() || o.auto_layer_groups)
          res.warnings.push_back("layers groups (--layer-group, --layer-groups, layersGroupId) are recorded in a package, and none "
                                 "is written here: not used (the estimate's own cut is in PREFIX_summary.md)");
        auto buffers = plan::activationBuffers(graphOf(opt), 1);
        plan::MemoryPlan mp = o.reuse_memory ? plan::planReuse(buffers) : plan::planSequential(buffers);
        res.activation_bytes = mp.total;
        res.activation_lower_bound = mp.lower_bound;
        if (t.numerics == Numerics::kInt8Pow2)
          res.warnings.push_back(fmt::format("target '{}' has {} numerics: no object package is written without calibration "
                                             "samples (--calib NAME=FILE.npy, tidl-import's sampleInData; reports only)", t.name,
                                             numericsName(t.numerics)));
        else
          res.warnings.push_back(fmt::format("target '{}' declares {} numerics: no object package is written until "
                                             "quantization is implemented (reports only)", t.name, numericsName(t.numerics)));
        report("plan", sw.lap());
      }
      res.estimated_us = e.total_us;
      res.single_core_us = e.single_core_us;
      for (auto& c : e.multi_core) res.multi_core_roi_s.emplace_back(c.name, c.roi_per_s);
      if (summary.valid()) summary.get();  // rethrows what the summary's thread threw
      else writeSummary(e, t, base);
      for (const char* ext : {"_summary.csv", "_summary.md", "_summary.xlsx"}) add(base.string() + ext);
      report("estimate", sw.lap());
    }
    out.commit();
  }
  res.dir = out.finalPath();
  res.ok = res.errors.empty();
  report("write", sw.lap());
  return res;
}

}  // namespace npuc
