// Elapsed wall time on the steady clock, in seconds (progress lines, stats).
#pragma once

#include <chrono>

namespace submoe {

inline double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

inline double seconds_since(std::chrono::steady_clock::time_point from) {
  return seconds_between(from, std::chrono::steady_clock::now());
}

}  // namespace submoe
