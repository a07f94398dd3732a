// The only translation unit that includes CLI11 (cli_args.hpp says why).
#include "cli_args.hpp"

#include <CLI/CLI.hpp>

namespace npuc::cli {

Option* Option::required() {
  o_->required();
  return this;
}

template <class N>
Option* Option::range(N lo, N hi) {
  o_->check(CLI::Range(lo, hi));
  return this;
}
template Option* Option::range<int>(int, int);
template Option* Option::range<int64_t>(int64_t, int64_t);
template Option* Option::range<double>(double, double);

Option* Option::oneOf(const std::vector<std::string>& values) {
  o_->check(CLI::IsMember(values));
  return this;
}

Option* Option::expected(int lo, int hi) {
  o_->expected(lo, hi);
  return this;
}

Option* Option::noExtraArgs() {
  o_->allow_extra_args(false);
  return this;
}

Command::Command(const std::string& description)
    : app_(nullptr), owned_(std::make_unique<CLI::App>(description)) {
  app_ = owned_.get();
}

Command::Command(CLI::App* app) : app_(app) {}

Command::~Command() = default;

Command* Command::subcommand(const std::string& name, const std::string& description) {
  children_.push_back(std::unique_ptr<Command>(new Command(app_->add_subcommand(name, description))));
  return children_.back().get();
}

Option* Command::keep(CLI::Option* o) {
  options_.push_back(std::unique_ptr<Option>(new Option(o)));
  return options_.back().get();
}

template <class T>
Option* Command::option(const std::string& names, T& value, const std::string& description) {
  return keep(app_->add_option(names, value, description));
}
template Option* Command::option(const std::string&, std::string&, const std::string&);
template Option* Command::option(const std::string&, int&, const std::string&);
template Option* Command::option(const std::string&, int64_t&, const std::string&);
template Option* Command::option(const std::string&, double&, const std::string&);
template Option* Command::option(const std::string&, std::vector<std::string>&, const std::string&);
template Option* Command::option(const std::string&, std::vector<int>&, const std::string&);
template Option* Command::option(const std::string&, std::vector<int64_t>&, const std::string&);
template Option* Command::option(const std::string&, std::vector<float>&, const std::string&);
template Option* Command::option(const std::string&, std::vector<double>&, const std::string&);

Option* Command::flag(const std::string& names, bool& value, const std::string& description) {
  return keep(app_->add_flag(names, value, description));
}

void Command::callback(std::function<void()> f) { app_->callback(std::move(f)); }

void Command::requireSubcommand() { app_->require_subcommand(1); }

void Command::passThrough() {
  app_->prefix_command();
  app_->set_help_flag();
}

std::vector<std::string> Command::remaining() const { return app_->remaining(); }

void Command::versionFlag(const std::string& names, const std::string& version) {
  app_->set_version_flag(names, version);
}

int Command::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app_->exit(e);
    return rc == 0 ? 0 : 2;
  }
  return -1;
}

}  // namespace npuc::cli
