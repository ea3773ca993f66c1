// The model flags shared by `run`, `eval`, `trace record` and `serve`; loading
// itself is serve::load_model / serve::Engine::load (include/submoe/serve/engine.h).
#pragma once

#include <CLI/CLI.hpp>

#include "submoe/serve/engine.h"

namespace submoe::cli {

using ModelFlags = serve::LoadOptions;
using LoadedModel = serve::LoadedModel;
using serve::offload_json;
using serve::offload_summary;

// Adds --execution, --huge-pages, --allow-extra-tensors and the offload flags
// (--model is added by each command).
void add_model_flags(CLI::App* cmd, ModelFlags* flags);

// Adds --chat-template FILE (run and serve): a Jinja chat template instead of
// the model's own.
void add_chat_template_flag(CLI::App* cmd, ModelFlags* flags);

inline Result<LoadedModel> load_model_for_command(const ModelFlags& flags) { return serve::load_model(flags); }

}  // namespace submoe::cli
