// Sweeps of child steps (`compare`, `frontier`): each step is this binary's own
// subcommand in a child process, whose last stdout line is one JSON object.
// A step's result is saved in a file as soon as it finishes, so an interrupted
// sweep continues where it stopped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "submoe/core/status.h"

namespace submoe::cli {

// The last non-empty line of a child's output (its error message, or its JSON).
std::string last_line(const std::string& s);

// Runs argv; the child's last stdout line must be a JSON object. A non-zero
// exit is an error "STEP failed (exit N): <the child's last stderr line>".
Result<nlohmann::json> run_json(const std::vector<std::string>& argv, const std::string& step);

// The number at `key`, or 0 when absent or not a number.
double json_number(const nlohmann::json& j, const char* key);

// Sum of the regular files' sizes directly in `dir`.
uint64_t directory_bytes(const std::string& dir);

// A label as a file name ("aqlm:shape=3x5@2" -> "aqlm_shape-3x5@2").
std::string file_label(std::string s);

// A saved JSON object, or nullopt when the file is absent or not a JSON object.
std::optional<nlohmann::json> load_saved_json(const std::string& path);

// "[#####.........] 7/20 label" on stderr: a progress bar of a sweep.
void print_sweep_progress(size_t done, size_t total, const std::string& label);

}  // namespace submoe::cli
