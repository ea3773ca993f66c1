// SafetensorsModel over single files, directories and sharded checkpoints.
#include "io/io_test_util.h"
#include "submoe/io/file_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

using testing::TempDir;

// Writes shard files: shard s holds tensors named "<prefix>.<s>.<k>" (U8, value s*16+k).
std::map<std::string, std::string> write_shards(const TempDir& dir, int shards, int per_shard) {
  std::map<std::string, std::string> weight_map;
  for (int s = 0; s < shards; ++s) {
    const std::string file = "model-" + std::to_string(s + 1) + "-of-" + std::to_string(shards) + ".safetensors";
    SafetensorsWriter w;
    for (int k = 0; k < per_shard; ++k) {
      const std::string name = "w." + std::to_string(s) + "." + std::to_string(k);
      const uint8_t v[3] = {static_cast<uint8_t>(s * 16 + k), 1, 2};
      EXPECT_TRUE(w.add(name, DType::kU8, {3}, v).is_ok());
      weight_map[name] = file;
    }
    EXPECT_TRUE(w.write(dir.file(file), {SafetensorsWriter::Order::kAsAdded, false}).is_ok());
  }
  return weight_map;
}

TEST(SafetensorsModel, SingleFileAndDirectory) {
  TempDir dir;
  SafetensorsWriter w;
  const uint8_t v[2] = {4, 5};
  ASSERT_TRUE(w.add("a", DType::kU8, {2}, v).is_ok());
  ASSERT_TRUE(w.add("b", DType::kI8, {1, 2}, v).is_ok());
  ASSERT_TRUE(w.write(dir.file("model.safetensors")).is_ok());
  for (const std::string& p : {dir.file("model.safetensors"), dir.path()}) {
    auto m = SafetensorsModel::open(p);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    EXPECT_EQ((*m)->files().size(), 1u);
    ASSERT_EQ((*m)->tensors().size(), 2u);
    EXPECT_EQ((*m)->tensors()[0]->name, "a");
    ASSERT_NE((*m)->find("b"), nullptr);
    EXPECT_EQ((*m)->find("b")->shape, (std::vector<int64_t>{1, 2}));
    EXPECT_EQ((*m)->find("c"), nullptr);
    EXPECT_EQ((*m)->bytes_on_disk(), std::filesystem::file_size(dir.file("model.safetensors")));
    EXPECT_EQ((*m)->directory(), dir.path());
  }
}

TEST(SafetensorsModel, ShardedIndex) {
  TempDir dir;
  const auto weight_map = write_shards(dir, 3, 4);
  ASSERT_TRUE(write_safetensors_index(dir.file("model.safetensors.index.json"), 36, weight_map).is_ok());
  for (const std::string& p : {dir.path(), dir.file("model.safetensors.index.json")}) {
    auto m = SafetensorsModel::open(p);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    ASSERT_EQ((*m)->files().size(), 3u);
    ASSERT_EQ((*m)->tensors().size(), 12u);
    uint64_t bytes = 0;
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ((*m)->files()[static_cast<size_t>(s)]->path(),
                dir.file("model-" + std::to_string(s + 1) + "-of-3.safetensors"));
      bytes += (*m)->files()[static_cast<size_t>(s)]->file_size();
      for (int k = 0; k < 4; ++k) {
        const std::string name = "w." + std::to_string(s) + "." + std::to_string(k);
        const TensorView* t = (*m)->find(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->data[0], s * 16 + k);
        EXPECT_EQ(t->file, (*m)->files()[static_cast<size_t>(s)]->path());
        EXPECT_EQ((*m)->tensors()[static_cast<size_t>(s * 4 + k)], t);  // shard order, then file order
      }
    }
    EXPECT_EQ((*m)->bytes_on_disk(), bytes);
  }
}

struct IndexCase {
  const char* label;
  std::string index;
  ErrorCode code;
  const char* must_mention;
};

TEST(SafetensorsModel, BrokenIndexesAreErrors) {
  TempDir dir;
  auto wm = write_shards(dir, 2, 2);
  auto dump = [](const std::map<std::string, std::string>& m) {
    std::string s = R"({"metadata":{"total_size":12},"weight_map":{)";
    bool first = true;
    for (const auto& [k, v] : m) {
      s += (first ? "" : ",") + std::string("\"") + k + "\":\"" + v + "\"";
      first = false;
    }
    return s + "}}";
  };
  std::vector<IndexCase> cases;
  {
    auto m = wm;
    m["w.9.9"] = "model-1-of-2.safetensors";
    cases.push_back({"listed tensor missing from its shard", dump(m), ErrorCode::kCorruptData, "'w.9.9'"});
  }
  {
    auto m = wm;
    m["w.0.0"] = "model-2-of-2.safetensors";
    cases.push_back({"tensor mapped to the wrong shard", dump(m), ErrorCode::kCorruptData, "'w.0.0'"});
  }
  {
    auto m = wm;
    m.erase("w.1.1");
    cases.push_back({"shard tensor not listed", dump(m), ErrorCode::kCorruptData, "'w.1.1'"});
  }
  {
    auto m = wm;
    m["w.0.0"] = "model-3-of-2.safetensors";
    cases.push_back({"shard file missing", dump(m), ErrorCode::kNotFound, "model-3-of-2.safetensors"});
  }
  {
    auto m = wm;
    m["w.0.0"] = "../model-1-of-2.safetensors";
    cases.push_back({"shard outside the directory", dump(m), ErrorCode::kCorruptData, "leaves"});
  }
  {
    auto m = wm;
    m["w.0.0"] = "/etc/passwd";
    cases.push_back({"absolute shard", dump(m), ErrorCode::kCorruptData, "relative"});
  }
  cases.push_back({"bad JSON", R"({"weight_map":{"a":)", ErrorCode::kCorruptData, "JSON"});
  cases.push_back({"no weight_map", R"({"metadata":{}})", ErrorCode::kCorruptData, "weight_map"});
  cases.push_back({"weight_map not object", R"({"weight_map":[1]})", ErrorCode::kCorruptData, "weight_map"});
  cases.push_back({"shard not string", R"({"weight_map":{"w.0.0":3}})", ErrorCode::kCorruptData, "'w.0.0'"});
  cases.push_back({"empty weight_map", R"({"weight_map":{}})", ErrorCode::kCorruptData, "empty"});
  cases.push_back({"duplicate key", R"({"weight_map":{"w.0.0":"a","w.0.0":"b"}})", ErrorCode::kCorruptData,
                   "duplicate"});
  for (const IndexCase& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_TRUE(write_file_atomic(dir.file("model.safetensors.index.json"), c.index, false).is_ok());
    auto m = SafetensorsModel::open(dir.path());
    ASSERT_FALSE(m.is_ok());
    EXPECT_EQ(m.status().code(), c.code) << m.status().to_string();
    EXPECT_NE(m.status().message().find(c.must_mention), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("model.safetensors.index.json"), std::string::npos) << m.status().message();
  }
}

TEST(SafetensorsModel, SameTensorInTwoShards) {
  TempDir dir;
  auto wm = write_shards(dir, 2, 2);
  // A third shard that repeats w.0.0.
  SafetensorsWriter w;
  const uint8_t v[3] = {0, 0, 0};
  ASSERT_TRUE(w.add("w.0.0", DType::kU8, {3}, v).is_ok());
  ASSERT_TRUE(w.add("w.x", DType::kU8, {3}, v).is_ok());
  ASSERT_TRUE(w.write(dir.file("extra.safetensors")).is_ok());
  wm["w.x"] = "extra.safetensors";
  ASSERT_TRUE(write_safetensors_index(dir.file("model.safetensors.index.json"), 0, wm).is_ok());
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(m.status().message().find("both"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("'w.0.0'"), std::string::npos) << m.status().message();
}

TEST(SafetensorsModel, DirectoryWithoutCheckpoint) {
  TempDir dir;
  auto m = SafetensorsModel::open(dir.path());
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(m.status().message().find("model.safetensors"), std::string::npos);
  auto n = SafetensorsModel::open(dir.file("absent"));
  ASSERT_FALSE(n.is_ok());
  EXPECT_EQ(n.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace submoe::io
