// npuc tune: the int8 package within an accuracy budget with the least estimated time (docs/tune.md). The search
// runs its evaluations on a Dask cluster, so it lives in the Python package (npuc.tune, python/npuc/tuning.py); this command runs it with
// Debian's Python, the package found where this build put it (or installed), and passes every argument on.
#include "cli_common.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace npuc::cli {

void addTune(Command& app, Action& run) {
  auto* c = app.subcommand("tune", "The int8 package within an accuracy budget (--max-drop points) with the least estimated time: "
                                       "which layers to keep in float32, searched on a Dask cluster (docs/tune.md; npuc tune --help)");
  c->passThrough();  // everything after `tune` is npuc.tune's (its own --help)
  auto args = std::make_shared<std::vector<std::string>>();
  c->callback([c, args, &run] {
    *args = c->remaining();
    run = [args]() -> int {
      const char* py_env = std::getenv("NPUC_PYTHON");
      const std::string python = py_env && *py_env ? py_env : NPUC_PYTHON_EXE;
      // PYTHONPATH: NPUC_PYTHONPATH, else this build's python/ folder when it holds the package, else the installed one.
      std::string path;
      if (const char* p = std::getenv("NPUC_PYTHONPATH"); p && *p) path = p;
      else if (std::filesystem::exists(std::filesystem::path(NPUC_BUILD_PYTHON_DIR) / "npuc" / "tuning.py")) path = NPUC_BUILD_PYTHON_DIR;
      if (!path.empty()) {
        const char* old = std::getenv("PYTHONPATH");
        std::string value = old && *old ? path + ":" + old : path;
        ::setenv("PYTHONPATH", value.c_str(), 1);
      }
      std::vector<std::string> argv_s = {python, "-m", "npuc", "tune"};
      argv_s.insert(argv_s.end(), args->begin(), args->end());
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      std::fflush(stdout);
      ::execv(python.c_str(), argv.data());
      throw Error(ErrorCode::kInvalidArgument, fmt::format("npuc tune runs on Python: cannot run {} ({}); install the Python "
                                                           "package (scripts/install_deps.sh python) or set NPUC_PYTHON", python,
                                                           std::strerror(errno)));
    };
  });
}

}  // namespace npuc::cli
