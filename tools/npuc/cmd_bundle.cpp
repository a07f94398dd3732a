// npuc bundle: several packages in one folder, each under a model id (Kneron's multi-model NEF, picked by
// kneron_inference's model_id; docs/package-format.md, "Model bundles").
#include "cli_common.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace npuc::cli {

void addBundle(Command& app, Action& run) {
  auto* c = app.subcommand("bundle", "Put several packages into one folder, each under a model id (Kneron's multi-model NEF: "
                                     "npuc.inference(model_id=...), simulate --model-id)");
  struct Opts {
    std::string name, root = "output";
    std::vector<std::string> models;
  };
  auto o = std::make_shared<Opts>();
  c->option("name", o->name, "The bundle's folder name (written under --out-root, published whole or not at all)")->required();
  c->option("models", o->models, "ID=PACKAGE: a model id (0 to 2^31 - 1) and its package folder (an ordinary one or one with "
                                 "gears), once per model")->required();
  c->option("--out-root,-o", o->root, "The folder the bundle goes into (default: output)");
  c->callback([o, &run] {
    run = [o] {
      std::vector<std::pair<int64_t, std::filesystem::path>> models;
      for (const std::string& m : o->models) {
        const size_t eq = m.find('=');
        char* end = nullptr;
        const long long id = eq == std::string::npos ? -1 : std::strtoll(m.c_str(), &end, 10);
        if (eq == std::string::npos || end != m.c_str() + eq || eq == 0 || eq + 1 == m.size())
          throw Error(ErrorCode::kInvalidArgument, fmt::format("'{}': expected ID=PACKAGE (a model id and a package folder)", m));
        models.emplace_back(id, m.substr(eq + 1));
      }
      const std::filesystem::path dir = writeBundle(o->root, o->name, models);
      fmt::print("wrote {}: {} model(s)\n", dir.string(), models.size());
      for (const auto& [id, src] : models) fmt::print("  model {}: {}\n", id, src.string());
      return 0;
    };
  });
}

}  // namespace npuc::cli
