// The operator profile of fanout-train --profile-steps: rows per operator and caller, self times
// that exclude what an operator called, matrix products grouped by shape with their FLOPs.
#include "trainer/op_profile.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::trainer {
namespace {

const OpTime* Find(const OpProfile& p, const std::string& name, const std::string& caller = "",
                   const std::string& shape = "") {
  for (const OpTime& t : p.ops) {
    if (t.name == name && t.caller == caller && (shape.empty() || t.shape == shape)) return &t;
  }
  return nullptr;
}

TEST(OpProfileTest, ProductsAreGroupedByShapeWithTheirFlops) {
  std::string key;
  EXPECT_DOUBLE_EQ(ProductFlops("aten::mm", {{2048, 64}, {64, 32}}, &key), 2.0 * 2048 * 64 * 32);
  EXPECT_EQ(key, "[N x 64] . [64 x 32]");  // the batch-sized dimension shown as N
  EXPECT_DOUBLE_EQ(ProductFlops("aten::addmm", {{32}, {100, 64}, {64, 32}}, &key), 2.0 * 100 * 64 * 32);
  EXPECT_EQ(key, "[100 x 64] . [64 x 32]");
  EXPECT_DOUBLE_EQ(ProductFlops("aten::bmm", {{4, 10, 8}, {4, 8, 6}}, &key), 2.0 * 4 * 10 * 8 * 6);
  EXPECT_EQ(key, "4 x [10 x 8] . [8 x 6]");
  EXPECT_EQ(ProductFlops("aten::add", {{10, 10}, {10, 10}}, &key), 0);
  EXPECT_EQ(key, "");
  EXPECT_EQ(ProductFlops("aten::mm", {{10}}, &key), 0) << "shapes it does not understand";
}

TEST(OpProfileTest, SelfTimesExcludeCalleesAndRowsNameTheirCaller) {
  const at::Tensor a = at::randn({2048, 64}), b = at::randn({64, 32});
  OpProfiler profiler;
  profiler.Start();
  EXPECT_TRUE(profiler.running());
  at::Tensor c;
  {
    RECORD_USER_SCOPE("test::outer");
    for (int i = 0; i < 3; ++i) c = at::mm(a, b);
  }
  c = at::mm(a, b);
  const OpProfile p = profiler.Stop(/*steps=*/2);
  EXPECT_FALSE(profiler.running());
  EXPECT_EQ(p.steps, 2);
  EXPECT_GT(p.wall_ms, 0);

  const OpTime* outer = Find(p, "test::outer");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->calls, 1);
  const OpTime* inner = Find(p, "aten::mm", "test::outer", "[N x 64] . [64 x 32]");
  ASSERT_NE(inner, nullptr) << p.Format();
  EXPECT_EQ(inner->calls, 3);
  EXPECT_DOUBLE_EQ(inner->flops, 3 * 2.0 * 2048 * 64 * 32);
  // The scope's own time excludes its three products.
  EXPECT_LE(outer->self_ms + inner->total_ms, outer->total_ms * 1.001 + 1e-3);
  EXPECT_LT(outer->self_ms, inner->total_ms);
  const OpTime* top = Find(p, "aten::mm", "", "[N x 64] . [64 x 32]");
  ASSERT_NE(top, nullptr) << "the call outside the scope is a row of its own";
  EXPECT_EQ(top->calls, 1);
  // Self times never exceed the span, and the rows come most self time first.
  double self = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    self += p.ops[i].self_ms;
    if (i > 0) EXPECT_GE(p.ops[i - 1].self_ms, p.ops[i].self_ms);
  }
  EXPECT_LE(self, p.wall_ms * 1.01 + 1);

  const std::string text = p.Format(/*top=*/1);
  EXPECT_NE(text.find("operator profile of 2 steps"), std::string::npos) << text;
  EXPECT_NE(text.find("(the other operators)"), std::string::npos) << text;
  const nlohmann::json j = p.ToJson();
  EXPECT_EQ(j["event"], "profile");
  EXPECT_EQ(j["steps"], 2);
  ASSERT_FALSE(j["ops"].empty());
  bool saw_product = false;
  for (const auto& row : j["ops"]) saw_product |= row.contains("gflop") && row["caller"] == "test::outer";
  EXPECT_TRUE(saw_product) << j.dump();
}

TEST(OpProfileTest, AStoppedProfilerRecordsNothingMore) {
  OpProfiler profiler;
  EXPECT_TRUE(profiler.Stop(1).ops.empty()) << "never started";
  profiler.Start();
  const OpProfile first = profiler.Stop(1);
  EXPECT_EQ(Find(first, "aten::mm"), nullptr);
  at::mm(at::randn({8, 8}), at::randn({8, 8}));  // after Stop: not recorded anywhere
  profiler.Start();
  const OpProfile second = profiler.Stop(1);
  EXPECT_EQ(Find(second, "aten::mm"), nullptr);
}

}  // namespace
}  // namespace fanout::trainer
