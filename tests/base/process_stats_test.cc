// base/process_stats.h: the memory figures tools report and check against, and a tool main that
// turns running out of memory into an error line instead of an abort.
#include "base/process_stats.h"

#include <gtest/gtest.h>

#include <new>
#include <string>

namespace fanout::base {
namespace {

TEST(ProcessStatsTest, MemoryFiguresArePlausible) {
  EXPECT_GT(UsableMemoryBytes(), int64_t{64} << 20);
  EXPECT_GT(PeakRssBytes(), 0);
  EXPECT_GT(CurrentRssBytes(), 0);
  EXPECT_LE(CurrentRssBytes(), PeakRssBytes() + (int64_t{4} << 20));
}

bool unwound = false;

struct SetOnUnwind {
  ~SetOnUnwind() { unwound = true; }
};

int ThrowsBadAlloc(int, char**) {
  SetOnUnwind guard;  // a staging folder's destructor, say
  throw std::bad_alloc();
}

int ReturnsArgc(int argc, char**) { return argc; }

TEST(ProcessStatsTest, OutOfMemoryUnwindsAndIsAnErrorLine) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(MainUnwindingOutOfMemory("fanout-tool", ThrowsBadAlloc, 0, nullptr), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(unwound);
  EXPECT_EQ(err.rfind("fanout-tool: error: out of memory at ", 0), 0u) << err;
  EXPECT_NE(err.find("GiB resident; nothing was written\n"), std::string::npos) << err;
  EXPECT_EQ(MainUnwindingOutOfMemory("fanout-tool", ReturnsArgc, 3, nullptr), 3);
}

}  // namespace
}  // namespace fanout::base
