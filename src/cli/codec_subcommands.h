// `submoe codec` subcommands defined in their own files (codec_command.cpp
// builds the group and calls each setup).
#pragma once

#include <CLI/CLI.hpp>

namespace submoe::cli {

void setup_rvq_fit(CLI::App& codec);  // rvq_fit_command.cpp

}  // namespace submoe::cli
