// Whether memory is mapped with 2 MiB pages, from /proc/self/smaps: anonymous
// transparent huge pages (AnonHugePages) or page-cache folios mapped whole
// (FilePmdMapped, file systems with large folios on recent kernels). Streaming
// kernels prefetch differently in 4 KiB pages, where the hardware prefetchers
// stop at every page boundary (docs/perf-notes.md, "bf16 decode on a Zen 4
// host").
#pragma once

namespace submoe {

// True when at least 90% of the resident memory of the mapping that holds `p`
// is in 2 MiB pages. The mappings are read once and kept; an address outside
// them reads them again. False where /proc/self/smaps cannot be read or `p` is
// in no mapping.
bool mapped_with_huge_pages(const void* p);

}  // namespace submoe
