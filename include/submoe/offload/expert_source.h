// Where routed experts come from when they are paged: an ExpertSource names each
// expert's byte range in one file and decodes those bytes into an ExpertObject
// (its three LinearOps). StoreExpertLoader joins a source to an ExpertStore so
// the expert cache can load a layer's missing experts with one batch read.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "submoe/core/status.h"
#include "submoe/model/expert_provider.h"
#include "submoe/offload/expert_key.h"
#include "submoe/offload/expert_loader.h"
#include "submoe/offload/expert_store.h"

namespace submoe::offload {

// One decoded expert, owned by the cache while resident.
class ExpertObject {
 public:
  virtual ~ExpertObject() = default;
  // Valid while the object lives.
  virtual model::ExpertOps ops() const = 0;
  // DRAM the object holds (what it is charged against the cache budget).
  virtual uint64_t resident_bytes() const = 0;
};

class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  virtual int num_layers() const = 0;
  virtual int num_experts() const = 0;
  // The file every expert range lies in.
  virtual const std::string& file_path() const = 0;
  // kInvalidArgument for a key outside the model or a layer without experts.
  virtual Result<ByteRange> byte_range(ExpertKey key) const = 0;
  // What decode() will report as resident_bytes(), known before reading (the
  // cache's admission and pinning estimates). Default: the range's length, right
  // for decoders that keep the packed bytes.
  virtual uint64_t estimate_resident_bytes(ExpertKey key, ByteRange range) const {
    (void)key;
    return range.length;
  }
  // `bytes.bytes()` is exactly byte_range(key). The decoder may keep the buffer
  // (move from it) so the object's ops read the bytes in place; kCorruptData
  // when the bytes do not describe a valid expert.
  virtual Result<std::unique_ptr<ExpertObject>> decode(ExpertKey key, IoBuffer&& bytes) const = 0;
};

// What the cache would be charged for each expert the source holds (its
// estimate_resident_bytes), every (layer, expert) with a byte range, layer-major.
std::vector<uint64_t> expert_charges(const ExpertSource& source);

// ExpertLoader over a source and a store: estimate = the source's
// estimate_resident_bytes; load = one read_batch of all ranges, then decode each. The cached objects are
// ExpertObjects (ExpertHandle::as<ExpertObject>()).
class StoreExpertLoader final : public ExpertLoader {
 public:
  StoreExpertLoader(std::shared_ptr<const ExpertSource> source, std::shared_ptr<ExpertStore> store)
      : source_(std::move(source)), store_(std::move(store)) {}

  uint64_t estimate_charge(ExpertKey key) const override;
  Status load(std::span<const ExpertKey> keys, std::span<LoadedExpert> out) override;

  const ExpertSource& source() const { return *source_; }
  const ExpertStore& store() const { return *store_; }

 private:
  std::shared_ptr<const ExpertSource> source_;
  std::shared_ptr<ExpertStore> store_;
};

}  // namespace submoe::offload
