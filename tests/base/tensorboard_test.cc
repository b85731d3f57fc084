#include "base/tensorboard.h"

#include <cstring>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::base {
namespace {

// The records of a TFRecord file, each frame's two checksums verified.
std::vector<std::string> ReadRecords(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), {});
  std::vector<std::string> out;
  size_t at = 0;
  while (at < all.size()) {
    EXPECT_LE(at + 12, all.size());
    uint64_t len;
    uint32_t len_crc, data_crc;
    std::memcpy(&len, all.data() + at, 8);
    std::memcpy(&len_crc, all.data() + at + 8, 4);
    EXPECT_EQ(len_crc, MaskedCrc32c(std::string_view(all.data() + at, 8)));
    const std::string data = all.substr(at + 12, len);
    std::memcpy(&data_crc, all.data() + at + 12 + len, 4);
    EXPECT_EQ(data_crc, MaskedCrc32c(data));
    out.push_back(data);
    at += 12 + len + 4;
  }
  return out;
}

TEST(TensorBoardTest, Crc32cMatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // the standard check value of CRC-32C
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(TensorBoardTest, EventsAreFramedProtosWithTheVersionFirst) {
  testing::TempDir dir;
  auto w = EventFileWriter::Open(dir.Sub("tb/run"));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->AddScalars(3, {{"train/loss", 0.5f}, {"val/acc", 0.75f}}).ok());
  EXPECT_NE((*w)->path().find("/tb/run/events.out.tfevents."), std::string::npos);
  const std::vector<std::string> records = ReadRecords((*w)->path());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  // Event{wall_time=1, step=3, summary=5{value=1{tag=1, simple_value=2}}}: byte by byte after the time.
  const std::string& e = records[1];
  ASSERT_EQ(e[0], '\x09');  // field 1, fixed64
  EXPECT_EQ(e.substr(9, 2), std::string("\x10\x03", 2));  // field 2, varint 3
  EXPECT_EQ(e[11], '\x2a');  // field 5, length-delimited
  EXPECT_NE(e.find(std::string("\x0a\x0atrain/loss\x15", 13)), std::string::npos);
  float half;
  const size_t at = e.find("train/loss") + 11;
  std::memcpy(&half, e.data() + at, 4);
  EXPECT_EQ(half, 0.5f);
  // A second writer in the same folder never reuses the file.
  auto w2 = EventFileWriter::Open(dir.Sub("tb/run"));
  ASSERT_TRUE(w2.ok()) << w2.status();
  EXPECT_NE((*w2)->path(), (*w)->path());
}

TEST(TensorBoardTest, AnUnwritableFolderIsNamed) {
  auto w = EventFileWriter::Open("/proc/version/tb");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("/proc/version/tb"), std::string::npos);
}

}  // namespace
}  // namespace fanout::base
