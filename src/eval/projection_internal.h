// Pieces of the projection model shared by its translation units and tests.
#pragma once

#include <cstdint>
#include <vector>

#include "submoe/eval/projection.h"

namespace submoe::eval {

// 1 for each of the capacity_slots most popular (layer, expert) slots (all
// layers compete for one budget), ties to the lower index.
std::vector<uint8_t> pinned_slots(const PopularityProfile& profile, int64_t capacity_slots);

// Expected distinct expert loads of one decode step of `batch` tokens, summed
// over layers: sum over slots of 1 - (1 - k q)^batch, split by pinned or not.
struct StepLoads {
  double resident = 0;
  double missed = 0;
  double total() const { return resident + missed; }
};
StepLoads step_loads(const PopularityProfile& profile, const std::vector<uint8_t>& pinned, uint32_t batch);

}  // namespace submoe::eval
