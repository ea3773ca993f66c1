// Every class of malformed file is an error naming the file (and the tensor),
// never a crash; random damage to a valid file is either rejected or still
// self-consistent.
#include <cstring>
#include <random>

#include "io/io_test_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

using testing::raw_safetensors;
using testing::TempDir;
using testing::write_bytes;

struct Corrupt {
  const char* label;
  std::string bytes;
  ErrorCode code;
  const char* must_mention;  // substring of the message besides the path ("" = none)
};

std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
}

std::vector<Corrupt> corrupt_cases() {
  const std::string d8(8, '\x11');
  std::vector<Corrupt> c;
  c.push_back({"empty file", "", ErrorCode::kCorruptData, "shorter than"});
  c.push_back({"7 bytes", std::string(7, '\0'), ErrorCode::kCorruptData, "shorter than"});
  c.push_back({"header longer than file", testing::le64(100) + "{}", ErrorCode::kCorruptData, "exceeds the file"});
  c.push_back({"huge header length", testing::le64(uint64_t{1} << 40) + "{}", ErrorCode::kCorruptData, "limit"});
  c.push_back({"max header length", testing::le64(~uint64_t{0}) + "{}", ErrorCode::kCorruptData, "limit"});
  c.push_back({"truncated JSON", raw_safetensors(R"({"a":{"dtype":"U8")", ""), ErrorCode::kCorruptData, "JSON"});
  c.push_back({"not JSON", raw_safetensors("hello!!!", ""), ErrorCode::kCorruptData, "JSON"});
  c.push_back({"trailing garbage", raw_safetensors("{} x", ""), ErrorCode::kCorruptData, "JSON"});
  c.push_back({"JSON array", raw_safetensors("[1,2]   ", ""), ErrorCode::kCorruptData, "JSON object"});
  c.push_back({"leading whitespace", raw_safetensors(" {}", ""), ErrorCode::kCorruptData, "JSON object"});
  c.push_back({"empty header", raw_safetensors("", ""), ErrorCode::kCorruptData, "JSON object"});
  c.push_back({"invalid UTF-8", raw_safetensors("{\"\xff\xfe\":1}", ""), ErrorCode::kCorruptData, "JSON"});
  c.push_back({"entry not object", raw_safetensors(R"({"w":[1,2]})", ""), ErrorCode::kCorruptData, "'w'"});
  c.push_back({"missing dtype", raw_safetensors(R"({"w":{"shape":[8],"data_offsets":[0,8]}})", d8),
               ErrorCode::kCorruptData, "'dtype'"});
  c.push_back({"dtype not string", raw_safetensors(R"({"w":{"dtype":4,"shape":[8],"data_offsets":[0,8]}})", d8),
               ErrorCode::kCorruptData, "'dtype'"});
  c.push_back({"unknown dtype", raw_safetensors(R"({"w":)" + entry("Q4", "[8]", "[0,8]") + "}", d8),
               ErrorCode::kUnsupported, "Q4"});
  c.push_back({"missing shape", raw_safetensors(R"({"w":{"dtype":"U8","data_offsets":[0,8]}})", d8),
               ErrorCode::kCorruptData, "'shape'"});
  c.push_back({"shape not array", raw_safetensors(R"({"w":)" + entry("U8", "8", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "'shape'"});
  c.push_back({"negative dim", raw_safetensors(R"({"w":)" + entry("U8", "[-8]", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "negative"});
  c.push_back({"float dim", raw_safetensors(R"({"w":)" + entry("U8", "[8.0]", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "'shape'"});
  c.push_back({"string dim", raw_safetensors(R"({"w":)" + entry("U8", R"(["8"])", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "'shape'"});
  c.push_back({"numel overflow",
               raw_safetensors(R"({"w":)" + entry("F32", "[4294967296,4294967296]", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "overflow"});
  c.push_back({"bytes overflow",
               raw_safetensors(R"({"w":)" + entry("F64", "[4611686018427387904]", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "overflow"});
  // A zero dimension makes the tensor empty, but the other dimensions'
  // product must still fit in int64 (numel() multiplies left to right).
  c.push_back({"nonzero dims overflow before a zero",
               raw_safetensors(R"({"w":)" + entry("U8", "[4611686018427387904,2,0]", "[0,0]") + "}", d8),
               ErrorCode::kCorruptData, "overflow"});
  c.push_back({"dim beyond int64",
               raw_safetensors(R"({"w":)" + entry("U8", "[0,18446744073709551615]", "[0,0]") + "}", d8),
               ErrorCode::kCorruptData, "overflow"});
  c.push_back({"missing offsets", raw_safetensors(R"({"w":{"dtype":"U8","shape":[8]}})", d8),
               ErrorCode::kCorruptData, "'data_offsets'"});
  c.push_back({"three offsets", raw_safetensors(R"({"w":)" + entry("U8", "[8]", "[0,8,8]") + "}", d8),
               ErrorCode::kCorruptData, "'data_offsets'"});
  c.push_back({"negative offset", raw_safetensors(R"({"w":)" + entry("U8", "[8]", "[-1,7]") + "}", d8),
               ErrorCode::kCorruptData, "'data_offsets'"});
  c.push_back({"end before begin", raw_safetensors(R"({"w":)" + entry("U8", "[0]", "[8,0]") + "}", d8),
               ErrorCode::kCorruptData, "end before begin"});
  c.push_back({"wrong length", raw_safetensors(R"({"w":)" + entry("F32", "[3]", "[0,8]") + "}", d8),
               ErrorCode::kCorruptData, "12 bytes"});
  c.push_back({"offsets past data", raw_safetensors(R"({"w":)" + entry("U8", "[16]", "[0,16]") + "}", d8),
               ErrorCode::kCorruptData, "past the end"});
  c.push_back({"overlap",
               raw_safetensors(R"({"a":)" + entry("U8", "[6]", "[0,6]") + R"(,"b":)" + entry("U8", "[4]", "[4,8]") + "}",
                               d8),
               ErrorCode::kCorruptData, "overlaps"});
  c.push_back({"alias (same range)",
               raw_safetensors(R"({"a":)" + entry("U8", "[8]", "[0,8]") + R"(,"b":)" + entry("U8", "[8]", "[0,8]") + "}",
                               d8),
               ErrorCode::kCorruptData, "overlaps"});
  c.push_back({"gap",
               raw_safetensors(R"({"a":)" + entry("U8", "[2]", "[0,2]") + R"(,"b":)" + entry("U8", "[4]", "[4,8]") + "}",
                               d8),
               ErrorCode::kCorruptData, "gap"});
  c.push_back({"trailing data", raw_safetensors(R"({"a":)" + entry("U8", "[4]", "[0,4]") + "}", d8),
               ErrorCode::kCorruptData, "after the last tensor"});
  c.push_back({"data but no tensors", raw_safetensors("{}", d8), ErrorCode::kCorruptData, "after the last tensor"});
  c.push_back({"duplicate names",
               raw_safetensors(R"({"a":)" + entry("U8", "[4]", "[0,4]") + R"(,"a":)" + entry("U8", "[4]", "[4,8]") + "}",
                               d8),
               ErrorCode::kCorruptData, "duplicate key 'a'"});
  c.push_back({"duplicate field", raw_safetensors(R"({"a":{"dtype":"U8","dtype":"I8","shape":[8],"data_offsets":[0,8]}})", d8),
               ErrorCode::kCorruptData, "duplicate key 'dtype'"});
  c.push_back({"metadata not object", raw_safetensors(R"({"__metadata__":[1]})", ""), ErrorCode::kCorruptData,
               "__metadata__"});
  c.push_back({"metadata value not string", raw_safetensors(R"({"__metadata__":{"k":1}})", ""),
               ErrorCode::kCorruptData, "'k'"});
  return c;
}

TEST(SafetensorsCorrupt, EachClassIsAnErrorNamingFileAndTensor) {
  TempDir dir;
  int i = 0;
  for (const Corrupt& c : corrupt_cases()) {
    SCOPED_TRACE(c.label);
    const std::string path = dir.file("bad" + std::to_string(i++) + ".safetensors");
    write_bytes(path, c.bytes);
    auto f = SafetensorsFile::open(path);
    ASSERT_FALSE(f.is_ok());
    EXPECT_EQ(f.status().code(), c.code) << f.status().to_string();
    EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().message();
    EXPECT_NE(f.status().message().find(c.must_mention), std::string::npos) << f.status().message();
    // Through the model API the same file fails the same way.
    auto m = SafetensorsModel::open(path);
    ASSERT_FALSE(m.is_ok());
    EXPECT_EQ(m.status().code(), c.code);
  }
}

TEST(SafetensorsCorrupt, TensorErrorsNameTheTensor) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  write_bytes(path, raw_safetensors(R"({"ok":)" + entry("U8", "[4]", "[0,4]") + R"(,"model.layers.3.bad":)" +
                                        entry("F32", "[2]", "[4,12]") + "}",
                                    std::string(12, '\0')));
  ASSERT_TRUE(SafetensorsFile::open(path).is_ok());
  write_bytes(path, raw_safetensors(R"({"ok":)" + entry("U8", "[4]", "[0,4]") + R"(,"model.layers.3.bad":)" +
                                        entry("F32", "[3]", "[4,12]") + "}",
                                    std::string(12, '\0')));
  auto f = SafetensorsFile::open(path);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.status().message().find("tensor 'model.layers.3.bad'"), std::string::npos) << f.status().message();
}

TEST(SafetensorsCorrupt, ValidEdgeCasesAreAccepted) {
  TempDir dir;
  const std::string path = dir.file("edge.safetensors");
  // Whitespace padding, zero-size tensors sharing offsets, a scalar, null metadata,
  // unknown extra fields in an entry (the reference ignores them).
  write_bytes(path, raw_safetensors(R"({"__metadata__":null,"z1":)" + entry("F32", "[0]", "[0,0]") + R"(,"s":)" +
                                        R"({"dtype":"I16","shape":[],"data_offsets":[0,2],"extra":true})" + R"(,"z2":)" +
                                        entry("BF16", "[4,0]", "[2,2]") + "}   ",
                                    std::string("\x05\x00", 2)));
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors().size(), 3u);
  const TensorView* s = (*f)->find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(s->data[0], 5);
  EXPECT_EQ((*f)->find("z2")->numel(), 0);
}

TEST(SafetensorsCorrupt, TruncationsAndByteFlipsNeverCrash) {
  TempDir dir;
  SafetensorsWriter w;
  std::mt19937_64 rng(99);
  std::vector<uint8_t> data(64);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  ASSERT_TRUE(w.add("model.layers.0.mlp.experts.0.w1.weight", DType::kBF16, {4, 4}, {data.data(), 32}).is_ok());
  ASSERT_TRUE(w.add("b", DType::kF32, {2, 2}, {data.data() + 32, 16}).is_ok());
  ASSERT_TRUE(w.add("c", DType::kU8, {16}, {data.data() + 48, 16}).is_ok());
  w.set_metadata("format", "pt");
  const std::string good_path = dir.file("good.safetensors");
  ASSERT_TRUE(w.write(good_path, {SafetensorsWriter::Order::kAsAdded, false}).is_ok());
  const std::string good = testing::read_bytes(good_path);
  const std::string path = dir.file("mutant.safetensors");

  auto check = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    auto f = SafetensorsFile::open(path);
    if (!f.is_ok()) {
      EXPECT_FALSE(f.status().message().empty());
      return false;
    }
    for (const TensorView& t : (*f)->tensors()) {
      EXPECT_LE(t.file_offset + t.nbytes, bytes.size());
      EXPECT_EQ(static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype), t.nbytes);
    }
    return true;
  };
  // Every truncation is an error (the data section loses bytes or the header breaks).
  // (Every length up to 24, then a stride: each file write costs a few ms.)
  for (size_t n = 0; n < good.size(); n += (n < 24 ? 1 : 7))
    EXPECT_FALSE(check(good.substr(0, n))) << "truncated to " << n;
  EXPECT_FALSE(check(good.substr(0, good.size() - 1)));
  EXPECT_TRUE(check(good));
  int accepted = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string m = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) m[rng() % m.size()] = static_cast<char>(rng());
    accepted += check(m);
  }
  // Flips inside the data section keep the file valid; most others do not.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 200);
}

TEST(SafetensorsCorrupt, MissingFileAndDirectory) {
  TempDir dir;
  auto f = SafetensorsFile::open(dir.file("nope.safetensors"));
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kNotFound);
  auto d = SafetensorsFile::open(dir.path());
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kIoError);
}

}  // namespace
}  // namespace submoe::io
