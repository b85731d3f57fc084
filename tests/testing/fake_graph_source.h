// An in-memory GraphSource for tests: no files, no sockets. It owns a node range and an edge
// range of a small graph given edge by edge, answers like a partition would (sampling takes
// each seed's first `fanout` in-neighbours, in insertion order), and can be told to answer from
// another thread, to hold its answers until the test releases them, to fail, or to misbehave, so
// that routers and decorators are tested on every path they must handle, in the order the test
// decides (never by waiting for time to pass).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/graph_source.h"
#include "core/partition_config.h"

namespace fanout::testing {

class FakeGraphSource final : public core::GraphSource {
 public:
  FakeGraphSource(int part, int64_t node_lo, int64_t node_hi, int64_t edge_lo);
  ~FakeGraphSource() override;  // joins the threads of late answers

  // In-edge src -> dst (dst owned); its edge ID is the next from edge_lo.
  void AddEdge(int64_t src, int64_t dst);
  // One float per owned node of field `name`: value(node).
  void SetNodeField(const std::string& name, float (*value)(int64_t node));

  // Behaviour of the following calls. AnswerFromOtherThread: each answer from a thread of its own
  // (as a remote or GPU source would), at once. HoldAnswers: each answer waits on a thread of its
  // own until Release() (which also answers later calls at once, from their threads).
  void AnswerFromOtherThread() { mode_ = Mode::kOtherThread; }
  void HoldAnswers() { mode_ = Mode::kHeld; }
  void Release();
  // Block until this many calls are being held / have answered in all (30 s at most; false then).
  bool WaitForHeld(int n);
  bool WaitForAnswers(int n);
  void FailWith(absl::Status s) { fail_ = std::move(s); }
  void UngroupEdges() { ungroup_ = true; }  // answer a sample's edges in reverse order

  // What was asked: calls per method, the IDs of every GatherRows, and the threads that ran
  // answers.
  int sample_calls() const { return sample_calls_; }
  int gather_calls() const { return gather_calls_; }
  std::vector<int64_t> gathered_ids() const;
  std::thread::id last_answer_thread() const;

  std::string Describe() const override;
  void SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                       core::SampledEdges* out, core::Done done) override;
  void GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, core::Done done) override;
  void Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) override;
  void FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) override;

 private:
  // Runs `answer` now or late, records the thread, and hands its status (or the injected
  // failure) to `done` (unprefixed: the router names the partition).
  void Answer(std::function<absl::Status()> answer, core::Done done);
  absl::Status CheckOwned(std::span<const int64_t> ids, int64_t lo, int64_t hi, const char* what) const;

  int part_;
  int64_t node_lo_, node_hi_, edge_lo_;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> in_;  // dst -> (src, eid)
  std::vector<std::pair<int64_t, int64_t>> edges_;                  // eid - edge_lo -> (src, dst)
  std::map<std::string, float (*)(int64_t)> node_fields_;
  enum class Mode { kNow, kOtherThread, kHeld };
  Mode mode_ = Mode::kNow;
  bool released_ = false;  // (mu_)
  int held_ = 0, answers_ = 0;  // (mu_)
  std::condition_variable changed_;
  absl::Status fail_;
  bool ungroup_ = false;
  std::atomic<int> sample_calls_{0}, gather_calls_{0};
  mutable std::mutex mu_;
  std::vector<int64_t> gathered_;
  std::thread::id last_thread_;
  std::vector<std::thread> late_;
};

// A partition config for FromSources: `bounds` are the node ranges' K+1 offsets, `edge_bounds`
// the edge ranges'; node fields are one float32 per node.
core::PartitionConfig FakeConfig(std::vector<int64_t> bounds, std::vector<int64_t> edge_bounds,
                                 const std::vector<std::string>& float_fields);

}  // namespace fanout::testing
