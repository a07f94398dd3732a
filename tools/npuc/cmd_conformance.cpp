// npuc conformance: runs ONNX backend test directories (model.onnx + test_data_set_*/{input,output}_*.pb) on the
// reference engine and compares with the expected outputs (rtol 1e-3, atol 1e-4; exact for integers and bools).
// Optionally checks import -> export -> import (ONNX checker + bit-identical outputs) and an allowlist.
#include "cli_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

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

struct Result {
  Verdict v;
  std::string why;
};

Result runTest(const fs::path& dir, bool roundtrip, int threads) {
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

void addConformance(CLI::App& app, Action& run) {
  auto* c = app.add_subcommand("conformance",
                               "Run ONNX backend tests (default: Debian's libonnx-testdata node/, pytorch-converted/, "
                               "pytorch-operator/, simple/) and compare with the expected outputs");
  struct Opts {
    std::vector<std::string> dirs;
    std::string filter, allowlist, write_passing;
    bool roundtrip = false, quiet = false;
    int threads = 1;
  };
  auto o = std::make_shared<Opts>();
  c->add_option("dirs", o->dirs, "Test folders, or folders of test folders");
  c->add_option("--filter", o->filter, "Only tests whose id contains this text");
  c->add_option("--allowlist", o->allowlist, "File of test ids (suite/test) that must pass; exit 1 if one does not");
  c->add_option("--write-passing", o->write_passing, "Write the ids of the passing tests to this file");
  c->add_flag("--roundtrip", o->roundtrip, "Also check import -> export -> import: ONNX checker and identical outputs");
  c->add_flag("--quiet,-q", o->quiet, "Print only failures and the totals");
  c->add_option("--threads,-t", o->threads, "Worker threads per test")->check(CLI::Range(1, 256));
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
      std::set<std::string> passing;
      for (auto& [id, dir] : tests) {
        if (!o->filter.empty() && id.find(o->filter) == std::string::npos) continue;
        Result r = runTest(dir, o->roundtrip, o->threads);
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
      int rc = 0;
      if (!o->allowlist.empty()) {
        std::ifstream f(o->allowlist);
        if (!f) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open the allowlist", o->allowlist));
        std::string line;
        int listed = 0, missing = 0;
        while (std::getline(f, line)) {
          if (line.empty() || line[0] == '#') continue;
          ++listed;
          if (!o->filter.empty() && line.find(o->filter) == std::string::npos) continue;
          if (!passing.count(line)) {
            ++missing;
            fmt::print("allowlisted test did not pass: {}\n", line);
          }
        }
        fmt::print("allowlist: {} listed, {} did not pass\n", listed, missing);
        if (missing) rc = 1;
      }
      fmt::print("{} passed, {} failed, {} unsupported\n", pass, failc, unsup);
      return rc;
    };
  });
}

}  // namespace npuc::cli
