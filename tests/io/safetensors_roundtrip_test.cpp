// Writer -> reader round trips, and agreement with the reference implementation
// (tests/io/data/reference_golden.safetensors, written by the `safetensors` pip
// package; see make_reference_golden.py there).
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "io/io_test_util.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

using testing::read_bytes;
using testing::TempDir;

const std::string kGolden = std::string(SUBMOE_SOURCE_DIR) + "/tests/io/data/reference_golden.safetensors";

std::vector<uint8_t> random_bytes(DType d, size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  if (d == DType::kBool)
    for (auto& b : v) b &= 1;
  return v;
}

uint64_t numel_of(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

TEST(DType, NamesSizesRoundTrip) {
  EXPECT_EQ(all_dtypes().size(), 15u);
  for (DType d : all_dtypes()) {
    auto back = parse_dtype(dtype_name(d));
    ASSERT_TRUE(back.is_ok()) << dtype_name(d);
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kF64), 8u);
  EXPECT_EQ(dtype_size(DType::kU64), 8u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_size(DType::kI16), 2u);
  EXPECT_EQ(dtype_size(DType::kU32), 4u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_EQ(dtype_size(DType::kF8E4M3), 1u);
  EXPECT_EQ(dtype_name(DType::kBool), "BOOL");
  EXPECT_EQ(dtype_name(DType::kF8E5M2), "F8_E5M2");
  for (const char* bad : {"f32", "FP32", "", "BF16 ", "F8_E8M0", "C64"}) {
    auto r = parse_dtype(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  }
}

TEST(SafetensorsRoundTrip, EveryDtypeAndOddShapes) {
  TempDir dir;
  std::mt19937_64 rng(1234);
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {3, 0, 5}, {7}, {5, 13}, {2, 3, 4}, {1, 1, 1, 3}};
  SafetensorsWriter w;
  struct Want {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Want> want;
  for (DType d : all_dtypes()) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      Want x{std::string(dtype_name(d)) + ".shape" + std::to_string(s), d, shapes[s], {}};
      x.bytes = random_bytes(d, numel_of(x.shape) * dtype_size(d), rng);
      ASSERT_TRUE(w.add(x.name, d, x.shape, x.bytes).is_ok());
      want.push_back(std::move(x));
    }
  }
  // Insertion order must survive (mixed dtypes, so pointers are often unaligned).
  std::shuffle(want.begin(), want.end(), rng);
  SafetensorsWriter shuffled;
  for (const Want& x : want) ASSERT_TRUE(shuffled.add(x.name, x.dtype, x.shape, x.bytes).is_ok());
  shuffled.set_metadata("format", "pt");
  shuffled.set_metadata("unicode", "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93");
  const std::string path = dir.file("rt.safetensors");
  ASSERT_TRUE(shuffled.write(path).is_ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const std::string bytes = read_bytes(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ((*f)->data_offset(), 8 + header_len);
  EXPECT_EQ((*f)->file_size(), bytes.size());
  EXPECT_EQ((*f)->metadata().size(), 2u);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  EXPECT_EQ((*f)->metadata().at("unicode"), "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93");

  const auto& tensors = (*f)->tensors();
  ASSERT_EQ(tensors.size(), want.size());
  // Zero-byte tensors share offsets with their neighbours, so the data order of
  // those is not observable; compare the order of the non-empty ones.
  std::vector<std::string> want_order, got_order;
  for (const Want& x : want)
    if (!x.bytes.empty()) want_order.push_back(x.name);
  for (const TensorView& t : tensors)
    if (t.nbytes) got_order.push_back(t.name);
  EXPECT_EQ(got_order, want_order);
  for (const Want& x : want) {
    const TensorView* t = (*f)->find(x.name);
    ASSERT_NE(t, nullptr) << x.name;
    EXPECT_EQ(t->dtype, x.dtype);
    EXPECT_EQ(t->shape, x.shape);
    EXPECT_EQ(t->numel(), static_cast<int64_t>(numel_of(x.shape)));
    ASSERT_EQ(t->nbytes, x.bytes.size());
    EXPECT_EQ(t->file, path);
    EXPECT_TRUE(std::equal(x.bytes.begin(), x.bytes.end(), t->data)) << x.name;
    // file_offset is what the offload store will pread from.
    ASSERT_LE(t->file_offset + t->nbytes, bytes.size());
    EXPECT_EQ(bytes.substr(t->file_offset, t->nbytes), std::string(x.bytes.begin(), x.bytes.end())) << x.name;
  }
  EXPECT_EQ((*f)->find("no such tensor"), nullptr);
}

TEST(SafetensorsRoundTrip, GeneratedAndBorrowedTensors) {
  TempDir dir;
  std::vector<float> borrowed(17);
  for (size_t i = 0; i < borrowed.size(); ++i) borrowed[i] = static_cast<float>(i) * 0.25f - 1.0f;
  SafetensorsWriter w;
  ASSERT_TRUE(w.add_borrowed("b", DType::kF32, {17},
                             {reinterpret_cast<const uint8_t*>(borrowed.data()), borrowed.size() * 4})
                  .is_ok());
  int calls = 0;
  ASSERT_TRUE(w.add_generated("g", DType::kU16, {3, 5}, [&](std::span<uint8_t> out) {
                 ++calls;
                 EXPECT_EQ(out.size(), 30u);
                 for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7);
                 return Status::ok();
               }).is_ok());
  std::vector<bf16_t> bf(4);
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = float_to_bf16(static_cast<float>(i) + 0.5f);
  ASSERT_TRUE(w.add_bf16("h", {2, 2}, bf).is_ok());
  const std::string path = dir.file("g.safetensors");
  ASSERT_TRUE(w.write(path, {SafetensorsWriter::Order::kAsAdded, /*fsync=*/false}).is_ok());
  EXPECT_EQ(calls, 1);
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->tensors()[0].name, "b");
  EXPECT_EQ((*f)->tensors()[1].name, "g");
  EXPECT_EQ((*f)->tensors()[2].name, "h");
  auto b = to_f32(*(*f)->find("b"));
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(*b, borrowed);
  const TensorView* g = (*f)->find("g");
  for (size_t i = 0; i < 30; ++i) EXPECT_EQ(g->data[i], static_cast<uint8_t>(i * 7));
  auto h = to_f32(*(*f)->find("h"));
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(*h, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
}

TEST(SafetensorsRoundTrip, HeaderBytesMatchTheReferenceLayout) {
  TempDir dir;
  SafetensorsWriter w;
  const float v[2] = {1.0f, -2.0f};
  ASSERT_TRUE(w.add_f32("t", {2}, v).is_ok());
  w.set_metadata("k", "v");
  const std::string path = dir.file("h.safetensors");
  ASSERT_TRUE(w.write(path).is_ok());
  const std::string bytes = read_bytes(path);
  const std::string json = R"({"__metadata__":{"k":"v"},"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  std::string data(8, '\0');
  std::memcpy(data.data(), v, 8);
  EXPECT_EQ(bytes, testing::raw_safetensors(padded, data));
}

// The golden's values, recomputed from the formula in make_reference_golden.py.
double golden_value(const std::string& kind, size_t i) {
  const double x = static_cast<double>(i);
  if (kind == "float") return (x - 3) * 0.5;
  if (kind == "signed") return x - 3;
  if (kind == "bool") return i % 3 == 0 ? 1 : 0;
  return x;
}

template <typename T>
T load_at(const TensorView& t, size_t i) {
  T v;
  std::memcpy(&v, t.data + i * sizeof(T), sizeof(T));
  return v;
}

TEST(SafetensorsReference, ReadsTheReferenceGolden) {
  auto f = SafetensorsFile::open(kGolden);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->metadata(), (std::map<std::string, std::string>{{"format", "np"}, {"note", "golden"}}));
  ASSERT_EQ((*f)->tensors().size(), 14u);
  struct Case {
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"f64", DType::kF64, {3}},        {"f32.matrix", DType::kF32, {2, 3}}, {"f32.scalar", DType::kF32, {}},
      {"f32.empty", DType::kF32, {0, 4}}, {"f16", DType::kF16, {5}},           {"i64", DType::kI64, {2}},
      {"u64", DType::kU64, {1, 2}},     {"i32", DType::kI32, {4}},           {"u32", DType::kU32, {3}},
      {"i16", DType::kI16, {3}},        {"u16", DType::kU16, {2, 2}},        {"i8", DType::kI8, {7}},
      {"u8", DType::kU8, {5}},          {"bool", DType::kBool, {4}},
  };
  for (const Case& c : cases) {
    const TensorView* t = (*f)->find(c.name);
    ASSERT_NE(t, nullptr) << c.name;
    EXPECT_EQ(t->dtype, c.dtype) << c.name;
    EXPECT_EQ(t->shape, c.shape) << c.name;
    const size_t n = static_cast<size_t>(t->numel());
    for (size_t i = 0; i < n; ++i) {
      double got = 0;
      std::string kind;
      switch (c.dtype) {
        case DType::kF64: got = load_at<double>(*t, i); kind = "float"; break;
        case DType::kF32: got = load_at<float>(*t, i); kind = "float"; break;
        case DType::kF16: {
          std::vector<float> all(n);
          ASSERT_TRUE(read_as_f32(*t, all).is_ok());
          got = all[i];
          kind = "float";
          break;
        }
        case DType::kI64: got = static_cast<double>(load_at<int64_t>(*t, i)); kind = "signed"; break;
        case DType::kU64: got = static_cast<double>(load_at<uint64_t>(*t, i)); kind = "unsigned"; break;
        case DType::kI32: got = load_at<int32_t>(*t, i); kind = "signed"; break;
        case DType::kU32: got = load_at<uint32_t>(*t, i); kind = "unsigned"; break;
        case DType::kI16: got = load_at<int16_t>(*t, i); kind = "signed"; break;
        case DType::kU16: got = load_at<uint16_t>(*t, i); kind = "unsigned"; break;
        case DType::kI8: got = load_at<int8_t>(*t, i); kind = "signed"; break;
        case DType::kU8: got = load_at<uint8_t>(*t, i); kind = "unsigned"; break;
        case DType::kBool: got = load_at<uint8_t>(*t, i); kind = "bool"; break;
        default: FAIL();
      }
      EXPECT_EQ(got, golden_value(kind, i)) << c.name << "[" << i << "]";
    }
  }
  // F32 through the converter too.
  auto m = to_f32(*(*f)->find("f32.matrix"));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(*m, (std::vector<float>{-1.5f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f}));
}

TEST(SafetensorsReference, WriterReproducesTheReferenceBytes) {
  auto golden = SafetensorsFile::open(kGolden);
  ASSERT_TRUE(golden.is_ok()) << golden.status().to_string();
  // Re-add the golden's tensors in a scrambled order: the reference order must
  // come from the writer, not from the input.
  std::vector<const TensorView*> ts;
  for (const TensorView& t : (*golden)->tensors()) ts.push_back(&t);
  std::mt19937 rng(7);
  std::shuffle(ts.begin(), ts.end(), rng);
  SafetensorsWriter w;
  for (const TensorView* t : ts) ASSERT_TRUE(w.add(t->name, t->dtype, t->shape, t->bytes()).is_ok());
  for (const auto& [k, v] : (*golden)->metadata()) w.set_metadata(k, v);
  TempDir dir;
  const std::string path = dir.file("ours.safetensors");
  ASSERT_TRUE(w.write(path, {SafetensorsWriter::Order::kReference, false}).is_ok());
  EXPECT_EQ(read_bytes(path), read_bytes(kGolden));
}

TEST(SafetensorsWriter, RejectsBadTensors) {
  SafetensorsWriter w;
  const uint8_t four[4] = {1, 2, 3, 4};
  ASSERT_TRUE(w.add("a", DType::kU8, {4}, four).is_ok());
  EXPECT_EQ(w.add("a", DType::kU8, {4}, four).code(), ErrorCode::kInvalidArgument);  // duplicate
  EXPECT_EQ(w.add("", DType::kU8, {4}, four).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add("__metadata__", DType::kU8, {4}, four).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add("b", DType::kU16, {4}, four).code(), ErrorCode::kInvalidArgument);  // 8 bytes needed
  EXPECT_EQ(w.add("c", DType::kU8, {-4}, four).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_generated("d", DType::kF32, {int64_t{1} << 40, int64_t{1} << 40}, [](std::span<uint8_t>) {
               return Status::ok();
             }).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.add_generated("e", DType::kF32, {1}, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(w.size(), 1u);
}

TEST(SafetensorsWriter, FailedWriteLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  testing::write_bytes(path, "old contents");
  SafetensorsWriter w;
  const uint8_t one[1] = {9};
  ASSERT_TRUE(w.add("x", DType::kU8, {1}, one).is_ok());
  ASSERT_TRUE(w.add_generated("y", DType::kU8, {8}, [](std::span<uint8_t>) {
                 return io_error("disk on fire");
               }).is_ok());
  const Status s = w.write(path);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_NE(s.message().find("'y'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("disk on fire"), std::string::npos) << s.message();
  EXPECT_EQ(read_bytes(path), "old contents");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  // A directory that does not exist cannot hold the temporary file.
  EXPECT_EQ(w.write(dir.file("missing/dir/x.safetensors")).code(), ErrorCode::kIoError);
}

TEST(SafetensorsWriter, EmptyFileRoundTrips) {
  TempDir dir;
  SafetensorsWriter w;
  const std::string path = dir.file("empty.safetensors");
  ASSERT_TRUE(w.write(path).is_ok());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_TRUE((*f)->tensors().empty());
  EXPECT_TRUE((*f)->metadata().empty());
}

}  // namespace
}  // namespace submoe::io
