// Artifact checksums (runtime/artifact_checksums.h): the manifest record's
// round trip and strict parsing, and that with a checksummed manifest every
// single-byte flip anywhere in model.safetensors, config.json or the
// tokenizer files is detected by the loader: on open (files, header, shared
// tensors), at the dense-weight load, or when an expert is built (resident or
// from bytes read elsewhere, as the offload store does). Artifacts without
// checksums still open, with a note.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstring>
#include <functional>
#include <random>

#include "artifact_builder.h"
#include "submoe/core/checksum.h"
#include "submoe/io/file_util.h"
#include "submoe/runtime/artifact.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::runtime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ChecksummedArtifact {
  std::string dir;
  explicit ChecksummedArtifact(const testing::ArtifactSpec& spec) {
    auto parts = testing::build_artifact_parts(spec);
    EXPECT_TRUE(parts.is_ok());
    auto d = testing::write_artifact(*parts);
    EXPECT_TRUE(d.is_ok());
    dir = *d;
    auto a = Artifact::open(dir, {.checksums = false});
    EXPECT_TRUE(a.is_ok()) << a.status().to_string();
    auto sums = (*a)->compute_checksums();
    EXPECT_TRUE(sums.is_ok());
    const json manifest = {{"format", "submoe artifact"}, {"checksums", checksums_to_json(*sums)}};
    EXPECT_TRUE(io::write_file_atomic(dir + "/submoe_manifest.json", manifest.dump(2)).is_ok());
  }
  ~ChecksummedArtifact() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Everything a run reads: open, the dense weights, every expert.
Status load_everything(const std::string& dir) {
  SUBMOE_ASSIGN_OR_RETURN(auto a, Artifact::open(dir));
  SUBMOE_RETURN_IF_ERROR(a->verify_dense_tensors());
  for (int l = 0; l < a->num_layers(); ++l)
    for (int e = 0; e < a->num_experts(); ++e)
      if (a->has_expert(l, e)) SUBMOE_RETURN_IF_ERROR(a->expert_resident(l, e).status());
  return Status::ok();
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// Flips byte `offset` of `file` (XOR `mask`), runs `check`, restores the byte.
template <typename F>
void with_flip(const std::string& file, size_t offset, uint8_t mask, F&& check) {
  std::vector<char> b = read_bytes(file);
  ASSERT_LT(offset, b.size());
  b[offset] = static_cast<char>(b[offset] ^ mask);
  write_bytes(file, b);
  check();
  b[offset] = static_cast<char>(b[offset] ^ mask);
  write_bytes(file, b);
}

TEST(ArtifactChecksums, JsonRoundTripAndStrictParsing) {
  ArtifactChecksums c;
  c.files = {{"config.json", 1}, {"tokenizer.json", ~uint64_t{0}}};
  c.safetensors_header = 0x1234;
  c.tensors = {{"model.norm.weight", 7}};
  c.experts = {{}, {3, 4}};
  auto back = checksums_from_json(checksums_to_json(c));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_TRUE(*back == c);
  const json good = checksums_to_json(c);
  struct Case {
    std::function<void(json&)> edit;
    std::string needle;
    ErrorCode code = ErrorCode::kCorruptData;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["algorithm"] = "crc32c"; }, "this build verifies 'xxh3_64' only", ErrorCode::kUnsupported},
      {[](json& j) { j.erase("experts"); }, "checksums has no 'experts'"},
      {[](json& j) { j["extra"] = 1; }, "unknown key 'extra'"},
      {[](json& j) { j["safetensors_header"] = "12"; }, "not 16 hex digits"},
      {[](json& j) { j["tensors"]["model.norm.weight"] = 7; }, "tensors.model.norm.weight is not a string"},
      {[](json& j) { j["experts"][1][0] = "000000000000000G"; }, "experts[1][0]"},
      {[](json& j) { j["experts"][1] = "x"; }, "experts[1] is not an array"},
      {[](json& j) { j["files"] = json::array(); }, "files is not an object"},
  };
  for (const Case& k : cases) {
    json j = good;
    k.edit(j);
    auto r = checksums_from_json(j);
    ASSERT_FALSE(r.is_ok()) << k.needle;
    EXPECT_NE(r.status().message().find(k.needle), std::string::npos) << r.status().to_string();
    EXPECT_EQ(r.status().code(), k.code) << r.status().to_string();
  }
}

TEST(ArtifactChecksums, OpenVerifiesAndOldArtifactsOpenWithANote) {
  ChecksummedArtifact c(testing::ArtifactSpec{});
  auto a = Artifact::open(c.dir);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_TRUE((*a)->has_checksums());
  EXPECT_EQ((*a)->integrity_note(), "");
  ASSERT_TRUE(load_everything(c.dir).is_ok());
  // The manifest without "checksums" (as written before they existed), and no manifest.
  ASSERT_TRUE(io::write_file_atomic(c.dir + "/submoe_manifest.json", "{\"format\": \"submoe artifact\"}").is_ok());
  auto old = Artifact::open(c.dir);
  ASSERT_TRUE(old.is_ok());
  EXPECT_FALSE((*old)->has_checksums());
  EXPECT_NE((*old)->integrity_note().find("predates them"), std::string::npos);
  fs::remove(c.dir + "/submoe_manifest.json");
  auto none = Artifact::open(c.dir);
  ASSERT_TRUE(none.is_ok());
  EXPECT_NE((*none)->integrity_note().find("no submoe_manifest.json"), std::string::npos);
  // A manifest that is not JSON is an error, not "no checksums".
  ASSERT_TRUE(io::write_file_atomic(c.dir + "/submoe_manifest.json", "{\"checksums\":").is_ok());
  EXPECT_FALSE(Artifact::open(c.dir).is_ok());
}

TEST(ArtifactChecksums, CoverageOfTheRecordIsChecked) {
  ChecksummedArtifact c(testing::ArtifactSpec{});
  const std::string path = c.dir + "/submoe_manifest.json";
  const json base = json::parse(*io::read_file_to_string(path));
  struct Case {
    std::function<void(json&)> edit;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["checksums"]["tensors"].erase("model.norm.weight"); }, "has no entry for 'model.norm.weight'"},
      {[](json& j) { j["checksums"]["tensors"]["model.extra"] = "0000000000000000"; }, "names 'model.extra'"},
      {[](json& j) { j["checksums"]["experts"].erase(1); }, "checksums.experts has 1 layers"},
      {[](json& j) { j["checksums"]["experts"][0].erase(0); }, "checksums.experts[0] has"},
      {[](json& j) { j["checksums"]["files"].erase("config.json"); }, "has no config.json"},
      {[](json& j) { j["checksums"]["files"]["../etc/passwd"] = "0000000000000000"; }, "unknown file '../etc/passwd'"},
      {[](json& j) { j["checksums"]["files"]["vocab.json"] = "0000000000000000"; }, "vocab.json: no such file"},
  };
  for (const Case& k : cases) {
    json j = base;
    k.edit(j);
    ASSERT_TRUE(io::write_file_atomic(path, j.dump()).is_ok());
    auto a = Artifact::open(c.dir);
    ASSERT_FALSE(a.is_ok()) << k.needle;
    EXPECT_NE(a.status().message().find(k.needle), std::string::npos) << a.status().to_string();
  }
}

// Every byte of a small region exhaustively and random bytes over the whole
// file: each flip must make loading fail, most with a checksum mismatch.
void expect_every_flip_detected(const testing::ArtifactSpec& spec) {
  ChecksummedArtifact c(spec);
  const std::string weights = c.dir + "/model.safetensors";
  auto a = Artifact::open(c.dir);
  ASSERT_TRUE(a.is_ok());
  const size_t size = fs::file_size(weights);
  std::vector<size_t> offsets;
  // The header's first 64 bytes, each byte of the first expert's first 48
  // bytes and its last 16, and 120 random offsets.
  for (size_t i = 0; i < 64; ++i) offsets.push_back(i);
  const ExpertByteRange r = *(*a)->expert_byte_range(0, 0);
  for (size_t i = 0; i < 48; ++i) offsets.push_back(r.offset + i);
  for (size_t i = 1; i <= 16; ++i) offsets.push_back(r.offset + r.length - i);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 120; ++i) offsets.push_back(rng() % size);
  (*a).reset();
  int mismatches = 0, in_expert = 0;
  for (size_t off : offsets) {
    const uint8_t mask = static_cast<uint8_t>(1u << (off % 8));
    with_flip(weights, off, mask, [&] {
      const Status s = load_everything(c.dir);
      EXPECT_FALSE(s.is_ok()) << "flip of byte " << off << " mask " << int(mask) << " went undetected";
      // A flip inside an expert's range is reported as a checksum mismatch
      // (the range is hashed before its fields are decoded).
      if (off >= r.offset && off < r.offset + r.length) {
        ++in_expert;
        mismatches += s.message().find("checksum mismatch") != std::string::npos;
      }
    });
  }
  EXPECT_GE(in_expert, 64);
  EXPECT_EQ(mismatches, in_expert);
  ASSERT_TRUE(load_everything(c.dir).is_ok()) << "the restored artifact must load";
  // config.json and tokenizer.json: random single-byte flips.
  for (const char* name : {"config.json", "tokenizer.json"}) {
    const std::string file = c.dir + "/" + name;
    const size_t n = fs::file_size(file);
    for (int i = 0; i < 20; ++i) {
      const size_t off = rng() % n;
      with_flip(file, off, 0x01, [&] {
        EXPECT_FALSE(load_everything(c.dir).is_ok()) << name << " byte " << off;
      });
    }
  }
}

TEST(ArtifactChecksums, EveryFlipIsDetectedTernary) { expect_every_flip_detected(testing::ArtifactSpec{}); }

TEST(ArtifactChecksums, EveryFlipIsDetectedInt) {
  testing::ArtifactSpec s;
  s.ternary = false;
  s.bits = 4;
  s.group_size = 32;
  expect_every_flip_detected(s);
}

TEST(ArtifactChecksums, ExpertFromBytesChecksTheRange) {
  testing::ArtifactSpec spec;  // int: every expert's range has the same length
  spec.ternary = false;
  ChecksummedArtifact c(spec);
  auto a = Artifact::open(c.dir);
  ASSERT_TRUE(a.is_ok());
  const ExpertByteRange r = *(*a)->expert_byte_range(1, 2);
  const std::vector<char> file = read_bytes(r.path);
  std::vector<std::byte> bytes(r.length);
  std::memcpy(bytes.data(), file.data() + r.offset, r.length);
  ASSERT_TRUE((*a)->expert_from_bytes(1, 2, bytes).is_ok());
  for (size_t off : {size_t{0}, r.length / 2, r.length - 1}) {
    bytes[off] ^= std::byte{0x10};
    auto x = (*a)->expert_from_bytes(1, 2, bytes);
    ASSERT_FALSE(x.is_ok());
    EXPECT_NE(x.status().message().find("layer 1 expert 2"), std::string::npos) << x.status().to_string();
    EXPECT_NE(x.status().message().find("checksum mismatch"), std::string::npos) << x.status().to_string();
    bytes[off] ^= std::byte{0x10};
  }
  // Another expert's (valid) bytes of the same length are caught too.
  const ExpertByteRange r2 = *(*a)->expert_byte_range(1, 3);
  ASSERT_EQ(r2.length, r.length);
  std::memcpy(bytes.data(), file.data() + r2.offset, r.length);
  EXPECT_FALSE((*a)->expert_from_bytes(1, 2, bytes).is_ok());
}

}  // namespace
}  // namespace submoe::runtime
