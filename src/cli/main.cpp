// submoe: the command-line program. Subcommands live one per file in src/cli/.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include "cli/command.h"
#include "submoe/io/file_util.h"
#include "submoe/io/mapped_file_faults.h"

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

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t bad = std::min(io::first_invalid_utf8(text), text.size());
    for (char c : text.substr(0, bad)) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 && c != '\n' && c != '\t') {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\x%02x", u);
        out += esc;
      } else {
        out += c;
      }
    }
    if (bad == text.size()) break;
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(text[bad]));
    out += esc;
    text.remove_prefix(bad + 1);
  }
  return out;
}

bool report(const std::string& command, const Status& status) {
  if (status.is_ok()) return true;
  std::cerr << "submoe " << command << ": " << printable(status.to_string()) << "\n";
  set_exit_code(status.code() == ErrorCode::kInvalidArgument ? 2 : 1);
  return false;
}

int max_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::max(64u, 8u * std::max(hw, 1u)));
}

CLI::Validator thread_count(bool allow_zero) {
  const int lo = allow_zero ? 0 : 1;
  return CLI::Validator(
      [lo](std::string& v) -> std::string {
        long n = 0;
        char* end = nullptr;
        errno = 0;
        n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno == ERANGE || n < lo || n > max_threads())
          return "must be an integer in " + std::to_string(lo) + ".." + std::to_string(max_threads()) +
                 (lo == 0 ? " (0 = all hardware threads)" : "") + ", got '" + v + "'";
        return {};
      },
      "THREADS");
}

}  // namespace submoe::cli

int main(int argc, char** argv) {
  CLI::App app{
      "submoe: compressed Mixture-of-Experts inference.\n"
      "Sub-1-bit expert codecs, fused decode kernels, expert offloading.\n"
      "Run 'submoe <command> --help' for the options of a command."};
  app.require_subcommand(1);
  // A mapped model file truncated under us is an error message, not SIGBUS.
  submoe::io::install_mapped_file_fault_handler();
  app.set_version_flag("--version", "submoe 0.1.0");
  auto& registry = submoe::cli::command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& spec : registry) spec.setup(app);
  // Every failure a command cannot turn into a Status still ends as a message
  // and a non-zero status, never an abort (the command's own outputs are
  // written atomically, so nothing half-written is left behind).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::bad_alloc&) {
    std::cerr << "submoe: out of memory (an input or option asked for more than this machine can hold)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "submoe: error: " << submoe::cli::printable(e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << "submoe: error: unknown exception\n";
    return 1;
  }
  return submoe::cli::exit_code();
}
