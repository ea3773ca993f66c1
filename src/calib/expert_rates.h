// The representation of every routed expert matrix: one codec for all
// (--alloc uniform), or per-expert rates on the representation's ladder from
// routing popularity (--alloc thirds | waterfill; calib/rate_allocation.h),
// counted on the calibration windows through the source model or read from a
// routing trace (--popularity). Internal to calib.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "submoe/calib/calibration_set.h"
#include "submoe/calib/compress.h"
#include "submoe/core/thread_pool.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/representation.h"

namespace submoe::calib::detail {

struct ExpertRates {
  // The artifact's representation records, in record order.
  std::vector<std::shared_ptr<const runtime::MatrixCodec>> codecs;
  // [model layer][expert] -> record index (dense layers: empty); empty when
  // every matrix uses record 0.
  std::vector<std::vector<uint32_t>> records;
  // The manifest's provenance of the choice (policy, popularity source, per
  // layer counts and bits); null for uniform.
  nlohmann::json provenance;
  // What determines the allocation, for the job identity of --resume.
  nlohmann::json identity;
};

// `uniform_codec`: the codec of o.repr, already made (--alloc uniform only).
Result<ExpertRates> plan_expert_rates(const CompressOptions& o, std::shared_ptr<const runtime::MatrixCodec> uniform_codec,
                                      const model::MoeModel& model, const CalibrationSet& set,
                                      std::span<const size_t> sparse_layers, ThreadPool* pool);

}  // namespace submoe::calib::detail
