// Number formatting shared by the reports and figures of eval/ (markdown
// tables, SVG coordinates and labels).
#pragma once

#include <cstdio>
#include <string>

namespace submoe::eval {

// One double through a printf format ("%.3f", "%g", "%.1f%%").
inline std::string format_number(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

}  // namespace submoe::eval
