#include "submoe/core/memory_usage.h"

#include <sys/resource.h>

namespace submoe {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

}  // namespace submoe
