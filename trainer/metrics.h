// Evaluation metrics for node classification, combined exactly across ranks: accuracy (weighted
// by each rank's count), macro F1 (per-class true/false positive and false negative counts
// summed), and ROC-AUC (every rank's scores gathered on rank 0; one-vs-rest per class, averaged
// over the classes that have both positives and negatives: for two classes, the plain binary
// AUC of class 1).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/dist.h"

namespace fanout::trainer {

enum class Metric { kAccuracy, kRocAuc, kF1Macro };

// "acc", "roc-auc" or "f1-macro"; INVALID_ARGUMENT lists them.
absl::StatusOr<Metric> ParseMetric(std::string_view name);
std::string_view MetricName(Metric metric);

// One rank's share of an evaluation pass. Not thread-safe.
class MetricAccumulator {
 public:
  MetricAccumulator(Metric metric, int64_t num_classes);

  // logits [n, num_classes] (any float dtype, any device), labels int64 [n] in [0, num_classes).
  void Add(const at::Tensor& logits, const at::Tensor& labels);
  // kRocAuc with 2 classes: raw scores [n] of class 1 (any real; larger = more likely), labels 0/1.
  // Ranked as they are: no softmax.
  void AddBinaryScores(const at::Tensor& scores, const at::Tensor& labels);
  int64_t count() const { return count_; }

  // The metric over every rank's share (collective: every rank calls it once). 0 when no rank
  // saw a node, or, for ROC-AUC, when no class has both positives and negatives.
  absl::StatusOr<double> Reduce(Communicator& comm);

 private:
  // [n, 2] scores ranking class 0 by -s and class 1 by s.
  static at::Tensor BinaryColumns(const at::Tensor& s);
  // Rows of per-class ranking scores (and their labels) for Reduce, on the CPU.
  void KeepScores(const at::Tensor& scores, const at::Tensor& labels);

  Metric metric_;
  int64_t num_classes_;
  int64_t count_ = 0;
  double correct_ = 0;
  std::vector<double> tp_, fp_, fn_;  // f1-macro, per class
  std::vector<at::Tensor> probs_;     // roc-auc: log-softmax rows (or +-scores), float32 on the CPU
  std::vector<at::Tensor> labels_;    // roc-auc
};

// Link prediction ranking: each positive against its own k negatives, rank = 1 + negatives
// scored higher + half of those scored equal (OGB's mean of optimistic and pessimistic ranks).
// Sums over positives, so that ranks add them exactly with AllReduceSum.
struct RankingSums {
  double reciprocal_rank = 0;  // sum of 1 / rank (MRR = reciprocal_rank / count)
  std::vector<double> hits;    // per k of AddRankings' ks: positives with rank <= k
  double count = 0;
};
// pos float [n], neg float [n, k] (row i: positive i's negatives).
void AddRankings(const at::Tensor& pos, const at::Tensor& neg, const std::vector<int64_t>& ks, RankingSums* sums);

// Exact one-process definitions (also what Reduce computes on rank 0).
// ROC-AUC of `scores` for the positives marked in `positive` (Mann-Whitney U, ties counted half);
// NaN unless both classes occur.
double RocAuc(const float* scores, const bool* positive, int64_t n);
// Mean of one-vs-rest ROC-AUC over classes with both positives and negatives; 0 if none.
double MacroRocAuc(const at::Tensor& probs, const at::Tensor& labels);
// Mean over classes that occur in the labels or the predictions of 2TP / (2TP + FP + FN) (as
// scikit-learn's f1_score(average="macro")); 0 if none.
double MacroF1(const std::vector<double>& tp, const std::vector<double>& fp, const std::vector<double>& fn);

}  // namespace fanout::trainer
