// npuc compare: the original model on the reference engine (float32) against its package on the simulator, layer by
// layer. Layers are matched by the value they write (the package manifest's `output`, the ONNX value name; an int8
// layer of an int8-affine package by the float tensor its codes stand for, dequantized with its scale); per
// layer: max abs error, cosine similarity, SNR in dB; the first layer whose SNR drops sharply is flagged. Written
// to the console, DIR/compare.csv and DIR/compare.html (one self-contained page with an SVG chart).
#include "cli_common.hpp"

#include "npuc/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

namespace npuc::cli {

namespace fs = std::filesystem;

namespace {

constexpr double kSnrCap = 200.0;    // identical tensors: "inf", plotted at the cap
constexpr double kSharpDrop = 10.0;  // dB below the previous matched layer
constexpr double kFirstLayerLow = 20.0;  // the first matched layer is flagged below this SNR

struct Row {
  int seq = 0;
  std::string name, kind, engine, opexp, value, shape;
  bool matched = false;
  double max_abs = 0, cosine = 1, snr = kSnrCap;
  bool flagged = false;
};

void measure(const Tensor& sim, const Tensor& ref, Row& r) {
  auto a = sim.toDouble(), b = ref.toDouble();
  double sig = 0, noise = 0, ab = 0, aa = 0, bb = 0, mx = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = a[i] - b[i];
    if (std::isnan(d)) d = std::isnan(a[i]) && std::isnan(b[i]) ? 0 : std::numeric_limits<double>::infinity();
    mx = std::max(mx, std::fabs(d));
    sig += b[i] * b[i];
    noise += d * d;
    ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  }
  r.max_abs = mx;
  r.cosine = aa == 0 && bb == 0 ? 1.0 : (aa == 0 || bb == 0 ? 0.0 : ab / std::sqrt(aa * bb));
  r.snr = noise == 0 ? kSnrCap : (sig == 0 ? -kSnrCap : std::min(kSnrCap, 10.0 * std::log10(sig / noise)));
}

std::string snrStr(double s) { return s >= kSnrCap ? "inf" : fmt::format("{:.2f}", s); }

std::string comparePage(const std::vector<Row>& rows, const std::string& model, const std::string& pkg, const Runtime& rt) {
  // SVG line chart of SNR per layer (matched layers), 0..max(60, finite max) dB.
  const double W = 900, H = 300, L = 50, B = 30;
  double top = 60;
  for (auto& r : rows)
    if (r.matched && r.snr < kSnrCap) top = std::max(top, std::ceil(r.snr / 10) * 10);
  auto x = [&](size_t i) { return L + (W - L - 10) * (rows.size() > 1 ? static_cast<double>(i) / static_cast<double>(rows.size() - 1) : 0.5); };
  auto y = [&](double snr) { return (H - B) - (H - B - 10) * std::clamp(std::min(snr, top) / top, 0.0, 1.0); };
  std::string svg = fmt::format("<svg width='{}' height='{}' xmlns='http://www.w3.org/2000/svg' style='font:11px sans-serif'>\n", W, H);
  for (double t = 0; t <= top; t += 10)
    svg += fmt::format("<line x1='{}' x2='{}' y1='{:.1f}' y2='{:.1f}' stroke='#ddd'/><text x='5' y='{:.1f}'>{} dB</text>\n", L, W - 10,
                       y(t), y(t), y(t) + 4, t);
  std::string pts;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].matched) pts += fmt::format("{:.1f},{:.1f} ", x(i), y(rows[i].snr));
  svg += fmt::format("<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='{}'/>\n", pts);
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].matched)
      svg += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='{}' fill='{}'><title>{} {}: {} dB</title></circle>\n", x(i), y(rows[i].snr),
                         rows[i].flagged ? 6 : 3, rows[i].flagged ? "#d62728" : "#1f77b4", rows[i].seq, htmlEscape(rows[i].name),
                         snrStr(rows[i].snr));
  svg += fmt::format("<text x='{}' y='{}'>layer (program order) → ; identical layers are drawn at the top</text></svg>\n", L, H - 8);
  std::string table =
      "<table><tr><th>seq</th><th>layer</th><th>kind</th><th>engine</th><th>opexp</th><th>value</th><th>shape</th>"
      "<th>max abs err</th><th>cosine</th><th>SNR dB</th></tr>\n";
  for (auto& r : rows)
    table += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>\n",
                         r.flagged ? " class='flag'" : "", r.seq, htmlEscape(r.name), r.kind, r.engine, htmlEscape(r.opexp),
                         htmlEscape(r.value), r.shape,
                         r.matched ? fmt::format("<td>{:.6g}</td><td>{:.7f}</td><td>{}</td>", r.max_abs, r.cosine, snrStr(r.snr))
                                   : "<td colspan='3'>no matching value in the model</td>");
  table += "</table>\n";
  return fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>npuc compare</title><style>"
      "body{{font-family:sans-serif;margin:20px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;"
      "font-size:12px}}tr.flag{{background:#fdd}}</style></head><body>\n<h1>npuc compare</h1>\n<p>Model <code>{}</code> "
      "(reference engine, float32) against package <code>{}</code> (target {}, {} numerics, simulator). SNR = 10·log10(Σref² / "
      "Σ(sim−ref)²). Highlighted: the first layer whose SNR drops by {} dB or more.</p>\n{}\n{}</body></html>\n",
      htmlEscape(model), htmlEscape(pkg), rt.target(), rt.numerics(), kSharpDrop, svg, table);
}

/// What compare is given (the options below).
struct CompareOptions {
  std::string model, package, out = "compare_out", prepost, aipp_config, caffe_model;
  bool prepost_full = false;
  std::vector<std::string> inputs, aipp;
  int threads = 1;
};

/// The inputs, set on the runtime: the given ones (and dynamic AIPP parameter blocks), the others seeded random.
std::map<std::string, Tensor> feedInputs(Runtime& rt, const CompareOptions& o) {
  std::map<std::string, Tensor> inputs;
  for (auto& e : o.inputs) {
    auto eq = e.find('=');
    if (eq == std::string::npos) throw Error(ErrorCode::kInvalidArgument, fmt::format("--input '{}': expected name=file", e));
    inputs[e.substr(0, eq)] = readNpyFile(e.substr(eq + 1));
  }
  for (const auto& [name, block] : parseAippParams(o.aipp)) {
    rt.setDynamicAipp(name, block);  // checks it
    for (auto& in : rt.inputs())
      if (in.aipp_for == name || (in.name == name && !in.aipp_for.empty())) {
        Tensor t(DType::kU8, in.shape);
        std::memcpy(t.raw(), block.data(), block.size());
        inputs[in.name] = t;  // the engine reads the block as an input
      }
  }
  uint32_t st = 12345;
  for (auto& in : rt.inputs()) {
    if (inputs.count(in.name)) continue;
    if (!in.aipp_for.empty())
      throw Error(ErrorCode::kInvalidArgument, fmt::format("input '{}' is the dynamic AIPP parameter block of '{}': give it with "
                                                           "--aipp {}=params.bin|yaml", in.name, in.aipp_for, in.aipp_for));
    bool bytes = in.dtype == DType::kU8;  // a camera frame: random bytes
    Tensor t(bytes ? DType::kU8 : DType::kF32, in.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      st ^= st << 13, st ^= st >> 17, st ^= st << 5;
      if (bytes) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(st >> 24);
      else t.data<float>()[i] = static_cast<float>(st >> 8) * 0x1p-23f - 1.0f;  // uniform in [-1, 1)
    }
    inputs[in.name] = t;
  }
  for (auto& entry : inputs) {
    const std::string& name = entry.first;  // (not structured bindings: the lambda below captures them)
    const Tensor& t = entry.second;
    bool ok = t.dtype() == DType::kF32 || std::any_of(rt.inputs().begin(), rt.inputs().end(), [&](const RuntimeTensor& r) {
                return r.name == name && r.dtype == t.dtype();
              });
    if (!ok) throw Error(ErrorCode::kInvalidArgument, fmt::format("--input {}: compare needs float32 or the device type", name));
    rt.setInput(name, t);
  }
  return inputs;
}

/// Runs the package layer by layer and the model on the reference engine, and reports where they part.
int runCompare(const CompareOptions& o) {
  Runtime rt(o.package, {o.threads, false});
  std::map<std::string, Tensor> inputs = feedInputs(rt, o);
  // Reference: the original model, keeping the values the package's layers write.
  std::map<std::string, Tensor> ref;
  // The model value a layer stands for: its output, or for int8 codes their float tensor.
  auto valueOf = [](const RuntimeLayer& l) -> const std::string& { return l.float_value.empty() ? l.output.name : l.float_value; };
  for (auto& l : rt.layers()) {
    ref[valueOf(l)];
    for (auto& o : l.more_outputs) ref[o.name];  // (a custom layer's other outputs: a row each)
  }
  LoadOptions lo;
  if (o.prepost.empty() && o.aipp_config.empty())
    for (auto& in : rt.inputs()) lo.input_shapes[in.name] = in.shape;
  lo.caffe_model = o.caffe_model;
  Model m = Model::load(o.model, lo);
  if (!o.prepost.empty()) m = m.withPrePost(o.prepost, {o.prepost_full, false, false});
  if (!o.aipp_config.empty()) m = m.withAipp(o.aipp_config);
  // The pre/post boundaries: checked on the reference's values and on the package's (independently of how the
  // translator bridged them, so a layout mistake both share still shows).
  const std::vector<PrePostBoundary> bounds = m.prePostBoundaries();
  std::set<std::string> bound_names;
  for (auto& b : bounds) bound_names.insert({b.model_value, b.prepost_value});
  std::map<std::string, Tensor> ref_bound(inputs.begin(), inputs.end()), pkg_bound(inputs.begin(), inputs.end());
  Session s(m, o.threads);
  s.run(inputs, [&](const std::string& v, const Tensor& t) {
    auto it = ref.find(v);
    if (it != ref.end()) it->second = t.clone();
    if (bound_names.count(v)) ref_bound[v] = t.clone();
  });
  for (size_t i = 0; i < m.inputs().size(); ++i)
    if (ref.count(m.inputs()[i].name)) ref[m.inputs()[i].name] = inputs[m.inputs()[i].name];
  std::vector<Row> rows;
  rt.run([&](const RuntimeLayer& l, const Tensor& y) {
    Row r;
    r.seq = l.seq;
    r.name = l.name;
    r.kind = l.kind;
    r.engine = l.engine;
    r.opexp = l.opexp;
    r.value = l.output.name;
    r.shape = shapeStr(y.shape());
    if (bound_names.count(l.output.name)) pkg_bound[l.output.name] = y.clone();
    auto it = ref.find(valueOf(l));
    if (it != ref.end() && it->second.defined() && it->second.numel() == y.numel()) {
      r.matched = true;
      if (!l.float_value.empty()) r.value = l.float_value;  // int8 codes, compared as the real values they stand for
      measure(realValues(l, y, rt.outputScale(l.seq)), it->second, r);
    }
    rows.push_back(r);
  });
  // A sharp drop: kSharpDrop dB below the previous matched layer (the first matched layer: below kFirstLayerLow).
  double prev = std::numeric_limits<double>::quiet_NaN();
  const Row* flagged = nullptr;
  for (auto& r : rows) {
    if (!r.matched) continue;
    bool sharp = std::isnan(prev) ? r.snr < kFirstLayerLow : r.snr <= prev - kSharpDrop;
    if (!flagged && sharp) {
      r.flagged = true;
      flagged = &r;
    }
    prev = r.snr;
  }
  makeOutputFolder(o.out, "--out");
  std::string csv = "seq,layer,kind,engine,opexp,value,shape,matched,max_abs_err,cosine,snr_db\n";
  fmt::print("{:>4}  {:<44} {:<16} {:>12} {:>11} {:>8}\n", "seq", "layer", "kind", "max abs err", "cosine", "SNR dB");
  int matched = 0;
  double worst_cos = 1;
  for (auto& r : rows) {
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", r.seq, csvField(r.name), r.kind, r.engine, csvField(r.opexp),
                       csvField(r.value), r.shape,
                       r.matched ? 1 : 0, r.matched ? fmt::format("{:.9g}", r.max_abs) : "",
                       r.matched ? fmt::format("{:.9f}", r.cosine) : "", r.matched ? snrStr(r.snr) : "");
    std::string nm = r.name.size() > 44 ? "…" + r.name.substr(r.name.size() - 43) : r.name;
    if (r.matched) {
      ++matched;
      worst_cos = std::min(worst_cos, r.cosine);
      fmt::print("{:>4}  {:<44} {:<16} {:>12.5g} {:>11.7f} {:>8}{}\n", r.seq, nm, r.kind, r.max_abs, r.cosine, snrStr(r.snr),
                 r.flagged ? "  <- SNR drops sharply here" : "");
    } else {
      fmt::print("{:>4}  {:<44} {:<16} {:>33}\n", r.seq, nm, r.kind, "(no matching model value)");
    }
  }
  bool layout_mistake = false;
  if (!bounds.empty()) {
    fmt::print("pre/post boundaries (the declared layout against the model's tensors):\n");
    for (auto [who, vals] : {std::pair{"reference", &ref_bound}, std::pair{"package", &pkg_bound}})
      for (const BoundaryCheck& c : checkPrePostBoundaries(bounds, *vals)) {
        if (!c.checked && std::string(who) == "package") continue;  // (a value the package keeps in one buffer)
        layout_mistake = layout_mistake || (c.checked && !c.ok);
        fmt::print("  {:<9} {}\n", who, c.message);
      }
  }
  writeText(fs::path(o.out) / "compare.csv", csv);
  writeText(fs::path(o.out) / "compare.html", comparePage(rows, o.model, o.package, rt));
  fmt::print("{} of {} layers matched; lowest cosine {:.7f}; {}\nwrote {}/compare.csv and {}/compare.html\n", matched, rows.size(),
             worst_cos, flagged ? fmt::format("first sharp SNR drop at layer {} ({})", flagged->seq, flagged->name)
                                : "no sharp SNR drop",
             o.out, o.out);
  if (layout_mistake) {
    fmt::print(stderr, "npuc: error: a pre/post boundary does not hold the model's tensor in the declared layout (see above)\n");
    return 1;
  }
  return 0;
}

}  // namespace

void addCompare(Command& app, Action& run) {
  auto* c = app.subcommand("compare", "Compare a package on the simulator with its model on the reference engine, layer by layer");
  addCustomOpOption(c);
  auto o = std::make_shared<CompareOptions>();
  c->option("model", o->model, "The original ONNX model")->required();
  c->option("package", o->package, "Its package folder (output/PREFIX)")->required();
  c->option("--caffe-model", o->caffe_model, "The model is a Caffe network (.prototxt): its trained weights (.caffemodel)");
  c->option("--input", o->inputs, "Input: name=file.npy (float32); seeded random when not given");
  c->option("--out,-o", o->out, "Folder for compare.csv and compare.html");
  c->option("--threads,-t", o->threads, "Worker threads")->range(1, 256);
  c->option("--prepost", o->prepost, "The pre/post-processing definition the package was translated with (-prepost): the "
                                        "reference then runs the model with it, camera frame in");
  c->flag("--prepost-full", o->prepost_full, "The definition is in the legacy full format (-PrePostFULL)");
  c->option("--aipp-config", o->aipp_config, "The AIPP configuration the package was translated with (--aipp): the "
                                                "reference then runs the model behind the same AIPP stages");
  c->option("--aipp", o->aipp, "Dynamic AIPP: name=params.bin|yaml, the parameter block for frame input name (docs/aipp.md)");
  c->callback([o, &run] {
    run = [o] { return runCompare(*o); };
  });
}

}  // namespace npuc::cli
