#include "submoe/runtime/ternary_codebook.h"

namespace submoe::runtime {

Result<std::shared_ptr<const TernaryCodebook>> TernaryCodebook::create(ternary::DictKind kind, double p0,
                                                                       std::span<const ternary::DictEntry> entries) {
  SUBMOE_ASSIGN_OR_RETURN(ternary::TernaryDictionary dict, ternary::TernaryDictionary::from_entries(kind, p0, entries));
  SUBMOE_ASSIGN_OR_RETURN(kernels::TernaryKernelTable table, kernels::build_ternary_kernel_table(dict.entries()));
  // The table points at the dictionary's heap storage, which the move keeps.
  return std::shared_ptr<const TernaryCodebook>(new TernaryCodebook(std::move(dict), std::move(table)));
}

}  // namespace submoe::runtime
