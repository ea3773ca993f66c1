// Greedy longest-match encoder (docs/format.md 5.2), rows in parallel.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "packed_access.h"
#include "submoe/codec/ternary_packed.h"
#include "submoe/core/thread_pool.h"

namespace submoe::ternary {
namespace {

// Appends the codewords of one row. The walk follows the row's symbols and,
// past the row end, virtual zeros; it stops where the trie has no child or at
// the first entry that reaches the row end, and emits the deepest entry seen.
Status encode_row(const uint8_t* sym, uint32_t cols, uint32_t row, const TrieNode* nodes,
                  std::vector<uint16_t>& out) {
  for (uint32_t c = 0; c < cols; ++c) {
    if (sym[c] > kSymbolMax) {
      return invalid_argument("encode_ternary: symbol " + std::to_string(sym[c]) + " at row " + std::to_string(row) +
                              ", column " + std::to_string(c) + " not in 0..2");
    }
  }
  uint64_t pos = 0;
  while (pos < cols) {
    int32_t node = 0;
    int32_t best = -1;
    uint64_t best_end = pos;
    for (uint64_t i = pos;;) {
      const uint32_t s = i < cols ? sym[i] : 0u;
      const int32_t next = nodes[node].child[s];
      if (next < 0) break;
      node = next;
      ++i;
      if (nodes[node].code >= 0) {
        best = nodes[node].code;
        best_end = i;
        if (i >= cols) break;
      }
    }
    if (best < 0) {
      // from_entries proved the dictionary complete; reaching this is a bug.
      return internal_error("encode_ternary: no dictionary entry matches row " + std::to_string(row) + " at column " +
                            std::to_string(pos));
    }
    out.push_back(static_cast<uint16_t>(best));
    pos = best_end;
  }
  return Status::ok();
}

struct Chunk {
  size_t begin = 0;
  size_t end = 0;
  std::vector<uint16_t> codes;
  Status status;
};

}  // namespace

Result<PackedTernaryMatrix> encode_ternary(std::span<const uint8_t> symbols, uint32_t rows, uint32_t cols,
                                           std::span<const RowScales> scales, const TernaryDictionary& dict,
                                           ThreadPool* pool) {
  const size_t n = static_cast<size_t>(rows) * cols;
  if (symbols.size() != n) {
    return invalid_argument("encode_ternary: " + std::to_string(symbols.size()) + " symbols for a " +
                            std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  }
  if (scales.size() != rows) {
    return invalid_argument("encode_ternary: " + std::to_string(scales.size()) + " row scales for " +
                            std::to_string(rows) + " rows");
  }
  if (dict.entries() == nullptr || dict.trie().empty()) return invalid_argument("encode_ternary: empty dictionary");

  std::vector<uint32_t> row_codes(rows, 0);
  const TrieNode* nodes = dict.trie().data();
  auto encode_rows = [&](size_t begin, size_t end, Chunk& chunk) {
    chunk.begin = begin;
    chunk.end = end;
    // ~0.75 bits/weight on typical data; the vector grows if rows are denser.
    chunk.codes.reserve((end - begin) * (cols / 20 + 2));
    for (size_t r = begin; r < end; ++r) {
      const size_t before = chunk.codes.size();
      chunk.status = encode_row(symbols.data() + r * cols, cols, static_cast<uint32_t>(r), nodes, chunk.codes);
      if (!chunk.status.is_ok()) return;
      row_codes[r] = static_cast<uint32_t>(chunk.codes.size() - before);
    }
  };
  std::vector<Chunk> chunks;
  if (pool == nullptr || pool->num_threads() == 1 || rows < 2) {
    chunks.resize(1);
    encode_rows(0, rows, chunks[0]);
  } else {
    chunks.resize(static_cast<size_t>(pool->num_threads()));
    pool->parallel_for(rows, 1, [&](size_t begin, size_t end, int t) { encode_rows(begin, end, chunks[static_cast<size_t>(t)]); });
    std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) { return a.begin < b.begin; });
  }
  for (const Chunk& c : chunks) SUBMOE_RETURN_IF_ERROR(c.status);

  uint64_t total = 0;
  for (uint32_t count : row_codes) total += count;
  if (total > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return invalid_argument("encode_ternary: " + std::to_string(total) +
                            " codewords exceed the int32 row offsets; split the matrix");
  }
  PackedTernaryMatrix m;
  PackedTernaryAccess::allocate(m, rows, cols, static_cast<size_t>(total), dict.entries());
  int32_t* offsets = PackedTernaryAccess::row_offsets(m);
  offsets[0] = 0;
  for (uint32_t r = 0; r < rows; ++r) offsets[r + 1] = offsets[r] + static_cast<int32_t>(row_codes[r]);
  uint16_t* codes = PackedTernaryAccess::codes(m);
  for (const Chunk& c : chunks) {
    if (c.codes.empty()) continue;
    std::memcpy(codes + offsets[c.begin], c.codes.data(), c.codes.size() * sizeof(uint16_t));
  }
  std::copy(scales.begin(), scales.end(), PackedTernaryAccess::scales(m));
  return m;
}

}  // namespace submoe::ternary
