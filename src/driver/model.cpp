// The compiler facade behind include/npuc/model.hpp: import -> resolve pipeline; inspection; export; sessions.
#include "npuc/model.hpp"

#include "codegen/cost.hpp"
#include "codegen/lower.hpp"
#include "engine/engine.hpp"
#include "frontend/caffe/caffe_io.hpp"
#include "frontend/tf/tf_io.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "frontend/tflite/tflite_io.hpp"
#include "ops/custom.hpp"
#include "ops/registry.hpp"
#include "passes/pass.hpp"
#include "prepost/aipp.hpp"
#include "prepost/graph.hpp"
#include "quant/adaround.hpp"
#include "quant/bias_absorption.hpp"
#include "quant/bias_correction.hpp"
#include "quant/qdq.hpp"
#include "support/fp16.hpp"
#include "support/file.hpp"
#include "support/log.hpp"
#include "support/npy.hpp"
#include "support/thread_pool.hpp"
#include "target/check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <thread>
#include <unordered_set>

namespace npuc {

struct Model::Impl {
  std::unique_ptr<ir::Graph> graph;
  std::vector<PrePostBoundary> boundaries;  // withPrePost
};

namespace {

onnx_io::ImportOptions importOptions(const LoadOptions& o) {
  onnx_io::ImportOptions io;
  io.input_shapes = o.input_shapes;
  io.input_shape_origin = o.input_shape_origin;
  io.default_batch = o.default_batch;
  io.require_static_inputs = o.require_static_inputs;
  return io;
}

void resolve(ir::Graph& g, const LoadOptions& o) {
  if (!o.resolve) return;
  withContext(g.source, [&] {
    passes::PassContext ctx;
    passes::PassManager(passes::resolvePipeline()).runToFixpoint(g, ctx);
    ir::markChannelLastBoundaries(g);  // (before the optimizer may merge the boundary transposes away)
    if (o.optimize) passes::PassManager(passes::optimizePipeline()).runToFixpoint(g, ctx);
  });
}

TensorInfo infoOf(const ir::Value& v) { return {v.name, v.type.dtype, v.type.rank_known ? v.type.shape : Shape{}}; }

}  // namespace

const char* modelFormatName(ModelFormat f) {
  switch (f) {
    case ModelFormat::kAuto: return "auto";
    case ModelFormat::kOnnx: return "ONNX";
    case ModelFormat::kCaffe: return "Caffe";
    case ModelFormat::kTensorFlow: return "TensorFlow";
    case ModelFormat::kTfLite: return "TensorFlow Lite";
  }
  return "?";
}

ModelFormat detectModelFormat(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::vector<uint8_t> head = readFilePrefix(path, 8);
  if ((head.size() >= 8 && std::equal(head.begin() + 4, head.end(), "TFL3")) || ext == ".tflite")
    return ModelFormat::kTfLite;
  if (ext == ".prototxt") return ModelFormat::kCaffe;
  if (ext == ".pb" || ext == ".pbtxt") return ModelFormat::kTensorFlow;
  if (ext != ".onnx" && !head.empty() && head[0] == 0x0a) return ModelFormat::kTensorFlow;
  return ModelFormat::kOnnx;
}

namespace {

std::unique_ptr<ir::Graph> importModel(const std::filesystem::path& path, const LoadOptions& opts) {
  ModelFormat f = opts.format;
  if (f == ModelFormat::kAuto) f = opts.caffe_model.empty() ? detectModelFormat(path) : ModelFormat::kCaffe;
  switch (f) {
    case ModelFormat::kAuto:
    case ModelFormat::kOnnx: return onnx_io::importFile(path, importOptions(opts));
    case ModelFormat::kCaffe:
      if (opts.caffe_model.empty())
        fail(ErrorCode::kInvalidArgument, "{} is a Caffe network description: give its trained weights (.caffemodel) "
                                          "with it", path.string());
      return caffe_io::importFiles(path, opts.caffe_model, importOptions(opts));
    case ModelFormat::kTensorFlow: return tf_io::importFile(path, importOptions(opts));
    case ModelFormat::kTfLite: return tflite_io::importFile(path, importOptions(opts));
  }
  fail(ErrorCode::kInternal, "{}: model format {} has no importer", path.string(), modelFormatName(f));
}

}  // namespace

Model Model::load(const std::filesystem::path& path, const LoadOptions& opts) {
  Model m;
  m.impl_ = std::make_shared<Impl>();
  m.impl_->graph = importModel(path, opts);
  m.impl_->graph->uniquifyNodeNames();  // (layers are found by name: two nodes of one name lost one from the estimate)
  resolve(*m.impl_->graph, opts);
  return m;
}

Model Model::loadCaffe(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel, LoadOptions opts) {
  opts.caffe_model = caffemodel;
  return load(prototxt, opts);
}

Model Model::fromOnnxBytes(const std::string& bytes, const std::string& name, const LoadOptions& opts) {
  Model m;
  m.impl_ = std::make_shared<Impl>();
  m.impl_->graph = onnx_io::importBytes(bytes.data(), bytes.size(), name, ".", importOptions(opts));
  m.impl_->graph->uniquifyNodeNames();
  resolve(*m.impl_->graph, opts);
  return m;
}

std::vector<TensorInfo> Model::inputs() const {
  std::vector<TensorInfo> r;
  for (ir::ValueId v : impl_->graph->inputs()) r.push_back(infoOf(impl_->graph->value(v)));
  return r;
}

std::vector<TensorInfo> Model::outputs() const {
  std::vector<TensorInfo> r;
  for (ir::ValueId v : impl_->graph->outputs()) r.push_back(infoOf(impl_->graph->value(v)));
  return r;
}

std::vector<NodeInfo> Model::nodes() const {
  const ir::Graph& g = *impl_->graph;
  std::vector<NodeInfo> r;
  int i = 0;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    NodeInfo ni;
    ni.index = i++;
    ni.name = n.name;
    ni.op = n.domain.empty() ? n.op : n.domain + "." + n.op;
    for (ir::ValueId v : n.inputs) {
      ni.input_shapes.push_back(v == ir::kNoValue ? Shape{} : g.value(v).type.shape);
      ni.inputs.push_back(v == ir::kNoValue || g.value(v).isConstant() ? std::string() : g.value(v).name);
    }
    for (ir::ValueId v : n.outputs) {
      ni.output_shapes.push_back(v == ir::kNoValue ? Shape{} : g.value(v).type.shape);
      ni.outputs.push_back(v == ir::kNoValue ? std::string() : g.value(v).name);
    }
    ni.macs = ops::nodeMacs(g, n);
    r.push_back(std::move(ni));
  }
  return r;
}

ModelStats Model::stats() const {
  const ir::Graph& g = *impl_->graph;
  ModelStats s;
  s.nodes = g.numNodes();
  std::set<ir::ValueId> counted;
  for (ir::NodeId id : g.order()) {
    const ir::Node& n = g.node(id);
    s.macs += ops::nodeMacs(g, n);
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue || counted.count(v)) continue;
      const ir::Value& val = g.value(v);
      if (!val.isConstant()) continue;
      counted.insert(v);
      s.parameters += val.constant->numel();
      s.parameter_bytes += static_cast<int64_t>(val.constant->nbytes());
    }
  }
  for (ir::ValueId v : g.valueIds()) {
    const ir::Value& val = g.value(v);
    if (val.isConstant() || !val.type.isStatic()) continue;
    s.activation_bytes += shapeNumel(val.type.shape) * static_cast<int64_t>(dtypeSize(val.type.dtype));
  }
  return s;
}

std::string Model::dump() const { return ir::dump(*impl_->graph); }

Model Model::withPrePost(const std::filesystem::path& definition, const PrePostOptions& o) const {
  prepost::ParseOptions po;
  po.full_format = o.full_format;
  po.check_prepost = o.check_prepost;
  std::vector<prepost::ModelTensorShape> ins, outs;
  for (auto& t : inputs()) po.model_inputs.push_back(t.name), ins.push_back({t.name, t.shape});
  for (auto& t : outputs()) po.model_outputs.push_back(t.name), outs.push_back({t.name, t.shape});
  prepost::PrePost pp = prepost::loadPrePost(definition, po);
  prepost::checkSizeOnnxVsYaml(pp, ins, outs, o.not_check_size);
  Model m;
  m.impl_ = std::make_shared<Impl>();
  m.impl_->graph = impl_->graph->clone();
  withContext(definition.string(), [&] {
    for (const prepost::Boundary& b : prepost::insertPrePost(*m.impl_->graph, pp))
      m.impl_->boundaries.push_back({b.input, b.declared, b.prepost_value, std::string(prepost::toString(b.order)), b.shape, b.channel_last});
    ir::verify(*m.impl_->graph, ErrorCode::kInternal);
  });
  return m;
}

std::vector<PrePostBoundary> Model::prePostBoundaries() const { return impl_->boundaries; }

namespace {

/// The declared (C, H, W) of a boundary's image declaration.
struct Chw {
  int64_t c, h, w;
};
Chw declared(const PrePostBoundary& b) {
  const bool hwc = b.order == "HWC";
  return {hwc ? b.shape[2] : b.shape[0], hwc ? b.shape[0] : b.shape[1], hwc ? b.shape[1] : b.shape[2]};
}

/// Whether the model tensor's shape `s` is the declaration read as `reading` ("NCHW" or "NHWC"; "flat" always fits).
bool fits(const Shape& s, const PrePostBoundary& b, const std::string& reading) {
  if (reading == "flat") return true;
  if (s.size() != 4 || s[0] != 1 || b.shape.size() != 3 || b.order == "C") return false;
  const Chw d = declared(b);
  return reading == "NCHW" ? s[1] == d.c && s[2] == d.h && s[3] == d.w : s[1] == d.h && s[2] == d.w && s[3] == d.c;
}

/// `m` (a model tensor whose shape fits `reading`) in the declared order of `b`.
std::vector<double> arranged(const Tensor& m, const PrePostBoundary& b, const std::string& reading) {
  std::vector<double> v = m.toDouble();
  if (reading == "flat") return v;
  const Chw d = declared(b);
  const bool nchw = reading == "NCHW", hwc = b.order == "HWC";
  std::vector<double> out(v.size());
  for (int64_t c = 0; c < d.c; ++c)
    for (int64_t h = 0; h < d.h; ++h)
      for (int64_t w = 0; w < d.w; ++w) {
        const int64_t from = nchw ? (c * d.h + h) * d.w + w : (h * d.w + w) * d.c + c;
        const int64_t to = hwc ? (h * d.w + w) * d.c + c : (c * d.h + h) * d.w + w;
        out[static_cast<size_t>(to)] = v[static_cast<size_t>(from)];
      }
  return out;
}

}  // namespace

std::vector<BoundaryCheck> checkPrePostBoundaries(const std::vector<PrePostBoundary>& boundaries,
                                                  const std::map<std::string, Tensor>& values) {
  std::vector<BoundaryCheck> res;
  for (const PrePostBoundary& b : boundaries) {
    BoundaryCheck r;
    r.boundary = b;
    auto mi = values.find(b.model_value), pi = values.find(b.prepost_value);
    const std::string what = fmt::format("{} '{}'", b.input ? "input_to_body" : "output_from_body", b.model_value);
    if (mi == values.end() || pi == values.end() || !mi->second.defined() || !pi->second.defined() ||
        mi->second.numel() != pi->second.numel()) {
      r.message = fmt::format("{}: not checked (the run did not show both values)", what);
      res.push_back(r);
      continue;
    }
    r.checked = true;
    const Tensor& p = pi->second;
    std::vector<double> want = p.toDouble();
    const bool half = p.dtype() == DType::kF16;
    const bool rank4 = mi->second.shape().size() == 4 && b.shape.size() == 3 && b.order != "C";
    const Shape& ms = mi->second.shape();
    std::vector<std::string> tried;
    for (const char* reading : rank4 ? std::vector<const char*>{"NCHW", "NHWC"} : std::vector<const char*>{"flat"})
      if (fits(ms, b, reading)) tried.push_back(reading);
    // A shape that fits both readings (H = W = C) cannot tell them apart: only the one the bridge chose (from the
    // model's structure) is right, so a bridge that took the other shows as a mistake.
    if (tried.size() == 2) tried = {b.channel_last ? "NHWC" : "NCHW"};
    for (const std::string& reading : tried) {
      const std::vector<double> got = arranged(mi->second, b, reading);
      auto same = [&](double g, double w) {
        if (half) g = halfToFloat(floatToHalf(static_cast<float>(g)));
        return g == w || (std::isnan(g) && std::isnan(w));
      };
      if (std::equal(got.begin(), got.end(), want.begin(), same)) {
        r.ok = true;
        r.arrangement = reading;
        break;
      }
    }
    const std::string decl = fmt::format("{} {}", shapeStr(b.shape), b.order);
    if (r.ok)
      r.message = fmt::format("{}: the {} values are the model's {} read as {}", what, decl, shapeStr(mi->second.shape()),
                              r.arrangement);
    else
      r.message = fmt::format("{}: LAYOUT MISTAKE: the {} values are not the model's {} in any arrangement the declaration "
                              "allows ({} tried)", what, decl, shapeStr(mi->second.shape()),
                              tried.empty() ? std::string("none fits the shapes") : fmt::format("{}", fmt::join(tried, ", ")));
    res.push_back(r);
  }
  return res;
}

Model Model::withAipp(const std::filesystem::path& config) const {
  prepost::AippConfig cfg = prepost::loadAipp(config);
  Model m;
  m.impl_ = std::make_shared<Impl>();
  m.impl_->graph = impl_->graph->clone();
  prepost::insertAipp(*m.impl_->graph, cfg);
  withContext(config.string(), [&] { ir::verify(*m.impl_->graph, ErrorCode::kInternal); });
  return m;
}

std::vector<uint8_t> loadAippParams(const std::filesystem::path& file) {
  std::vector<uint8_t> bytes = readFileBytes(file);
  std::string ext = file.extension().string();
  if (ext != ".yaml" && ext != ".yml") return bytes;
  return kernels::encodeAipp(prepost::aippParamsFromYaml(std::string(bytes.begin(), bytes.end()), file.string()));
}

std::vector<std::map<std::string, Tensor>> calibrationSamples(const ir::Graph& g, const std::map<std::string, std::vector<Tensor>>& data);

/// The integer layers of a QDQ graph (quant::fuseIntegerConvs, fuseIntegerGemms, fuseIntegerAdds, fuseIntegerMatMuls, fuseIntegerScales, fuseIntegerPools; data movement on int8 codes,
/// fuseIntegerDataMovement) with the Q / DQ nodes they leave unused removed; returns how many layers became integer layers. Also used by translate (an already quantized model).
int integerLayers(ir::Graph& g) {
  quant::annotateQuantized(g);
  // (one after the other: each rewrites the graph, and the order fixes the nodes' ids and names)
  int n = quant::fuseIntegerConvs(g);
  n += quant::fuseIntegerGemms(g);
  n += quant::fuseIntegerAdds(g);
  n += quant::fuseIntegerMatMuls(g);  // (after the Gemms: a constant operand is theirs)
  n += quant::fuseIntegerScales(g);
  n += quant::fuseIntegerPools(g);
  n += quant::fuseIntegerLookups(g);
  n += quant::fuseIntegerMuls(g);
  n += quant::fuseIntegerRecurrents(g);
  quant::fuseIntegerDataMovement(g);  // (runs on int8 codes: not counted as integer layers)
  passes::PassContext ctx;
  passes::PassManager({"dce"}).runToFixpoint(g, ctx);
  return n;
}

namespace {
/// AdaRound codes for the int8-affine weights of g (at the scales quantizeToQdq gives them), on its first 64 samples.
quant::AdaRoundResult adaRound(const ir::Graph& g, const std::vector<std::map<std::string, Tensor>>& samples,
                               const quant::QdqOptions& qo, int threads) {
  const std::vector<std::map<std::string, Tensor>> some(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(samples.size(), 64)));
  const quant::InputGrams grams = quant::measureInputGrams(g, some, threads);
  const quant::StepsOf steps = [&](const ir::Node& n, const Tensor& w) -> std::optional<quant::WeightSteps> {
    if (qo.keep_float.count(n.name)) return std::nullopt;
    const int64_t axis = n.op == "Gemm" && !n.attrInt("transB", 0) ? 1 : 0;
    const std::vector<float> sc = quant::weightScales(w, axis, qo.per_channel);
    return quant::WeightSteps{std::vector<double>(sc.begin(), sc.end()), 127};
  };
  return quant::adaRoundLayers(g, grams, steps, {}, threads);
}
}  // namespace

Model Model::quantizedQdq(const QuantizeOptions& o, QuantizeReport* report) const {
  quant::QdqOptions qo;
  if (!quant::rangeMethodFromName(o.method, &qo.method))
    fail(ErrorCode::kInvalidArgument, "unknown range method '{}' (minmax, percentile, entropy, mse)", o.method);
  if (!(o.percentile > 0 && o.percentile <= 100)) fail(ErrorCode::kInvalidArgument, "percentile {} is not in (0, 100]", o.percentile);
  qo.percentile = o.percentile;
  qo.per_channel = o.per_channel;
  if (o.scheme == "radix") qo.scheme = quant::ActivationScheme::kRadix;
  else if (o.scheme == "symmetric") qo.scheme = quant::ActivationScheme::kSymmetric;
  else if (o.scheme != "affine") fail(ErrorCode::kInvalidArgument, "unknown activation scheme '{}' (affine, radix, symmetric)", o.scheme);
  qo.keep_float.insert(o.keep_float.begin(), o.keep_float.end());
  qo.ranges = o.ranges;
  Model m;
  m.impl_ = std::make_shared<Impl>();
  m.impl_->graph = impl_->graph->clone();
  ir::Graph& g = *m.impl_->graph;
  const std::vector<std::string> equalize = o.equalize.empty() ? std::vector<std::string>{} : passes::equalizePipeline(o.equalize);
  withContext(g.source, [&] {
    if (!equalize.empty()) {  // (before the calibration: the ranges are the equalized model's)
      passes::PassContext ctx;
      passes::PassManager(equalize).runOnce(g, ctx);
    }
    auto samples = calibrationSamples(g, o.calibration);
    int threads = o.threads > 0 ? o.threads : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, ThreadPool::kMaxThreads);
    // (after the equalization, whose scaled biases it takes, and before the calibration measures the ranges)
    std::set<std::string> fixed;  // (tensors of a forced range keep the model's values)
    for (const auto& [tensor, range] : qo.ranges) fixed.insert(tensor);
    const quant::BiasAbsorption absorbed = o.absorb_bias ? quant::absorbHighBiases(g, samples, threads, fixed) : quant::BiasAbsorption{};
    // The float model the quantization table's SNR compares with: the one quantized, after equalization and
    // absorption (they change some tensors' values, never the outputs).
    Model reference = *this;
    if (!equalize.empty() || !absorbed.pairs.empty()) {
      reference.impl_ = std::make_shared<Impl>();
      reference.impl_->graph = g.clone();
      reference.impl_->boundaries = impl_->boundaries;
    }
    std::map<std::string, std::string> rows_of;  // a rewritten Linear's row-shaped output -> the model's tensor
    {  // (a Linear layer's bias into its product: what the calibration then measures)
      std::set<std::string> keep = qo.keep_float;
      keep.insert(fixed.begin(), fixed.end());
      quant::productBiasesAsGemms(g, keep, &rows_of);
    }
    auto stats = quant::collectStats(g, samples, threads);
    std::optional<quant::InputMeans> means;
    if (o.bias_correction) {  // the float model's input means, before anything is quantized
      means = quant::measureInputMeans(g, samples, threads);
      qo.bias_means = &*means;
    }
    const quant::AdaRoundResult ada = o.adaround ? adaRound(g, samples, qo, threads) : quant::AdaRoundResult{};
    if (o.adaround) {
      qo.weight_codes = &ada.codes;
      qo.weight_notes = &ada.notes;
    }
    quant::QdqReport rep = quant::quantizeToQdq(g, stats, qo);
    if (!o.qdq_onnx.empty()) onnx_io::exportFile(g, o.qdq_onnx);
    const int integer = o.integer_layers ? integerLayers(g) : 0;
    for (ir::ValueId v : g.valueIds())  // codes of a Linear's rows stand for the model's tensor of the same values
      if (auto& q = g.value(v).quant; q && rows_of.count(q->of)) q->of = rows_of.at(q->of);
    ir::verify(g);
    if (!report) return;
    report->integer_layers = integer;
    report->bias_corrected = rep.bias_corrected;
    report->bias_absorbed = static_cast<int>(absorbed.pairs.size());
    report->samples = samples.size();
    report->warnings = rep.warnings;
    report->tensors.clear();
    std::map<std::string, std::string> copy_of;  // quantized model's dequantized copy -> the float tensor
    for (auto& t : rep.tensors) {
      QuantizedTensor q{t.name, t.kind, t.lo, t.hi, t.scale, t.zero_point, t.channels, t.warning, t.note};
      if (t.kind == "activation") {
        q.snr_db = std::numeric_limits<double>::quiet_NaN();
        const quant::TensorStats& st = stats.at(t.name);
        q.saturated = st.count() ? static_cast<double>(st.countOutside(t.lo, t.hi)) / static_cast<double>(st.count()) : 0.0;
        if (g.hasValue(t.dequantized)) copy_of[g.value(t.dequantized).name] = t.name;
        for (const quant::AbsorbedPair& p : absorbed.pairs)
          if (p.value == t.name) q.note = q.note.empty() ? p.note() : q.note + "; " + p.note();
      }
      report->tensors.push_back(q);
    }
    // SNR of every dequantized copy against the float model's tensor, over the first samples.
    std::map<std::string, std::vector<float>> ref;
    std::unordered_set<std::string> activations;
    for (auto& q : report->tensors)
      if (q.kind == "activation") activations.insert(q.name);
    std::map<std::string, std::pair<double, double>> sums;  // float name -> (Σ f², Σ (f - q)²)
    Session fs(reference, threads), qs(m, threads);
    const size_t n = std::min<size_t>(samples.size(), 32);
    for (size_t i = 0; i < n; ++i) {
      ref.clear();
      fs.run(samples[i], [&](const std::string& v, const Tensor& t) {
        if (activations.count(v) && t.dtype() == DType::kF32) ref[v].assign(t.data<float>(), t.data<float>() + t.numel());
      });
      for (auto& [name, x] : samples[i])  // graph inputs are not node outputs
        if (x.dtype() == DType::kF32) ref[name].assign(x.data<float>(), x.data<float>() + x.numel());
      qs.run(samples[i], [&](const std::string& v, const Tensor& t) {
        auto c = copy_of.find(v);
        if (c == copy_of.end() || t.dtype() != DType::kF32) return;
        auto r = ref.find(c->second);
        if (r == ref.end() || r->second.size() != static_cast<size_t>(t.numel())) return;
        auto& [sig, err] = sums[c->second];
        for (int64_t k = 0; k < t.numel(); ++k) {
          const double f = r->second[static_cast<size_t>(k)], d = f - t.data<float>()[k];
          sig += f * f;
          err += d * d;
        }
      });
    }
    std::vector<double> snrs;
    for (auto& q : report->tensors) {
      auto it = sums.find(q.name);
      if (q.kind != "activation" || it == sums.end() || it->second.first == 0) continue;
      q.snr_db = it->second.second == 0 ? std::numeric_limits<double>::infinity()
                                         : 10.0 * std::log10(it->second.first / it->second.second);
      if (std::isfinite(q.snr_db)) snrs.push_back(q.snr_db);
    }
    // Diagnostics, with their numbers (docs/calibration.md).
    std::sort(snrs.begin(), snrs.end());
    const double median = snrs.empty() ? 0 : snrs[snrs.size() / 2];
    for (auto& q : report->tensors) {
      if (q.kind != "activation") continue;
      const quant::TensorStats& st = stats.at(q.name);
      if (!snrs.empty() && std::isfinite(q.snr_db) && q.snr_db < median - 10)
        report->warnings.push_back(fmt::format("tensor '{}': int8 SNR {:.1f} dB, far below the model's median {:.1f} dB "
                                               "(keep its layer in higher precision or choose another range method)",
                                               q.name, q.snr_db, median));
      const double p9999 = st.threshold(quant::RangeMethod::kPercentile, 99.99);
      if (st.count() > 0 && p9999 > 0 && st.absMax() > 10 * p9999)
        report->warnings.push_back(fmt::format("tensor '{}': max |x| {:.4g} is {:.0f}x its 99.99th percentile {:.4g}: a few "
                                               "outliers set the {} range", q.name, st.absMax(), st.absMax() / p9999, p9999, o.method));
      if (qo.method == quant::RangeMethod::kPercentile && static_cast<double>(st.count()) * (1 - o.percentile / 100) < 1)
        report->warnings.push_back(fmt::format("tensor '{}': {} values are too few for the {}th percentile (it is their maximum)",
                                               q.name, st.count(), o.percentile));
      if (qo.method == quant::RangeMethod::kEntropy && samples.size() < 10)
        report->warnings.push_back(fmt::format("{} calibration sample(s) are few for the entropy method (its histograms "
                                               "need hundreds of thousands of values; use 100 or more samples)", samples.size()));
    }
    std::sort(report->warnings.begin(), report->warnings.end());
    report->warnings.erase(std::unique(report->warnings.begin(), report->warnings.end()), report->warnings.end());
  });
  return m;
}

Model Model::optimized(bool relu6_to_relu, bool fold_batchnorm) const& {
  Model m;
  m.impl_ = std::make_shared<Impl>();
  m.impl_->graph = impl_->graph->clone();
  return std::move(m).optimized(relu6_to_relu, fold_batchnorm);
}

Model Model::optimized(bool relu6_to_relu, bool fold_batchnorm) && {
  if (impl_.use_count() > 1) return static_cast<const Model&>(*this).optimized(relu6_to_relu, fold_batchnorm);
  Model m;
  m.impl_ = std::move(impl_);
  ir::Graph& g = *m.impl_->graph;
  withContext(g.source, [&] {
    passes::PassContext ctx;
    std::vector<std::string> pipeline = passes::translatePipeline();
    if (!fold_batchnorm) std::replace(pipeline.begin(), pipeline.end(), std::string("fold-batchnorm"), std::string("affine-chains"));
    passes::PassManager(pipeline).runToFixpoint(g, ctx);
    if (relu6_to_relu) {
      passes::PassManager({"relu6-to-relu"}).runOnce(g, ctx);
      log::info("passes", "-RELU6toRELU: Relu6 (Clip(0, 6)) replaced by Relu");
    }
  });
  return m;
}

std::vector<CheckRow> checkRows(const ir::Graph& g, const target::Target& t, const std::map<std::string, std::string>& engines) {
  std::vector<CheckRow> rows;
  for (auto& v : target::checkGraph(g, t, engines)) rows.push_back({v.index, v.node, v.op, v.rule_id, v.rule, v.actual, v.fix});
  // What the target allows but npuc cannot put into a package yet: reported here, so that translate packages
  // whatever check passes.
  const std::vector<ir::NodeId>& order = g.order();
  for (const codegen::PackageGap& gap : codegen::packageGaps(g, t)) {
    if (gap.index < 0) {  // a model output no layer computes
      rows.push_back({gap.index, gap.output, "(model output)", t.name + ".package",
                      "every model output must be computed by a layer or be a copyable constant", gap.reason, ""});
      continue;
    }
    const ir::Node& n = g.node(order[static_cast<size_t>(gap.index)]);
    rows.push_back({gap.index, n.name, n.domain.empty() ? n.op : n.domain + "." + n.op, t.name + ".package",
                    "npuc must have a package form for the node (docs/package-format.md lists the layer kinds)", gap.reason,
                    ""});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const CheckRow& a, const CheckRow& b) { return a.index < b.index; });
  return rows;
}

std::vector<CheckRow> Model::check(const std::string& target, bool relu6_to_relu, const std::vector<std::string>& relax) const {
  target::Target t = target::loadTarget(target);
  target::relax(t, relax);
  Model opt = optimized(relu6_to_relu);
  return checkRows(*opt.impl_->graph, t, {});
}

std::vector<Model::NodeEstimate> Model::estimate(const std::string& target) const {
  const target::Target t = target::loadTarget(target);
  std::vector<NodeEstimate> r;
  for (const codegen::LayerEstimate& l : codegen::estimate(*impl_->graph, t).layers) {
    auto e = t.engines.find(l.engine);
    r.push_back({l.name, l.engine, e == t.engines.end() ? std::string() : e->second.kind, l.macs, l.time_us});
  }
  return r;
}

const ir::Graph& graphOf(const Model& m) { return *m.impl().graph; }
ir::Graph& mutableGraphOf(Model& m) { return *m.impl().graph; }

TargetInfo targetInfo(const std::string& name) {
  const target::Target t = target::loadTarget(name);
  TargetInfo r{t.name, t.description, std::string(numericsName(t.numerics)), t.file.string(), {}, {}};
  for (auto& [en, e] : t.engines) r.engines.emplace_back(en, e.kind);
  bool agree = true;
  for (const target::CoreSet& c : t.core_sets) {
    if (c.cores.size() < 2) continue;
    std::vector<std::string> order;
    for (auto& [engine, count] : c.cores) order.push_back(engine);
    const size_t n = std::min(order.size(), r.group_engines.size());
    agree &= std::equal(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), r.group_engines.begin());
    if (order.size() > r.group_engines.size()) r.group_engines = order;
  }
  if (!agree) r.group_engines.clear();
  return r;
}

std::vector<TargetInfo> listTargets() {
  std::vector<TargetInfo> r;
  for (auto& name : target::listTargets()) r.push_back(targetInfo(name));
  return r;
}

std::string supportedOpsPage(const std::string& target) { return target::supportedOpsMarkdown(target::loadTarget(target)); }

std::string Model::toOnnxBytes() const { return onnx_io::exportBytes(*impl_->graph); }

void Model::saveOnnx(const std::filesystem::path& path) const {
  // npuc's own forms as standard ONNX where ONNX has the ops (to-standard-onnx), on a copy: the model is unchanged.
  std::unique_ptr<ir::Graph> g = impl_->graph->clone();
  withContext(path.string(), [&] {
    passes::PassContext ctx;
    passes::PassManager({"to-standard-onnx", "infer-shapes"}).runToFixpoint(*g, ctx);
  });
  onnx_io::exportFile(*g, path);
}

struct Session::Impl {
  Model model;  // keeps the graph alive
  engine::Engine engine;
  Impl(const Model& m, int threads, bool profile)
      : model(m), engine(*m.impl().graph, engine::EngineOptions{threads, profile}) {}
};

Session::Session(const Model& model, int threads, bool profile)
    : impl_(std::make_unique<Impl>(model, threads, profile)) {}

std::vector<NodeProfile> Session::profile() const {
  std::vector<NodeProfile> r;
  const ir::Graph& g = *impl_->model.impl().graph;
  for (auto& t : impl_->engine.profile()) {
    const ir::Node& n = g.node(t.node);
    r.push_back({n.name, n.domain.empty() ? n.op : n.domain + "." + n.op, t.ms});
  }
  return r;
}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs) { return impl_->engine.run(inputs); }
std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) { return impl_->engine.run(inputs); }
std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs, const ValueCallback& cb) {
  const ir::Graph& g = *impl_->model.impl().graph;
  return impl_->engine.run(inputs, [&](const ir::Node& n, const std::vector<Tensor>& outs) {
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i)
      if (n.outputs[i] != ir::kNoValue && outs[i].defined()) cb(g.value(n.outputs[i]).name, outs[i]);
  });
}

Tensor readOnnxTensor(const std::filesystem::path& path, std::string* name) {
  auto [n, t] = onnx_io::readTensorProtoFile(path);
  if (name) *name = n;
  return t;
}

void checkOnnx(const std::string& bytes, const std::string& name) { onnx_io::checkModelBytes(bytes, name); }

Tensor readNpyFile(const std::filesystem::path& path) { return readNpy(path); }
void writeNpyFile(const std::filesystem::path& path, const Tensor& t) { writeNpy(path, t); }

namespace {
CustomOpInfo infoOf(const plugin::CustomOp& op) {
  return {op.name(), op.domain(), op.engine(), op.library().file_name, op.library().sha256, op.doc()};
}
}  // namespace

std::vector<CustomOpInfo> registerCustomOp(const std::filesystem::path& library) {
  std::vector<CustomOpInfo> r;
  for (const plugin::CustomOp* op : plugin::registerLibrary(library, [](const std::string& domain, const std::string& name) {
         return ops::registry().find(domain, name) != nullptr;
       }))
    r.push_back(infoOf(*op));
  return r;
}

std::vector<CustomOpInfo> customOps() {
  std::vector<CustomOpInfo> r;
  for (const plugin::CustomOp* op : plugin::registered()) r.push_back(infoOf(*op));
  return r;
}

}  // namespace npuc
