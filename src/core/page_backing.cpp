#include "submoe/core/page_backing.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

namespace submoe {
namespace {

struct Mapping {
  uintptr_t begin = 0, end = 0;
  uint64_t rss_kb = 0, huge_kb = 0;  // huge: AnonHugePages + FilePmdMapped + ShmemPmdMapped
};

std::vector<Mapping> read_mappings() {
  std::vector<Mapping> out;
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return out;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long a = 0, b = 0, kb = 0;
    char key[64];
    // A mapping's header ("begin-end perms ..."), then "Key:  N kB" lines.
    if (std::sscanf(line, "%llx-%llx ", &a, &b) == 2) {  // no "Key:" line parses as two hex numbers
      out.push_back({static_cast<uintptr_t>(a), static_cast<uintptr_t>(b), 0, 0});
    } else if (!out.empty() && std::sscanf(line, "%63[^:]: %llu kB", key, &kb) == 2) {
      if (std::strcmp(key, "Rss") == 0) {
        out.back().rss_kb = kb;
      } else if (std::strcmp(key, "AnonHugePages") == 0 || std::strcmp(key, "FilePmdMapped") == 0 ||
                 std::strcmp(key, "ShmemPmdMapped") == 0) {
        out.back().huge_kb += kb;
      }
    }
  }
  std::fclose(f);
  return out;
}

}  // namespace

bool mapped_with_huge_pages(const void* p) {
  static std::mutex mu;
  static std::vector<Mapping> mappings;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (const Mapping& m : mappings)
      if (addr >= m.begin && addr < m.end) return m.rss_kb > 0 && m.huge_kb * 10 >= m.rss_kb * 9;
    if (attempt == 0) mappings = read_mappings();
  }
  return false;
}

}  // namespace submoe
