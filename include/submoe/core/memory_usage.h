// Process memory figures for reports (peak resident set size).
#pragma once

namespace submoe {

// Peak resident set size of this process so far, in MiB (getrusage ru_maxrss).
double peak_rss_mb();

}  // namespace submoe
