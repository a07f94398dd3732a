// The command line's declarations: subcommands, options and flags, their rules and actions. A thin layer over CLI11,
// which only cli_args.cpp includes: CLI11 2.x is header-only and every file including it compiled its ~200 inline
// functions again at -O3 (4.5 s of each command file's 6.6 s; issue 52: a first build in minutes).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace npuc::cli {

/// An option just declared; its rules chain: `c->option("--threads,-t", n, "Worker threads")->range(1, 256)`.
class Option {
 public:
  Option* required();
  /// Numbers only: a value outside [lo, hi] is a usage error naming the option. N: int, int64_t or double.
  template <class N>
  Option* range(N lo, N hi);
  /// The value, as written, is one of these (a usage error listing them otherwise); numbers too: oneOf({"520", "720"}).
  Option* oneOf(const std::vector<std::string>& values);
  /// A list option takes between lo and hi values.
  Option* expected(int lo, int hi);
  /// One value per occurrence: `--aipp a=x b=y` is not two values (repeat the option instead).
  Option* noExtraArgs();

 private:
  friend class Command;
  explicit Option(CLI::Option* o) : o_(o) {}
  CLI::Option* o_;
};

/// The program or one of its subcommands. Subcommands and options live as long as the root command.
class Command {
 public:
  /// The root: the program's description.
  explicit Command(const std::string& description);
  ~Command();
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  Command* subcommand(const std::string& name, const std::string& description);
  /// An option (or, with a name that does not start with '-', a positional argument) bound to `value`. T: std::string,
  /// int, int64_t, double, or a std::vector of std::string, int, int64_t, float or double (repeatable / several values).
  template <class T>
  Option* option(const std::string& names, T& value, const std::string& description);
  Option* flag(const std::string& names, bool& value, const std::string& description);
  /// Runs after the command line parsed, when this command was named.
  void callback(std::function<void()> f);
  /// Exactly one subcommand must be named.
  void requireSubcommand();
  /// Everything after the command's name is its own (no parsing, no -h / --help): `remaining()` gives it.
  void passThrough();
  std::vector<std::string> remaining() const;
  void versionFlag(const std::string& names, const std::string& version);
  /// Parses argv (argv[0] the program). Returns -1 when the command line is valid (callbacks ran), else the exit status
  /// after printing help (0) or the usage error (2).
  int parse(int argc, char** argv);

 private:
  explicit Command(CLI::App* app);
  CLI::App* app_;
  std::unique_ptr<CLI::App> owned_;  // the root's
  std::vector<std::unique_ptr<Command>> children_;
  std::vector<std::unique_ptr<Option>> options_;
  Option* keep(CLI::Option* o);
};

}  // namespace npuc::cli
