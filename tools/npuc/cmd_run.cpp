// npuc run: runs a model on the reference engine and writes each output as <output-dir>/<name>.npy.
#include "cli_common.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace npuc::cli {

void addRun(Command& app, Action& run) {
  auto* c = app.subcommand("run", "Run an ONNX model on the reference engine; write outputs as .npy");
  addCustomOpOption(c);
  struct Opts {
    std::string model, caffemodel, out_dir = ".";
    std::vector<std::string> inputs, shapes;
    int threads = 1;
  };
  auto o = std::make_shared<Opts>();
  addModelPositionals(c, o->model, o->caffemodel);
  c->option("--input", o->inputs, "Input tensor: name=file.npy (repeatable; inputs not given are an error)");
  c->option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224 (default: the .npy shape)");
  c->option("--output-dir,-o", o->out_dir, "Folder for <output>.npy files (created if missing)");
  c->option("--threads,-t", o->threads, "Worker threads")->range(1, 256);
  c->callback([o, &run] {
    run = [o] {
      auto inputs = parseInputs(o->inputs);
      Model m = loadForInputs(o->model, inputs, o->shapes, o->caffemodel);
      Session s(m, o->threads);
      double t0 = nowMs();
      auto outs = s.run(inputs);
      double t1 = nowMs();
      makeOutputFolder(o->out_dir, "--output-dir");
      auto infos = m.outputs();
      std::vector<std::string> names;
      for (auto& info : infos) names.push_back(info.name);
      const std::vector<std::string> files = safeFileNames(names);  // (distinct: names that sanitize alike)
      for (size_t i = 0; i < outs.size(); ++i) {
        auto path = std::filesystem::path(o->out_dir) / (files[i] + ".npy");
        writeNpyFile(path, outs[i]);
        fmt::print("{}: {} {} -> {}\n", infos[i].name, dtypeName(outs[i].dtype()), shapeStr(outs[i].shape()), path.string());
      }
      fmt::print("ran in {:.3f} ms ({} thread{})\n", t1 - t0, o->threads, o->threads > 1 ? "s" : "");
      return 0;
    };
  });
}

}  // namespace npuc::cli
