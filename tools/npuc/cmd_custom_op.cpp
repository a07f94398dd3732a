// npuc custom-op create | build: a custom operator from its YAML definition to a plugin library
// (docs/custom-ops.md; the RKNN custom-op guide's `custom_op --action create|build`).
#include "cli_common.hpp"

#include "npuc/io.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef NPUC_SOURCE_INCLUDE_DIR
#define NPUC_SOURCE_INCLUDE_DIR ""
#endif

namespace npuc::cli {

namespace {

namespace fs = std::filesystem;

/// The folder holding npuc/custom_op.h: next to an installed npuc (<prefix>/include), else this build's source.
fs::path npucIncludeDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "include";
    if (fs::exists(installed / "npuc" / "custom_op.h", ec)) return installed;
  }
  return NPUC_SOURCE_INCLUDE_DIR;
}

/// A shell word: single-quoted.
std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

int runCommand(const std::string& cmd, const std::string& what) {
  fmt::print("$ {}\n", cmd);
  std::fflush(stdout);
  const int rc = std::system(cmd.c_str());
  if (rc != 0)
    fail(ErrorCode::kInvalidInput, "{} failed (exit status {}): the messages above say why", what, WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
  return rc;
}

}  // namespace

std::vector<std::string> customOpActionAlias(std::vector<std::string> a) {
  const auto cmd = std::find(a.begin(), a.end(), "custom-op");
  if (cmd == a.end()) return a;
  const size_t at = static_cast<size_t>(cmd - a.begin());
  for (size_t i = at + 1; i < a.size(); ++i) {
    std::string action;
    size_t n = 0;
    if ((a[i] == "--action" || a[i] == "-a") && i + 1 < a.size()) action = a[i + 1], n = 2;
    else if (a[i].rfind("--action=", 0) == 0) action = a[i].substr(9), n = 1;
    else continue;
    if (action != "create" && action != "build")
      fail(ErrorCode::kInvalidArgument, "custom-op --action {}: the actions are create and build", action);
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(i), a.begin() + static_cast<std::ptrdiff_t>(i + n));
    a.insert(a.begin() + static_cast<std::ptrdiff_t>(at + 1), action);
    break;
  }
  return a;
}

namespace {

/// The RKNN guide's cross compilers (§2 2c-d, §3.1.3.1 2): the Linaro toolchain of `arch` (aarch64, armhf) unpacked into
/// ~/.rknn ("tar xvJf gcc-linaro-6.3.1-2017.05-x86_64_aarch64-linux-gnu.tar.xz -C ~/.rknn/"), else <triple>-g++ on the
/// PATH (Debian's g++-aarch64-linux-gnu); a CMake toolchain file for it, written into `build_dir`. npuc downloads
/// nothing: without a compiler, the error says where to put one.
fs::path crossToolchain(const std::string& arch, const fs::path& build_dir) {
  const std::string triple = arch == "aarch64" ? "aarch64-linux-gnu" : "arm-linux-gnueabihf";
  std::error_code ec;
  fs::path cxx;
  const char* home = std::getenv("HOME");
  const fs::path rknn = fs::path(home ? home : "") / ".rknn";
  if (home && fs::is_directory(rknn, ec)) {
    std::vector<fs::path> found;  // (the newest name last: the one taken)
    for (const auto& e : fs::directory_iterator(rknn, ec))
      if (e.path().filename().string().find("x86_64_" + triple) != std::string::npos &&
          fs::is_regular_file(e.path() / "bin" / (triple + "-g++"), ec))
        found.push_back(e.path() / "bin" / (triple + "-g++"));
    std::sort(found.begin(), found.end());
    if (!found.empty()) cxx = found.back();
  }
  if (cxx.empty() && std::system(fmt::format("command -v {}-g++ > /dev/null 2>&1", triple).c_str()) == 0) cxx = triple + "-g++";
  if (cxx.empty())
    fail(ErrorCode::kInvalidArgument, "--cross {}: no {}-g++ in {} (the RKNN guide: unpack gcc-linaro-6.3.1-2017.05-x86_64_{}.tar.xz "
         "there) nor on the PATH (Debian: apt-get install g++-{}); npuc downloads nothing", arch, triple, rknn.string(), triple,
         arch == "aarch64" ? "aarch64-linux-gnu" : "arm-linux-gnueabihf");
  const fs::path cc = cxx.parent_path() / (triple + "-gcc");
  makeOutputFolder(build_dir, "--build-dir");
  const fs::path file = build_dir / ("toolchain-" + arch + ".cmake");
  writeText(file, fmt::format("# Written by npuc custom-op build --cross {}\nset(CMAKE_SYSTEM_NAME Linux)\nset(CMAKE_SYSTEM_PROCESSOR {})\n"
                              "set(CMAKE_C_COMPILER \"{}\")\nset(CMAKE_CXX_COMPILER \"{}\")\n",
                              arch, arch == "aarch64" ? "aarch64" : "arm", cxx.has_parent_path() ? cc.string() : triple + "-gcc", cxx.string()));
  fmt::print("--cross {}: {} (toolchain file {})\n", arch, cxx.string(), file.string());
  return fs::absolute(file);
}

}  // namespace

void addCustomOp(Command& app, Action& run) {
  auto* c = app.subcommand("custom-op", "Custom operators: create a plugin skeleton from a YAML definition, build it "
                                            "(docs/custom-ops.md; `--action create|build` as the RKNN guide writes it works too)");
  c->requireSubcommand();
  struct Opts {
    std::string config, op_path, build_dir, include_dir, out_dir, toolchain, cross;
    std::vector<std::string> params;
    bool force = false, test = false;
  };
  auto o = std::make_shared<Opts>();
  auto* create = c->subcommand("create", "Generate a buildable plugin skeleton (source with the callbacks stubbed to "
                                             "fail loudly, CMakeLists.txt, a test harness) from an op definition");
  create->option("--config,-c", o->config, "The op definition (YAML: the RKNN guide's format, framework: onnx)")->required();
  create->option("--op-path,--op_path,-p", o->op_path, "Folder to write the skeleton into")->required();
  create->flag("--force", o->force, "Overwrite existing files");
  create->callback([o, &run] {
    run = [o] {
      const CustomOpSkeleton s = createCustomOp(o->config, o->op_path, o->force);
      for (auto& n : s.notes) fmt::print("note: {}\n", n);
      for (auto& f : s.files) fmt::print("wrote {}\n", f.string());
      fmt::print("Next: write infer and compute_ref in {}, then `npuc custom-op build --op-path {}` builds lib{}.so.\n",
                 (fs::path(o->op_path) / (s.lib_name + "_op.cpp")).string(), o->op_path, s.lib_name);
      return 0;
    };
  });
  auto* build = c->subcommand("build", "Build the plugin of an op folder (CMake + Ninja) into DIR/lib<op>.so");
  build->option("--op-path,--op_path,-p", o->op_path, "The op's folder (made by create)")->required();
  build->option("--build-dir", o->build_dir, "Where CMake builds (default: DIR/build)");
  build->option("--include-dir", o->include_dir, "The folder holding npuc/custom_op.h (default: this npuc's)");
  build->option("--out-dir", o->out_dir, "Where the library goes (default: the op's folder)");
  build->option("--toolchain", o->toolchain, "A CMake toolchain file (CMAKE_TOOLCHAIN_FILE): build the plugin for "
                    "another machine; the library is then not loaded here");
  build->option("--cross", o->cross, "Build for the RKNN guide's boards: aarch64 or armhf, with the Linaro cross compiler "
                    "unpacked into ~/.rknn as the guide says (gcc-linaro-*-x86_64_<triple>), else <triple>-g++ on the PATH; npuc "
                    "writes the toolchain file and downloads nothing")
      ->oneOf({"aarch64", "armhf"});
  build->flag("--test", o->test, "Then run the harness (test_<op>): its default input, the parameters --param gives");
  build->option("--param", o->params, "With --test: a parameter of the op for the harness, NAME=VALUE (numbers; a "
                    "list separated by commas), checked against op.yml's parameters and types (repeatable)");
  build->callback([o, &run] {
    run = [o] {
      const fs::path dir = o->op_path;
      if (!fs::is_regular_file(dir / "CMakeLists.txt"))
        fail(ErrorCode::kInvalidArgument, "{}: no CMakeLists.txt (make the folder with `npuc custom-op create`)", dir.string());
      std::vector<std::string> test_args;
      if (!o->params.empty() && !o->test) fail(ErrorCode::kInvalidArgument, "--param gives the harness a parameter: add --test");
      if (o->test) test_args = customOpTestArgs(dir / "op.yml", o->params);  // checked before anything builds
      fs::path toolchain;
      if (!o->cross.empty() && !o->toolchain.empty()) fail(ErrorCode::kInvalidArgument, "give --cross or --toolchain, not both");
      if (!o->cross.empty()) {
        if (o->test)
          fail(ErrorCode::kInvalidArgument, "--test runs the harness on this machine, which a library built with --cross {} cannot: run "
               "test_<op> there", o->cross);
        toolchain = crossToolchain(o->cross, o->build_dir.empty() ? dir / "build" : fs::path(o->build_dir));
      } else if (!o->toolchain.empty()) {
        toolchain = o->toolchain;
        std::error_code ec;
        if (!fs::is_regular_file(toolchain, ec))
          fail(ErrorCode::kInvalidArgument, "--toolchain {}: {}", o->toolchain,
               fs::exists(toolchain, ec) ? "not a file (give a CMake toolchain file)" : "no such file");
        toolchain = fs::absolute(toolchain);
        if (o->test)
          fail(ErrorCode::kInvalidArgument, "--test runs the harness on this machine, which a library built with --toolchain "
               "{} (for another machine) cannot: run test_<op> there", o->toolchain);
      }
      // The library's folder: made when missing, as every output folder of the CLI is (an error naming it otherwise).
      const fs::path out = o->out_dir.empty() ? dir : fs::path(o->out_dir);
      if (!o->out_dir.empty()) makeOutputFolder(out, "--out-dir");
      const fs::path bdir = o->build_dir.empty() ? dir / "build" : fs::path(o->build_dir);
      const fs::path inc = o->include_dir.empty() ? npucIncludeDir() : fs::path(o->include_dir);
      if (!fs::exists(inc / "npuc" / "custom_op.h"))
        fail(ErrorCode::kInvalidArgument, "{}: no npuc/custom_op.h there (--include-dir names npuc's include folder)", inc.string());
      if (std::system("cmake --version > /dev/null 2>&1") != 0)
        fail(ErrorCode::kInvalidArgument, "cmake is not installed (apt-get install cmake ninja-build g++)");
      const bool ninja = std::system("ninja --version > /dev/null 2>&1") == 0;
      runCommand(fmt::format("cmake -S {} -B {} {}-DCMAKE_BUILD_TYPE=Release -DNPUC_INCLUDE_DIR={}{} > /dev/null",
                             quote(dir.string()), quote(bdir.string()), ninja ? "-G Ninja " : "", quote(inc.string()),
                             toolchain.empty() ? "" : " -DCMAKE_TOOLCHAIN_FILE=" + quote(toolchain.string())),
                 "configuring the plugin (cmake)");
      runCommand(fmt::format("cmake --build {}", quote(bdir.string())), "building the plugin");
      // The library op.yml names (out_binary), else the only one built.
      fs::path lib;
      std::istringstream yml(readFileText(dir / "op.yml", 16u << 20, "an op definition"));
      for (std::string line; std::getline(yml, line);)
        if (line.rfind("out_binary:", 0) == 0) {
          std::string name = line.substr(11);
          if (auto hash = name.find(" #"); hash != std::string::npos) name.erase(hash);
          name.erase(0, name.find_first_not_of(" \t\"'"));
          name.erase(name.find_last_not_of(" \t\r\"'") + 1);
          if (!name.empty() && name.find('/') == std::string::npos && fs::is_regular_file(bdir / name)) lib = bdir / name;
        }
      if (lib.empty())
        for (auto& e : fs::directory_iterator(bdir))
          if (e.is_regular_file() && e.path().extension() == ".so") {
            if (!lib.empty())
              fail(ErrorCode::kInvalidInput, "{}: more than one library was built and op.yml's out_binary names none of "
                   "them", bdir.string());
            lib = e.path();
          }
      if (lib.empty()) fail(ErrorCode::kInvalidInput, "{}: the build made no shared library", bdir.string());
      const fs::path dest = out / lib.filename();
      const fs::path tmp = out / (lib.filename().string() + ".tmp");
      fs::copy_file(lib, tmp, fs::copy_options::overwrite_existing);
      fs::rename(tmp, dest);
      // Loading it now shows a faulty table here rather than at translate time — unless it was built for another
      // machine, which this one cannot load.
      if (!toolchain.empty())
        fmt::print("note: {} was built with the toolchain {} for another machine; it is not loaded here (a cross-built "
                   "library cannot be loaded on this machine), so its op table is checked when npuc loads it there\n",
                   dest.string(), toolchain.string());
      else
        for (const CustomOpInfo& op : registerCustomOp(dest))
        fmt::print("{}: op '{}{}' on engine '{}' (sha256 {})\n", dest.string(), op.domain.empty() ? "" : op.domain + ".",
                   op.name, op.engine, op.sha256);
      if (o->test) {
        fs::path harness;
        for (auto& e : fs::directory_iterator(bdir))
          if (e.is_regular_file() && e.path().filename().string().rfind("test_", 0) == 0) harness = e.path();
        if (harness.empty()) fail(ErrorCode::kInvalidInput, "{}: no test_ harness was built", bdir.string());
        std::string cmd = quote(harness.string());
        for (const std::string& a : test_args) cmd += " " + quote(a);
        runCommand(cmd, "the harness");
      }
      fmt::print("Register it with --custom-op {}\n", dest.string());
      return 0;
    };
  });
}

}  // namespace npuc::cli
