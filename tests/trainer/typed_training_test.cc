// Typed graphs in the trainer (issue 29): the sparse optimizers against LibTorch's dense ones,
// learnable embeddings held by real graph servers (only the rows a step touched change, by
// exactly the sparse update), the typed input layer and the R-GCN layer against a reference
// written edge by edge.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "base/strings.h"
#include "gtest/gtest.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/server_fields.h"
#include "tests/testing/testing.h"
#include "tests/trainer/typed_job.h"
#include "trainer/batch_tensors.h"
#include "trainer/dist.h"
#include "trainer/dist_embedding.h"
#include "trainer/models.h"
#include "trainer/typed_input.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// Sparse Adam (and Adagrad) on a row equals LibTorch's dense optimizer run on that row alone,
// stepped only at the steps that touched it (DGL's per-row state); untouched rows never move.
// Steps alternate between contiguous rows (SparseUpdate) and rows updated where they are in the
// table (SparseUpdateAt).
TEST(SparseOptimizerTest, EachRowFollowsADenseOptimizerOverItsOwnSteps) {
  for (SparseOptimizerKind kind : {SparseOptimizerKind::kAdam, SparseOptimizerKind::kAdagrad}) {
    SCOPED_TRACE(std::string(SparseOptimizerName(kind)));
    core::SparseOptimizerOptions o;
    o.kind = kind;
    o.lr = 0.05;
    o.eps = kind == SparseOptimizerKind::kAdam ? 1e-8 : 1e-10;
    // 20 columns: a vector of 16 and a remainder, with AVX-512.
    const int64_t dim = 20, rows = 5, sw = core::SparseStateWidth(kind, dim);
    at::Tensor table = at::randn({rows, dim}, at::kFloat);
    at::Tensor state = at::zeros({rows, sw}, at::kFloat);
    // One dense optimizer per row, over a copy of that row.
    std::vector<at::Tensor> dense;
    std::vector<std::unique_ptr<torch::optim::Optimizer>> opts;
    for (int64_t r = 0; r < rows; ++r) {
      dense.push_back(table[r].clone().set_requires_grad(true));
      if (kind == SparseOptimizerKind::kAdam) {
        opts.push_back(std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{dense[r]},
                                                            torch::optim::AdamOptions(o.lr).eps(o.eps)));
      } else {
        opts.push_back(std::make_unique<torch::optim::Adagrad>(std::vector<at::Tensor>{dense[r]},
                                                               torch::optim::AdagradOptions(o.lr).eps(o.eps)));
      }
    }
    const at::Tensor untouched = table[4].clone();
    const std::vector<std::vector<int64_t>> steps = {{0, 1, 2}, {1}, {3, 0}, {1, 3}, {2}};
    for (size_t step = 0; step < steps.size(); ++step) {
      const std::vector<int64_t>& touched = steps[step];
      const at::Tensor ids = at::tensor(touched, at::kLong);
      const at::Tensor grads = at::randn({static_cast<int64_t>(touched.size()), dim}, at::kFloat);
      if (step % 2 == 0) {  // rows gathered into contiguous copies
        at::Tensor w = table.index_select(0, ids).contiguous(), s = state.index_select(0, ids).contiguous();
        core::SparseUpdate(o, ids.size(0), dim, w.data_ptr<float>(), s.data_ptr<float>(), grads.data_ptr<float>());
        table.index_copy_(0, ids, w);
        state.index_copy_(0, ids, s);
      } else {  // in place, in the table, by index (the servers' form)
        core::SparseUpdateAt(o, ids.size(0), dim, touched.data(), table.data_ptr<float>(), state.data_ptr<float>(),
                             grads.data_ptr<float>());
      }
      for (size_t i = 0; i < touched.size(); ++i) {
        opts[touched[i]]->zero_grad();
        dense[touched[i]].mutable_grad() = grads[i].clone();
        opts[touched[i]]->step();
      }
    }
    for (int64_t r = 0; r < 4; ++r) {
      EXPECT_TRUE(at::allclose(table[r], dense[r].detach(), 1e-5, 1e-6)) << "row " << r << "\n"
                                                                         << table[r] << "\n"
                                                                         << dense[r];
    }
    EXPECT_TRUE(at::equal(table[4], untouched));
    if (kind == SparseOptimizerKind::kAdam) {
      // Each row's own step count: rows 0..3 were touched 2, 3, 2, 2 times.
      const at::Tensor counts = state.select(1, 2 * dim).to(at::kLong).contiguous();
      EXPECT_EQ(std::vector<int64_t>(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + rows),
                (std::vector<int64_t>{2, 3, 2, 2, 0}));
    }
  }
}

// Who owns which rows: rank r of a job with 2 machines and 2 trainers each initialises (and later
// updates) exactly machine r / 2's rows with ID % 2 == r % 2; rows start uniform in [-1, 1].
TEST(DistEmbeddingsTest, EachRankInitialisesTheRowsItOwns) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  auto comm = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));  // rank 0 of the 4
  const int author = *job.graph->node_types().TypeId("author");
  EmbeddingOptions o;
  o.dim = 6;
  auto emb = DistEmbeddings::Create(*job.graph, job.fields.get(), {author}, o, *comm, /*trainers_per_machine=*/2);
  ASSERT_TRUE(emb.ok()) << emb.status();
  const auto table = job.Table(author, o.dim);
  ASSERT_EQ(table.size(), 150u);
  std::set<float> distinct;
  int64_t mine = 0;
  for (const auto& [id, row] : table) {
    const int owner = (*emb)->OwnerRank(id);
    EXPECT_EQ(owner, job.graph->node_book().PartOf(id) * 2 + static_cast<int>(id % 2));
    if (owner != 0) {
      EXPECT_EQ(row, std::vector<float>(o.dim, 0.0f)) << "node " << id << " belongs to rank " << owner;
      continue;
    }
    ++mine;
    for (float x : row) {
      EXPECT_GE(x, -1.0f);
      EXPECT_LE(x, 1.0f);
      distinct.insert(x);
    }
  }
  EXPECT_GT(mine, 10);
  EXPECT_EQ(distinct.size(), static_cast<size_t>(mine * o.dim));  // no constant fill
}

// A step changes exactly the rows it looked up, each by the sparse update of its own summed
// gradient (with `bfloat16`, that gradient as the owner receives it: rounded to bfloat16); rows
// looked up without gradients (evaluation) are not updated.
void StepChangesOnlyTheRowsItTouched(bool bfloat16) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(1));
  auto comm = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  const int author = *job.graph->node_types().TypeId("author");
  EmbeddingOptions o;
  o.dim = 6;
  o.optimizer.lr = 0.1;
  o.seed = 17;
  o.grads_bfloat16 = bfloat16;
  auto emb = DistEmbeddings::Create(*job.graph, job.fields.get(), {author}, o, *comm, 1);
  ASSERT_TRUE(emb.ok()) << emb.status();
  const auto start = job.Table(author, o.dim);
  const int64_t a0 = job.graph->node_types().Range(author, 0).first;
  const std::vector<int64_t> touched = {a0, a0 + 3, a0 + 40, a0};  // a0 twice: its gradients add up
  const at::Tensor weight = at::arange(static_cast<int64_t>(touched.size()) * o.dim, at::kFloat).view({-1, o.dim}) / 10;
  at::Tensor rows = *(*emb)->Lookup(author, at::tensor(touched, at::kLong));
  (rows * weight).sum().backward();
  int64_t updated = 0;
  ASSERT_TRUE((*emb)->Step(*comm, &updated).ok());
  EXPECT_EQ(updated, 3);
  const auto after = job.Table(author, o.dim);
  std::map<int64_t, std::vector<float>> grad;
  for (size_t i = 0; i < touched.size(); ++i) {
    auto& g = grad[touched[i]];
    g.resize(o.dim, 0.0f);
    for (int64_t k = 0; k < o.dim; ++k) g[k] += weight[i][k].item<float>();
  }
  int64_t rounded = 0;  // gradient values bfloat16 changed: the test has some to check
  if (bfloat16) {
    for (auto& [id, g] : grad) {
      for (float& x : g) {
        const float r = at::tensor(x).to(at::kBFloat16).to(at::kFloat).item<float>();
        rounded += r != x;
        x = r;
      }
    }
    EXPECT_GT(rounded, 5);
  }
  for (const auto& [id, row] : start) {
    SCOPED_TRACE("node " + std::to_string(id));
    if (grad.count(id) == 0) {
      EXPECT_EQ(after.at(id), row);
      continue;
    }
    std::vector<float> want = row, state(core::SparseStateWidth(o.optimizer.kind, o.dim), 0.0f);
    core::SparseUpdate(o.optimizer, 1, o.dim, want.data(), state.data(), grad[id].data());
    EXPECT_EQ(after.at(id), want);
  }
  {
    torch::NoGradGuard no_grad;
    ASSERT_TRUE((*emb)->Lookup(author, at::tensor(touched, at::kLong)).ok());
  }
  ASSERT_TRUE((*emb)->Step(*comm, &updated).ok());
  EXPECT_EQ(updated, 0);
  EXPECT_EQ(job.Table(author, o.dim), after);
}

TEST(DistEmbeddingsTest, AStepChangesOnlyTheRowsItTouchedByTheSparseUpdate) {
  StepChangesOnlyTheRowsItTouched(/*bfloat16=*/false);
}

// --embed-grad-dtype bfloat16: the gradient rows reach their owner as bfloat16, which sums them
// as float32; the step is the float32 one of the rounded gradients.
TEST(DistEmbeddingsTest, GradientsSentAsBfloat16StepByTheirRoundedValues) {
  StepChangesOnlyTheRowsItTouched(/*bfloat16=*/true);
}

// The learnable rows are the job's own fields: servers started without --allow-push hold them.
TEST(DistEmbeddingsTest, ServersWithoutAllowPushHoldTheJobsRows) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(1, /*allow_push=*/false));
  auto comm = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  EmbeddingOptions o;
  o.dim = 4;
  auto emb = DistEmbeddings::Create(*job.graph, job.fields.get(), {*job.graph->node_types().TypeId("author")}, o,
                                    *comm, 1);
  ASSERT_TRUE(emb.ok()) << emb.status();
}

// The servers' SparseUpdate refuses what would corrupt a table, naming it: an ID twice in one
// step, a non-finite gradient, a state field of the wrong width, a field of the partition's files.
TEST(DistEmbeddingsTest, SparseUpdatesThatWouldCorruptATableAreRefused) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(1));
  auto comm = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  const int author = *job.graph->node_types().TypeId("author");
  EmbeddingOptions o;
  o.dim = 2;
  ASSERT_TRUE(DistEmbeddings::Create(*job.graph, job.fields.get(), {author}, o, *comm, 1).ok());
  const int64_t a0 = job.graph->node_types().Range(author, 0).first;
  const core::FieldSchema rows{.name = "embed", .dtype = core::DType::kFloat32, .row_shape = {2}, .node_type = "author"};
  const core::FieldSchema state{
      .name = "embed.adam", .dtype = core::DType::kFloat32, .row_shape = {5}, .node_type = "author"};
  // Refused alike where this process maps the rows (the in-process servers' shared memory) and
  // where the servers apply the step.
  auto by_servers = sampler::ServerFields::Make(job.config, *sampler::ParseServerList(job.cluster.ServerList(), 1),
                                                rpc::ClientOptions{}, /*map_shared=*/false);
  ASSERT_TRUE(by_servers.ok()) << by_servers.status();
  for (sampler::ServerFields* fields : {job.fields.get(), by_servers->get()}) {
    SCOPED_TRACE(fields == job.fields.get() ? "mapped" : "through the servers");
    ASSERT_TRUE(fields->Create(rows).ok());
    EXPECT_EQ(fields->Mapped(rows, 0), fields == job.fields.get());
    auto update = [&](const core::FieldSchema& r, const core::FieldSchema& st, std::vector<int64_t> ids,
                      std::vector<float> grads, core::SparseOptimizerKind kind = SparseOptimizerKind::kAdam) {
      return fields->SparseUpdate(r, st, ids, grads.data(), {.kind = kind});
    };
    EXPECT_TRUE(update(rows, state, {a0, a0 + 1}, {1, 2, 3, 4}).ok());
    absl::Status twice = update(rows, state, {a0, a0}, {1, 2, 3, 4});
    EXPECT_NE(twice.message().find(StrCat("node ", a0, " appears twice")), std::string::npos) << twice;
    absl::Status nan = update(rows, state, {a0}, {1, std::nanf("")});
    EXPECT_NE(nan.message().find(StrCat("the gradient of node ", a0, " is not finite")), std::string::npos) << nan;
    absl::Status width = update(rows, state, {a0}, {1, 2}, SparseOptimizerKind::kAdagrad);
    EXPECT_NE(width.message().find("adagrad on [2]-wide rows of 'author/embed' keeps 2 per row"), std::string::npos)
        << width;
    const core::FieldSchema feat{.name = "feat", .dtype = core::DType::kFloat32, .row_shape = {3}, .node_type = "paper"};
    absl::Status files = update(feat, state, {0}, {1, 2, 3});
    EXPECT_NE(files.message().find("'paper/feat' is not a float32 field created by CreateNodeField"), std::string::npos)
        << files;
    absl::Status other = update(rows, state, {0}, {1, 2});
    EXPECT_NE(other.message().find("node 0 is of type paper"), std::string::npos) << other;
  }
}

// A trainer on a server's machine reads and updates that partition's rows in the server's shared
// memory: the rows, their optimizer state and what every later read sees are byte for byte what
// the servers' own sparse updates make (two tables, the same steps, one mapped, one not).
TEST(DistEmbeddingsTest, MappedRowsUpdateAsTheServersDo) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  auto by_servers = sampler::ServerFields::Make(job.config, *sampler::ParseServerList(job.cluster.ServerList(), 2),
                                                rpc::ClientOptions{}, /*map_shared=*/false);
  ASSERT_TRUE(by_servers.ok()) << by_servers.status();
  const auto& types = job.graph->node_types();
  const int author = *types.TypeId("author");
  const int64_t dim = 3;
  auto schema = [&](const std::string& name, int64_t width) {
    return core::FieldSchema{.name = name, .dtype = core::DType::kFloat32, .row_shape = {width}, .node_type = "author"};
  };
  const core::SparseOptimizerOptions o{.kind = SparseOptimizerKind::kAdam, .lr = 0.1};
  const int64_t sw = core::SparseStateWidth(o.kind, dim);
  ASSERT_TRUE(job.fields->Create(schema("m", dim)).ok());
  ASSERT_TRUE(job.fields->Create(schema("m.adam", sw)).ok());
  ASSERT_TRUE((*by_servers)->Create(schema("s", dim)).ok());
  ASSERT_TRUE((*by_servers)->Create(schema("s.adam", sw)).ok());
  EXPECT_TRUE(job.fields->Mapped(schema("m", dim), 0));
  EXPECT_TRUE(job.fields->Mapped(schema("m", dim), 1));
  EXPECT_FALSE((*by_servers)->Mapped(schema("s", dim), 0));
  // Both partitions' authors, in no order, some rows in several steps.
  std::vector<int64_t> all;
  for (int p = 0; p < 2; ++p) {
    for (int64_t v = types.Range(author, p).first; v < types.Range(author, p).second; ++v) all.push_back(v);
  }
  std::vector<float> start(all.size() * dim);
  for (size_t i = 0; i < start.size(); ++i) start[i] = std::sin(static_cast<float>(i));
  ASSERT_TRUE(job.fields->Push(schema("m", dim), all, reinterpret_cast<const char*>(start.data()), core::PushOp::kAssign).ok());
  ASSERT_TRUE((*by_servers)->Push(schema("s", dim), all, reinterpret_cast<const char*>(start.data()), core::PushOp::kAssign).ok());
  std::mt19937 rng(3);
  for (int step = 0; step < 4; ++step) {
    std::vector<int64_t> ids = all;
    std::shuffle(ids.begin(), ids.end(), rng);
    ids.resize(ids.size() / 2);
    std::vector<float> grads(ids.size() * dim);
    for (float& g : grads) g = std::uniform_real_distribution<float>(-1, 1)(rng);
    ASSERT_TRUE(job.fields->SparseUpdate(schema("m", dim), schema("m.adam", sw), ids, grads.data(), o).ok());
    ASSERT_TRUE((*by_servers)->SparseUpdate(schema("s", dim), schema("s.adam", sw), ids, grads.data(), o).ok());
  }
  // Read back every way: through the servers, and from the mapping.
  for (auto [rows, width] : {std::pair<std::string, int64_t>{"", dim}, {".adam", sw}}) {
    std::vector<float> mapped(all.size() * width), served(all.size() * width), mapped_by_servers(all.size() * width);
    ASSERT_TRUE(job.fields->Pull(schema("m" + rows, width), all, reinterpret_cast<char*>(mapped.data())).ok());
    ASSERT_TRUE((*by_servers)->Pull(schema("s" + rows, width), all, reinterpret_cast<char*>(served.data())).ok());
    ASSERT_TRUE((*by_servers)->Pull(schema("m" + rows, width), all, reinterpret_cast<char*>(mapped_by_servers.data())).ok());
    EXPECT_EQ(mapped, served) << "m" << rows;
    EXPECT_EQ(mapped_by_servers, served) << "m" << rows;
    if (rows.empty()) EXPECT_NE(served, start) << "the steps moved no row";
  }
}

// The typed input layer puts each input node's row in its place: papers' projected features,
// authors' embeddings, venues' zeros (no embeddings asked for them); and R-GCN's layer equals
// the per-relation mean written edge by edge.
TEST(TypedModelTest, InputLayerAndRgcnLayerMatchAnEdgeByEdgeReference) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  auto comm = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  const auto& types = job.graph->node_types();
  const int paper = *types.TypeId("paper"), author = *types.TypeId("author"), venue = *types.TypeId("venue");
  auto input = TypedInput::Make(*job.graph, "feat", /*embed_dim=*/5, /*init_seed=*/3);
  ASSERT_TRUE(input.ok()) << input.status();
  EXPECT_EQ((*input)->width(), 5);
  EXPECT_EQ((*input)->featured(), std::vector<int>{paper});
  EXPECT_EQ((*input)->featureless(), (std::vector<int>{author, venue}));
  EmbeddingOptions o;
  o.dim = 5;
  auto emb = DistEmbeddings::Create(*job.graph, job.fields.get(), {author}, o, *comm, 2);
  ASSERT_TRUE(emb.ok()) << emb.status();

  sampler::MiniBatch batch;
  ASSERT_NO_FATAL_FAILURE(job.PaperBatch(16, {3, 3}, &batch));
  const sampler::MiniBatch* mb = &batch;
  auto bt = ToTensors(*mb);
  ASSERT_TRUE(bt.ok()) << bt.status();
  auto x = (*input)->Forward(*bt, *mb, emb->get());
  ASSERT_TRUE(x.ok()) << x.status();
  const sampler::Int64Array& inputs = mb->input_nodes();
  ASSERT_EQ(x->size(0), static_cast<int64_t>(inputs.size()));
  int64_t feature_row = 0;
  auto named = (*input)->named_parameters();
  const at::Tensor w = named[std::string("proj") + std::to_string(paper) + "_weight"];
  const at::Tensor b = named[std::string("proj") + std::to_string(paper) + "_bias"];
  core::FieldSchema table{.name = "embed", .dtype = core::DType::kFloat32, .row_shape = {5}, .node_type = "author"};
  int64_t seen[3] = {0, 0, 0};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int t = types.ToTypeWise(inputs[i]).first;
    ++seen[t];
    const at::Tensor row = (*x)[static_cast<int64_t>(i)];
    if (t == paper) {
      const at::Tensor f = bt->features[feature_row++];
      EXPECT_TRUE(at::allclose(row, at::matmul(w, f) + b, 1e-5, 1e-6)) << "input " << i;
    } else if (t == author) {
      std::vector<float> want(5);
      ASSERT_TRUE(job.fields->Pull(table, std::vector<int64_t>{inputs[i]}, reinterpret_cast<char*>(want.data())).ok());
      EXPECT_TRUE(at::equal(row, at::tensor(want))) << "input " << i;
    } else {
      EXPECT_TRUE(at::equal(row, at::zeros({5}))) << "input " << i;
    }
  }
  EXPECT_GT(seen[paper], 16);
  EXPECT_GT(seen[author], 0);
  EXPECT_GT(seen[venue], 0);
  (*emb)->Forget();

  // The sampler groups each hop's new nodes by type: past a block's destinations (a prefix of
  // its sources), the sources' types never decrease, and every block's destinations are a few
  // runs of one type, each run naming its edges and the relations they use.
  for (size_t l = 0; l < mb->blocks.size(); ++l) {
    const sampler::Block& blk = mb->blocks[l];
    for (int64_t i = blk.num_dst + 1; i < blk.num_src(); ++i) {
      EXPECT_LE(types.ToTypeWise(blk.src_nodes[i - 1]).first, types.ToTypeWise(blk.src_nodes[i]).first)
          << "block " << l << " source " << i;
    }
    const BlockTensors& bl = bt->blocks[l];
    ASSERT_FALSE(bl.dst_runs.empty()) << "block " << l;
    int64_t next = 0;
    for (const BlockTensors::DstRun& run : bl.dst_runs) {
      EXPECT_EQ(run.begin, next);
      next = run.end;
      std::set<int64_t> rels;
      for (int64_t v = run.begin; v < run.end; ++v) {
        EXPECT_EQ(types.ToTypeWise(blk.src_nodes[v]).first, types.ToTypeWise(blk.src_nodes[run.begin]).first);
      }
      EXPECT_EQ(run.edge_begin, blk.indptr[run.begin]);
      EXPECT_EQ(run.edge_end, blk.indptr[run.end]);
      for (int64_t e = run.edge_begin; e < run.edge_end; ++e) rels.insert(blk.etype()[e]);
      EXPECT_EQ(run.relations, std::vector<int64_t>(rels.begin(), rels.end()));
    }
    EXPECT_EQ(next, blk.num_dst);
  }
  EXPECT_GT(bt->blocks[0].dst_runs.size(), 1u);

  // Inputs in any order (too many runs to go run by run) give the same rows: the batch's
  // inputs reversed, their feature rows with them.
  {
    sampler::MiniBatch shuffled;
    const int64_t n = static_cast<int64_t>(inputs.size());
    std::vector<int64_t> ids(inputs.begin(), inputs.end());
    std::vector<int32_t> ts(mb->input_types().begin(), mb->input_types().end());
    // Interleave the two halves so that consecutive inputs change type often.
    std::vector<int64_t> order;
    for (int64_t i = 0; i < (n + 1) / 2; ++i) {
      order.push_back(i);
      if (i + (n + 1) / 2 < n) order.push_back(i + (n + 1) / 2);
    }
    std::vector<int64_t> new_ids, feature_rows;
    std::vector<int32_t> new_types;
    std::vector<int64_t> feature_row_of(n, -1);
    for (int64_t i = 0, f = 0; i < n; ++i) {
      if (ts[i] == paper) feature_row_of[i] = f++;
    }
    int64_t runs = 0;
    for (size_t j = 0; j < order.size(); ++j) {
      new_ids.push_back(ids[order[j]]);
      new_types.push_back(ts[order[j]]);
      if (ts[order[j]] == paper) feature_rows.push_back(feature_row_of[order[j]]);
      if (j == 0 || new_types[j] != new_types[j - 1]) ++runs;
    }
    ASSERT_GT(runs, 64) << "the interleaved order must take the gather path";
    shuffled.blocks.resize(1);
    shuffled.blocks[0].src_nodes = new_ids;
    shuffled.input_fields.Add<int32_t>(sampler::kInputTypes) = new_types;
    BatchTensors sbt;
    sbt.features = bt->features.index_select(0, at::tensor(feature_rows));
    auto sx = (*input)->Forward(sbt, shuffled, emb->get());
    ASSERT_TRUE(sx.ok()) << sx.status();
    EXPECT_TRUE(at::allclose(*sx, x->index_select(0, at::tensor(order)), 1e-6, 1e-6));
    // And the same gradients: the same loss over the rows either way (the gather's index must
    // outlive Forward for the backward pass).
    // A seeded draw: LibTorch's global generator would make each run's sums different, and a
    // gradient entry that cancels to near 0 then fails a tight tolerance now and then.
    at::Generator wgen = at::make_generator<at::CPUGeneratorImpl>(17);
    const at::Tensor w = at::randn({n, 5}, wgen);
    std::vector<at::Tensor> grads;
    for (const at::Tensor& rows : {*x, *sx}) {
      (*input)->zero_grad();
      const at::Tensor weight = rows.data_ptr() == sx->data_ptr() ? w.index_select(0, at::tensor(order)) : w;
      (rows * weight).sum().backward(/*gradient=*/{}, /*retain_graph=*/true);
      grads.push_back((*input)->named_parameters()[std::string("proj") + std::to_string(paper) + "_weight"].grad().clone());
    }
    // Summed in another order: equal up to float32 rounding of the largest entry.
    const double scale = grads[0].abs().max().item<double>();
    EXPECT_LE((grads[0] - grads[1]).abs().max().item<double>(), 1e-5 * scale + 1e-6);
    (*emb)->Forget();
  }

  // R-GCN on the batch's blocks against an edge-by-edge reference of layer 0.
  const ModelOptions mo = job.Rgcn(5, 4);
  auto model = MakeModel(mo, 9);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor h = x->detach();
  const BlockTensors& b0 = bt->blocks[0];
  const at::Tensor got = (*model)->ForwardLayer(0, b0, h);  // with ReLU (a hidden layer)
  auto params = (*model)->named_parameters();
  const at::Tensor self = params["layer0.fc_self"], rel = params["layer0.fc_rel"], bias = params["layer0.bias"];
  const int64_t r_count = mo.num_relations;
  for (int64_t j = 0; j < b0.num_dst; ++j) {
    at::Tensor want = at::matmul(self, h[j]) + bias;
    for (int64_t r = 0; r < r_count; ++r) {
      at::Tensor sum = at::zeros({5});
      int64_t n = 0;
      for (int64_t e = b0.indptr[j].item<int64_t>(); e < b0.indptr[j + 1].item<int64_t>(); ++e) {
        if (b0.etype()[e].item<int64_t>() != r) continue;
        sum += h[b0.src[e].item<int64_t>()];
        ++n;
      }
      if (n > 0) want += at::matmul(rel.narrow(1, r * 5, 5), sum / n);
    }
    EXPECT_TRUE(at::allclose(got[j], at::relu(want), 1e-4, 1e-5)) << "destination " << j;
  }
}

// The R-GCN layer run by run over a typed block's destinations (each type's products over the
// relations it receives) computes what one product over every relation does, forward and
// backward.
TEST(TypedModelTest, RgcnLayerByTypeRunsEqualsOneRunOverEveryRelation) {
  TypedJob job;
  ASSERT_NO_FATAL_FAILURE(job.Start(1));
  sampler::MiniBatch mb;
  ASSERT_NO_FATAL_FAILURE(job.PaperBatch(24, {4, 4}, &mb));
  auto bt = ToTensors(mb);
  ASSERT_TRUE(bt.ok()) << bt.status();
  const ModelOptions mo = job.Rgcn(6, 5);
  auto model = MakeModel(mo, 4);
  ASSERT_TRUE(model.ok()) << model.status();
  const BlockTensors& by_runs = bt->blocks[0];
  ASSERT_GT(by_runs.dst_runs.size(), 1u);
  bool some_run_lacks_a_relation = false;
  for (const auto& run : by_runs.dst_runs) some_run_lacks_a_relation |= static_cast<int64_t>(run.relations.size()) < mo.num_relations;
  EXPECT_TRUE(some_run_lacks_a_relation);
  BlockTensors one_run = by_runs;
  one_run.dst_runs.clear();
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(5);
  const at::Tensor h = at::randn({by_runs.num_src, 6}, gen);
  auto grads = [&](const BlockTensors& b) {
    (*model)->zero_grad();
    const at::Tensor hin = h.clone().requires_grad_(true);
    const at::Tensor out = (*model)->ForwardLayer(0, b, hin);
    (out * at::arange(out.numel()).view(out.sizes()).to(at::kFloat).sin()).sum().backward();
    std::vector<at::Tensor> g = {out.detach(), hin.grad()};
    for (const at::Tensor& p : (*model)->parameters()) {
      if (p.grad().defined()) g.push_back(p.grad().clone());
    }
    return g;
  };
  const std::vector<at::Tensor> a = grads(by_runs), b = grads(one_run);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::allclose(a[i], b[i], 1e-4, 1e-5)) << "tensor " << i;
}

}  // namespace
}  // namespace fanout::trainer
