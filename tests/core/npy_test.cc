#include "core/npy.h"

#include <cstring>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::core {
namespace {

using testing::TempDir;

template <typename T>
void RoundTrip(const std::string& path, std::vector<T> values, std::vector<int64_t> shape) {
  ASSERT_TRUE(WriteNpy(path, DTypeOf<T>(), shape, values.data()).ok());
  auto a = NpyArray::Map(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype(), DTypeOf<T>());
  EXPECT_EQ(a->shape(), shape);
  EXPECT_TRUE(a->is_mapped());
  ASSERT_EQ(a->nbytes(), values.size() * sizeof(T));
  // (memcmp with an empty vector's null data() is undefined even for 0 bytes; UBSan says so.)
  if (a->nbytes() > 0) {
    EXPECT_EQ(0, std::memcmp(a->data(), values.data(), a->nbytes()));
  }
}

TEST(NpyTest, RoundTripsEveryDtypeAndShape) {
  TempDir dir;
  RoundTrip<int64_t>(dir.Sub("a.npy"), {1, -2, 3, 1LL << 40, 5, 6}, {3, 2});
  RoundTrip<int32_t>(dir.Sub("b.npy"), {7, 8, 9}, {3});
  RoundTrip<float>(dir.Sub("c.npy"), {1.5f, -2.25f, 0, 4, 5, 6, 7, 8}, {2, 2, 2});
  RoundTrip<double>(dir.Sub("d.npy"), {3.14}, {1});
  RoundTrip<uint8_t>(dir.Sub("e.npy"), {0, 1, 255}, {3});
  RoundTrip<int8_t>(dir.Sub("f.npy"), {-1, 1}, {2});
  RoundTrip<int64_t>(dir.Sub("empty.npy"), {}, {0, 2});
}

TEST(NpyTest, HeaderIsWhatNumpyWrites) {
  // numpy 1.x writes exactly this header for np.save(f, np.zeros((2, 3), dtype='<f4')).
  std::string h = EncodeNpyHeader(DType::kFloat32, {2, 3});
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(h.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos);
  EXPECT_NE(EncodeNpyHeader(DType::kInt64, {5}).find("'shape': (5,)"), std::string::npos);
  EXPECT_EQ(h.back(), '\n');
}

TEST(NpyTest, ReadsHeadersFromOtherWriters) {
  // A version 2.0 header with '|u1', extra spaces and no trailing comma.
  TempDir dir;
  std::string dict = "{'descr':'|u1','fortran_order':False,'shape':(4,)}";
  dict.append(64 - (12 + dict.size() + 1) % 64, ' ');
  dict += "\n";
  std::string bytes("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(dict.size());
  bytes.append(reinterpret_cast<const char*>(&len), 4);
  bytes += dict + std::string("\x01\x02\x03\x04", 4);
  std::ofstream(dir.Sub("v2.npy"), std::ios::binary) << bytes;
  auto a = NpyArray::Map(dir.Sub("v2.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype(), DType::kUInt8);
  EXPECT_EQ(a->shape(), std::vector<int64_t>{4});
  EXPECT_EQ(a->data_as<uint8_t>()[3], 4);
}

void WriteRaw(const std::string& path, const std::string& dict, size_t data_bytes) {
  std::string d = dict;
  d.append(64 - (10 + d.size() + 1) % 64, ' ');
  d += "\n";
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(d.size() & 0xff));
  bytes.push_back(static_cast<char>(d.size() >> 8));
  bytes += d + std::string(data_bytes, '\0');
  std::ofstream(path, std::ios::binary) << bytes;
}

// A header another writer did not pad to alignment (found by the dataset readers' fuzzer): the
// data is copied to aligned memory instead of being read through a misaligned pointer.
TEST(NpyTest, DataAfterAnUnpaddedHeaderIsReadAligned) {
  testing::TempDir dir;
  std::string d = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }   \n";  // data at 10 + 61 = 71
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(d.size()));
  bytes.push_back(0);
  const int32_t values[3] = {7, -1, 1 << 30};
  bytes += d + std::string(reinterpret_cast<const char*>(values), sizeof(values));
  std::ofstream(dir.Sub("odd.npy"), std::ios::binary) << bytes;
  auto a = NpyArray::Map(dir.Sub("odd.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % alignof(int32_t), 0u);
  EXPECT_EQ(a->data_as<int32_t>()[0], 7);
  EXPECT_EQ(a->data_as<int32_t>()[1], -1);
  EXPECT_EQ(a->data_as<int32_t>()[2], 1 << 30);
}

TEST(NpyTest, RejectsBadFilesNamingTheProblem) {
  TempDir dir;
  WriteRaw(dir.Sub("be.npy"), "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", 16);
  WriteRaw(dir.Sub("fortran.npy"), "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 2), }", 32);
  WriteRaw(dir.Sub("short.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", 39);
  WriteRaw(dir.Sub("object.npy"), "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8);
  std::ofstream(dir.Sub("junk.npy")) << "not an array";
  struct Case {
    const char* file;
    const char* expect;
  } cases[] = {{"be.npy", "big-endian"},        {"fortran.npy", "Fortran"},
               {"short.npy", "truncated"},      {"object.npy", "unsupported .npy dtype"},
               {"junk.npy", "magic"},           {"missing.npy", "cannot open"}};
  for (const auto& c : cases) {
    auto a = NpyArray::Map(dir.Sub(c.file));
    ASSERT_FALSE(a.ok()) << c.file;
    EXPECT_NE(std::string(a.status().message()).find(c.expect), std::string::npos) << a.status();
    EXPECT_NE(std::string(a.status().message()).find(c.file), std::string::npos) << a.status();
  }
}

// Issue 11: a crafted header whose byte count wraps around 64 bits must be refused, not mapped
// (before, (2^61, 2) int64 needed "0" data bytes, so the header alone passed the size check and
// readers indexed far past the mapping).
TEST(NpyTest, RejectsShapesWhoseSizeOverflows) {
  TempDir dir;
  struct Case {
    const char* file;
    const char* dict;
    size_t data_bytes;
  } cases[] = {
      // 2^62 elements * 8 bytes = 2^65: wraps to 0.
      {"edges.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693952, 2), }",
       0},
      // 1000 * 2^62 elements: the element count itself overflows.
      {"node_feat.npy",
       "{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 4611686018427387904), }", 0},
      // A zero first axis must not hide a row size that overflows row_bytes().
      {"rows.npy",
       "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }", 0},
      // A single dimension past int64.
      {"huge.npy", "{'descr': '<u1', 'fortran_order': False, 'shape': (99999999999999999999,), }",
       0},
      // Fits in int64 elements, but header + data overflows.
      {"edge.npy", "{'descr': '<u1', 'fortran_order': False, 'shape': (9223372036854775807,), }",
       0},
  };
  for (const auto& c : cases) {
    WriteRaw(dir.Sub(c.file), c.dict, c.data_bytes);
    for (bool cow : {false, true}) {
      auto a = cow ? NpyArray::MapCopyOnWrite(dir.Sub(c.file)) : NpyArray::Map(dir.Sub(c.file));
      ASSERT_FALSE(a.ok()) << c.file << " was accepted with shape of " << a->shape().size()
                           << " dims";
      EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << a.status();
      EXPECT_NE(std::string(a.status().message()).find(c.file), std::string::npos) << a.status();
      EXPECT_NE(std::string(a.status().message()).find("not a valid .npy file"), std::string::npos)
          << a.status();
    }
  }
}

TEST(NpyTest, RejectsShapesFoundByFuzzing) {
  // Found by fuzzing (issue 11): (2^61 + 1) int64 elements are 2^64 + 8 bytes, which wrapped to
  // 8 and matched a file with 8 data bytes; a 2-D product overflowed int64 (undefined behaviour).
  TempDir dir;
  WriteRaw(dir.Sub("wrap.npy"), "{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693953,), }", 8);
  WriteRaw(dir.Sub("product.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 0);
  for (const char* file : {"wrap.npy", "product.npy"}) {
    auto a = NpyArray::Map(dir.Sub(file));
    ASSERT_FALSE(a.ok()) << file;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << a.status();
    EXPECT_NE(std::string(a.status().message()).find(file), std::string::npos) << a.status();
    EXPECT_NE(std::string(a.status().message()).find("64 bits"), std::string::npos) << a.status();
  }
}

TEST(NpyTest, StreamingWriterChecksTheDeclaredSize) {
  TempDir dir;
  auto w = NpyWriter::Open(dir.Sub("s.npy"), DType::kInt32, {2, 2});
  ASSERT_TRUE(w.ok());
  int32_t row[2] = {1, 2};
  ASSERT_TRUE((*w)->Append(row, sizeof(row)).ok());
  EXPECT_FALSE((*w)->Close().ok());  // only half written
  auto w2 = NpyWriter::Open(dir.Sub("t.npy"), DType::kInt32, {1, 2});
  ASSERT_TRUE((*w2)->Append(row, sizeof(row)).ok());
  EXPECT_FALSE((*w2)->Append(row, sizeof(row)).ok());  // past the end
  EXPECT_TRUE((*w2)->Close().ok());
}

TEST(NpyTest, AdoptAndOwned) {
  NpyArray a = NpyArray::Adopt(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(a.rows(), 2);
  EXPECT_EQ(a.row_elems(), 2);
  EXPECT_EQ(a.data_as<int64_t>()[3], 4);
  NpyArray b = std::move(a);
  EXPECT_EQ(b.data_as<int64_t>()[0], 1);
  NpyArray c = NpyArray::Owned(DType::kFloat32, {3, 4});
  EXPECT_EQ(c.nbytes(), 48u);
  EXPECT_EQ(c.mutable_data_as<float>()[11], 0.0f);
}

}  // namespace
}  // namespace fanout::core
