#include "tests/testing/fake_graph_source.h"

#include <cstring>

#include "base/strings.h"

namespace fanout::testing {

using base::StrCat;

FakeGraphSource::FakeGraphSource(int part, int64_t node_lo, int64_t node_hi, int64_t edge_lo)
    : part_(part), node_lo_(node_lo), node_hi_(node_hi), edge_lo_(edge_lo) {}

FakeGraphSource::~FakeGraphSource() {
  Release();
  for (auto& t : late_) t.join();
}

void FakeGraphSource::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  released_ = true;
  changed_.notify_all();
}

bool FakeGraphSource::WaitForHeld(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return held_ >= n; });
}

bool FakeGraphSource::WaitForAnswers(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return answers_ >= n; });
}

void FakeGraphSource::AddEdge(int64_t src, int64_t dst) {
  const int64_t eid = edge_lo_ + static_cast<int64_t>(edges_.size());
  in_[dst].emplace_back(src, eid);
  edges_.emplace_back(src, dst);
}

void FakeGraphSource::SetNodeField(const std::string& name, float (*value)(int64_t)) { node_fields_[name] = value; }

std::vector<int64_t> FakeGraphSource::gathered_ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gathered_;
}

std::thread::id FakeGraphSource::last_answer_thread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_thread_;
}

std::string FakeGraphSource::Describe() const { return StrCat("partition ", part_, " (fake)"); }

void FakeGraphSource::Answer(std::function<absl::Status()> answer, core::Done done) {
  auto run = [this, answer = std::move(answer), done = std::move(done)]() {
    absl::Status s = fail_.ok() ? answer() : fail_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_thread_ = std::this_thread::get_id();
    }
    done(s);
    std::lock_guard<std::mutex> lock(mu_);
    ++answers_;
    changed_.notify_all();
  };
  if (mode_ == Mode::kNow) return run();
  const bool hold = mode_ == Mode::kHeld;
  std::lock_guard<std::mutex> lock(mu_);
  late_.emplace_back([this, hold, run = std::move(run)]() {
    if (hold) {
      std::unique_lock<std::mutex> lock(mu_);
      ++held_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return released_; });
    }
    run();
  });
}

absl::Status FakeGraphSource::CheckOwned(std::span<const int64_t> ids, int64_t lo, int64_t hi, const char* what) const {
  for (int64_t id : ids) {
    if (id < lo || id >= hi) return absl::InvalidArgumentError(StrCat(what, " ", id, " is not owned"));
  }
  return absl::OkStatus();
}

void FakeGraphSource::SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                                      core::SampledEdges* out, core::Done done) {
  ++sample_calls_;
  Answer(
      [this, seeds, options, out]() -> absl::Status {
        if (absl::Status s = CheckOwned(seeds, node_lo_, node_hi_, "node"); !s.ok()) return s;
        *out = core::SampledEdges();
        for (int64_t v : seeds) {
          auto it = in_.find(v);
          if (it == in_.end()) continue;
          const int64_t d = static_cast<int64_t>(it->second.size());
          const int64_t k = options.fanout < 0 ? d : std::min(d, options.fanout);
          for (int64_t j = 0; j < k; ++j) {
            out->src.push_back(it->second[j].first);
            out->dst.push_back(v);
            out->eid.push_back(it->second[j].second);
          }
        }
        if (ungroup_) {
          std::reverse(out->src.begin(), out->src.end());
          std::reverse(out->dst.begin(), out->dst.end());
          std::reverse(out->eid.begin(), out->eid.end());
        }
        return absl::OkStatus();
      },
      std::move(done));
}

void FakeGraphSource::GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                                 std::span<const int64_t> positions, char* out, core::Done done) {
  ++gather_calls_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gathered_.insert(gathered_.end(), ids.begin(), ids.end());
  }
  Answer(
      [this, field, row_bytes, ids, positions, out]() -> absl::Status {
        auto it = node_fields_.find(field.name);
        if (field.kind != core::FieldRef::Kind::kNode || it == node_fields_.end()) {
          return absl::NotFoundError(StrCat("no ", field.ToString()));
        }
        if (row_bytes != sizeof(float)) return absl::FailedPreconditionError("rows are 4 bytes");
        if (absl::Status s = CheckOwned(ids, node_lo_, node_hi_, "node"); !s.ok()) return s;
        for (size_t i = 0; i < ids.size(); ++i) {
          const float v = it->second(ids[i]);
          std::memcpy(out + positions[i] * row_bytes, &v, sizeof(v));
        }
        return absl::OkStatus();
      },
      std::move(done));
}

void FakeGraphSource::Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) {
  Answer(
      [this, ids, dir, out]() -> absl::Status {
        if (dir != core::EdgeDir::kIn) return absl::UnimplementedError("the fake knows in-degrees only");
        if (absl::Status s = CheckOwned(ids, node_lo_, node_hi_, "node"); !s.ok()) return s;
        for (size_t i = 0; i < ids.size(); ++i) {
          auto it = in_.find(ids[i]);
          out[i] = it == in_.end() ? 0 : static_cast<int64_t>(it->second.size());
        }
        return absl::OkStatus();
      },
      std::move(done));
}

void FakeGraphSource::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) {
  Answer(
      [this, eids, src, dst]() -> absl::Status {
        const int64_t hi = edge_lo_ + static_cast<int64_t>(edges_.size());
        if (absl::Status s = CheckOwned(eids, edge_lo_, hi, "edge"); !s.ok()) return s;
        for (size_t i = 0; i < eids.size(); ++i) {
          src[i] = edges_[eids[i] - edge_lo_].first;
          dst[i] = edges_[eids[i] - edge_lo_].second;
        }
        return absl::OkStatus();
      },
      std::move(done));
}

core::PartitionConfig FakeConfig(std::vector<int64_t> bounds, std::vector<int64_t> edge_bounds,
                                 const std::vector<std::string>& float_fields) {
  core::PartitionConfig c;
  c.graph_name = "fake";
  c.num_parts = static_cast<int>(bounds.size()) - 1;
  c.num_nodes = bounds.back();
  c.num_edges = edge_bounds.back();
  c.node_bounds = std::move(bounds);
  c.edge_bounds = std::move(edge_bounds);
  for (const std::string& f : float_fields) c.node_fields.push_back({f, core::DType::kFloat32, {}});
  return c;
}

}  // namespace fanout::testing
