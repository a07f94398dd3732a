// npuc check: availability of a model on a target — every node that breaks a rule, with the rule, the actual
// values and a suggested fix; written to the console and to PREFIX_error_report.{csv,json,xlsx}.
#include "cli_common.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace npuc::cli {

void addCheck(Command& app, Action& run) {
  auto* c = app.subcommand("check",
                               "Check a model against a target's operator constraints (after the optimizer); "
                               "exit 1 when something is unsupported");
  struct Opts {
    std::string model, caffemodel, target = "drpai", prefix, out_dir = ".";  // the default target of translate too
    std::vector<std::string> shapes, relax;
    bool no_report = false, relu6 = false, prepost_full = false, not_check_size = false;
    std::string save_opt, prepost;
  };
  auto o = std::make_shared<Opts>();
  addModelPositionals(c, o->model, o->caffemodel);
  addCustomOpOption(c);
  c->option("--target,-t", o->target, "Target name (see `npuc targets`) or path to a target .yaml (default: drpai, as translate)");
  c->option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224 (repeatable)");
  c->option("--prefix", o->prefix, "Report file prefix (default: the model's file name without .onnx)");
  c->option("--out,-o", o->out_dir, "Folder for PREFIX_error_report.{csv,json,xlsx}");
  c->flag("--no-report", o->no_report, "Print only; write no report files");
  c->option("--relax", o->relax,
                 "Relaxations of the target to apply, NAME[,NAME...] or all (repeatable): rules of the vendor's manual not "
                 "checked, because npuc runs more (`npuc targets --supported-ops T` lists them; default: none)");
  c->flag("--relu6-to-relu", o->relu6, "Replace Relu6 (Clip(0, 6)) by Relu before checking (-RELU6toRELU of translate)");
  c->option("--save-opt-onnx", o->save_opt, "Also write the optimized model (runs on npuc's reference engine)");
  c->option("--prepost", o->prepost, "Insert a DRP-AI pre/post-processing definition (validated against the model) before checking");
  c->flag("--prepost-full", o->prepost_full, "The definition is in the legacy full format (-PrePostFULL)");
  c->flag("--not-check-size", o->not_check_size, "Skip the ONNX-vs-YAML size check (-NotCheckSizeONNXvsYAML)");
  c->callback([o, &run] {
    run = [o] {
      std::string prefix = o->prefix.empty() ? std::filesystem::path(o->model).stem().string() : o->prefix;
      if (!o->no_report) checkOutputName(prefix, "report prefix");  // before any work
      LoadOptions lo;
      lo.input_shapes = parseShapes(o->shapes);
      lo.caffe_model = o->caffemodel;
      Model m = Model::load(o->model, lo);
      if (!o->prepost.empty()) m = m.withPrePost(o->prepost, {o->prepost_full, true, o->not_check_size});
      auto rows = m.check(o->target, o->relu6, o->relax);
      if (o->relu6) fmt::print("-RELU6toRELU: Relu6 layers are replaced by Relu\n");
      if (!o->relax.empty()) {
        std::string names;
        for (auto& r : o->relax) names += (names.empty() ? "" : ",") + r;
        fmt::print("--relax {}: rules of target {} not checked (npuc runs more than the vendor documents)\n", names, o->target);
      }
      if (!o->save_opt.empty()) {
        m.optimized(o->relu6).saveOnnx(o->save_opt);
        fmt::print("wrote {}\n", o->save_opt);
      }
      if (rows.empty()) {
        fmt::print("{}: every node is supported by target {}\n", o->model, o->target);
      } else {
        fmt::print("{}: {} problem{} for target {}\n", o->model, rows.size(), rows.size() > 1 ? "s" : "", o->target);
        for (auto& r : rows) {
          fmt::print("{}", drpaiManualMessage(o->target, r));
          fmt::print("  [{}] {} ({}): {}\n      actual: {}\n", r.index, r.node, r.op, r.rule, r.actual);
          if (!r.fix.empty()) fmt::print("      fix: {}\n", r.fix);
          fmt::print("      rule: {}\n", r.rule_id);
        }
      }
      if (!o->no_report) {
        for (auto& f : writeCheckReport(rows, o->target, o->model, std::filesystem::path(o->out_dir) / prefix))
          fmt::print("wrote {}\n", f);
      }
      return rows.empty() ? 0 : 1;
    };
  });
}

void addTargets(Command& app, Action& run) {
  auto* c = app.subcommand("targets", "List targets, or print one target's supported-operator page");
  auto page = std::make_shared<std::string>();
  c->option("--supported-ops", *page, "Print the supported-operator page (Markdown) of this target");
  c->callback([page, &run] {
    run = [page] {
      if (!page->empty()) {
        fmt::print("{}", supportedOpsPage(*page));
        return 0;
      }
      for (auto& t : listTargets()) fmt::print("{:<12} {:<11} {}\n", t.name, t.numerics, t.description);
      return 0;
    };
  });
}

}  // namespace npuc::cli
