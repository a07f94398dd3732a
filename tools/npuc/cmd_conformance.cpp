// npuc conformance: runs ONNX backend test directories (model.onnx + test_data_set_*/{input,output}_*.pb) on the
// reference engine and compares with the expected outputs (rtol 1e-3, atol 1e-4; exact for integers and bools).
// Optionally checks import -> export -> import (ONNX checker + bit-identical outputs) and an allowlist, and with
// --package TARGET that `check` and `translate` agree on every test the engine passes and that each package the
// translator writes computes the engine's outputs (bit for bit for float32 targets) in --exact and fast mode.
#include "cli_common.hpp"

#include "npuc/io.hpp"
#include "npuc/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>

#include <unistd.h>

namespace fs = std::filesystem;

namespace npuc::cli {

namespace {

constexpr const char* kDefaultRoot = "/usr/share/libonnx-testdata/data";

std::vector<fs::path> sortedNumbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> v;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) != 0) continue;
    std::string num = n.substr(prefix.size());
    num = num.substr(0, num.find('.'));
    v.push_back({std::atoi(num.c_str()), e.path()});
  }
  std::sort(v.begin(), v.end());
  std::vector<fs::path> r;
  for (auto& [i, p] : v) r.push_back(p);
  return r;
}

/// Empty string when equal within tolerance, else a description of the first mismatch.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return fmt::format("shape {} != expected {}", shapeStr(got.shape()), shapeStr(want.shape()));
  if (got.dtype() != want.dtype()) return fmt::format("type {} != expected {}", dtypeName(got.dtype()), dtypeName(want.dtype()));
  if (isFloat(want.dtype())) {
    std::vector<double> gv = got.toDouble(), wv = want.toDouble();
    for (size_t i = 0; i < gv.size(); ++i) {
      double a = gv[i], e = wv[i];
      if (std::isnan(a) && std::isnan(e)) continue;
      if (std::isinf(e) && a == e) continue;
      if (!(std::fabs(a - e) <= 1e-4 + 1e-3 * std::fabs(e)))
        return fmt::format("element {}: {} != expected {}", i, a, e);
    }
    return "";
  }
  if (got.nbytes() && std::memcmp(got.raw(), want.raw(), got.nbytes()) != 0) {
    auto gv = got.toDouble(), wv = want.toDouble();
    for (size_t i = 0; i < gv.size(); ++i)
      if (gv[i] != wv[i]) return fmt::format("element {}: {} != expected {}", i, gv[i], wv[i]);
  }
  return "";
}

enum class Verdict { kPass, kFail, kUnsupported };

/// A scratch folder for the packages of --package, removed with everything in it at the end.
struct ScratchDir {
  fs::path dir = fs::temp_directory_path() / fmt::format("npuc-conformance-{}", ::getpid());
  ScratchDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  const fs::path& path() const { return dir; }
};

struct Result {
  Verdict v;
  std::string why;
};

/// What --package found for one test: the package agrees (or both check and translate refuse), or why not.
struct PackageResult {
  enum Kind { kPackaged, kReported, kDisagree, kWrong } kind = kReported;
  std::string why;
};

/// check and translate for `target` on model m, loaded from `model` (inputs fixed to the data set's shapes); when a package is written,
/// simulates it in --exact mode at 1 thread and fast mode at 2 threads on the data set's inputs.
PackageResult packageTest(const fs::path& model, const Model& m, const LoadOptions& lo, const std::string& target,
                          const std::map<std::string, Tensor>& inputs, const fs::path& scratch) {
  std::vector<CheckRow> rows = m.check(target);
  TranslateOptions to;
  to.prefix = "t";
  to.onnx = model;
  to.target = target;
  to.out_root = scratch;
  to.input_shapes = lo.input_shapes;
  bool packaged = false;
  std::string refused;
  try {
    TranslateResult r = translate(to);
    packaged = r.ok;
    if (!r.ok && !r.errors.empty()) refused = r.errors[0].rule_id + ": " + r.errors[0].actual;
  } catch (const Error& e) {
    refused = e.what();
  }
  if (rows.empty() != packaged) {
    return {PackageResult::kDisagree,
            rows.empty() ? fmt::format("check passes, translate refuses: {}", refused)
                         : fmt::format("check reports {} ({}: {}), translate packages it", rows.size(), rows[0].rule_id,
                                       rows[0].actual)};
  }
  if (!packaged) return {PackageResult::kReported, rows[0].rule_id + ": " + rows[0].actual};
  // The package computes what the engine computes on the optimized model (fused patterns round once, not per op;
  // the test's own comparison above holds the optimizer to the expected outputs).
  std::vector<Tensor> opt_outs = Session(m.optimized(), 1).run(inputs);
  fs::path dir = scratch / "t";
  std::vector<std::vector<Tensor>> runs;
  for (RuntimeOptions ro : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(dir, ro);
    for (const RuntimeTensor& in : rt.inputs()) {
      auto it = inputs.find(in.name);
      if (it == inputs.end()) return {PackageResult::kWrong, fmt::format("the package input '{}' is not a model input", in.name)};
      rt.setInput(in.name, it->second);
    }
    rt.run();
    std::vector<Tensor> outs;
    for (const RuntimeTensor& o : rt.outputs()) outs.push_back(rt.output(o.name));
    runs.push_back(std::move(outs));
  }
  if (runs[0].size() != opt_outs.size())
    return {PackageResult::kWrong, fmt::format("{} package outputs, the model has {}", runs[0].size(), opt_outs.size())};
  const bool fp32 = Runtime(dir).numerics() == "fp32";
  for (size_t i = 0; i < opt_outs.size(); ++i) {
    if (!runs[1][i].sameBits(runs[0][i])) return {PackageResult::kWrong, fmt::format("output {}: fast mode differs from --exact", i)};
    if (fp32 && !runs[0][i].reshaped(opt_outs[i].shape()).sameBits(opt_outs[i]))
      return {PackageResult::kWrong, fmt::format("output {}: the package's bits differ from the engine's", i)};
  }
  return {PackageResult::kPackaged, ""};
}

Result runTest(const fs::path& dir, bool roundtrip, int threads, const std::string& package_target,
               const fs::path& scratch, PackageResult* pkg) {
  fs::path model = dir / "model.onnx";
  auto sets = sortedNumbered(dir, "test_data_set_");
  if (sets.empty()) return {Verdict::kUnsupported, "no test_data_set_* folder"};
  try {
    LoadOptions probe;
    probe.resolve = false;
    probe.require_static_inputs = false;
    std::vector<TensorInfo> model_inputs = Model::load(model, probe).inputs();
    for (auto& set : sets) {
      std::map<std::string, Tensor> inputs;
      auto in_files = sortedNumbered(set, "input_");
      for (size_t i = 0; i < in_files.size(); ++i) {
        std::string name;
        Tensor t = readOnnxTensor(in_files[i], &name);
        bool known = std::any_of(model_inputs.begin(), model_inputs.end(), [&](auto& x) { return x.name == name; });
        if (!known) {
          if (i >= model_inputs.size()) return {Verdict::kFail, fmt::format("{} has more inputs than the model", set.string())};
          name = model_inputs[i].name;
        }
        inputs[name] = t;
      }
      // ONNX 1.12's test data stores bfloat16 tensors as uint16 (numpy has no bfloat16): reinterpret the bits.
      for (auto& info : model_inputs)
        if (info.dtype == DType::kBF16 && inputs.count(info.name) && inputs[info.name].dtype() == DType::kU16)
          inputs[info.name] = Tensor(DType::kBF16, inputs[info.name].shape(), inputs[info.name].buffer(),
                                     inputs[info.name].offset());
      LoadOptions lo;
      lo.require_static_inputs = false;
      for (auto& [n, t] : inputs) lo.input_shapes[n] = t.shape();
      Model m = Model::load(model, lo);
      auto outs = Session(m, threads).run(inputs);
      auto out_files = sortedNumbered(set, "output_");
      if (out_files.size() != outs.size())
        return {Verdict::kFail, fmt::format("{} outputs, expected {}", outs.size(), out_files.size())};
      for (size_t i = 0; i < outs.size(); ++i) {
        Tensor want = readOnnxTensor(out_files[i]);
        if (outs[i].dtype() == DType::kBF16 && want.dtype() == DType::kU16)
          want = Tensor(DType::kBF16, want.shape(), want.buffer(), want.offset());
        std::string why = compare(outs[i], want);
        if (!why.empty())
          return {Verdict::kFail, fmt::format("{} output {} ({}): {}", set.filename().string(), i, m.outputs()[i].name, why)};
      }
      if (pkg && set == sets.front()) *pkg = packageTest(model, m, lo, package_target, inputs, scratch);
      if (roundtrip) {
        std::string bytes = m.toOnnxBytes();
        checkOnnx(bytes, "exported " + model.string());
        Model back = Model::fromOnnxBytes(bytes, "exported " + model.string(), lo);
        auto outs2 = Session(back, threads).run(inputs);
        for (size_t i = 0; i < outs.size(); ++i)
          if (!outs[i].sameBits(outs2[i]))
            return {Verdict::kFail, fmt::format("import -> export -> import changed output {}", i)};
      }
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return {Verdict::kUnsupported, e.what()};
    return {Verdict::kFail, e.what()};
  } catch (const std::exception& e) {
    return {Verdict::kFail, std::string("exception: ") + e.what()};
  }
  return {Verdict::kPass, ""};
}

}  // namespace

void addConformance(Command& app, Action& run) {
  auto* c = app.subcommand("conformance",
                               "Run ONNX backend tests (default: Debian's libonnx-testdata node/, pytorch-converted/, "
                               "pytorch-operator/, simple/) and compare with the expected outputs");
  struct Opts {
    std::vector<std::string> dirs;
    std::string filter, allowlist, write_passing, package, packaged_list, write_packaged;
    bool roundtrip = false, quiet = false;
    int threads = 1;
  };
  auto o = std::make_shared<Opts>();
  c->option("dirs", o->dirs, "Test folders, or folders of test folders");
  c->option("--filter", o->filter, "Only tests whose id contains this text");
  c->option("--allowlist", o->allowlist, "File of test ids (suite/test) that must pass; exit 1 if one does not");
  c->option("--write-passing", o->write_passing, "Write the ids of the passing tests to this file");
  c->flag("--roundtrip", o->roundtrip, "Also check import -> export -> import: ONNX checker and identical outputs");
  c->flag("--quiet,-q", o->quiet, "Print only failures and the totals");
  c->option("--threads,-t", o->threads, "Worker threads per test")->range(1, 256);
  c->option("--package", o->package,
                "Also, for every test the engine passes: `check` and `translate` for this target must agree, and each "
                "package must compute the engine's outputs (bit for bit for float32 targets) in --exact and fast mode");
  c->option("--packaged-list", o->packaged_list,
                "With --package: file of test ids that must translate into a package; exit 1 if one does not");
  c->option("--write-packaged", o->write_packaged, "With --package: write the ids of the packaged tests to this file");
  c->callback([o, &run] {
    run = [o] {
      std::vector<std::string> dirs = o->dirs;
      if (dirs.empty())
        for (const char* s : {"node", "pytorch-converted", "pytorch-operator", "simple"})
          dirs.push_back(std::string(kDefaultRoot) + "/" + s);
      std::vector<std::pair<std::string, fs::path>> tests;  // id, dir
      for (auto& d : dirs) {
        fs::path p(d);
        if (!fs::is_directory(p)) throw Error(ErrorCode::kIo, fmt::format("{}: not a folder", d));
        if (fs::exists(p / "model.onnx")) {
          tests.push_back({p.parent_path().filename().string() + "/" + p.filename().string(), p});
          continue;
        }
        std::vector<fs::path> sub;
        for (auto& e : fs::directory_iterator(p))
          if (fs::exists(e.path() / "model.onnx")) sub.push_back(e.path());
        std::sort(sub.begin(), sub.end());
        for (auto& s : sub) tests.push_back({p.filename().string() + "/" + s.filename().string(), s});
      }
      int pass = 0, failc = 0, unsup = 0;
      int packaged = 0, reported = 0, disagree = 0;
      std::set<std::string> passing, packaged_ids;
      ScratchDir scratch;
      for (auto& [id, dir] : tests) {
        if (!o->filter.empty() && id.find(o->filter) == std::string::npos) continue;
        PackageResult pr;
        pr.kind = PackageResult::kReported;
        pr.why = "-";
        Result r = runTest(dir, o->roundtrip, o->threads, o->package, scratch.path(), o->package.empty() ? nullptr : &pr);
        if (r.v == Verdict::kPass && !o->package.empty()) {
          if (pr.kind == PackageResult::kPackaged) {
            ++packaged;
            packaged_ids.insert(id);
          } else if (pr.kind == PackageResult::kReported) {
            ++reported;
            if (!o->quiet) fmt::print("reported     {} ({}): {}\n", id, o->package, pr.why);
          } else {
            ++disagree;
            r = {Verdict::kFail, fmt::format("package ({}): {}", o->package, pr.why)};
          }
        }
        if (r.v == Verdict::kPass) {
          ++pass;
          passing.insert(id);
          if (!o->quiet) fmt::print("pass         {}\n", id);
        } else if (r.v == Verdict::kFail) {
          ++failc;
          fmt::print("FAIL         {}: {}\n", id, r.why);
        } else {
          ++unsup;
          if (!o->quiet) fmt::print("unsupported  {}: {}\n", id, r.why);
        }
        std::fflush(stdout);
      }
      if (!o->write_passing.empty()) {
        std::ofstream f(o->write_passing);
        for (auto& id : passing) f << id << "\n";
      }
      if (!o->write_packaged.empty()) {
        std::ofstream f(o->write_packaged);
        for (auto& id : packaged_ids) f << id << "\n";
      }
      int rc = 0;
      // Every id of `file` must be in `got`: 1 (and the missing ids printed) when one is not.
      auto requireAll = [&](const std::string& file, const std::set<std::string>& got, const char* what) {
        std::istringstream f(readFileText(file, 16u << 20, "a list of tests"));
        std::string line;
        int listed = 0, missing = 0;
        while (std::getline(f, line)) {
          if (line.empty() || line[0] == '#') continue;
          ++listed;
          if (!o->filter.empty() && line.find(o->filter) == std::string::npos) continue;
          if (!got.count(line)) {
            ++missing;
            fmt::print("listed test did not {}: {}\n", what, line);
          }
        }
        fmt::print("{}: {} listed, {} did not {}\n", file, listed, missing, what);
        if (missing) rc = 1;
      };
      if (!o->allowlist.empty()) requireAll(o->allowlist, passing, "pass");
      if (!o->packaged_list.empty()) requireAll(o->packaged_list, packaged_ids, "translate into a package");
      if (!o->package.empty())
        fmt::print("package {}: {} packaged and computing the engine's outputs, {} reported by check and refused by "
                   "translate, {} disagreeing or wrong\n", o->package, packaged, reported, disagree);
      fmt::print("{} passed, {} failed, {} unsupported\n", pass, failc, unsup);
      return rc;
    };
  });
}

}  // namespace npuc::cli
