// `submoe trace replay`: a recorded trace's routing executed on an artifact's
// experts through the expert cache (offload/trace_replay.h).
#pragma once

#include <CLI/CLI.hpp>

namespace submoe::cli {

// Adds the `replay` subcommand to `trace`.
void setup_trace_replay(CLI::App* trace);

}  // namespace submoe::cli
