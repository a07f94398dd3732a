// The stages of translate(), in the order translate.cpp lists them. Each reads what the stages before it left in the
// Translation and leaves its own result there; the numerics family's work is its strategy's (driver/numerics/), asked
// through the hooks of numerics::Strategy.
#include "driver/translate_stages.hpp"

#include "codegen/cost.hpp"
#include "codegen/lower.hpp"
#include "driver/numerics/strategy.hpp"
#include "driver/translate_reports.hpp"
#include "frontend/onnx/onnx_io.hpp"
#include "package/package.hpp"
#include "passes/pass.hpp"
#include "plan/addrmap.hpp"
#include "plan/memory.hpp"
#include "prepost/prepost.hpp"
#include "quant/qdq.hpp"
#include "support/error.hpp"
#include "support/file.hpp"
#include "target/check.hpp"
#include "target/target.hpp"

#include <fmt/format.h>

#include <future>
#include <map>
#include <set>

namespace npuc {

namespace fs = std::filesystem;

std::vector<CheckRow> checkRows(const ir::Graph& g, const target::Target& t, const std::map<std::string, std::string>& engines);  // model.cpp

Translation::Translation(const TranslateOptions& opts) : o(opts) {}
Translation::~Translation() {
  if (summary.valid()) summary.wait();  // (its thread reads the estimate)
}

void Translation::put(const std::string& suffix, const std::string& text) {
  writeFileAtomic(base().string() + suffix, text);
  listFile(base().string() + suffix);
}

void Translation::reportFailure(const Error& e, const char* stage, const char* verb) {
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
    writeCheckReport(rows, t.name, o.onnx.string(), base());
    out->commit();
  } catch (const Error&) {  // the original error is the one to report
  }
}

namespace stages {

void options(Translation& tr) {
  const TranslateOptions& o = tr.o;
  if (!o.aipp.empty() && !o.prepost.empty())
    fail(ErrorCode::kInvalidArgument, "--aipp and -prepost cannot be combined: each puts its own pre-processing in front of the inputs");
  tr.t = target::loadTarget(o.target);
  target::relax(tr.t, o.relax);
  tr.numerics = numerics::makeStrategy(tr.t.numerics);
  tr.numerics->checkOptions(tr);  // (before any work is done)
  if (!o.equalize.empty()) passes::equalizePipeline(o.equalize);  // (a bad mode refused before any work)
  // The output folder is built beside <out>/PREFIX and swapped in at the end (OutputDir: PREFIX is one plain name,
  // only a folder npuc wrote is replaced, a killed run leaves the old folder in place); checked before any work.
  tr.out.emplace(o.out_root, o.prefix);
}

void import(Translation& tr) {
  LoadOptions lo = modelFiles(tr.o);
  lo.input_shapes = tr.o.input_shapes;
  lo.optimize = false;  // the optimize stage folds BatchNorm and removes dead code itself
  lo.resolve = tr.numerics->resolveAtImport();
  tr.model = Model::load(tr.o.onnx, lo);
}

void prepareNumerics(Translation& tr) { tr.numerics->prepareImported(tr, *tr.model); }

void optimize(Translation& tr) {
  // (the imported model is released once optimized; constants the optimizer kept are shared, not copied)
  Model body = std::move(*tr.model).optimized(tr.o.relu6_to_relu, tr.o.fold_batchnorm);
  for (const std::vector<std::string>& pipeline : tr.numerics->afterOptimize(tr, body))
    withContext(tr.o.onnx.string(), [&] {
      passes::PassContext ctx;
      passes::PassManager(pipeline).runToFixpoint(mutableGraphOf(body), ctx);
    });
  // Cross-layer equalization (--equalize) for int8 packages: on the optimized model, before the calibration.
  if (!tr.o.equalize.empty()) {
    if (numericsTraits(tr.t.numerics).activation_bytes == 1)
      withContext(tr.o.onnx.string(), [&] {
        passes::PassContext ctx;
        passes::PassManager(passes::equalizePipeline(tr.o.equalize)).runOnce(mutableGraphOf(body), ctx);
      });
    else
      tr.warn(fmt::format("--equalize is ignored: target '{}' has {} numerics (it serves int8 weights)", tr.t.name, numericsName(tr.t.numerics)));
  }
  if (tr.o.absorb_bias && numericsTraits(tr.t.numerics).activation_bytes != 1)  // (int8 targets absorb as they calibrate)
    tr.warn(fmt::format("--absorb-bias is ignored: target '{}' has {} numerics (it serves int8 activations)", tr.t.name, numericsName(tr.t.numerics)));
  tr.model = std::move(body);
}

void calibrate(Translation& tr) { tr.numerics->calibrate(tr, *tr.model); }

bool givesAipp(const Translation& tr) { return !tr.o.aipp.empty(); }
void aipp(Translation& tr) {
  // Ascend-style AIPP stages in front of the inputs the configuration names (static blocks checked here).
  tr.model = tr.model->withAipp(tr.o.aipp);
}

bool givesPrePost(const Translation& tr) { return !tr.o.prepost.empty(); }
void prePost(Translation& tr) {
  const TranslateOptions& o = tr.o;
  // Validated against the model (names, §9 messages, sizes) and inserted around the optimized body: the pre/post
  // nodes keep their exact types (uint8 frames, float16 images) whatever the target's numerics.
  try {
    tr.model = tr.model->withPrePost(o.prepost, {o.prepost_full, o.check_prepost, o.not_check_size});
  } catch (const Error& e) {
    if (!o.check_prepost) throw;
    // -CheckPrePost ON (§7.3): the optimized model is saved to compare with the definition, as the manual's hint
    // promises, published on its own in the output folder before the error goes up.
    const fs::path saved = tr.dir() / (o.prefix + "_opt.onnx");
    try {
      tr.model->saveOnnx(saved);
      tr.out->commit();
    } catch (const Error&) {
      throw e;
    }
    throw Error(e.code(), fmt::format("{}\n(-CheckPrePost ON: the optimized model is saved as {} to compare with the definition)",
                                      e.what(), (tr.out->finalPath() / saved.filename()).string()));
  }
}

void check(Translation& tr) {
  // Layers the user placed in a group run on that group's engine (the rules' fact `engine`: TIDL's ArgMax takes 15
  // channels on EVE, 6 on the DSP); groups given as a list by layer index are known only once the layers are.
  // A layer not named takes the group of the layer before it (TranslateOptions::layer_groups).
  std::map<std::string, std::string> engines;
  if (!tr.o.layer_groups.empty()) {
    const ir::Graph& g = graphOf(*tr.model);
    int group = 1;
    for (ir::NodeId id : g.order()) {
      const std::string& name = g.node(id).name;
      if (auto it = tr.o.layer_groups.find(name); it != tr.o.layer_groups.end()) group = it->second;
      if (group >= 1 && static_cast<size_t>(group) <= tr.t.group_engines.size()) engines[name] = tr.t.group_engines[static_cast<size_t>(group - 1)];
    }
  }
  tr.res.errors = checkRows(graphOf(*tr.model), tr.t, engines);
  if (tr.o.save_qdq_onnx && tr.res.quantized) tr.listFile(tr.o.prefix + "_qdq.onnx");  // (written by the numerics' stages)
}

bool savesOptOnnx(const Translation& tr) { return tr.o.save_opt_onnx; }
void saveOptOnnx(Translation& tr) {
  tr.model->saveOnnx(tr.base().string() + "_opt.onnx");
  tr.listFile(tr.base().string() + "_opt.onnx");
}

bool unsupported(const Translation& tr) { return !tr.supported(); }
void errorReport(Translation& tr) {
  for (auto& f : writeCheckReport(tr.res.errors, tr.t.name, tr.o.onnx.string(), tr.base())) tr.listFile(f);
}

bool supported(const Translation& tr) { return tr.supported(); }
void estimate(Translation& tr) {
  tr.estimate = codegen::estimate(graphOf(*tr.model), tr.t);
  // The convolution kernels chosen for all and by name now (a bad choice refused before the quantization and the
  // lowering); a list by layer once the package's layers exist (the plan stage: chooseConvKernels is idempotent).
  codegen::chooseConvKernels(*tr.estimate, tr.t, tr.o.conv_kernel_all, {}, {}, tr.o.conv_kernels);
  // Layers an int8 package keeps in float (--keep-float, --keep-float16) take their float time.
  // (with the element-wise activations each takes along: quant::activationsTakenAlong)
  if (numericsTraits(tr.t.numerics).activation_bytes == 1) {
    std::map<std::string, DType> wide;
    for (auto [names, type] : {std::pair{&tr.o.keep_float, DType::kF32}, std::pair{&tr.o.keep_float16, DType::kF16}}) {
      const std::set<std::string> kept(names->begin(), names->end());
      for (const std::string& name : kept) wide[name] = type;
      for (const std::string& name : quant::activationsTakenAlong(graphOf(*tr.model), kept)) wide[name] = type;
    }
    codegen::widenLayers(*tr.estimate, tr.t, wide, &graphOf(*tr.model));
  }
}

bool writesPackage(const Translation& tr) { return tr.supported() && tr.numerics->writesPackage(tr); }
void quantize(Translation& tr) { tr.numerics->beforeLowering(tr); }

void lower(Translation& tr) {
  const TranslateOptions& o = tr.o;
  codegen::LowerOptions lo;
  lo.prefix = o.prefix;
  tr.numerics->lowerOptions(lo);
  lo.reuse_memory = o.reuse_memory;
  if (numericsTraits(tr.t.numerics).activation_bytes == 1) {  // (float16 layers, with the activations they take along)
    lo.half_layers.insert(o.keep_float16.begin(), o.keep_float16.end());
    const std::set<std::string> along = quant::activationsTakenAlong(graphOf(*tr.model), lo.half_layers);
    lo.half_layers.insert(along.begin(), along.end());
  }
  lo.concat_in_place = !o.concat_copies;
  // (as the manual prints it: "./output/PREFIX/…" for a relative output folder)
  const std::filesystem::path intm = tr.out->finalPath() / (o.prefix + "_addrmap_intm.yaml");
  lo.intm_yaml_name = (intm.is_relative() && !intm.string().starts_with(".") ? "./" : "") + intm.string();
  if (!o.prepost.empty()) {
    // The definition, already validated against the model by withPrePost, read once more for the manifest's frame
    // descriptions and PREFIX_prepost_opt.yaml.
    prepost::ParseOptions po;
    po.full_format = o.prepost_full;
    po.check_prepost = o.check_prepost;
    tr.prepost_def = prepost::loadPrePost(o.prepost, po);
    lo.input_images = inputImages(*tr.prepost_def);
  }
  if (!o.addr_map.empty()) lo.addr_def = plan::loadAddrMapDef(o.addr_map, plan::AddrMapRules::forTarget(tr.t));
  try {
    // The optimized graph is not needed after this: its constants are released as they are copied.
    if (!tr.range_symbols.empty()) tr.range_graph = graphOf(*tr.model).clone();  // (with its constants: the ranges' shapes)
    tr.lowered = codegen::lowerConsuming(mutableGraphOf(*tr.model), tr.t, lo);
  } catch (const plan::AddressMapOverflow& e) {
    // The message sends the user to the intm files: they are written (with the addresses that overflowed) and
    // published, in place of the package.
    writeFileAtomic(tr.base().string() + "_addrmap_intm.yaml", plan::addrMapYaml(e.map));
    writeFileAtomic(tr.base().string() + "_addrmap_intm.txt", plan::addrMapTxt(e.map));
    tr.out->commit();
    throw;
  }
}

namespace {

/// Target::core_memory_mb (TIDL's CMEM, T:L62): per layers group (a core each; the whole package without groups), the
/// weights its layers read plus everything every core holds (activations, inputs, outputs, parameters, descriptors:
/// counted whole, an upper bound for a group), in program order — the first layer that brings its core past the
/// budget is named.
void checkCoreMemory(const target::Target& t, const package::Package& p) {
  if (!(t.core_memory_mb > 0)) return;
  const auto budget = static_cast<uint64_t>(t.core_memory_mb * 1024 * 1024);
  auto size = [&](const char* n) {
    const package::Element* e = p.element(n);
    return e ? e->size : uint64_t{0};
  };
  const uint64_t shared = size("data") + size("data_in") + size("data_out") + size("drp_param") + size("desc_aimac") + size("desc_drp");
  const package::Element* w = p.element("weight");
  std::map<uint32_t, uint64_t> weights;               // group -> bytes of the weights its layers read
  std::map<uint32_t, std::set<uint32_t>> counted;     // (a weight read by two layers of a core counts once)
  for (const package::LayerInfo& l : p.layers) {
    const package::Descriptor& d = (l.engine == package::Engine::kMac ? p.mac : p.vec)[l.index];
    for (int i = 0; i < d.n_in && w; ++i) {
      const package::TensorRef& r = d.in(i);
      if (r.addr >= w->addr && r.addr - w->addr < w->size && counted[l.group].insert(r.addr).second) weights[l.group] += r.bytes;
    }
    if (weights[l.group] + shared > budget) {
      auto mb = [](uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
      fail(ErrorCode::kUnsupported, "layer '{}': its core{} needs {:.3g} MB with it (weights so far {:.3g} MB; activations, inputs, outputs "
           "and parameters {:.3g} MB), more than the {:g} MB target '{}' gives a core (core_memory_mb: TIDL's CMEM, ~64 MB per core); "
           "split the network across cores with layers groups (--layer-group, layersGroupId) or make it smaller", l.name,
           l.group ? fmt::format(" (layers group {})", l.group) : std::string(), mb(weights[l.group] + shared), mb(weights[l.group]), mb(shared),
           t.core_memory_mb, t.name);
    }
  }
}

}  // namespace

void plan(Translation& tr) {
  codegen::Estimate& e = *tr.estimate;
  codegen::Lowered& low = *tr.lowered;
  // Nodes that became no descriptor (aliases, a cast fused into normalize) take no device time.
  std::set<std::string> gone(low.aliased.begin(), low.aliased.end());
  for (auto& f : low.fusions) gone.insert(f.absorbed.begin(), f.absorbed.end());
  codegen::dropLayers(e, gone);
  std::vector<std::string> layer_names;
  for (const package::LayerInfo& l : low.pkg.layers) layer_names.push_back(l.name);
  codegen::chooseConvKernels(e, tr.t, -1, tr.o.conv_kernel_list, layer_names, tr.o.conv_kernels);  // (by name over the list)
  codegen::throughput(e, tr.t);
  assignLayerGroups(tr.o, e, low.pkg);
  std::map<std::string, int> group_of;  // (the package's groups place its layers on the target's group engines)
  for (const package::LayerInfo& l : low.pkg.layers)
    if (l.group) group_of[l.name] = static_cast<int>(l.group);
  codegen::placeOnGroups(e, tr.t, group_of);
  checkCoreMemory(tr.t, low.pkg);
  // The summary (csv, md, xlsx: about as long to write as the package for a large model) is written on a second
  // thread meanwhile; the reports stage joins it (and Translation's destructor on the way out of an error).
  tr.summary = std::async(std::launch::async, [&e, &t = tr.t, base = tr.base()] { writeSummary(e, t, base); });
  tr.res.activation_bytes = low.data_bytes;
  tr.res.activation_lower_bound = low.data_lower_bound;
  tr.res.warnings.insert(tr.res.warnings.end(), low.map.warnings.begin(), low.map.warnings.end());
}

void writePackage(Translation& tr) {
  codegen::Lowered& low = *tr.lowered;  // (writePackage records its content hash)
  for (auto& f : package::writePackage(low.pkg, tr.dir())) tr.res.files.push_back(f);
  tr.res.content_hash = low.pkg.content_hash;
  // What was written is read back through the reader's checks before anything is published: a package the reader
  // would refuse (a name altered on its way into the manifest, …) is an internal error, never a folder exit 0 leaves.
  try {
    package::readPackage(tr.dir());
  } catch (const Error& e) {
    fail(ErrorCode::kInternal, "the package written for '{}' does not read back ({}); nothing was published", tr.o.prefix, e.what());
  }
  tr.put("_addrmap_intm.yaml", plan::addrMapYaml(low.map));
  tr.put("_addrmap_intm.txt", plan::addrMapTxt(low.map));
  for (auto& [sp, text] : codegen::tblAddrTexts(low)) tr.put("_tbl_addr_" + sp + ".txt", text);
  if (tr.prepost_def) tr.put("_prepost_opt.yaml", prepostOptYaml(tr.o, *tr.prepost_def, low));
  tr.numerics->writeFiles(tr, low);
  tr.put("_data_in_list.txt", codegen::ioListText(low, true));
  tr.put("_data_out_list.txt", codegen::ioListText(low, false));
}

bool estimatesOnly(const Translation& tr) { return tr.supported() && !tr.numerics->writesPackage(tr); }
void planWithoutPackage(Translation& tr) {
  const TranslateOptions& o = tr.o;
  if (!o.conv_kernel_list.empty())
    fail(ErrorCode::kInvalidArgument, "convolution kernels: a list by layer counts the package's layers, and target '{}' writes "
         "no package without calibration samples (--calib, tidl-import's sampleInData); name layers instead "
         "(--conv-kernel LAYER=sparse|dense)", tr.t.name);
  const ir::Graph& g = graphOf(*tr.model);
  {
    // Nodes a package holds as aliases (the same bytes under another shape: no descriptor) take no device time here
    // either, so that the estimate is the same whether a package is written or not.
    const std::set<ir::ValueId> outputs(g.outputs().begin(), g.outputs().end());
    std::set<std::string> views;
    for (ir::NodeId id : g.order()) {
      const ir::Node& n = g.node(id);
      if (codegen::isViewOp(n) && n.outputs.size() == 1 && !outputs.count(n.outputs[0])) views.insert(n.name);
    }
    codegen::dropLayers(*tr.estimate, views);
  }
  codegen::throughput(*tr.estimate, tr.t);  // (the kernels chosen by the estimate stage)
  if (!o.layer_groups.empty() || !o.layer_group_list.empty() || o.auto_layer_groups)
    tr.warn("layers groups (--layer-group, --layer-groups, layersGroupId) are recorded in a package, and none is written "
            "here: not used (the estimate's own cut is in PREFIX_summary.md)");
  auto buffers = plan::activationBuffers(g, 1);
  plan::MemoryPlan mp = o.reuse_memory ? plan::planReuse(buffers) : plan::planSequential(buffers);
  tr.res.activation_bytes = mp.total;
  tr.res.activation_lower_bound = mp.lower_bound;
  tr.warn(tr.numerics->whyNoPackage(tr));
}

void reports(Translation& tr) {
  const codegen::Estimate& e = *tr.estimate;
  tr.res.estimated_us = e.total_us;
  tr.res.single_core_us = e.single_core_us;
  for (auto& c : e.multi_core) tr.res.multi_core_roi_s.emplace_back(c.name, c.roi_per_s);
  if (!e.groups.empty() && e.groups_period_us > 0) tr.res.multi_core_roi_s.emplace_back("layers groups", 1e6 / e.groups_period_us);
  if (tr.summary.valid()) tr.summary.get();  // rethrows what the summary's thread threw
  else writeSummary(e, tr.t, tr.base());
  for (const char* ext : {"_summary.csv", "_summary.md", "_summary.xlsx"}) tr.listFile(tr.base().string() + ext);
}

void publish(Translation& tr) {
  tr.out->commit();
  tr.res.dir = tr.out->finalPath();
  tr.res.ok = tr.supported();
}

}  // namespace stages
}  // namespace npuc
