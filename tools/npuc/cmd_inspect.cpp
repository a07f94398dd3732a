// npuc inspect: per-node table (index, name, op, input and output shapes, MACs) and model totals.
#include "cli_common.hpp"

#include <fmt/format.h>

namespace npuc::cli {

namespace {
std::string shapesStr(const std::vector<Shape>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + shapeStr(v[i]);
  return s;
}
}  // namespace

void addInspect(Command& app, Action& run) {
  auto* c = app.subcommand("inspect", "Print a per-node table (shapes, MACs) and totals of a model (ONNX, Caffe, TensorFlow, TFLite); --save-onnx writes it as ONNX");
  addCustomOpOption(c);
  struct Opts {
    std::string model, caffemodel;
    std::vector<std::string> shapes;
    bool raw = false;
    bool dump = false, translate_opt = false;
    std::string save_onnx;
  };
  auto o = std::make_shared<Opts>();
  addModelPositionals(c, o->model, o->caffemodel);
  c->option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224 (repeatable)");
  c->flag("--no-fold", o->raw, "Show the graph as imported, before constant folding");
  c->flag("--dump", o->dump, "Also print the IR as text");
  c->flag("--optimized", o->translate_opt, "Show the graph after the translator's optimizer (fusions, patterns)");
  c->option("--save-onnx", o->save_onnx,
                "Also write the model as imported (any format; after --optimized, optimized) as standard ONNX, for "
                "other tools (npuc's fused forms written as their ONNX ops)");
  c->callback([o, &run] {
    run = [o] {
      LoadOptions lo;
      lo.input_shapes = parseShapes(o->shapes);
      lo.resolve = !o->raw;
      lo.caffe_model = o->caffemodel;
      Model m = Model::load(o->model, lo);
      if (o->translate_opt) m = m.optimized();
      auto nodes = m.nodes();
      size_t wn = 4, wo = 2;
      for (auto& n : nodes) {
        wn = std::max(wn, n.name.size());
        wo = std::max(wo, n.op.size());
      }
      wn = std::min<size_t>(wn, 40);
      fmt::print("{:>5}  {:<{}}  {:<{}}  {:<40}  {:<20}  {:>12}\n", "index", "name", wn, "op", wo, "inputs", "outputs", "MACs");
      for (auto& n : nodes)
        fmt::print("{:>5}  {:<{}}  {:<{}}  {:<40}  {:<20}  {:>12}\n", n.index, n.name.substr(0, 40), wn, n.op, wo,
                   shapesStr(n.input_shapes), shapesStr(n.output_shapes), n.macs);
      ModelStats s = m.stats();
      fmt::print("\nnodes: {}\nparameters: {} ({})\nMACs: {} ({})\nactivation bytes: {} ({})\n", s.nodes,
                 s.parameters, humanBytes(s.parameter_bytes), s.macs, humanCount(s.macs), s.activation_bytes,
                 humanBytes(s.activation_bytes));
      for (auto& i : m.inputs()) fmt::print("input  {} : {} {}\n", i.name, dtypeName(i.dtype), shapeStr(i.shape));
      for (auto& i : m.outputs()) fmt::print("output {} : {} {}\n", i.name, dtypeName(i.dtype), shapeStr(i.shape));
      if (o->dump) fmt::print("\n{}", m.dump());
      if (!o->save_onnx.empty()) {
        m.saveOnnx(o->save_onnx);
        fmt::print("wrote {}\n", o->save_onnx);
      }
      return 0;
    };
  });
}

}  // namespace npuc::cli
