// tokenizer.json -> TokenizerData. Every component is checked for the JSON
// types tokenizers' serde definitions require; anything this implementation
// does not reproduce is rejected with kUnsupported naming the component, so a
// tokenizer that loads is one that encodes exactly like tokenizers.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <utility>

#include "io/tokenizer_data.h"
#include "io/unicode_utf8.h"

namespace submoe::io {
namespace {

using nlohmann::json;

// Ids index dense tables; real vocabularies stay far below this.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::null:
      return "null";
    default:
      return "value";
  }
}

class Parser {
 public:
  explicit Parser(std::string_view origin) : origin_(origin) {}

  Result<std::shared_ptr<TokenizerData>> parse(std::string_view text);

 private:
  Status error(const std::string& path, const std::string& what) const {
    return corrupt_data(origin_ + ": " + path + ": " + what);
  }
  Status unsupported_here(const std::string& path, const std::string& what) const {
    return unsupported(origin_ + ": " + path + ": " + what);
  }
  Status wrong_type(const std::string& path, const char* want, const json& got) const {
    return error(path, std::string("expected ") + want + ", got " + type_name(got));
  }

  // Field access: `path` names the object, key is appended.
  Result<const json*> field(const json& obj, const std::string& path, const char* key, bool required) const {
    const auto it = obj.find(key);
    if (it == obj.end() || (!required && it->is_null())) {
      if (required) return error(path + "." + key, "missing");
      return static_cast<const json*>(nullptr);
    }
    return &*it;
  }
  Result<bool> get_bool(const json& obj, const std::string& path, const char* key, bool fallback) const {
    SUBMOE_ASSIGN_OR_RETURN(const json* v, field(obj, path, key, false));
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return wrong_type(path + "." + key, "a boolean", *v);
    return v->get<bool>();
  }
  Result<std::string> get_string(const json& obj, const std::string& path, const char* key) const {
    SUBMOE_ASSIGN_OR_RETURN(const json* v, field(obj, path, key, true));
    return as_string(*v, path + "." + key);
  }
  Result<std::string> as_string(const json& v, const std::string& path) const {
    if (!v.is_string()) return wrong_type(path, "a string", v);
    std::string s = v.get<std::string>();
    if (!utf8_is_valid(s)) return error(path, "not valid UTF-8");
    return s;
  }
  Result<int64_t> as_int(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) return wrong_type(path, "an integer", v);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return error(path, "integer out of range");
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
      return error(path, std::to_string(x) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return x;
  }
  Result<const json*> object_with_type(const json& v, const std::string& path, std::string* type) const {
    if (!v.is_object()) return wrong_type(path, "an object", v);
    SUBMOE_ASSIGN_OR_RETURN(*type, get_string(v, path, "type"));
    return &v;
  }
  // A member list of a Sequence component.
  Result<const json*> sequence_members(const json& v, const std::string& path, const char* key) const {
    SUBMOE_ASSIGN_OR_RETURN(const json* list, field(v, path, key, true));
    if (!list->is_array()) return wrong_type(path + "." + key, "an array", *list);
    return list;
  }
  // {"String": s} or {"Regex": r}; sets is_regex.
  Result<std::string> pattern(const json& obj, const std::string& path, bool* is_regex) const {
    SUBMOE_ASSIGN_OR_RETURN(const json* p, field(obj, path, "pattern", true));
    const std::string ppath = path + ".pattern";
    if (!p->is_object() || p->size() != 1) return error(ppath, "expected {\"String\": ...} or {\"Regex\": ...}");
    if (p->contains("String")) {
      *is_regex = false;
      return as_string(p->at("String"), ppath + ".String");
    }
    if (p->contains("Regex")) {
      *is_regex = true;
      return as_string(p->at("Regex"), ppath + ".Regex");
    }
    return error(ppath, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  Result<PrependScheme> prepend_scheme(const json& v, const std::string& path) const;

  Status parse_normalizer(const json& v, const std::string& path, std::vector<NormalizerStep>& out) const;
  Status parse_pre_tokenizer(const json& v, const std::string& path, std::vector<PreTokenizerStep>& out) const;
  Status parse_decoder(const json& v, const std::string& path, std::vector<DecoderStep>& out) const;
  Status parse_post_processor(const json& v, const std::string& path, std::vector<PostProcessorStep>& out) const;
  Status parse_model(const json& v, TokenizerData& d) const;
  Status parse_added_tokens(const json& v, TokenizerData& d) const;
  Status build_matchers(TokenizerData& d) const;
  Result<std::vector<int32_t>> special_pair_ids(const json& v, const std::string& path) const;

  std::string origin_;
};

Result<PrependScheme> Parser::prepend_scheme(const json& v, const std::string& path) const {
  // Newer files write prepend_scheme; older ones add_prefix_space (true =
  // always). Both default to "always".
  if (const auto it = v.find("prepend_scheme"); it != v.end() && !it->is_null()) {
    SUBMOE_ASSIGN_OR_RETURN(const std::string s, as_string(*it, path + ".prepend_scheme"));
    if (s == "always") return PrependScheme::kAlways;
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    return error(path + ".prepend_scheme", "'" + s + "' is not one of always, first, never");
  }
  SUBMOE_ASSIGN_OR_RETURN(const bool add, get_bool(v, path, "add_prefix_space", true));
  return add ? PrependScheme::kAlways : PrependScheme::kNever;
}

Status Parser::parse_normalizer(const json& v, const std::string& path, std::vector<NormalizerStep>& out) const {
  std::string type;
  SUBMOE_ASSIGN_OR_RETURN(const json* obj, object_with_type(v, path, &type));
  NormalizerStep step;
  if (type == "Sequence") {
    SUBMOE_ASSIGN_OR_RETURN(const json* list, sequence_members(*obj, path, "normalizers"));
    for (size_t i = 0; i < list->size(); ++i) {
      SUBMOE_RETURN_IF_ERROR(
          parse_normalizer((*list)[i], path + ".normalizers[" + std::to_string(i) + "]", out));
    }
    return Status::ok();
  }
  if (type == "NFC") {
    step.kind = NormalizerStep::Kind::kNFC;
  } else if (type == "NFD") {
    step.kind = NormalizerStep::Kind::kNFD;
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    SUBMOE_ASSIGN_OR_RETURN(step.text, get_string(*obj, path, "prepend"));
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    bool is_regex = false;
    SUBMOE_ASSIGN_OR_RETURN(step.text, pattern(*obj, path, &is_regex));
    if (is_regex) return unsupported_here(path + ".pattern", "Replace with a Regex pattern ('" + step.text + "')");
    SUBMOE_ASSIGN_OR_RETURN(step.content, get_string(*obj, path, "content"));
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    SUBMOE_ASSIGN_OR_RETURN(step.strip_left, get_bool(*obj, path, "strip_left", true));
    SUBMOE_ASSIGN_OR_RETURN(step.strip_right, get_bool(*obj, path, "strip_right", true));
  } else {
    return unsupported_here(path, "normalizer type '" + type +
                                      "' (supported: NFC, NFD, Prepend, Replace with a String pattern, Strip, "
                                      "Sequence)");
  }
  out.push_back(std::move(step));
  return Status::ok();
}

Status Parser::parse_pre_tokenizer(const json& v, const std::string& path,
                                   std::vector<PreTokenizerStep>& out) const {
  std::string type;
  SUBMOE_ASSIGN_OR_RETURN(const json* obj, object_with_type(v, path, &type));
  PreTokenizerStep step;
  if (type == "Sequence") {
    SUBMOE_ASSIGN_OR_RETURN(const json* list, sequence_members(*obj, path, "pretokenizers"));
    for (size_t i = 0; i < list->size(); ++i) {
      SUBMOE_RETURN_IF_ERROR(
          parse_pre_tokenizer((*list)[i], path + ".pretokenizers[" + std::to_string(i) + "]", out));
    }
    return Status::ok();
  }
  if (type == "Split") {
    bool is_regex = false;
    SUBMOE_ASSIGN_OR_RETURN(const std::string pat, pattern(*obj, path, &is_regex));
    if (is_regex) {
      step.kind = PreTokenizerStep::Kind::kSplitRegex;
      auto id = recognise_regex(pat);
      if (!id.is_ok()) return id.status().with_context(origin_ + ": " + path + ".pattern.Regex");
      step.regex = *id;
    } else {
      step.kind = PreTokenizerStep::Kind::kSplitString;
      step.literal = pat;
    }
    SUBMOE_ASSIGN_OR_RETURN(const std::string behavior, get_string(*obj, path, "behavior"));
    if (behavior == "Removed") {
      step.behavior = SplitBehavior::kRemoved;
    } else if (behavior == "Isolated") {
      step.behavior = SplitBehavior::kIsolated;
    } else if (behavior == "MergedWithPrevious") {
      step.behavior = SplitBehavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      step.behavior = SplitBehavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      step.behavior = SplitBehavior::kContiguous;
    } else {
      return error(path + ".behavior", "'" + behavior +
                                           "' is not one of Removed, Isolated, MergedWithPrevious, "
                                           "MergedWithNext, Contiguous");
    }
    SUBMOE_ASSIGN_OR_RETURN(step.invert, get_bool(*obj, path, "invert", false));
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    SUBMOE_ASSIGN_OR_RETURN(step.add_prefix_space, get_bool(*obj, path, "add_prefix_space", true));
    SUBMOE_ASSIGN_OR_RETURN(step.use_regex, get_bool(*obj, path, "use_regex", true));
    SUBMOE_ASSIGN_OR_RETURN(const bool trim_offsets, get_bool(*obj, path, "trim_offsets", true));
    (void)trim_offsets;  // offsets only
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    SUBMOE_ASSIGN_OR_RETURN(step.replacement, get_string(*obj, path, "replacement"));
    if (step.replacement.empty() || utf8_length(static_cast<uint8_t>(step.replacement[0])) != step.replacement.size()) {
      return error(path + ".replacement", "expected exactly one character");
    }
    SUBMOE_ASSIGN_OR_RETURN(step.prepend_scheme, prepend_scheme(*obj, path));
    SUBMOE_ASSIGN_OR_RETURN(step.split, get_bool(*obj, path, "split", true));
  } else if (type == "Digits") {
    step.kind = PreTokenizerStep::Kind::kDigits;
    SUBMOE_ASSIGN_OR_RETURN(step.individual_digits, get_bool(*obj, path, "individual_digits", false));
  } else if (type == "WhitespaceSplit") {
    step.kind = PreTokenizerStep::Kind::kWhitespaceSplit;
  } else {
    return unsupported_here(path, "pre-tokenizer type '" + type +
                                      "' (supported: Split, ByteLevel, Metaspace, Digits, WhitespaceSplit, "
                                      "Sequence)");
  }
  out.push_back(std::move(step));
  return Status::ok();
}

Status Parser::parse_decoder(const json& v, const std::string& path, std::vector<DecoderStep>& out) const {
  std::string type;
  SUBMOE_ASSIGN_OR_RETURN(const json* obj, object_with_type(v, path, &type));
  DecoderStep step;
  if (type == "Sequence") {
    SUBMOE_ASSIGN_OR_RETURN(const json* list, sequence_members(*obj, path, "decoders"));
    for (size_t i = 0; i < list->size(); ++i) {
      SUBMOE_RETURN_IF_ERROR(parse_decoder((*list)[i], path + ".decoders[" + std::to_string(i) + "]", out));
    }
    return Status::ok();
  }
  if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    bool is_regex = false;
    SUBMOE_ASSIGN_OR_RETURN(step.pattern, pattern(*obj, path, &is_regex));
    if (is_regex) return unsupported_here(path + ".pattern", "Replace with a Regex pattern ('" + step.pattern + "')");
    SUBMOE_ASSIGN_OR_RETURN(step.content, get_string(*obj, path, "content"));
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    SUBMOE_ASSIGN_OR_RETURN(step.content, get_string(*obj, path, "content"));
    if (step.content.empty() || utf8_length(static_cast<uint8_t>(step.content[0])) != step.content.size()) {
      return error(path + ".content", "expected exactly one character");
    }
    SUBMOE_ASSIGN_OR_RETURN(const json* start, field(*obj, path, "start", true));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t s, as_int(*start, path + ".start", 0, 1 << 20));
    SUBMOE_ASSIGN_OR_RETURN(const json* stop, field(*obj, path, "stop", true));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t e, as_int(*stop, path + ".stop", 0, 1 << 20));
    step.start = static_cast<size_t>(s);
    step.stop = static_cast<size_t>(e);
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    SUBMOE_ASSIGN_OR_RETURN(step.replacement, get_string(*obj, path, "replacement"));
    if (step.replacement.empty() || utf8_length(static_cast<uint8_t>(step.replacement[0])) != step.replacement.size()) {
      return error(path + ".replacement", "expected exactly one character");
    }
    SUBMOE_ASSIGN_OR_RETURN(step.prepend_scheme, prepend_scheme(*obj, path));
  } else {
    return unsupported_here(path, "decoder type '" + type +
                                      "' (supported: ByteLevel, Replace with a String pattern, ByteFallback, Fuse, "
                                      "Strip, Metaspace, Sequence)");
  }
  out.push_back(std::move(step));
  return Status::ok();
}

// ["<s>", 1] of RobertaProcessing / BertProcessing.
Result<std::vector<int32_t>> Parser::special_pair_ids(const json& v, const std::string& path) const {
  if (!v.is_array() || v.size() != 2) return error(path, "expected [token, id]");
  SUBMOE_ASSIGN_OR_RETURN(const std::string token, as_string(v[0], path + "[0]"));
  (void)token;
  SUBMOE_ASSIGN_OR_RETURN(const int64_t id, as_int(v[1], path + "[1]", 0, kMaxTokenId));
  return std::vector<int32_t>{static_cast<int32_t>(id)};
}

Status Parser::parse_post_processor(const json& v, const std::string& path,
                                    std::vector<PostProcessorStep>& out) const {
  std::string type;
  SUBMOE_ASSIGN_OR_RETURN(const json* obj, object_with_type(v, path, &type));
  PostProcessorStep step;
  if (type == "Sequence") {
    SUBMOE_ASSIGN_OR_RETURN(const json* list, sequence_members(*obj, path, "processors"));
    for (size_t i = 0; i < list->size(); ++i) {
      SUBMOE_RETURN_IF_ERROR(
          parse_post_processor((*list)[i], path + ".processors[" + std::to_string(i) + "]", out));
    }
    return Status::ok();
  }
  if (type == "ByteLevel") {
    // Adjusts offsets only.
  } else if (type == "TemplateProcessing") {
    SUBMOE_ASSIGN_OR_RETURN(const json* specials, field(*obj, path, "special_tokens", true));
    if (!specials->is_object()) return wrong_type(path + ".special_tokens", "an object", *specials);
    SUBMOE_ASSIGN_OR_RETURN(const json* single, field(*obj, path, "single", true));
    if (!single->is_array()) return wrong_type(path + ".single", "an array", *single);
    for (size_t i = 0; i < single->size(); ++i) {
      const std::string ipath = path + ".single[" + std::to_string(i) + "]";
      const json& item = (*single)[i];
      if (!item.is_object() || item.size() != 1) {
        return error(ipath, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
      TemplateItem t;
      if (item.contains("Sequence")) {
        t.is_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const json& st = item.at("SpecialToken");
        if (!st.is_object()) return wrong_type(ipath + ".SpecialToken", "an object", st);
        SUBMOE_ASSIGN_OR_RETURN(const std::string name, get_string(st, ipath + ".SpecialToken", "id"));
        const auto it = specials->find(name);
        if (it == specials->end()) {
          return error(ipath, "special token '" + name + "' is not in " + path + ".special_tokens");
        }
        const std::string spath = path + ".special_tokens." + name;
        if (!it->is_object()) return wrong_type(spath, "an object", *it);
        SUBMOE_ASSIGN_OR_RETURN(const json* ids, field(*it, spath, "ids", true));
        if (!ids->is_array()) return wrong_type(spath + ".ids", "an array", *ids);
        for (size_t k = 0; k < ids->size(); ++k) {
          SUBMOE_ASSIGN_OR_RETURN(const int64_t id,
                                  as_int((*ids)[k], spath + ".ids[" + std::to_string(k) + "]", 0, kMaxTokenId));
          t.ids.push_back(static_cast<int32_t>(id));
        }
      } else {
        return error(ipath, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
      step.single.push_back(std::move(t));
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    SUBMOE_ASSIGN_OR_RETURN(const json* cls, field(*obj, path, "cls", true));
    SUBMOE_ASSIGN_OR_RETURN(const json* sep, field(*obj, path, "sep", true));
    SUBMOE_ASSIGN_OR_RETURN(auto cls_ids, special_pair_ids(*cls, path + ".cls"));
    SUBMOE_ASSIGN_OR_RETURN(auto sep_ids, special_pair_ids(*sep, path + ".sep"));
    step.single = {TemplateItem{false, cls_ids}, TemplateItem{true, {}}, TemplateItem{false, sep_ids}};
  } else {
    return unsupported_here(path, "post-processor type '" + type +
                                      "' (supported: TemplateProcessing, RobertaProcessing, BertProcessing, "
                                      "ByteLevel, Sequence)");
  }
  out.push_back(std::move(step));
  return Status::ok();
}

Status Parser::parse_model(const json& v, TokenizerData& d) const {
  const std::string path = "model";
  if (!v.is_object()) return wrong_type(path, "an object", v);
  // Old files omit "type"; the fields then identify a BPE model.
  std::string type = "BPE";
  if (const auto it = v.find("type"); it != v.end()) {
    SUBMOE_ASSIGN_OR_RETURN(type, as_string(*it, path + ".type"));
  }
  if (type != "BPE") {
    return unsupported_here(path + ".type", "model type '" + type + "' (supported: BPE)");
  }
  if (const auto it = v.find("dropout"); it != v.end() && !it->is_null()) {
    if (!it->is_number()) return wrong_type(path + ".dropout", "a number or null", *it);
    // Dropout samples merges at random: not reproducible, and off at inference.
    if (it->get<double>() != 0.0) return unsupported_here(path + ".dropout", "BPE dropout is not supported");
  }
  BpeOptions opt;
  if (const auto it = v.find("unk_token"); it != v.end() && !it->is_null()) {
    SUBMOE_ASSIGN_OR_RETURN(opt.unk_token, as_string(*it, path + ".unk_token"));
  }
  if (const auto it = v.find("continuing_subword_prefix"); it != v.end() && !it->is_null()) {
    SUBMOE_ASSIGN_OR_RETURN(opt.continuing_subword_prefix, as_string(*it, path + ".continuing_subword_prefix"));
  }
  if (const auto it = v.find("end_of_word_suffix"); it != v.end() && !it->is_null()) {
    SUBMOE_ASSIGN_OR_RETURN(opt.end_of_word_suffix, as_string(*it, path + ".end_of_word_suffix"));
  }
  SUBMOE_ASSIGN_OR_RETURN(opt.fuse_unk, get_bool(v, path, "fuse_unk", false));
  SUBMOE_ASSIGN_OR_RETURN(opt.byte_fallback, get_bool(v, path, "byte_fallback", false));
  SUBMOE_ASSIGN_OR_RETURN(opt.ignore_merges, get_bool(v, path, "ignore_merges", false));

  SUBMOE_ASSIGN_OR_RETURN(const json* vocab_json, field(v, path, "vocab", true));
  if (!vocab_json->is_object()) return wrong_type(path + ".vocab", "an object", *vocab_json);
  TokenIdMap vocab;
  vocab.reserve(vocab_json->size());
  for (const auto& [token, id_json] : vocab_json->items()) {
    if (!utf8_is_valid(token)) return error(path + ".vocab", "a token is not valid UTF-8");
    SUBMOE_ASSIGN_OR_RETURN(const int64_t id, as_int(id_json, path + ".vocab['" + token + "']", 0, kMaxTokenId));
    vocab.emplace(token, static_cast<int32_t>(id));
  }

  SUBMOE_ASSIGN_OR_RETURN(const json* merges_json, field(v, path, "merges", false));
  std::vector<std::pair<std::string, std::string>> merges;
  if (merges_json != nullptr) {
    if (!merges_json->is_array()) return wrong_type(path + ".merges", "an array", *merges_json);
    merges.reserve(merges_json->size());
    for (size_t i = 0; i < merges_json->size(); ++i) {
      const std::string mpath = path + ".merges[" + std::to_string(i) + "]";
      const json& m = (*merges_json)[i];
      if (m.is_string()) {
        // "a b": split at the first space (tokens never contain a plain space
        // in files that use this form).
        SUBMOE_ASSIGN_OR_RETURN(const std::string s, as_string(m, mpath));
        const size_t sp = s.find(' ');
        if (sp == std::string::npos) return error(mpath, "'" + s + "' is not two tokens separated by a space");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (m.is_array()) {
        if (m.size() != 2) return error(mpath, "expected a pair of tokens");
        SUBMOE_ASSIGN_OR_RETURN(std::string a, as_string(m[0], mpath + "[0]"));
        SUBMOE_ASSIGN_OR_RETURN(std::string b, as_string(m[1], mpath + "[1]"));
        merges.emplace_back(std::move(a), std::move(b));
      } else {
        return wrong_type(mpath, "a string \"a b\" or a pair [a, b]", m);
      }
    }
  }
  auto model = BpeModel::create(std::move(vocab), merges, std::move(opt));
  if (!model.is_ok()) return model.status().with_context(origin_);
  d.model = std::move(model).value();
  return Status::ok();
}

Status Parser::parse_added_tokens(const json& v, TokenizerData& d) const {
  if (!v.is_array()) return wrong_type("added_tokens", "an array", v);
  std::vector<AddedToken> defs;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    const json& t = v[i];
    if (!t.is_object()) return wrong_type(path, "an object", t);
    AddedToken a;
    SUBMOE_ASSIGN_OR_RETURN(const json* id, field(t, path, "id", true));
    SUBMOE_ASSIGN_OR_RETURN(const int64_t written_id, as_int(*id, path + ".id", 0, kMaxTokenId));
    a.id = static_cast<int32_t>(written_id);
    SUBMOE_ASSIGN_OR_RETURN(a.content, get_string(t, path, "content"));
    SUBMOE_ASSIGN_OR_RETURN(a.special, get_bool(t, path, "special", false));
    SUBMOE_ASSIGN_OR_RETURN(a.lstrip, get_bool(t, path, "lstrip", false));
    SUBMOE_ASSIGN_OR_RETURN(a.rstrip, get_bool(t, path, "rstrip", false));
    SUBMOE_ASSIGN_OR_RETURN(a.single_word, get_bool(t, path, "single_word", false));
    SUBMOE_ASSIGN_OR_RETURN(a.normalized, get_bool(t, path, "normalized", !a.special));
    if (!a.content.empty()) defs.push_back(std::move(a));  // an empty token never matches
  }
  for (const AddedToken& a : defs) {
    if (a.special) d.special_contents.insert(a.content);
  }

  // The rules below are tokenizers' AddedVocabulary::add_tokens, which loading
  // runs over the whole list:
  //  - the serialized "id" is ignored: a content in the model vocabulary takes
  //    the model's id, a new one the next id after the model vocabulary and the
  //    tokens added so far (real files agree with this numbering);
  //  - a repeated content keeps its id, and the last differing definition's
  //    flags apply when it matches;
  //  - the strings searched for are the first special definition of each
  //    special content, and every definition of the other contents.
  const auto model_count = static_cast<int64_t>(d.model->vocab_count());
  int64_t max_added = -1;
  std::unordered_set<std::string> listed_special;
  for (const AddedToken& def : defs) {
    const bool special = d.special_contents.count(def.content) != 0;
    size_t index;
    if (const auto it = d.added_by_content.find(def.content); it != d.added_by_content.end()) {
      index = d.added_by_id.at(it->second);
      AddedToken& cur = d.added[index];
      const bool same = cur.special == def.special && cur.lstrip == def.lstrip && cur.rstrip == def.rstrip &&
                        cur.single_word == def.single_word && cur.normalized == def.normalized;
      if (!same) {
        const int32_t keep = cur.id;
        cur = def;
        cur.id = keep;
      }
    } else {
      AddedToken a = def;
      if (const auto model_id = d.model->token_to_id(a.content)) {
        a.id = *model_id;
      } else if (max_added < 0) {
        a.id = static_cast<int32_t>(model_count);
      } else {
        a.id = static_cast<int32_t>(max_added >= model_count || model_count == 0 ? max_added + 1 : model_count);
      }
      if (a.id > kMaxTokenId) return error("added_tokens", "too many added tokens");
      max_added = std::max<int64_t>(max_added, a.id);
      index = d.added.size();
      // An id already given to another added token (possible only when the
      // model vocabulary has gaps) decodes to this one from now on, while
      // both contents still encode to it, as in tokenizers.
      d.added_by_id[a.id] = index;
      d.added_by_content.emplace(a.content, a.id);
      d.added.push_back(std::move(a));
    }
    if (special ? (def.special && listed_special.insert(def.content).second) : true) {
      d.added_patterns.push_back({index, def.normalized});
    }
  }
  for (AddedToken& a : d.added) a.special = d.special_contents.count(a.content) != 0;
  return Status::ok();
}

Status Parser::build_matchers(TokenizerData& d) const {
  std::vector<std::pair<std::string, int32_t>> raw, normalized;
  for (const auto& [index, is_normalized] : d.added_patterns) {
    const std::string& content = d.added[index].content;
    if (is_normalized) {
      // Normalized tokens are looked for in normalized text, so their content
      // is normalized the same way (a Prepend normalizer prefixes it too).
      normalized.emplace_back(apply_normalizers(d.normalizers, content), static_cast<int32_t>(index));
    } else {
      raw.emplace_back(content, static_cast<int32_t>(index));
    }
  }
  d.raw_matcher.build(std::move(raw));
  d.normalized_matcher.build(std::move(normalized));
  return Status::ok();
}

Result<std::shared_ptr<TokenizerData>> Parser::parse(std::string_view text) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return corrupt_data(origin_ + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) return wrong_type("(root)", "an object", root);
  auto d = std::make_shared<TokenizerData>();

  SUBMOE_ASSIGN_OR_RETURN(const json* model, field(root, "(root)", "model", true));
  SUBMOE_RETURN_IF_ERROR(parse_model(*model, *d));
  // Optional components: absent and null both mean "none".
  auto component = [&](const char* key) -> const json* {
    const auto it = root.find(key);
    return it == root.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* n = component("normalizer")) {
    SUBMOE_RETURN_IF_ERROR(parse_normalizer(*n, "normalizer", d->normalizers));
  }
  if (const json* p = component("pre_tokenizer")) {
    SUBMOE_RETURN_IF_ERROR(parse_pre_tokenizer(*p, "pre_tokenizer", d->pre_tokenizers));
  }
  if (const json* p = component("post_processor")) {
    SUBMOE_RETURN_IF_ERROR(parse_post_processor(*p, "post_processor", d->post_processors));
  }
  if (const json* p = component("decoder")) {
    d->has_decoder = true;
    SUBMOE_RETURN_IF_ERROR(parse_decoder(*p, "decoder", d->decoders));
  }
  if (const json* a = component("added_tokens")) {
    SUBMOE_RETURN_IF_ERROR(parse_added_tokens(*a, *d));
  }
  SUBMOE_RETURN_IF_ERROR(build_matchers(*d));

  int32_t max_id = d->model->max_id();
  for (const AddedToken& a : d->added) max_id = std::max(max_id, a.id);
  for (const PostProcessorStep& step : d->post_processors) {
    for (const TemplateItem& item : step.single) {
      for (const int32_t id : item.ids) max_id = std::max(max_id, id);
    }
  }
  d->vocab_size = max_id + 1;
  for (const PostProcessorStep& step : d->post_processors) {
    if (step.single.empty()) continue;
    bool after = false;
    for (const TemplateItem& item : step.single) {
      if (item.is_sequence) {
        after = true;
      } else {
        auto& dst = after ? d->template_suffix_ids : d->template_prefix_ids;
        dst.insert(dst.end(), item.ids.begin(), item.ids.end());
      }
    }
    break;
  }
  return d;
}

}  // namespace

Result<std::shared_ptr<TokenizerData>> parse_tokenizer_json(std::string_view json_text, std::string_view origin) {
  return Parser(origin).parse(json_text);
}

}  // namespace submoe::io
