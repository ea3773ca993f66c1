// Subcommand registry: each src/cli/<command>.cpp registers itself with
// SUBMOE_REGISTER_COMMAND, so adding a command touches no shared file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::cli {

struct CommandSpec {
  std::string name;
  // Adds the subcommand (options, callback) to the root app. The callback reports
  // its exit status through set_exit_code().
  std::function<void(CLI::App& root)> setup;
};

std::vector<CommandSpec>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::function<void(CLI::App&)> setup) {
    command_registry().push_back({std::move(name), std::move(setup)});
  }
};

void set_exit_code(int code);
int exit_code();

// `text` with every byte that is not valid UTF-8, and every control character
// but newline and tab, written as \xNN: error messages quote bytes from
// untrusted files and must not garble or drive the terminal.
std::string printable(std::string_view text);

// Prints "submoe <command>: <status>" (printable) to stderr and sets exit code 1 (2 for
// invalid arguments). Returns false when status is an error.
bool report(const std::string& command, const Status& status);

// The largest --threads any command accepts: 8 x the hardware threads, at least
// 64 (more threads than that only add contention; a typo such as 1000000 would
// otherwise abort while starting them).
int max_threads();
// Validator of a --threads option: 0 (= all hardware threads) when allow_zero,
// else 1, up to max_threads().
CLI::Validator thread_count(bool allow_zero = true);

}  // namespace submoe::cli

#define SUBMOE_REGISTER_COMMAND(name, setup_fn) \
  static ::submoe::cli::CommandRegistrar SUBMOE_CONCAT_(submoe_command_, __LINE__)(name, setup_fn)
