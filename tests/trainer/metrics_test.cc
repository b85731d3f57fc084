// Metrics on hand-checked cases (the values scikit-learn gives for the same inputs).
#include "trainer/metrics.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace fanout::trainer {
namespace {

TEST(MetricsTest, RocAucOfHandCheckedCases) {
  // sklearn.metrics.roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
  const float scores[] = {0.1f, 0.4f, 0.35f, 0.8f};
  const bool positive[] = {false, false, true, true};
  EXPECT_DOUBLE_EQ(RocAuc(scores, positive, 4), 0.75);
  // A tie between a positive and a negative counts half.
  const float tied[] = {0.5f, 0.5f, 0.9f};
  const bool tied_pos[] = {true, false, true};
  EXPECT_DOUBLE_EQ(RocAuc(tied, tied_pos, 3), 0.75);
  const bool all_pos[] = {true, true, true};
  EXPECT_TRUE(std::isnan(RocAuc(tied, all_pos, 3)));
}

TEST(MetricsTest, MacroF1OfAHandCheckedCase) {
  // sklearn.metrics.f1_score([0, 1, 2, 0, 1, 2], [0, 2, 1, 0, 0, 1], average="macro") == 0.2666...
  MetricAccumulator m(Metric::kF1Macro, 4);  // class 3 occurs nowhere: not averaged
  const at::Tensor labels = at::tensor({0, 1, 2, 0, 1, 2}, at::kLong);
  const at::Tensor pred = at::tensor({0, 2, 1, 0, 0, 1}, at::kLong);
  m.Add(at::one_hot(pred, 4).to(at::kFloat), labels);
  auto solo = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  auto f1 = m.Reduce(*solo);
  ASSERT_TRUE(f1.ok());
  EXPECT_NEAR(*f1, 0.8 / 3, 1e-12);
  EXPECT_EQ(m.count(), 6);
}

TEST(MetricsTest, RocAucOfLogitsIsOneVsRestAveraged) {
  auto solo = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  // Two classes: the binary AUC of class 1's probability.
  MetricAccumulator binary(Metric::kRocAuc, 2);
  const at::Tensor logits = at::tensor({0.f, -1.f, 0.f, 0.5f, 0.f, 0.3f, 0.f, 2.f}).view({4, 2});
  binary.Add(logits, at::tensor({0, 0, 1, 1}, at::kLong));  // class-1 scores rank as 0.1, 0.4, 0.35, 0.8 above
  EXPECT_DOUBLE_EQ(*binary.Reduce(*solo), 0.75);
  // Three classes, class 2 absent from the labels: the mean of classes 0 and 1.
  MetricAccumulator three(Metric::kRocAuc, 3);
  const at::Tensor l3 = at::tensor({2.f, 0.f, 0.f, 0.f, 2.f, 0.f, 0.f, 0.5f, 2.f, 1.f, 0.f, 0.f}).view({4, 3});
  three.Add(l3, at::tensor({0, 1, 1, 0}, at::kLong));
  // Class 0: its positives (rows 0, 3) have the two highest probabilities: 1. Class 1: its
  // positives (rows 1, 2; p = 0.787, 0.164) against rows 0, 3 (p = 0.107, 0.212): 3 of 4 pairs
  // in order, 0.75. Mean 0.875.
  EXPECT_DOUBLE_EQ(*three.Reduce(*solo), 0.875);
  MetricAccumulator acc(Metric::kAccuracy, 3);
  acc.Add(l3, at::tensor({0, 1, 1, 0}, at::kLong));
  EXPECT_DOUBLE_EQ(*acc.Reduce(*solo), 0.75);
}

// Scores far apart in logit space stay apart: as float32 softmax probabilities, -30, -40 and -50
// would all give class 0 a probability that rounds to 1, and tie.
TEST(MetricsTest, BinaryScoresAreRankedRawNotThroughASoftmax) {
  auto solo = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  MetricAccumulator m(Metric::kRocAuc, 2);
  m.AddBinaryScores(at::tensor({-30.f, -40.f, -50.f}), at::tensor({1, 0, 0}, at::kLong));
  EXPECT_DOUBLE_EQ(*m.Reduce(*solo), 1.0);
  // Logits of a 2-class model are ranked by log-probabilities, so they do not tie either.
  MetricAccumulator logits(Metric::kRocAuc, 2);
  logits.Add(at::tensor({0.f, -30.f, 0.f, -40.f, 0.f, -50.f}).view({3, 2}), at::tensor({1, 0, 0}, at::kLong));
  EXPECT_DOUBLE_EQ(*logits.Reduce(*solo), 1.0);
}

TEST(MetricsTest, RankingsOfHandCheckedCases) {
  // Positive 0 (score 0.9) beats both negatives: rank 1. Positive 1 (0.5) has one higher (0.7)
  // and one equal (0.5) negative: rank 1 + 1 + 0.5 = 2.5. MRR = (1 + 0.4) / 2 = 0.7.
  RankingSums sums;
  AddRankings(at::tensor({0.9f, 0.5f}), at::tensor({0.1f, 0.2f, 0.7f, 0.5f}).view({2, 2}), {1, 3}, &sums);
  EXPECT_DOUBLE_EQ(sums.count, 2);
  EXPECT_DOUBLE_EQ(sums.reciprocal_rank / sums.count, 0.7);
  EXPECT_EQ(sums.hits, (std::vector<double>{1, 2}));  // Hits@1 = 1/2, Hits@3 = 2/2
}

TEST(MetricsTest, NamesParseAndUnknownOnesAreListed) {
  EXPECT_EQ(*ParseMetric("roc-auc"), Metric::kRocAuc);
  EXPECT_EQ(*ParseMetric("f1-macro"), Metric::kF1Macro);
  EXPECT_EQ(*ParseMetric("acc"), Metric::kAccuracy);
  auto bad = ParseMetric("auc");
  EXPECT_EQ(bad.status().message(), "unknown metric 'auc': expected acc, roc-auc or f1-macro");
}

}  // namespace
}  // namespace fanout::trainer
