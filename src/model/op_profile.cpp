#include "submoe/model/op_profile.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "submoe/core/thread_pool.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kEmbed: return "embed";
    case OpClass::kNorm: return "norms+residual";
    case OpClass::kAttnProj: return "attn projections";
    case OpClass::kAttnCore: return "attn core";
    case OpClass::kRouter: return "router";
    case OpClass::kExpertFetch: return "expert fetch";
    case OpClass::kExperts: return "expert kernels";
    case OpClass::kMoeCombine: return "moe combine";
    case OpClass::kSharedExpert: return "shared expert";
    case OpClass::kDenseMlp: return "dense mlp";
    case OpClass::kLmHead: return "lm_head";
    case OpClass::kSampling: return "sampling";
    case OpClass::kCount: break;
  }
  return "?";
}

void OpProfile::add_expert_op(const LinearOp& op, uint64_t ns) {
  std::lock_guard<std::mutex> lock(expert_mutex_);
  auto it = labels_.find(&op);
  if (it == labels_.end()) {
    // "int4-g32 [768, 2048] ..." -> "int4-g32"; "rvq 4 stages [..]" -> "rvq 4 stages".
    std::string d = op.describe();
    const size_t cut = d.find('[');
    if (cut != std::string::npos) d.resize(cut);
    while (!d.empty() && d.back() == ' ') d.pop_back();
    it = labels_.emplace(&op, d).first;
  }
  expert_ns_[it->second] += ns;
}

void OpProfile::add_forward(size_t tokens, uint64_t ns) {
  tokens_ += tokens;
  ++forwards_;
  forward_ns_ += ns;
  if (pool_ != nullptr) {
    const ThreadPool::Stats s = pool_->stats();
    pool_trips_ = s.round_trips - pool_trips0_;
    pool_wait_ns_ = s.wait_ns - pool_wait0_;
  }
}

void OpProfile::attach_pool(ThreadPool* pool) {
  pool_ = pool;
  pool_trips_ = pool_wait_ns_ = 0;
  if (pool_ == nullptr) return;
  pool_->set_wait_accounting(true);
  const ThreadPool::Stats s = pool_->stats();
  pool_trips0_ = s.round_trips;
  pool_wait0_ = s.wait_ns;
}

void OpProfile::reset() {
  totals_ = {};
  tokens_ = forwards_ = forward_ns_ = 0;
  {
    std::lock_guard<std::mutex> lock(expert_mutex_);
    expert_ns_.clear();
  }
  attach_pool(pool_);
}

nlohmann::json OpProfile::to_json() const {
  const double per = tokens_ > 0 ? 1.0 / static_cast<double>(tokens_) : 0.0;
  const double fwd_ms = static_cast<double>(forward_ns_) / 1e6;
  nlohmann::json classes = nlohmann::json::object();
  uint64_t covered = 0;
  for (size_t i = 0; i < totals_.size(); ++i) {
    const Total& t = totals_[i];
    if (t.calls == 0) continue;
    if (static_cast<OpClass>(i) != OpClass::kSampling) covered += t.ns;
    const double ms = static_cast<double>(t.ns) / 1e6;
    classes[op_class_name(static_cast<OpClass>(i))] = {
        {"ms", ms}, {"ms_per_token", ms * per}, {"share", fwd_ms > 0 ? ms / fwd_ms : 0.0}, {"calls", t.calls}};
  }
  nlohmann::json experts = nlohmann::json::object();
  {
    std::lock_guard<std::mutex> lock(expert_mutex_);
    for (const auto& [label, ns] : expert_ns_)
      experts[label] = {{"thread_ms", static_cast<double>(ns) / 1e6},
                        {"ms_per_token", static_cast<double>(ns) / 1e6 * per}};
  }
  nlohmann::json j = {{"tokens", tokens_},
                      {"forwards", forwards_},
                      {"forward_ms", fwd_ms},
                      {"ms_per_token", fwd_ms * per},
                      {"classes", classes},
                      {"other_ms", forward_ns_ > covered ? static_cast<double>(forward_ns_ - covered) / 1e6 : 0.0},
                      {"experts_by_representation", experts}};
  if (pool_ != nullptr) {
    const uint64_t trips = pool_trips_;
    const double wait_ms = static_cast<double>(pool_wait_ns_) / 1e6;
    j["thread_pool"] = {{"threads", pool_->num_threads()},
                        {"round_trips", trips},
                        {"round_trips_per_token", static_cast<double>(trips) * per},
                        {"wait_ms", wait_ms},
                        {"wait_ms_per_token", wait_ms * per}};
  }
  return j;
}

std::string OpProfile::table(const std::string& title) const {
  const nlohmann::json j = to_json();
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "[profile] %s: %llu tokens in %llu forwards, %.3f ms/token\n", title.c_str(),
                static_cast<unsigned long long>(tokens_), static_cast<unsigned long long>(forwards_),
                j["ms_per_token"].get<double>());
  out += line;
  out += "  op class            ms/token   share  calls/token\n";
  const double per = tokens_ > 0 ? 1.0 / static_cast<double>(tokens_) : 0.0;
  for (const auto& [name, c] : j["classes"].items()) {
    std::snprintf(line, sizeof line, "  %-18s %9.4f  %5.1f%%  %8.1f\n", name.c_str(), c["ms_per_token"].get<double>(),
                  100.0 * c["share"].get<double>(), static_cast<double>(c["calls"].get<uint64_t>()) * per);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-18s %9.4f  %5.1f%%\n", "other", j["other_ms"].get<double>() * per,
                j["forward_ms"].get<double>() > 0 ? 100.0 * j["other_ms"].get<double>() / j["forward_ms"].get<double>()
                                                  : 0.0);
  out += line;
  for (const auto& [label, e] : j["experts_by_representation"].items()) {
    std::snprintf(line, sizeof line, "  experts %-24s %9.4f ms/token (thread time)\n", label.c_str(),
                  e["ms_per_token"].get<double>());
    out += line;
  }
  if (j.contains("thread_pool")) {
    const auto& p = j["thread_pool"];
    std::snprintf(line, sizeof line, "  thread pool (%d threads): %.1f hand-offs/token, caller waited %.4f ms/token\n",
                  p["threads"].get<int>(), p["round_trips_per_token"].get<double>(),
                  p["wait_ms_per_token"].get<double>());
    out += line;
  }
  return out;
}

}  // namespace submoe::model
