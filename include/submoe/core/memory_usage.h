// Process memory figures for reports (peak resident set size) and the
// machine's memory (bounds on sizes a user asks for).
#pragma once

#include <cstdint>

namespace submoe {

// Peak resident set size of this process so far, in MiB (getrusage ru_maxrss).
double peak_rss_mb();

// Physical memory of the machine in bytes (sysconf); 0 when unknown.
uint64_t physical_memory_bytes();

}  // namespace submoe
