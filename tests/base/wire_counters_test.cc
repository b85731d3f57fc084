#include "base/wire_counters.h"

#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fanout::base {
namespace {

TEST(WireCountersTest, AChildProcessAddsToThePageItsParentReads) {
  auto w = WireCounters::Create();
  ASSERT_TRUE(w.ok()) << w.status();
  (*w)->Add(WireKind::kSampling, 100, 2000);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // a sampler process: maps the trainer's page from its descriptor
    auto mine = WireCounters::Map(dup((*w)->fd()));
    if (!mine.ok()) _exit(1);
    for (int i = 0; i < 1000; ++i) (*mine)->Add(WireKind::kRowPulls, 10, 300);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const WireTotals t = (*w)->Read();
  EXPECT_EQ(t.sent[static_cast<int>(WireKind::kSampling)], 100);
  EXPECT_EQ(t.received[static_cast<int>(WireKind::kRowPulls)], 300000);
  EXPECT_EQ(t.total_sent(), 100 + 10000);
  EXPECT_EQ(t.total(), 100 + 2000 + 10000 + 300000);
  EXPECT_EQ(t.Describe(), "0.3 MB (sampling 0.0, row_pulls 0.3)");
}

TEST(WireCountersTest, TheExitLineRoundTripsAndSumsPerMachine) {
  WireTotals t;
  t.sent[static_cast<int>(WireKind::kCollectives)] = 5'000'000'000;
  t.received[static_cast<int>(WireKind::kControl)] = 7;
  const std::string line = "[m1 trainer 0] " + WireLine(t);
  std::optional<WireTotals> back = ParseWireLine(line);
  ASSERT_TRUE(back.has_value()) << line;
  EXPECT_EQ(back->sent, t.sent);
  EXPECT_EQ(back->received, t.received);
  WireTotals sum = *back;
  sum += *back;
  EXPECT_EQ(sum.total(), 2 * t.total());
  EXPECT_EQ((sum - t).total(), t.total());
  EXPECT_FALSE(ParseWireLine("fanout-memory: role=trainer peak_pss=1").has_value());
  EXPECT_FALSE(ParseWireLine("fanout-wire: sampling=x").has_value());
}

}  // namespace
}  // namespace fanout::base
