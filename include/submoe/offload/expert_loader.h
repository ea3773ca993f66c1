// ExpertLoader: what the expert cache calls to produce the objects it holds.
// The cache never sees bytes or files; a loader turns keys into type-erased
// decoded objects (e.g. StoreExpertLoader: one batch read + decode).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "submoe/core/status.h"
#include "submoe/offload/expert_key.h"

namespace submoe::offload {

struct LoadedExpert {
  // The decoded object; the cache owns it and destroys it on eviction.
  std::shared_ptr<const void> object;
  // What the object costs against the cache budget (its resident bytes).
  uint64_t charge_bytes = 0;
  // Bytes read from storage to produce it (the cache's bytes_fetched counter).
  uint64_t bytes_read = 0;
};

class ExpertLoader {
 public:
  virtual ~ExpertLoader() = default;
  // The charge the object of `key` will have, known before loading (for the
  // prefetcher's admission check); an estimate is fine, the cache corrects it.
  virtual uint64_t estimate_charge(ExpertKey key) const = 0;
  // Loads keys[i] into out[i] (keys distinct, out.size() == keys.size()) for all
  // keys or fails as a whole. Called concurrently from several threads.
  virtual Status load(std::span<const ExpertKey> keys, std::span<LoadedExpert> out) = 0;
};

}  // namespace submoe::offload
