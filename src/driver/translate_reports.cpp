// The reports of translate(): the time estimate's summary (csv, md, xlsx), the package's layers groups, the frames
// of pre-processed inputs and PREFIX_prepost_opt.yaml.
#include "driver/translate_reports.hpp"

#include "kernels/prepost.hpp"
#include "package/package.hpp"
#include "support/error.hpp"
#include "support/file.hpp"

#include <fmt/format.h>
#include <xlsxwriter.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace npuc {

namespace fs = std::filesystem;

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

namespace {

std::string kerStr(const codegen::LayerEstimate& l) {
  return l.ker_w ? fmt::format("{},{},{},{},{},{},{},{}", l.ker_w, l.ker_h, l.stride, l.dilation, l.pad_l, l.pad_r, l.pad_t, l.pad_b)
                 : ",,,,,,,";
}

/// Layers the summary workbook lists one per row; a larger model's workbook ends with a row pointing to the CSV.
constexpr size_t kXlsxMaxLayers = 20000;

}  // namespace

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
                   l.precision.empty() ? l.engine : l.engine + " (" + l.precision + ")", l.ker_w ? ker : "", l.in_c, l.in_w, l.in_h, l.out_c, l.out_w, l.out_h, l.macs, l.time_us);
  }
  csv += fmt::format("total,,,,,,,,,,,,,,,,,,,{:.3f}\n", e.total_us);
  md += fmt::format("\n**Total: {:.3f} us**", e.total_us);
  for (auto& [eng, us] : e.per_engine_us) md += fmt::format(" — {}: {:.3f} us", eng, us);
  md += "\n\nSingle core (every layer on one engine; n/a: the engine has no MAC rate for the model's MAC layers):";
  for (auto& [eng, us] : e.single_core_us) md += std::isnan(us) ? fmt::format(" {}: n/a;", eng) : fmt::format(" {}: {:.3f} us;", eng, us);
  md += "\n";
  if (std::any_of(e.layers.begin(), e.layers.end(), [](const codegen::LayerEstimate& l) { return !l.precision.empty(); })) {
    md += fmt::format("\nLayers kept wider than {} (timed at their width; docs/cost-model.md):", numericsName(t.numerics));
    for (auto& l : e.layers)
      if (!l.precision.empty()) md += fmt::format(" {} {} ({:.3f} us);", l.name, l.precision, l.time_us);
    md += "\n";
  }
  int sparse = 0, dense = 0;
  for (auto& l : e.layers) (l.conv_kernel == "sparse" ? sparse : dense) += !l.conv_kernel.empty();
  if (sparse + dense > 0) {
    md += fmt::format("\nConvolution kernels (TIDL's conv2dKernelType; docs/cost-model.md): {} sparse, {} dense —", sparse, dense);
    for (auto& l : e.layers)
      if (!l.conv_kernel.empty()) md += fmt::format(" {} {} (weights {:.0f} % nonzero);", l.name, l.conv_kernel, 100 * l.weight_density);
    md += "\n";
  }
  if (!e.groups.empty()) {
    md += "\nThe package's layers groups (one core each, pipelined; docs/cost-model.md):";
    for (auto& g : e.groups) md += fmt::format(" group {} on {} {:.3f} us;", g.group, g.engine, g.us);
    md += fmt::format(" {:.3f} us per frame ({:.2f} roi/s)\n", e.groups_period_us, 1e6 / e.groups_period_us);
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

}  // namespace npuc
