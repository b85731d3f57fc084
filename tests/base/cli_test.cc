#include "base/cli.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/status/statusor.h"
#include "base/progress.h"
#include "base/strings.h"

#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::base {
namespace {

absl::Status ParseArgs(ArgParser& p, std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("tool")};
  for (auto& a : args) argv.push_back(a.data());
  return p.Parse(static_cast<int>(argv.size()), argv.data());
}

TEST(ArgParserTest, VersionPrintsToolAndVersionAndExitsZero) {
  ArgParser p("fanout-tool", "[flags]");
  std::string s;
  p.AddString("name", &s, "a name");
  std::vector<std::string> args = {"tool", "--version"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  std::optional<int> exit = p.ParseForMain(static_cast<int>(argv.size()), argv.data());
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(*exit, 0);
  EXPECT_EQ(out, std::string("fanout-tool ") + Version() + "\n");
  EXPECT_NE(p.Usage().find("--version"), std::string::npos);
  EXPECT_NE(std::string(Version()), "");
}

TEST(ArgParserTest, ParsesEveryForm) {
  std::string s = "x", c = "a";
  int64_t i = 1;
  int k = 0;
  double f = 0.5;
  bool b = true, b2 = false;
  ArgParser p("tool", "[flags]");
  p.AddString("name", &s, "a name");
  p.AddInt("count", &i, "a count");
  p.AddInt("parts", &k, "parts");
  p.AddDouble("frac", &f, "a fraction");
  p.AddBool("flag", &b, "a flag");
  p.AddBool("other", &b2, "another");
  p.AddChoice("mode", &c, {"a", "b"}, "a mode");
  ASSERT_TRUE(ParseArgs(p, {"--name", "y", "--count=42", "--parts", "3", "--frac", "0.25", "--no-flag",
                      "--other", "--mode=b"}).ok());
  EXPECT_EQ(s, "y");
  EXPECT_EQ(i, 42);
  EXPECT_EQ(k, 3);
  EXPECT_EQ(f, 0.25);
  EXPECT_FALSE(b);
  EXPECT_TRUE(b2);
  EXPECT_EQ(c, "b");
  EXPECT_TRUE(p.WasSet("count"));
  EXPECT_NE(p.Usage().find("--count VALUE"), std::string::npos);
}

TEST(ArgParserTest, Lists) {
  std::vector<int64_t> ids;
  std::vector<float> xs;
  double d = 0;
  ArgParser p("tool", "");
  p.AddIntList("ids", &ids, "");
  p.AddFloatList("xs", &xs, "");
  p.AddDouble("d", &d, "");
  ASSERT_TRUE(ParseArgs(p, {"--ids", "7,0:3, 10", "--xs=0.5,-2", "--d", "1e-3"}).ok());
  EXPECT_EQ(ids, (std::vector<int64_t>{7, 0, 1, 2, 10}));
  EXPECT_EQ(xs, (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(d, 1e-3);
  auto bad = ParseArgs(p, {"--ids", "1,3:2"});
  EXPECT_NE(std::string(bad.message()).find("--ids: '3:2' is not an integer or an a:b range"), std::string::npos) << bad;
  EXPECT_FALSE(ParseArgs(p, {"--xs", "1,x"}).ok());
  EXPECT_FALSE(ParseArgs(p, {"--d", "1.5x"}).ok());
}

TEST(ArgParserTest, ErrorsNameTheFlag) {
  int64_t i = 0;
  std::string c = "a";
  ArgParser p("tool", "");
  p.AddInt("count", &i, "");
  p.AddChoice("mode", &c, {"a", "b"}, "");
  auto e1 = ParseArgs(p, {"--count", "many"});
  EXPECT_NE(std::string(e1.message()).find("--count: 'many' is not an integer"), std::string::npos);
  auto e2 = ParseArgs(p, {"--bogus"});
  EXPECT_NE(std::string(e2.message()).find("unknown flag --bogus"), std::string::npos);
  auto e3 = ParseArgs(p, {"--mode", "z"});
  EXPECT_NE(std::string(e3.message()).find("one of a, b"), std::string::npos);
  auto e4 = ParseArgs(p, {"--count"});
  EXPECT_NE(std::string(e4.message()).find("--count needs a value"), std::string::npos);
  auto e5 = ParseArgs(p, {"stray"});
  EXPECT_NE(std::string(e5.message()).find("unexpected argument 'stray'"), std::string::npos);
}

// An enum flag sets the enum field itself, shows its default by name, and reports the parser's
// own error under the flag's name; the field keeps its value after a bad one.
enum class Shade { kLight, kDark };
absl::StatusOr<Shade> ParseShade(std::string_view name) {
  if (name == "light") return Shade::kLight;
  if (name == "dark") return Shade::kDark;
  return absl::InvalidArgumentError(StrCat("unknown shade '", name, "': expected light or dark"));
}
std::string_view ShadeName(Shade s) { return s == Shade::kLight ? "light" : "dark"; }

TEST(ArgParserTest, EnumFlagsSetTheEnumAndNameTheFlagInErrors) {
  Shade shade = Shade::kLight;
  ArgParser p("tool", "");
  p.AddEnum("shade", &shade, "how dark", ParseShade, ShadeName);
  EXPECT_NE(p.Usage().find("how dark [default: light]"), std::string::npos) << p.Usage();
  ASSERT_TRUE(ParseArgs(p, {"--shade", "dark"}).ok());
  EXPECT_EQ(shade, Shade::kDark);
  EXPECT_TRUE(p.WasSet("shade"));
  ArgParser q("tool", "");
  Shade other = Shade::kDark;
  q.AddEnum("shade", &other, "", ParseShade, ShadeName);
  absl::Status bad = ParseArgs(q, {"--shade=grey"});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.message()).find("--shade: unknown shade 'grey': expected light or dark"), std::string::npos)
      << bad;
  EXPECT_EQ(other, Shade::kDark);
}

TEST(ArgParserTest, BoolChoiceTakesItsTwoNamesOnly) {
  bool half = false;
  ArgParser p("tool", "");
  p.AddBoolChoice("wire", &half, "float32", "bfloat16", "rows on the wire");
  EXPECT_NE(p.Usage().find("rows on the wire (float32|bfloat16) [default: float32]"), std::string::npos) << p.Usage();
  ASSERT_TRUE(ParseArgs(p, {"--wire", "bfloat16"}).ok());
  EXPECT_TRUE(half);
  ASSERT_TRUE(ParseArgs(p, {"--wire=float32"}).ok());
  EXPECT_FALSE(half);
  absl::Status bad = ParseArgs(p, {"--wire", "true"});
  EXPECT_NE(std::string(bad.message()).find("--wire: 'true' is not one of float32, bfloat16"), std::string::npos)
      << bad;
}

// Integer flags state their range where they are declared: a value outside it is a usage error
// naming the flag, the range and the value, and leaves the bound field alone.
TEST(ArgParserTest, IntegerRangesAreTheParsers) {
  int64_t at_least_one = 5;
  int small = 3;
  ArgParser p("tool", "");
  p.AddInt("count", &at_least_one, "", 1);
  p.AddInt("level", &small, "", -1, 9);
  EXPECT_EQ(ParseArgs(p, {"--count", "0"}).message(), "--count must be >= 1, got 0");
  EXPECT_EQ(at_least_one, 5);
  EXPECT_EQ(ParseArgs(p, {"--level", "10"}).message(), "--level must be >= -1 and <= 9, got 10");
  EXPECT_EQ(ParseArgs(p, {"--level", "-2"}).message(), "--level must be >= -1 and <= 9, got -2");
  EXPECT_NE(ParseArgs(p, {"--level", "99999999999"}).message().find("is not a 32-bit integer"), std::string::npos);
  EXPECT_TRUE(ParseArgs(p, {"--count", "9223372036854775807", "--level", "-1"}).ok());
  EXPECT_EQ(at_least_one, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(small, -1);
}

// Issue 11: --lr nan parsed as a number and reached LibTorch; no flag means anything by nan/inf.
TEST(ArgParserTest, ByteSizesTakeBinarySuffixes) {
  for (auto [text, want] : std::vector<std::pair<std::string, int64_t>>{
           {"0", 0}, {"1048576", 1 << 20}, {"6K", 6 << 10}, {"512M", int64_t{512} << 20},
           {"4G", int64_t{4} << 30}, {"4GiB", int64_t{4} << 30}, {"2T", int64_t{2} << 40}}) {
    ArgParser p("tool", "");
    int64_t bytes = -1;
    p.AddBytes("cache-bytes", &bytes, "");
    ASSERT_TRUE(ParseArgs(p, {"--cache-bytes", text}).ok()) << text;
    EXPECT_EQ(bytes, want) << text;
  }
  for (const char* bad : {"", "G", "-1", "4g", "4 G", "1.5G", "4GB", "9000000000T"}) {
    ArgParser p("tool", "");
    int64_t bytes = 7;
    p.AddBytes("cache-bytes", &bytes, "");
    absl::Status s = ParseArgs(p, {"--cache-bytes", bad});
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("--cache-bytes"), std::string::npos) << s;
    EXPECT_EQ(bytes, 7) << bad;
  }
}

TEST(ArgParserTest, DoublesMustBeFinite) {
  double d = 0.5;
  ArgParser p("tool", "");
  p.AddDouble("lr", &d, "");
  for (const char* v : {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999"}) {
    absl::Status s = ParseArgs(p, {"--lr", v});
    EXPECT_FALSE(s.ok()) << v;
    EXPECT_NE(std::string(s.message()).find("--lr"), std::string::npos) << s;
  }
  EXPECT_EQ(d, 0.5) << "a refused value is not stored";
  EXPECT_TRUE(ParseArgs(p, {"--lr", "-1e-3"}).ok()) << "ranges are the tool's to check";
  EXPECT_EQ(d, -1e-3);
}


TEST(ArgParserTest, AliasesDefaultTextsAndRequiredFlagsInHelp) {
  int threads = 1, parts = 0;
  ArgParser p("tool", "[flags]");
  p.AddInt("num-threads", &threads, "threads");
  p.AddAlias("threads", "num-threads");
  p.SetDefaultText("num-threads", "cores / trainers");
  p.AddInt("num-parts", &parts, "parts");
  p.MarkRequired("num-parts");
  ASSERT_TRUE(ParseArgs(p, {"--threads", "3"}).ok());
  EXPECT_EQ(threads, 3);
  EXPECT_TRUE(p.WasSet("num-threads"));
  const std::string help = p.Usage();
  EXPECT_NE(help.find("threads [default: cores / trainers] (also --threads)"), std::string::npos) << help;
  EXPECT_NE(help.find("parts [required]"), std::string::npos) << help;
  // An error about an alias names the flag as typed and what it stands for.
  absl::Status st = ParseArgs(p, {"--threads", "x"});
  EXPECT_NE(std::string(st.message()).find("--threads (= --num-threads): "), std::string::npos) << st;
}

TEST(ArgParserTest, UnknownFlagsSuggestTheNearestAndUsageErrorsAreOneLine) {
  int epochs = 1;
  double lr = 0.1;
  ArgParser p("fanout-tool", "[flags]");
  p.AddInt("epochs", &epochs, "epochs");
  p.AddDouble("lr", &lr, "learning rate");
  EXPECT_NE(std::string(ParseArgs(p, {"--epoch", "3"}).message()).find("unknown flag --epoch (did you mean --epochs?)"),
            std::string::npos);
  EXPECT_NE(std::string(ParseArgs(p, {"--lrr", "3"}).message()).find("(did you mean --lr?)"), std::string::npos);
  EXPECT_EQ(std::string(ParseArgs(p, {"--frobnicate"}).message()), "unknown flag --frobnicate");
  std::vector<std::string> args = {"tool", "--epoch", "3"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  std::optional<int> exit = p.ParseForMain(static_cast<int>(argv.size()), argv.data());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(exit, 2);
  EXPECT_EQ(err, "fanout-tool: error: unknown flag --epoch (did you mean --epochs?); 'fanout-tool --help' lists the flags\n");
}


TEST(ProgressMeterTest, RateEtaAndQuietness) {
  EXPECT_EQ(FormatDuration(5.4), "5s");
  EXPECT_EQ(FormatDuration(62), "1m02s");
  EXPECT_EQ(FormatDuration(7500), "2h05m");
  ProgressMeter off("fanout-train", "epoch 3", 4000, "steps", ProgressMode::kOff, 0);
  EXPECT_EQ(off.Text(1000, 20), "fanout-train: epoch 3 1000/4000 steps (25%), 50.0 steps/s, ETA 1m00s");
  EXPECT_EQ(off.Text(4000, 80), "fanout-train: epoch 3 4000/4000 steps (100%), 50.0 steps/s");
  ::testing::internal::CaptureStderr();
  off.Set(10);
  {
    ProgressMeter on("fanout-partition", "relabel", -1, "edges", ProgressMode::kOn, 0);
    on.Set(300);
    on.Set(400);  // within the 10 s of a log line: not printed
    on.Clear();   // another line goes out; the meter stays on
    on.Set(500);
    on.Finish();
    on.Set(600);  // finished: silent
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("fanout-partition: relabel 300 edges, ", 0), 0u) << err;
  EXPECT_NE(err.find("\nfanout-partition: relabel 500 edges, "), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
  ProgressMode mode = ProgressMode::kOff;
  EXPECT_TRUE(ParseProgressMode("on", &mode));
  EXPECT_EQ(mode, ProgressMode::kOn);
  EXPECT_FALSE(ParseProgressMode("yes", &mode));
}


TEST(ProgressMeterTest, ElapsedTickerSpeaksEveryPeriodUntilStopped) {
  ::testing::internal::CaptureStderr();
  ElapsedTicker ticker("fanout-partition", "METIS still running", 0.05);
  // Waits for the ticks themselves, however slowly a loaded machine schedules them.
  const bool ticked = testing::WaitUntil([&] { return ticker.ticks() >= 2; }, std::chrono::seconds(60));
  ticker.Stop();  // joins the ticker's thread: nothing is printed after this
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(ticked) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), ticker.ticks()) << err;
  EXPECT_EQ(err.rfind("fanout-partition: METIS still running: 0s so far\n", 0), 0u) << err;
}

}  // namespace
}  // namespace fanout::base
