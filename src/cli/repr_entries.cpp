#include "cli/repr_entries.h"

#include <cstdlib>
#include <sstream>

namespace submoe::cli {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

Result<ReprEntry> parse_repr_entry(const std::string& text) {
  ReprEntry e;
  size_t at = text.find(':');
  e.name = text.substr(0, at);
  while (at != std::string::npos) {
    const size_t next = text.find(':', at + 1);
    const std::string kv = text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      return invalid_argument("--reprs entry '" + text + "': '" + kv + "' is not KEY=VALUE");
    e.options.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    at = next;
  }
  SUBMOE_RETURN_IF_ERROR(runtime::find_representation(e.name).status().with_context("--reprs"));
  return e;
}

Result<std::vector<std::string>> parse_repr_list(const std::string& list) {
  std::vector<std::string> entries = split_list(list);
  if (entries.empty()) return invalid_argument("--reprs names no representation");
  for (const std::string& r : entries) SUBMOE_RETURN_IF_ERROR(parse_repr_entry(r).status());
  return entries;
}

Result<std::vector<double>> parse_bits_list(const std::string& list) {
  std::vector<double> bits;
  for (const std::string& b : split_list(list)) {
    char* end = nullptr;
    const double v = std::strtod(b.c_str(), &end);
    if (end != b.c_str() + b.size() || !(v > 0 && v <= 16)) return invalid_argument("--bits: '" + b + "' is not a rate in (0, 16]");
    bits.push_back(v);
  }
  if (bits.empty()) bits.push_back(0);
  return bits;
}

namespace {

runtime::ReprOptions options_without_group(const ReprEntry& e, double bits) {
  runtime::ReprOptions ro{e.name};
  ro.extra = e.options;
  if (bits > 0) ro.bits = bits;
  return ro;
}

}  // namespace

bool takes_group_size(const ReprEntry& e, double bits, uint32_t group_size) {
  if (group_size == 0) return false;
  runtime::ReprOptions ro = options_without_group(e, bits);
  ro.group_size = group_size;
  return runtime::make_codec(ro).is_ok();
}

runtime::ReprOptions entry_options(const ReprEntry& e, double bits, uint32_t group_size) {
  runtime::ReprOptions ro = options_without_group(e, bits);
  if (takes_group_size(e, bits, group_size)) ro.group_size = group_size;
  return ro;
}

std::string format_bits(double bits) {
  std::ostringstream s;
  s << bits;
  return s.str();
}

}  // namespace submoe::cli
