// GET /metrics: the Prometheus text exposition format (version 0.0.4) of the
// server's counters and gauges, the scheduler's and the expert cache's.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "submoe/serve/engine.h"
#include "submoe/serve/scheduler.h"

namespace submoe::serve {

struct HttpCounters {
  std::map<std::pair<std::string, int>, uint64_t> responses;  // (route, status) -> count
};

// `engine` and `scheduler` are null while the model loads (only the HTTP
// counters and submoe_ready 0 are written then).
std::string prometheus_metrics(const HttpCounters& http, const Engine* engine, const Scheduler* scheduler);

}  // namespace submoe::serve
