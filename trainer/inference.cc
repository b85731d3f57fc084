#include "trainer/inference.h"

#include <ATen/ops/argmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "base/staging_dir.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/dtype.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "sampler/minibatch_sampler.h"
#include "trainer/batch_tensors.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using base::StrCat;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One batch of destinations and its full in-neighbourhood, kept for every layer.
struct LayerBlock {
  BlockTensors block;
  sampler::Int64Array src_nodes;  // global IDs; the first block.num_dst are the destinations
  at::Tensor rows;                 // int64 [num_src]: each source's row in [own rows; halo rows]
};

// Blocks (all of the sampler's layers) around `seeds` with every in-neighbour, and the model's
// input rows (the features, or `input`'s rows for them), as tensors.
struct Neighbourhood {
  BatchTensors bt;
  at::Tensor x;
};
absl::StatusOr<Neighbourhood> FullNeighbourhood(const sampler::DistGraph& graph, sampler::MiniBatchSampler& s,
                                               const std::vector<int64_t>& seeds, std::vector<sampler::Block>* blocks,
                                               const InferenceOptions& o) {
  RETURN_IF_ERROR(s.SampleBlocksFor(seeds, /*stream=*/0, blocks));
  sampler::MiniBatch mb;
  mb.seeds = seeds;
  mb.blocks = *blocks;
  // Sources' out-degrees in the whole graph (GCN normalises by them): a block here holds one
  // batch of destinations, so counting in the block would give other results per batch.
  std::vector<std::vector<int64_t>> out_degrees(blocks->size());
  for (size_t l = 0; l < blocks->size(); ++l) {
    out_degrees[l].resize((*blocks)[l].src_nodes.size());
    RETURN_IF_ERROR(graph.Degrees((*blocks)[l].src_nodes, core::EdgeDir::kOut, out_degrees[l].data()));
  }
  // (FeatureRequest: every input node, or on a typed graph those whose type has features.)
  ASSIGN_OR_RETURN(mb.features, s.GatherFeatures(s.FeatureRequest(&mb), /*pool=*/nullptr));  // ToTensors converts
  Neighbourhood n;
  ASSIGN_OR_RETURN(n.bt, ToTensors(mb));
  for (size_t l = 0; l < n.bt.blocks.size(); ++l) n.bt.blocks[l].out_degree = at::tensor(out_degrees[l], at::kLong);
  if (o.model_input) {
    ASSIGN_OR_RETURN(n.x, o.model_input(n.bt, mb));
  } else {
    n.x = n.bt.features;
  }
  return n;
}

// The output width of a layer, agreed by every rank (a rank without nodes cannot know it):
// `parts` concatenated, or [0, width] when empty.
absl::StatusOr<at::Tensor> Concat(Communicator& comm, std::vector<at::Tensor>& parts) {
  const double width = parts.empty() ? 0 : static_cast<double>(parts.front().size(1));
  ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(comm, {width, parts.empty() ? 0.0 : 1.0}));
  const int64_t agreed = sums[1] > 0 ? static_cast<int64_t>(sums[0] / sums[1]) : 0;
  if (!parts.empty() && agreed != parts.front().size(1)) {
    return absl::InternalError(StrCat("inference: ranks disagree on the width of a layer's output (", width, " here)"));
  }
  return CatchTorch("inference", [&] {
    at::Tensor h = parts.empty() ? at::empty({0, agreed}, at::kFloat) : at::cat(parts);
    parts.clear();
    return h;
  });
}

// Rows of nodes other ranks own, asked for once and then exchanged as often as the rows change
// (every layer of inference): ranks own increasing ID ranges (RankNodes), so the sorted remote IDs
// are grouped by owner, and [own rows; remote rows] is the table every lookup indexes.
class RowExchange {
 public:
  static absl::StatusOr<RowExchange> Plan(Communicator& comm, const core::RangePartitionBook& book, int tpm,
                                          NodeShare own, std::span<const int64_t> ids) {
    RowExchange x;
    x.own_ = own;
    for (int64_t v : ids) {
      if (v < own.begin || v >= own.end) x.remote_.push_back(v);
    }
    std::sort(x.remote_.begin(), x.remote_.end());
    x.remote_.erase(std::unique(x.remote_.begin(), x.remote_.end()), x.remote_.end());
    x.want_.assign(comm.world_size(), 0);
    int r = 0;
    NodeShare share = RankNodes(book, tpm, 0);
    for (int64_t v : x.remote_) {
      while (v >= share.end) share = RankNodes(book, tpm, ++r);
      ++x.want_[r];
    }
    ASSIGN_OR_RETURN(x.serve_, ExchangeCounts(comm, x.want_));
    ASSIGN_OR_RETURN(at::Tensor asked, comm.AllToAll(at::tensor(x.remote_, at::kLong).to(comm.device()), x.want_,
                                                     x.serve_));
    asked = asked.cpu();
    const int64_t* a = asked.data_ptr<int64_t>();
    for (int64_t i = 0; i < asked.numel(); ++i) {
      if (a[i] < own.begin || a[i] >= own.end) {
        return absl::InternalError(StrCat("rank ", comm.rank(), " was asked for node ", a[i], ", outside its nodes [",
                                          own.begin, ", ", own.end, ")"));
      }
    }
    x.serve_rows_ = asked - own.begin;
    return x;
  }

  // [own; the remote rows in sorted ID order], own being this rank's rows. Collective.
  absl::StatusOr<at::Tensor> Table(Communicator& comm, const at::Tensor& own) const {
    ASSIGN_OR_RETURN(at::Tensor send, CatchTorch("exchanging node rows", [&] {
                       return own.index_select(0, serve_rows_).contiguous().to(comm.device());
                     }));
    // The collective's own status (UNAVAILABLE for a dead peer) passes through unchanged.
    ASSIGN_OR_RETURN(at::Tensor got, comm.AllToAll(send, serve_, want_));
    return CatchTorch("exchanging node rows", [&] { return at::cat({own, got.cpu().view({-1, own.size(1)})}); });
  }

  // Each of `ids` (own or planned) as a row of Table().
  std::vector<int64_t> RowsOf(std::span<const int64_t> ids) const {
    std::vector<int64_t> rows(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const int64_t v = ids[i];
      rows[i] = v >= own_.begin && v < own_.end
                    ? v - own_.begin
                    : own_.size() + (std::lower_bound(remote_.begin(), remote_.end(), v) - remote_.begin());
    }
    return rows;
  }

 private:
  NodeShare own_;
  std::vector<int64_t> remote_;       // sorted, distinct
  std::vector<int64_t> want_, serve_;  // rows asked of / for each rank
  at::Tensor serve_rows_;             // rows of `own` the others asked for, rank by rank
};

std::string BatchName(int64_t layer, int64_t first) { return StrCat("inference, layer ", layer, ", batch from node ", first); }

}  // namespace

NodeShare RankNodes(const core::RangePartitionBook& book, int tpm, int rank) {
  const int part = rank / tpm, local = rank % tpm;
  const int64_t n = book.size(part);
  return {book.start(part) + n * local / tpm, book.start(part) + n * (local + 1) / tpm};
}

absl::StatusOr<InferenceResult> InferAllNodes(GnnModel& model, const sampler::DistGraph& graph, Communicator& comm,
                                              const InferenceOptions& o) {
  const int64_t layers = model.options().num_layers;
  InferenceResult result;
  result.nodes = RankNodes(graph.node_book(), o.trainers_per_machine, comm.rank());
  result.layerwise = model.SupportsLayerwise();
  const NodeShare own = result.nodes;
  const auto start = Clock::now();
  model.eval();
  at::NoGradGuard no_grad;

  sampler::SamplerOptions so;
  so.fanouts.assign(result.layerwise ? 1 : layers, -1);
  so.batch_size = o.batch_size;
  so.shuffle = false;
  so.feature_field = o.feature_field;
  so.edge = o.edge;
  so.label_field = "";
  RETURN_IF_ERROR(sampler::ValidateSamplerOptions(so, graph));
  sampler::MiniBatchSampler sampler(&graph, so, {});
  std::vector<sampler::Block> blocks;
  const int64_t num_batches = (own.end - own.begin + o.batch_size - 1) / o.batch_size;
  auto meter_of = [&](int64_t layer) {
    return std::make_unique<base::ProgressMeter>(
        "fanout-train", StrCat("inference, layer ", layer + 1, "/", result.layerwise ? layers : 1), num_batches,
        "batches", comm.rank() == 0 ? o.progress : base::ProgressMode::kOff);
  };
  auto seeds_of = [&](int64_t first) {
    std::vector<int64_t> seeds(std::min(o.batch_size, own.end - first));
    for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = first + static_cast<int64_t>(i);
    return seeds;
  };

  if (!result.layerwise) {
    std::vector<at::Tensor> parts;
    auto meter = meter_of(0);
    for (int64_t first = own.begin; first < own.end; first += o.batch_size) {
      ASSIGN_OR_RETURN(Neighbourhood n, FullNeighbourhood(graph, sampler, seeds_of(first), &blocks, o));
      ASSIGN_OR_RETURN(at::Tensor y, CatchTorch(BatchName(layers - 1, first), [&] {
                         return model.Forward(n.bt.blocks, n.x).contiguous();
                       }));
      parts.push_back(y);
      meter->Set(static_cast<int64_t>(parts.size()));
    }
    meter.reset();
    ASSIGN_OR_RETURN(result.output, Concat(comm, parts));
    if (o.on_layer && comm.rank() == 0) o.on_layer(layers - 1, layers, Since(start));
    return result;
  }

  // Layer 0 from the features; keep each batch's block for the layers above.
  std::vector<LayerBlock> batches;
  std::vector<at::Tensor> parts;
  auto meter = meter_of(0);
  for (int64_t first = own.begin; first < own.end; first += o.batch_size) {
    ASSIGN_OR_RETURN(Neighbourhood n, FullNeighbourhood(graph, sampler, seeds_of(first), &blocks, o));
    ASSIGN_OR_RETURN(at::Tensor y, CatchTorch(BatchName(0, first), [&] {
                       return model.ForwardLayer(0, n.bt.blocks[0], n.x).contiguous();
                     }));
    parts.push_back(y);
    batches.push_back({std::move(n.bt.blocks[0]), std::move(blocks[0].src_nodes), at::Tensor()});
    meter->Set(static_cast<int64_t>(batches.size()));
  }
  meter.reset();
  ASSIGN_OR_RETURN(at::Tensor h, Concat(comm, parts));
  if (o.on_layer && comm.rank() == 0) o.on_layer(0, layers, Since(start));
  if (layers == 1) {
    result.output = h;
    return result;
  }

  // The sources outside this rank's share (the halo) are requested once; each layer's rows then
  // cross in one all-to-all. Each source's row in [own rows; halo rows] is fixed per batch.
  std::vector<int64_t> sources;
  for (const LayerBlock& b : batches) sources.insert(sources.end(), b.src_nodes.begin(), b.src_nodes.end());
  ASSIGN_OR_RETURN(RowExchange halo, RowExchange::Plan(comm, graph.node_book(), o.trainers_per_machine, own, sources));
  for (LayerBlock& b : batches) b.rows = at::tensor(halo.RowsOf(b.src_nodes), at::kLong);

  for (int64_t l = 1; l < layers; ++l) {
    ASSIGN_OR_RETURN(at::Tensor table, halo.Table(comm, h));
    meter = meter_of(l);
    for (LayerBlock& b : batches) {
      const int64_t first = b.src_nodes.front();
      ASSIGN_OR_RETURN(at::Tensor y, CatchTorch(BatchName(l, first), [&] {
                         return model.ForwardLayer(l, b.block, table.index_select(0, b.rows)).contiguous();
                       }));
      parts.push_back(y);
      meter->Set(static_cast<int64_t>(parts.size()));
    }
    meter.reset();
    ASSIGN_OR_RETURN(h, Concat(comm, parts));
    if (o.on_layer && comm.rank() == 0) o.on_layer(l, layers, Since(start));
  }
  result.output = h;
  return result;
}

absl::StatusOr<at::Tensor> FetchNodeRows(Communicator& comm, const core::RangePartitionBook& book, int tpm,
                                         const InferenceResult& own, std::span<const int64_t> ids) {
  for (int64_t v : ids) {
    if (v < 0 || v >= book.num_ids()) {
      return absl::InvalidArgumentError(StrCat("node ", v, " is not in [0, ", book.num_ids(), ")"));
    }
  }
  ASSIGN_OR_RETURN(RowExchange plan, RowExchange::Plan(comm, book, tpm, own.nodes, ids));
  ASSIGN_OR_RETURN(at::Tensor table, plan.Table(comm, own.output));
  const std::vector<int64_t> rows = plan.RowsOf(ids);
  return CatchTorch("fetching node rows", [&] { return table.index_select(0, at::tensor(rows, at::kLong)); });
}

namespace {

// Rank 0's side of WriteNodeOutputs: the staged folder, rows placed by original ID. A typed
// graph gets one folder per node type (TYPE/embeddings.npy, TYPE/predictions.npy), rows by
// type-wise original ID; the rows arrive keyed by input ID, type-major (type t's node i is
// offset[t] + i, as the dataset readers number them).
class OutputFile {
 public:
  struct Type {
    std::string name;  // "": a graph without types (files at the top of the folder)
    int64_t count = 0;
  };

  absl::Status Open(const std::string& dir, bool overwrite, const std::string& part_dir, std::vector<Type> types,
                    int64_t width) {
    ASSIGN_OR_RETURN(base::StagingDir staging,
                     base::StagingDir::Create(dir, {.tool = "fanout-train", .overwrite = overwrite, .inputs = {part_dir}}));
    staging_ = std::make_unique<base::StagingDir>(std::move(staging));
    row_bytes_ = static_cast<size_t>(width) * sizeof(float);
    int64_t offset = 0;
    for (Type& t : types) {
      Table table;
      table.type = t;
      table.offset = offset;
      offset += t.count;
      const std::string folder = t.name.empty() ? staging_->path() : staging_->path() + "/" + t.name;
      std::error_code ec;
      std::filesystem::create_directories(folder, ec);
      if (ec) return absl::PermissionDeniedError(StrCat("cannot create ", folder, ": ", ec.message()));
      table.path = folder + "/embeddings.npy";
      table.header = core::EncodeNpyHeader(core::DType::kFloat32, {t.count, width});
      table.fd = ::open(table.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (table.fd < 0) return absl::PermissionDeniedError(StrCat("cannot create ", table.path, ": ", std::strerror(errno)));
      if (::pwrite(table.fd, table.header.data(), table.header.size(), 0) != static_cast<ssize_t>(table.header.size()) ||
          ::ftruncate(table.fd, static_cast<off_t>(table.header.size() + row_bytes_ * t.count)) != 0) {
        return absl::InternalError(StrCat("writing ", table.path, ": ", std::strerror(errno)));
      }
      table.seen.assign(t.count, false);
      table.predictions.assign(t.count, -1);
      tables_.push_back(std::move(table));
    }
    return absl::OkStatus();
  }

  absl::Status Place(const at::Tensor& rows, const at::Tensor& ids) {
    const int64_t* id = ids.data_ptr<int64_t>();
    const char* data = static_cast<const char*>(rows.data_ptr());
    const at::Tensor best = rows.size(0) > 0 && rows.size(1) > 0 ? rows.argmax(1) : at::Tensor();
    for (int64_t i = 0; i < rows.size(0); ++i) {
      const int64_t v = id[i];
      size_t t = 0;
      while (t + 1 < tables_.size() && v >= tables_[t + 1].offset) ++t;
      Table& table = tables_[t];
      const int64_t row = v - table.offset;
      if (row < 0 || row >= table.type.count || table.seen[row]) {
        return absl::InternalError(StrCat("inference output: original node ID ", v, " is out of range or came twice"));
      }
      table.seen[row] = true;
      if (best.defined()) table.predictions[row] = best.data_ptr<int64_t>()[i];
      const off_t at = static_cast<off_t>(table.header.size() + row_bytes_ * row);
      if (::pwrite(table.fd, data + row_bytes_ * i, row_bytes_, at) != static_cast<ssize_t>(row_bytes_)) {
        return absl::InternalError(StrCat("writing ", table.path, ": ", std::strerror(errno)));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Finish(bool predictions, const nlohmann::json& info, int64_t width) {
    nlohmann::json j = info;
    const bool typed = !tables_.front().type.name.empty();
    for (Table& table : tables_) {
      if (::close(table.fd) != 0) return absl::InternalError(StrCat("closing ", table.path, ": ", std::strerror(errno)));
      table.fd = -1;
      const int64_t n = table.type.count;
      for (int64_t v = 0; v < n; ++v) {
        if (!table.seen[v]) {
          return absl::InternalError(StrCat("inference output: no row for original node ", v,
                                            typed ? StrCat(" of type ", table.type.name) : ""));
        }
      }
      const std::string prefix = typed ? table.type.name + "/" : "";
      nlohmann::json files;
      files["num_nodes"] = n;
      files["embeddings"] = {{"file", prefix + "embeddings.npy"}, {"dtype", "float32"}, {"shape", {n, width}},
                             {"what", "the model's output for every node (logits for node classification)"}};
      if (predictions) {
        RETURN_IF_ERROR(core::WriteNpy(staging_->path() + "/" + prefix + "predictions.npy", table.predictions));
        files["predictions"] = {{"file", prefix + "predictions.npy"}, {"dtype", "int64"}, {"shape", {n}},
                                {"what", "argmax of each embeddings row: the predicted class"}};
      }
      if (typed) {
        j["types"][table.type.name] = files;
      } else {
        j.update(files);
      }
    }
    j["id_order"] = typed ? "per node type, the original IDs of that type in the input dataset (row i = node i)"
                          : "original node IDs of the input dataset (row i = node i)";
    std::ofstream out(staging_->path() + "/embeddings.json");
    out << j.dump(2) << "\n";
    out.close();
    if (!out) return absl::InternalError(StrCat("cannot write ", staging_->path(), "/embeddings.json"));
    return staging_->Commit();
  }

  ~OutputFile() {
    for (Table& t : tables_) {
      if (t.fd >= 0) ::close(t.fd);
    }
  }

 private:
  struct Table {
    Type type;
    int64_t offset = 0;  // its first input ID
    std::string path, header;
    int fd = -1;
    std::vector<bool> seen;
    std::vector<int64_t> predictions;
  };
  std::unique_ptr<base::StagingDir> staging_;
  size_t row_bytes_ = 0;
  std::vector<Table> tables_;
};

// Every rank learns whether all ranks are fine so far; the first error of this rank is kept.
absl::Status Agree(Communicator& comm, const absl::Status& mine, const char* what) {
  ASSIGN_OR_RETURN(std::vector<double> bad, AllReduceSum(comm, {mine.ok() ? 0.0 : 1.0}));
  RETURN_IF_ERROR(mine);
  if (bad[0] > 0) return absl::AbortedError(StrCat(what, ": another rank failed (see its error)"));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteNodeOutputs(const InferenceResult& r, const sampler::DistGraph& graph, Communicator& comm,
                              const NodeOutputFiles& files) {
  const core::PartitionConfig& config = graph.config();
  const core::RangePartitionBook& book = graph.node_book();
  const int world = comm.world_size();
  const int tpm = world / std::max(1, book.num_parts());
  const int64_t width = r.output.size(1);
  const int64_t n = book.num_ids();

  // This rank's original IDs, from its own partition's orig_nids.npy (on its machine).
  const core::TypeMap& types = graph.node_types();
  std::vector<int64_t> offsets(types.num_types() + 1, 0);
  for (int t = 0; t < types.num_types(); ++t) offsets[t + 1] = offsets[t] + types.count(t);
  at::Tensor orig;
  absl::Status mine = [&]() -> absl::Status {
    const int part = comm.rank() / std::max(1, tpm);
    const std::string path = config.PartPath(part, core::PartFiles::kOrigNids);
    ASSIGN_OR_RETURN(core::NpyArray a, core::NpyArray::Map(path));
    if (a.dtype() != core::DType::kInt64 || a.rows() != book.size(part)) {
      return absl::InvalidArgumentError(StrCat(path, ": expected ", book.size(part), " int64 IDs"));
    }
    const int64_t* ids = static_cast<const int64_t*>(a.data()) + (r.nodes.begin - book.start(part));
    std::vector<int64_t> v(ids, ids + r.nodes.size());
    if (config.typed()) {
      // Type-wise original IDs -> input IDs, type-major (what OutputFile::Place takes).
      for (size_t i = 0; i < v.size(); ++i) v[i] += offsets[types.ToTypeWise(r.nodes.begin + static_cast<int64_t>(i)).first];
    }
    orig = at::tensor(v, at::kLong);
    return absl::OkStatus();
  }();
  OutputFile out;
  if (mine.ok() && comm.rank() == 0) {
    std::vector<OutputFile::Type> out_types;
    if (config.typed()) {
      for (int t = 0; t < types.num_types(); ++t) out_types.push_back({types.name(t), types.count(t)});
    } else {
      out_types.push_back({"", n});
    }
    mine = out.Open(files.dir, files.overwrite, config.base_dir, std::move(out_types), width);
  }
  RETURN_IF_ERROR(Agree(comm, mine, "writing node outputs"));

  // Rounds of at most ~64 MiB per rank, rank 0 receiving every rank's next chunk.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{64} << 20) / std::max<int64_t>(1, width * 4 + 8));
  std::vector<NodeShare> shares(world);
  int64_t rounds = 0;
  for (int q = 0; q < world; ++q) {
    shares[q] = RankNodes(book, tpm, q);
    rounds = std::max(rounds, (shares[q].size() + chunk - 1) / chunk);
  }
  absl::Status write_status;
  for (int64_t k = 0; k < rounds; ++k) {
    std::vector<int64_t> send(world, 0), recv(world, 0);
    auto rows_of = [&](int q) { return std::clamp<int64_t>(shares[q].size() - k * chunk, 0, chunk); };
    send[0] = rows_of(comm.rank());
    if (comm.rank() == 0) {
      for (int q = 0; q < world; ++q) recv[q] = rows_of(q);
    }
    const int64_t from = std::min(k * chunk, r.nodes.size());
    at::Tensor rows = r.output.narrow(0, from, send[0]).contiguous().to(comm.device());
    at::Tensor ids = orig.narrow(0, from, send[0]).contiguous().to(comm.device());
    ASSIGN_OR_RETURN(at::Tensor got_rows, comm.AllToAll(rows, send, recv));
    ASSIGN_OR_RETURN(at::Tensor got_ids, comm.AllToAll(ids, send, recv));
    if (comm.rank() == 0 && write_status.ok()) write_status = out.Place(got_rows.cpu(), got_ids.cpu());
  }
  if (comm.rank() == 0 && write_status.ok()) write_status = out.Finish(files.predictions, files.info, width);
  return Agree(comm, write_status, "writing node outputs");
}

}  // namespace fanout::trainer
