// One sequence on its own session (what `submoe run` does): the prompt prefilled
// in chunks, then one forward per generated token, until the Sequence finishes.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "submoe/core/status.h"
#include "submoe/model/moe_model.h"
#include "submoe/model/op_profile.h"
#include "submoe/serve/generation.h"

namespace submoe::serve {

struct GenerateOneOptions {
  size_t prefill_chunk = 512;  // prompt tokens per forward (>= 1): bounds activation memory
  // Each piece of final text, as soon as it is final.
  std::function<void(std::string_view text)> on_text;
  // After every forward (e.g. a routing trace's end_forward); an error stops generation.
  std::function<Status()> after_forward;
  // After each prefill chunk: prompt tokens done, prompt tokens in all.
  std::function<void(size_t done, size_t total)> on_prefill_progress;
  // Once, after the prefill and before the first token is sampled (e.g. to switch profiles).
  std::function<void()> on_decode_start;
  // Times each sampling step (Sequence::next) as OpClass::kSampling; null: off.
  model::OpProfile* sampling_profile = nullptr;
};

struct GenerateOneStats {
  double prefill_seconds = 0;
  double decode_seconds = 0;  // from the first sample to the end
  int decode_steps = 0;       // forward passes after the prompt
};

// `session` must be empty (length 0). Errors of a forward, of after_forward or of
// the logits end the generation (the sequence finishes with kError).
Result<GenerateOneStats> generate_one(model::Session& session, Sequence& sequence, const GenerateOneOptions& options);

}  // namespace submoe::serve
