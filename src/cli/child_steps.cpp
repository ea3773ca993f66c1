#include "cli/child_steps.h"

#include <filesystem>
#include <iostream>

#include "cli/subprocess.h"
#include "submoe/io/file_util.h"

namespace submoe::cli {

std::string last_line(const std::string& s) {
  const size_t end = s.find_last_not_of("\n ");
  if (end == std::string::npos) return "no message";
  const size_t nl = s.rfind('\n', end);
  const size_t begin = nl == std::string::npos ? 0 : nl + 1;
  return s.substr(begin, end + 1 - begin);
}

Result<nlohmann::json> run_json(const std::vector<std::string>& argv, const std::string& step) {
  SUBMOE_ASSIGN_OR_RETURN(SubprocessResult r, run_subprocess(argv));
  if (r.exit_code != 0) return internal_error(step + " failed (exit " + std::to_string(r.exit_code) + "): " + last_line(r.err));
  const std::string line = last_line(r.out);
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return internal_error(step + " printed no JSON object: " + line);
  return j;
}

double json_number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

uint64_t directory_bytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

std::string file_label(std::string s) {
  for (char& c : s)
    if (c == ':') c = '_';
    else if (c == '=' || c == '/') c = '-';
  return s;
}

std::optional<nlohmann::json> load_saved_json(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  auto text = io::read_text_file(path);
  if (!text.is_ok()) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

void print_sweep_progress(size_t done, size_t total, const std::string& label) {
  constexpr size_t kWidth = 24;
  const size_t filled = total ? done * kWidth / total : kWidth;
  std::cerr << "[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] " << done << "/" << total << " "
            << label << std::endl;
}

}  // namespace submoe::cli
