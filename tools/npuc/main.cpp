// npuc command-line entry point: subcommand dispatch and the error -> exit status policy
// (2: the user's input or arguments are wrong or unsupported; 3: internal error).
#include "cli_common.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  npuc::cli::Command app{"npuc — open NPU model translator: import ONNX, optimize, check, translate, simulate."};
  app.requireSubcommand();
  app.versionFlag("--version", "npuc 0.1.0");
  npuc::cli::Action action;
  npuc::cli::addInspect(app, action);
  npuc::cli::addRun(app, action);
  npuc::cli::addBench(app, action);
  npuc::cli::addEval(app, action);
  npuc::cli::addQuantize(app, action);
  npuc::cli::addConformance(app, action);
  npuc::cli::addCheck(app, action);
  npuc::cli::addTargets(app, action);
  npuc::cli::addTranslate(app, action);
  npuc::cli::addSimulate(app, action);
  npuc::cli::addCompare(app, action);
  npuc::cli::addView(app, action);
  npuc::cli::addTidlImport(app, action);
  npuc::cli::addTidlSim(app, action);
  npuc::cli::addTidlClassify(app, action);
  npuc::cli::addTidlSegment(app, action);
  npuc::cli::addTidlDetect(app, action);
  npuc::cli::addCustomOp(app, action);
  npuc::cli::addTune(app, action);
  npuc::cli::addBundle(app, action);
  std::vector<std::string> args;
  try {
    args = npuc::cli::customOpActionAlias(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const npuc::Error& e) {
    std::fprintf(stderr, "npuc: error: %s\n", e.what());
    return 2;
  }
  std::vector<char*> av{argv[0]};
  for (std::string& a : args) av.push_back(a.data());
  if (const int rc = app.parse(static_cast<int>(av.size()), av.data()); rc >= 0) return rc;  // help, or a usage error
  // An error's line comes after what the command printed before it (its banner), also when both streams go to one
  // file or pipe: stdout is flushed first.
  try {
    npuc::cli::registerCustomOps();
    return action ? action() : 0;
  } catch (const npuc::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "npuc: error: %s\n", e.what());
    return npuc::exitStatusFor(e.code());
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave could not be read or written (no such folder, no permission, a file where a folder
    // was expected): their input, not an npuc bug.
    std::string where = e.path1().empty() ? "" : e.path1().string() + ": ";
    std::fflush(stdout);
    std::fprintf(stderr, "npuc: error: %s%s\n", where.c_str(), e.code().message().c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "npuc: error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "npuc: internal error: %s\n", e.what());
    return 3;
  }
}
