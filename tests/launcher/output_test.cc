#include "launcher/output.h"

#include <regex>

#include <fcntl.h>
#include <unistd.h>

#include "base/heartbeat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launcher/launcher_test_util.h"
#include "tests/testing/testing.h"

namespace fanout::launcher {
namespace {

std::vector<std::string> Split(const std::vector<std::string>& chunks, size_t max_line = 64 * 1024,
                               bool finish = true) {
  LineSplitter s(max_line);
  std::vector<std::string> lines;
  auto add = [&](std::string_view l) { lines.emplace_back(l); };
  for (const std::string& c : chunks) s.Feed(c, add);
  if (finish) s.Finish(add);
  return lines;
}

TEST(LineSplitter, LinesAcrossChunks) {
  EXPECT_EQ(Split({"a\nb", "c\n\nd"}), (std::vector<std::string>{"a", "bc", "", "d"}));
  EXPECT_EQ(Split({"x", "y", "z\n"}), (std::vector<std::string>{"xyz"}));
  EXPECT_EQ(Split({"no newline"}, 64, false), (std::vector<std::string>{}));
  EXPECT_EQ(Split({"no newline"}), (std::vector<std::string>{"no newline"}));
  EXPECT_EQ(Split({""}), (std::vector<std::string>{}));
}

TEST(LineSplitter, LongLinesAreCut) {
  EXPECT_EQ(Split({"abcdefgh\n"}, 3), (std::vector<std::string>{"abc", "def", "gh"}));
  EXPECT_EQ(Split({"ab", "cdef\nxy\n"}, 3), (std::vector<std::string>{"abc", "def", "xy"}));
  EXPECT_EQ(Split({"abc\n"}, 3), (std::vector<std::string>{"abc"}));
  EXPECT_EQ(Split({"abc", "\n"}, 3), (std::vector<std::string>{"abc"}));
}

TEST(StreamRouter, PrefixesConsoleLinesAndLogsThemPlain) {
  fanout::testing::TempDir dir;
  int console = open(dir.Sub("console").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int log = open(dir.Sub("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(console, 0);
  ASSERT_GE(log, 0);
  std::vector<std::string> seen;
  {
    StreamRouter r("[m1 server 0] ", console, log, [&](std::string_view l) { seen.emplace_back(l); });
    r.Feed("fanout-server: ready: on 1");
    r.Feed("27.0.0.1:1\nsecond\nthird, unfinished");
    r.Finish();
  }
  close(console);
  close(log);
  EXPECT_EQ(testing::ReadFile(dir.Sub("console")),
            "[m1 server 0] fanout-server: ready: on 127.0.0.1:1\n[m1 server 0] second\n"
            "[m1 server 0] third, unfinished\n");
  EXPECT_EQ(testing::ReadLog(dir.Sub("log")),
            "fanout-server: ready: on 127.0.0.1:1\nsecond\nthird, unfinished\n");
  EXPECT_EQ(seen.size(), 3u);
}

TEST(StreamRouter, HeartbeatsAreCutOutWhereverTheyFall) {
  const std::string hb(base::kHeartbeatMarker);
  fanout::testing::TempDir dir;
  int log = open(dir.Sub("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(log, 0);
  int beats = 0;
  std::vector<std::string> seen;
  {
    StreamRouter r("", -1, log, [&](std::string_view l) { seen.emplace_back(l); }, [&] { ++beats; });
    r.Feed(hb);                                     // alone
    r.Feed("epoch 1 " + hb + "| loss 0.5\n");       // in the middle of a line
    r.Feed("two" + hb + hb + "\n");                 // back to back
    r.Feed("split " + hb.substr(0, 4));             // across reads
    r.Feed(hb.substr(4) + "done\n");
    r.Feed("almost " + hb.substr(0, 3));            // a prefix that is not followed by the rest
    r.Feed("X\n");
    r.Feed(hb.substr(0, 5));                        // a prefix at the very end is kept as text
    r.Finish();
  }
  close(log);
  EXPECT_EQ(beats, 5);
  EXPECT_EQ(seen, (std::vector<std::string>{"epoch 1 | loss 0.5", "two", "split done", "almost " + hb.substr(0, 3) + "X",
                                            hb.substr(0, 5)}));
  EXPECT_EQ(testing::ReadLog(dir.Sub("log")),
            "epoch 1 | loss 0.5\ntwo\nsplit done\nalmost " + hb.substr(0, 3) + "X\n" + hb.substr(0, 5) + "\n");
}


TEST(LogStamps, TimeAndLevelOnEveryLine) {
  EXPECT_EQ(LineLevel("fanout-train: error: --lr must be > 0"), 'E');
  EXPECT_EQ(LineLevel("Fatal Python error"), 'E');
  EXPECT_EQ(LineLevel("fanout-launch: warning: servers listen beyond loopback"), 'W');
  EXPECT_EQ(LineLevel("epoch 3 | loss 0.41"), 'I');
  const std::string line = StampedLine("epoch 3");
  EXPECT_TRUE(std::regex_match(line, std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{3}Z I epoch 3\n")))
      << line;
}

}  // namespace
}  // namespace fanout::launcher
