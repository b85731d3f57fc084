#include "trainer/metrics.h"

#include <ATen/ops/argmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/stack.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/status.h"
#include "base/strings.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using base::StrCat;

absl::StatusOr<Metric> ParseMetric(std::string_view name) {
  if (name == "acc" || name == "accuracy") return Metric::kAccuracy;
  if (name == "roc-auc") return Metric::kRocAuc;
  if (name == "f1-macro") return Metric::kF1Macro;
  return absl::InvalidArgumentError(StrCat("unknown metric '", name, "': expected acc, roc-auc or f1-macro"));
}

std::string_view MetricName(Metric metric) {
  switch (metric) {
    case Metric::kAccuracy:
      return "acc";
    case Metric::kRocAuc:
      return "roc-auc";
    case Metric::kF1Macro:
      return "f1-macro";
  }
  return "?";
}

MetricAccumulator::MetricAccumulator(Metric metric, int64_t num_classes)
    : metric_(metric), num_classes_(num_classes), tp_(num_classes), fp_(num_classes), fn_(num_classes) {}

void MetricAccumulator::Add(const at::Tensor& logits, const at::Tensor& labels) {
  const at::Tensor y = labels.cpu();
  const int64_t n = y.numel();
  count_ += n;
  switch (metric_) {
    case Metric::kAccuracy:
      correct_ += logits.argmax(1).cpu().eq(y).sum().item<double>();
      break;
    case Metric::kF1Macro: {
      const at::Tensor pred = logits.argmax(1).cpu().contiguous();
      const int64_t* p = pred.data_ptr<int64_t>();
      const at::Tensor yc = y.contiguous();
      const int64_t* t = yc.data_ptr<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        if (p[i] == t[i]) {
          tp_[t[i]] += 1;
        } else {
          fp_[p[i]] += 1;
          fn_[t[i]] += 1;
        }
      }
      break;
    }
    case Metric::kRocAuc: {
      const at::Tensor z = logits.detach().to(at::kFloat);
      // Two classes: rank by the logit difference, which orders rows as class 1's probability
      // does without float32 rounding confident probabilities to equal values (ties). More:
      // log-probabilities order each class's column as its probabilities do, and tie only where a
      // probability is within float32's epsilon of 1.
      KeepScores(num_classes_ == 2 ? BinaryColumns(z.select(1, 1).sub(z.select(1, 0))) : at::log_softmax(z, 1), y);
      break;
    }
  }
}

void MetricAccumulator::AddBinaryScores(const at::Tensor& scores, const at::Tensor& labels) {
  TORCH_CHECK(metric_ == Metric::kRocAuc && num_classes_ == 2, "binary scores need roc-auc over 2 classes");
  const at::Tensor s = scores.detach().to(at::kFloat).reshape({-1});
  count_ += s.numel();
  KeepScores(BinaryColumns(s), labels);
}

// Column c ranks class c: class 0 by -s, class 1 by s (MacroRocAuc uses the first).
at::Tensor MetricAccumulator::BinaryColumns(const at::Tensor& s) { return at::stack({s.neg(), s}, 1); }

void MetricAccumulator::KeepScores(const at::Tensor& scores, const at::Tensor& labels) {
  probs_.push_back(scores.cpu().contiguous());
  labels_.push_back(labels.cpu().contiguous());
}

absl::StatusOr<double> MetricAccumulator::Reduce(Communicator& comm) {
  switch (metric_) {
    case Metric::kAccuracy: {
      ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(comm, {correct_, static_cast<double>(count_)}));
      return sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    }
    case Metric::kF1Macro: {
      std::vector<double> v = tp_;
      v.insert(v.end(), fp_.begin(), fp_.end());
      v.insert(v.end(), fn_.begin(), fn_.end());
      ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(comm, v));
      const auto c = static_cast<std::ptrdiff_t>(num_classes_);
      return MacroF1({sums.begin(), sums.begin() + c}, {sums.begin() + c, sums.begin() + 2 * c},
                     {sums.begin() + 2 * c, sums.end()});
    }
    case Metric::kRocAuc: {
      at::Tensor probs, labels;
      RETURN_IF_ERROR(CatchTorch("roc-auc", [&] {
        probs = probs_.empty() ? at::empty({0, num_classes_}, at::kFloat) : at::cat(probs_);
        labels = labels_.empty() ? at::empty({0}, at::kLong) : at::cat(labels_);
      }));
      // Every rank's rows to rank 0, which computes the metric and hands it to the others.
      std::vector<int64_t> send(comm.world_size(), 0);
      send[0] = probs.size(0);
      ASSIGN_OR_RETURN(std::vector<int64_t> recv, ExchangeCounts(comm, send));
      ASSIGN_OR_RETURN(at::Tensor all_probs, comm.AllToAll(probs.to(comm.device()), send, recv));
      ASSIGN_OR_RETURN(at::Tensor all_labels, comm.AllToAll(labels.to(comm.device()), send, recv));
      double auc = 0;
      if (comm.rank() == 0) {
        ASSIGN_OR_RETURN(auc, CatchTorch("roc-auc", [&] { return MacroRocAuc(all_probs.cpu(), all_labels.cpu()); }));
      }
      ASSIGN_OR_RETURN(std::vector<double> shared, AllReduceSum(comm, {auc}));
      return shared[0];
    }
  }
  return absl::InternalError("unknown metric");
}

void AddRankings(const at::Tensor& pos, const at::Tensor& neg, const std::vector<int64_t>& ks, RankingSums* sums) {
  const at::Tensor p = pos.to(at::kFloat).contiguous().view({-1, 1});
  const at::Tensor q = neg.to(at::kFloat).contiguous();
  const at::Tensor higher = q.gt(p).sum(1).to(at::kDouble), equal = q.eq(p).sum(1).to(at::kDouble);
  const at::Tensor rank = higher.add(equal.mul(0.5)).add(1).contiguous();
  sums->hits.resize(ks.size(), 0);
  sums->reciprocal_rank += rank.reciprocal().sum().item<double>();
  for (size_t i = 0; i < ks.size(); ++i) sums->hits[i] += rank.le(static_cast<double>(ks[i])).sum().item<double>();
  sums->count += static_cast<double>(rank.numel());
}

double RocAuc(const float* scores, const bool* positive, int64_t n) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
  double rank_sum = 0, positives = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    const double mid_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j, tied
    for (int64_t k = i; k < j; ++k) {
      if (positive[order[k]]) {
        rank_sum += mid_rank;
        positives += 1;
      }
    }
    i = j;
  }
  const double negatives = static_cast<double>(n) - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

double MacroRocAuc(const at::Tensor& probs, const at::Tensor& labels) {
  const int64_t n = probs.size(0), classes = probs.size(1);
  const at::Tensor p = probs.t().contiguous();  // [classes, n]
  const at::Tensor y = labels.contiguous();
  const int64_t* t = y.data_ptr<int64_t>();
  std::vector<float> scores(n);
  std::unique_ptr<bool[]> positive(new bool[n]);
  double sum = 0;
  int64_t used = 0;
  for (int64_t c = 0; c < classes; ++c) {
    const float* col = p.data_ptr<float>() + c * n;
    std::copy(col, col + n, scores.begin());
    for (int64_t i = 0; i < n; ++i) positive[i] = t[i] == c;
    const double auc = RocAuc(scores.data(), positive.get(), n);
    if (!std::isnan(auc)) {
      sum += auc;
      ++used;
    }
    // With two classes the second one's AUC equals the first's (its scores are 1 - the first's).
    if (classes == 2 && used == 1) break;
  }
  return used > 0 ? sum / static_cast<double>(used) : 0.0;
}

double MacroF1(const std::vector<double>& tp, const std::vector<double>& fp, const std::vector<double>& fn) {
  double sum = 0;
  int64_t used = 0;
  for (size_t c = 0; c < tp.size(); ++c) {
    const double denominator = 2 * tp[c] + fp[c] + fn[c];
    if (denominator == 0) continue;  // the class occurs in neither labels nor predictions
    sum += 2 * tp[c] / denominator;
    ++used;
  }
  return used > 0 ? sum / static_cast<double>(used) : 0.0;
}

}  // namespace fanout::trainer
