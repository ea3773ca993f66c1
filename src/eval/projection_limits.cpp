// Host limits for the projection from a `submoe roofline --json` object.
#include <cmath>
#include <nlohmann/json.hpp>

#include "submoe/eval/projection.h"

namespace submoe::eval {
namespace {

using nlohmann::json;

Result<double> positive_number(const json& obj, const char* key, std::string_view source) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>())) {
    return invalid_argument(std::string(source) + ": roofline field '" + key + "' missing or not a positive number");
  }
  return it->get<double>();
}

// Throughput of `codec` at `batch` from the kernels array; 0 when absent.
double kernel_rate(const json& j, const std::string& codec, uint32_t batch) {
  auto ks = j.find("kernels");
  if (ks == j.end() || !ks->is_array()) return 0;
  for (const json& k : *ks) {
    if (k.is_object() && k.value("codec", std::string()) == codec && k.value("batch", 0u) == batch) {
      const double v = k.value("gweights_per_s", 0.0);
      return std::isfinite(v) && v > 0 ? v : 0;
    }
  }
  return 0;
}

}  // namespace

Result<HostLimits> host_limits_from_roofline_json(std::string_view text, double expert_block_bytes,
                                                  const std::string& kernel, std::string_view source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return invalid_argument(std::string(source) + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.value("format", std::string()) != "submoe-roofline") {
    return invalid_argument(std::string(source) + ": not a submoe roofline object (\"format\": \"submoe-roofline\")");
  }
  HostLimits h;
  h.source = std::string(source);
  const json& storage = j.value("storage", json::object());
  const json& cells = storage.value("random_read", json::array());
  // Largest measured block not above the expert (the smallest when all are
  // larger), then the best thread count at that block.
  double chosen = -1, smallest = -1;
  for (const json& c : cells) {
    const double b = c.value("block_bytes", 0.0);
    if (!(b > 0)) continue;
    if (smallest < 0 || b < smallest) smallest = b;
    if (b <= expert_block_bytes && b > chosen) chosen = b;
  }
  if (chosen < 0) chosen = smallest;
  if (chosen < 0) return invalid_argument(std::string(source) + ": roofline has no random-read measurements");
  double best = 0;
  for (const json& c : cells) {
    if (c.value("block_bytes", 0.0) == chosen) best = std::max(best, c.value("GBps", 0.0));
  }
  if (!(best > 0) || !std::isfinite(best)) return invalid_argument(std::string(source) + ": random-read bandwidth is 0");
  h.storage_read_gbps = best;
  h.storage_block_bytes = chosen;
  const json& dram = j.value("dram", json::object());
  SUBMOE_ASSIGN_OR_RETURN(h.dram_read_gbps, positive_number(dram, "read_GBps_nt", source));
  h.kernel_name = kernel;
  if (kernel != "none") {
    h.kernel_gweights_b1 = kernel_rate(j, kernel, 1);
    h.kernel_gweights_b32 = kernel_rate(j, kernel, 32);
    if (!(h.kernel_gweights_b1 > 0)) {
      return invalid_argument(std::string(source) + ": no batch-1 figure for kernel '" + kernel + "'");
    }
    h.baseline_kernel_gweights_b1 = kernel_rate(j, "bf16", 1);
    h.baseline_kernel_gweights_b32 = kernel_rate(j, "bf16", 32);
  }
  return h;
}

}  // namespace submoe::eval
