// The RVQ subvector encoder (greedy and beam search) and the vector-batch
// encoder used by the trainer and the experiment.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "codec/rvq/rvq_internal.h"
#include "submoe/codec/rvq.h"

namespace submoe::rvq {

namespace detail {

std::string find_bad_codebook_float(const float* codebooks, uint32_t stages) {
  const size_t n = size_t{stages} * kRvqCodebookFloats;
  for (size_t i = 0; i < n; ++i) {
    const float v = codebooks[i];
    if (!std::isfinite(v) || std::fabs(v) > kRvqMaxCodebookMagnitude) {
      return "codebooks[stage " + std::to_string(i / kRvqCodebookFloats) + "][entry " +
             std::to_string(i % kRvqCodebookFloats / kRvqDim) + "][" + std::to_string(i % kRvqDim) + "] = " +
             std::to_string(v) + (std::isfinite(v) ? " is out of range (|x| > 1e30)" : " is not finite");
    }
  }
  return {};
}

}  // namespace detail

namespace {

struct Candidate {
  float score;
  uint16_t beam;
  uint16_t code;
};

struct Beam {
  std::array<float, kRvqDim> recon;
  std::array<uint8_t, kRvqMaxStages> codes;
};

}  // namespace

Result<RvqEncoder> RvqEncoder::create(std::span<const float> codebooks, uint32_t stages) {
  if (stages < 1 || stages > kRvqMaxStages) {
    return invalid_argument("rvq: stages " + std::to_string(stages) + " outside 1..8");
  }
  const size_t need = size_t{stages} * kRvqCodebookFloats;
  if (codebooks.size() < need) {
    return invalid_argument("rvq: codebooks hold " + std::to_string(codebooks.size()) + " floats, " +
                            std::to_string(stages) + " stages need " + std::to_string(need));
  }
  const std::string bad = detail::find_bad_codebook_float(codebooks.data(), stages);
  if (!bad.empty()) return invalid_argument("rvq: " + bad);
  RvqEncoder e;
  e.stages_ = stages;
  e.codebooks_.assign(codebooks.begin(), codebooks.begin() + static_cast<std::ptrdiff_t>(need));
  e.transposed_.resize(need);
  e.norms_.resize(size_t{stages} * kRvqEntries);
  for (uint32_t s = 0; s < stages; ++s) {
    detail::prepare_entries(e.codebook(s), kRvqEntries, e.transposed_.data() + size_t{s} * kRvqCodebookFloats,
                            e.norms_.data() + size_t{s} * kRvqEntries);
  }
  return e;
}

double RvqEncoder::encode(const float* target, uint32_t beam_width, uint8_t* codes_out,
                          float* reconstruction_out) const {
  alignas(64) float scores[kRvqEntries];
  float r[kRvqDim];
  // Greedy path (the whole encoder for beam 1, the floor of beam search).
  float greedy[kRvqDim] = {};
  uint8_t greedy_codes[kRvqMaxStages];
  for (uint32_t s = 0; s < stages_; ++s) {
    for (uint32_t j = 0; j < kRvqDim; ++j) r[j] = target[j] - greedy[j];
    detail::score_entries(r, transposed(s), norms(s), kRvqEntries, scores);
    const uint32_t c = detail::argmin(scores, kRvqEntries);
    greedy_codes[s] = static_cast<uint8_t>(c);
    const float* e = codebook(s) + size_t{c} * kRvqDim;
    for (uint32_t j = 0; j < kRvqDim; ++j) greedy[j] += e[j];
  }
  const double greedy_error = detail::sq_dist(target, greedy);
  const uint32_t width = std::clamp<uint32_t>(beam_width, 1, kRvqEntries);
  if (width == 1) {
    std::copy_n(greedy_codes, stages_, codes_out);
    std::copy_n(greedy, kRvqDim, reconstruction_out);
    return greedy_error;
  }

  // Beam search. Candidates are kept sorted by score; a new one goes after any
  // equal score, so ties go to the earlier (beam, entry).
  std::array<Beam, kRvqEntries> beams_a;
  std::array<Beam, kRvqEntries> beams_b;
  std::array<Candidate, kRvqEntries> top;
  Beam* cur = beams_a.data();
  Beam* next = beams_b.data();
  uint32_t live = 1;
  cur[0].recon.fill(0.0f);
  cur[0].codes.fill(0);
  for (uint32_t s = 0; s < stages_; ++s) {
    uint32_t kept = 0;
    for (uint32_t b = 0; b < live; ++b) {
      float rn = 0;
      for (uint32_t j = 0; j < kRvqDim; ++j) {
        r[j] = target[j] - cur[b].recon[j];
        rn += r[j] * r[j];
      }
      detail::score_entries(r, transposed(s), norms(s), kRvqEntries, scores);
      for (uint32_t c = 0; c < kRvqEntries; ++c) {
        const float score = rn + scores[c];
        if (kept == width && !(score < top[kept - 1].score)) continue;
        uint32_t pos = kept == width ? kept - 1 : kept;
        while (pos > 0 && top[pos - 1].score > score) {
          top[pos] = top[pos - 1];
          --pos;
        }
        top[pos] = Candidate{score, static_cast<uint16_t>(b), static_cast<uint16_t>(c)};
        if (kept < width) ++kept;
      }
    }
    for (uint32_t t = 0; t < kept; ++t) {
      const Beam& from = cur[top[t].beam];
      Beam& to = next[t];
      to.codes = from.codes;
      to.codes[s] = static_cast<uint8_t>(top[t].code);
      const float* e = codebook(s) + size_t{top[t].code} * kRvqDim;
      for (uint32_t j = 0; j < kRvqDim; ++j) to.recon[j] = from.recon[j] + e[j];
    }
    std::swap(cur, next);
    live = kept;
  }
  // The final pick by exact error (the scores above carry rounding).
  uint32_t best = 0;
  double best_error = detail::sq_dist(target, cur[0].recon.data());
  for (uint32_t b = 1; b < live; ++b) {
    const double e = detail::sq_dist(target, cur[b].recon.data());
    if (e < best_error) {
      best_error = e;
      best = b;
    }
  }
  if (greedy_error < best_error) {
    std::copy_n(greedy_codes, stages_, codes_out);
    std::copy_n(greedy, kRvqDim, reconstruction_out);
    return greedy_error;
  }
  std::copy_n(cur[best].codes.data(), stages_, codes_out);
  std::copy_n(cur[best].recon.data(), kRvqDim, reconstruction_out);
  return best_error;
}

Result<double> encode_subvector(const float target[kRvqDim], uint32_t stages, std::span<const float> codebooks,
                                uint32_t beam_width, uint8_t* codes_out, float reconstruction_out[kRvqDim]) {
  if (beam_width < 1 || beam_width > kRvqEntries) {
    return invalid_argument("rvq: beam width " + std::to_string(beam_width) + " outside 1..256");
  }
  SUBMOE_ASSIGN_OR_RETURN(RvqEncoder encoder, RvqEncoder::create(codebooks, stages));
  return encoder.encode(target, beam_width, codes_out, reconstruction_out);
}

Result<double> encode_rvq_vectors(std::span<const float> vectors, const RvqEncoder& encoder, uint32_t stages,
                                  uint32_t beam_width, std::span<uint8_t> codes, std::span<float> reconstruction,
                                  ThreadPool* pool) {
  if (vectors.size() % kRvqDim != 0) return invalid_argument("rvq: vectors size is not a multiple of 16");
  if (stages != encoder.stages()) {
    return invalid_argument("rvq: encoder has " + std::to_string(encoder.stages()) + " stages, asked for " +
                            std::to_string(stages));
  }
  if (beam_width < 1 || beam_width > kRvqEntries) {
    return invalid_argument("rvq: beam width " + std::to_string(beam_width) + " outside 1..256");
  }
  const size_t n = vectors.size() / kRvqDim;
  if (!codes.empty() && codes.size() != n * stages) return invalid_argument("rvq: codes span has the wrong size");
  if (!reconstruction.empty() && reconstruction.size() != vectors.size()) {
    return invalid_argument("rvq: reconstruction span has the wrong size");
  }
  std::vector<double> chunk_error(detail::num_chunks(n));
  detail::for_each_chunk(pool, chunk_error.size(), [&](size_t ch) {
    uint8_t c[kRvqMaxStages];
    float rec[kRvqDim];
    double total = 0;
    const size_t end = std::min(n, (ch + 1) * detail::kChunkPoints);
    for (size_t i = ch * detail::kChunkPoints; i < end; ++i) {
      total += encoder.encode(vectors.data() + i * kRvqDim, beam_width, c, rec);
      if (!codes.empty()) std::copy_n(c, stages, codes.begin() + static_cast<std::ptrdiff_t>(i * stages));
      if (!reconstruction.empty()) {
        std::copy_n(rec, kRvqDim, reconstruction.begin() + static_cast<std::ptrdiff_t>(i * kRvqDim));
      }
    }
    chunk_error[ch] = total;
  });
  double total = 0;
  for (double e : chunk_error) total += e;
  return total;
}

}  // namespace submoe::rvq
