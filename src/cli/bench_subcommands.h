// The subcommands of `submoe bench` defined outside bench_command.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace submoe::cli {

// `submoe bench serve` (bench_serve_command.cpp).
void setup_bench_serve(CLI::App& bench);
// `submoe bench layer` (bench_layer_command.cpp).
void setup_bench_layer(CLI::App& bench);

}  // namespace submoe::cli
