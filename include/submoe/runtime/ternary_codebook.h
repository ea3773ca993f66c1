// The shared ternary dictionary of an artifact and the kernel table expanded
// from it, built and validated once when the artifact is opened and shared by
// every ternary LinearOp (which keeps it alive through a shared_ptr, so experts
// built by an offload store outlive nothing they point into).
#pragma once

#include <memory>
#include <span>

#include "submoe/codec/ternary_dictionary.h"
#include "submoe/core/status.h"
#include "submoe/kernels/ternary_kernel_table.h"

namespace submoe::runtime {

class TernaryCodebook {
 public:
  // Validates the entries as a dictionary of `kind` (TernaryDictionary::
  // from_entries: every entry, distinct, encodable) and builds the kernel table.
  static Result<std::shared_ptr<const TernaryCodebook>> create(ternary::DictKind kind, double p0,
                                                               std::span<const ternary::DictEntry> entries);

  const ternary::TernaryDictionary& dictionary() const { return dict_; }
  const ternary::DictEntry* entries() const { return dict_.entries(); }
  const kernels::TernaryKernelTable& kernel_table() const { return table_; }

 private:
  TernaryCodebook(ternary::TernaryDictionary dict, kernels::TernaryKernelTable table)
      : dict_(std::move(dict)), table_(std::move(table)) {}
  ternary::TernaryDictionary dict_;
  kernels::TernaryKernelTable table_;  // points into dict_'s heap storage
};

}  // namespace submoe::runtime
