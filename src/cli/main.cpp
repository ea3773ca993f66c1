// submoe: the command-line program. Subcommands live one per file in src/cli/.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/command.h"

namespace submoe::cli {

std::vector<CommandSpec>& command_registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

namespace {
int g_exit_code = 0;
}

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

bool report(const std::string& command, const Status& status) {
  if (status.is_ok()) return true;
  std::cerr << "submoe " << command << ": " << status.to_string() << "\n";
  set_exit_code(status.code() == ErrorCode::kInvalidArgument ? 2 : 1);
  return false;
}

}  // namespace submoe::cli

int main(int argc, char** argv) {
  CLI::App app{
      "submoe: compressed Mixture-of-Experts inference.\n"
      "Sub-1-bit expert codecs, fused decode kernels, expert offloading.\n"
      "Run 'submoe <command> --help' for the options of a command."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "submoe 0.1.0");
  auto& registry = submoe::cli::command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& spec : registry) spec.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return submoe::cli::exit_code();
}
