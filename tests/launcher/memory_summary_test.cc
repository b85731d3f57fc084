// launcher/memory_summary.h: each machine's processes' peak memory, summed as fanout-launch
// prints it at the end of a job.
#include "launcher/memory_summary.h"

#include <gtest/gtest.h>

namespace fanout::launcher {
namespace {

TEST(MemorySummaryTest, TheLauncherSumsEachMachinesProcesses) {
  MemorySummary s;
  EXPECT_TRUE(s.empty());
  base::MemoryUse a;
  a.pss = 1'500'000'000;
  a.topology = 400'000'000;
  base::MemoryUse b;
  b.pss = 250'000'000;
  b.heap = 250'000'000;
  s.Add(0, "10.0.0.1", {"server", a});
  s.Add(0, "10.0.0.1", {"sampler", b});
  s.Add(0, "10.0.0.1", {"sampler", b});
  s.Add(1, "10.0.0.2", {"trainer", b});
  EXPECT_EQ(s.PeakPss(0), 2'000'000'000);
  EXPECT_EQ(s.PeakPss(1), 250'000'000);
  EXPECT_EQ(s.PeakPss(2), 0);
  const std::vector<std::string> lines = s.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "machine 0 (10.0.0.1): peak PSS 2.00 GB summed over 3 processes' own peaks (2 samplers: 0.50, "
                      "1 server: 1.50); topology 0.40, features 0.00, shared memory 0.00, heap 0.50, code 0.00, other 0.00");
  EXPECT_EQ(lines[1].rfind("machine 1 (10.0.0.2): peak PSS 0.25 GB summed over 1 process's own peaks (1 trainer: 0.25)", 0),
            0u)
      << lines[1];

  // Sampled together, the largest sample is the machine's peak; the reported peaks follow.
  base::MemoryUse t1;
  t1.pss = 1'200'000'000;
  t1.topology = 300'000'000;
  base::MemoryUse t2 = t1;
  t2.pss = 900'000'000;
  s.AddSample(0, "10.0.0.1", t1, 4);
  s.AddSample(0, "10.0.0.1", t2, 4);
  EXPECT_EQ(s.PeakPss(0), 1'200'000'000);
  EXPECT_EQ(s.Lines()[0], "machine 0 (10.0.0.1): peak PSS 1.20 GB of 4 processes sampled together (topology 0.30, "
                          "features 0.00, shared memory 0.00, heap 0.00, code 0.00, other 0.00); their own peaks: "
                          "2 samplers: 0.50, 1 server: 1.50 (sum 2.00)");
}

}  // namespace
}  // namespace fanout::launcher
