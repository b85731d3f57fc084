#include "base/text_reader.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::base {
namespace {

using testing::TempDir;

std::vector<std::string> ReadAll(const std::string& path) {
  auto r = LineReader::Open(path);
  EXPECT_TRUE(r.ok());
  std::vector<std::string> out;
  std::string_view line;
  while (true) {
    auto more = (*r)->Next(&line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    out.emplace_back(line);
  }
  return out;
}

TEST(LineReaderTest, ReadsPlainAndGzipTheSame) {
  TempDir dir;
  std::string long_line(3 << 20, 'x');  // longer than the read buffer
  std::string text = "a,b\r\nc\n\n" + long_line + "\nlast";
  testing::WriteText(dir.Sub("t.csv"), text);
  testing::WriteGz(dir.Sub("t.csv.gz"), text);
  std::vector<std::string> want = {"a,b", "c", "", long_line, "last"};
  EXPECT_EQ(ReadAll(dir.Sub("t.csv")), want);
  EXPECT_EQ(ReadAll(dir.Sub("t.csv.gz")), want);
}

TEST(LineReaderTest, ReportsTruncatedGzipAndMissingFiles) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + "," + std::to_string(i * 7) + "\n";
  testing::WriteGz(dir.Sub("full.gz"), text);
  std::string bytes;
  {
    FILE* f = std::fopen(dir.Sub("full.gz").c_str(), "rb");
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  }
  testing::WriteText(dir.Sub("cut.gz"), bytes.substr(0, bytes.size() / 2));
  auto r = LineReader::Open(dir.Sub("cut.gz"));
  ASSERT_TRUE(r.ok());
  std::string_view line;
  absl::Status failure;
  while (true) {
    auto more = (*r)->Next(&line);
    if (!more.ok()) {
      failure = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "a truncated gzip file must not read as a clean end of file";
  }
  EXPECT_NE(std::string(failure.message()).find("cut.gz"), std::string::npos) << failure;
  EXPECT_NE(std::string(failure.message()).find("truncated"), std::string::npos) << failure;

  auto missing = LineReader::Open(dir.Sub("nope.csv"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(ParseTest, NumbersAndFields) {
  int64_t i;
  float f;
  EXPECT_TRUE(ParseInt64("42", &i) && i == 42);
  EXPECT_TRUE(ParseInt64("-7", &i) && i == -7);
  EXPECT_FALSE(ParseInt64("4x", &i));
  EXPECT_FALSE(ParseInt64("", &i));
  EXPECT_FALSE(ParseInt64("1.5", &i));
  EXPECT_TRUE(ParseFloat("1.5e-3", &f) && f == 1.5e-3f);
  EXPECT_TRUE(ParseFloat("nan", &f) && f != f);
  EXPECT_FALSE(ParseFloat("abc", &f));
  std::vector<std::string_view> fields;
  SplitFields("1, 2,3", &fields);
  EXPECT_EQ(fields, (std::vector<std::string_view>{"1", "2", "3"}));
  SplitFields("4\t5", &fields);
  EXPECT_EQ(fields, (std::vector<std::string_view>{"4", "5"}));
  SplitFields("  6   7 ", &fields);
  EXPECT_EQ(fields, (std::vector<std::string_view>{"6", "7"}));
}

}  // namespace
}  // namespace fanout::base
