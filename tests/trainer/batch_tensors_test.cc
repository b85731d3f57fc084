#include "trainer/batch_tensors.h"

#include <ATen/ATen.h>

#include "core/dtype.h"
#include "gtest/gtest.h"
#include "tests/trainer/test_batches.h"

namespace fanout::trainer {
namespace {

using testing::HandBuiltBatch;

std::vector<int64_t> ToVector(const at::Tensor& t) {
  at::Tensor c = t.contiguous().cpu();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(ToTensorsTest, ExpandsCscIntoEdgeListsAndDegrees) {
  const sampler::MiniBatch batch = HandBuiltBatch(3, 2);
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->blocks.size(), 1u);
  const BlockTensors& b = t->blocks[0];
  EXPECT_EQ(b.num_src, 7);
  EXPECT_EQ(b.num_dst, 4);
  EXPECT_EQ(b.num_edges(), 9);
  EXPECT_EQ(ToVector(b.src), (std::vector<int64_t>{1, 4, 4, 0, 5, 6, 1, 3, 2}));
  EXPECT_EQ(ToVector(b.dst), (std::vector<int64_t>{0, 0, 0, 0, 2, 2, 2, 3, 3}));
  EXPECT_EQ(ToVector(b.in_degree), (std::vector<int64_t>{4, 0, 3, 2}));
  EXPECT_EQ(b.src.scalar_type(), at::kLong);
  EXPECT_EQ(ToVector(t->labels), (std::vector<int64_t>{0, 1, 0, 1}));
}

TEST(ToTensorsTest, FeaturesBorrowTheSamplersMemoryAndKeepItAlive) {
  sampler::MiniBatch batch = HandBuiltBatch(3, 2);
  const float* data = batch.features.as<float>();
  std::weak_ptr<const void> owner = batch.features.owner;
  std::vector<float> expected(data, data + 7 * 3);
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->features.data_ptr<float>(), data);  // no copy
  EXPECT_EQ(t->features.sizes(), (at::IntArrayRef{7, 3}));
  batch = sampler::MiniBatch();  // the batch lets go; the tensor still holds the memory
  EXPECT_FALSE(owner.expired());
  EXPECT_EQ(std::vector<float>(t->features.data_ptr<float>(), t->features.data_ptr<float>() + 21),
            expected);
  t = absl::InternalError("drop the tensors");
  EXPECT_TRUE(owner.expired());
}

// Index arrays become tensors without a copy, and a later change to the batch (copy-on-write,
// sampler/array.h) does not reach the tensors.
TEST(ToTensorsTest, IndexArraysAreBorrowedNotCopied) {
  sampler::MiniBatch batch = HandBuiltBatch(3, 2);
  sampler::Block& b = batch.blocks[0];
  b.dst = {0, 0, 0, 0, 2, 2, 2, 3, 3};  // as the sampler computes it
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  const BlockTensors& bt = t->blocks[0];
  const sampler::Block& read = b;  // reading through a const Block never copies
  EXPECT_EQ(bt.indptr.data_ptr<int64_t>(), read.indptr.data());
  EXPECT_EQ(bt.src.data_ptr<int64_t>(), read.indices.data());
  EXPECT_EQ(bt.dst.data_ptr<int64_t>(), read.dst.data());
  b.indices[0] = 6;
  EXPECT_EQ(ToVector(bt.src), (std::vector<int64_t>{1, 4, 4, 0, 5, 6, 1, 3, 2}));
  batch = sampler::MiniBatch();  // the tensors keep their memory alive
  EXPECT_EQ(ToVector(bt.dst), (std::vector<int64_t>{0, 0, 0, 0, 2, 2, 2, 3, 3}));
  EXPECT_EQ(ToVector(bt.in_degree), (std::vector<int64_t>{4, 0, 3, 2}));
}

TEST(ToTensorsTest, FeaturesWithoutOwnerAreCopied) {
  sampler::MiniBatch batch = HandBuiltBatch(3, 2);
  std::vector<float> values(batch.features.as<float>(), batch.features.as<float>() + 21);
  batch.features.owner = nullptr;
  batch.features.data = values.data();
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NE(t->features.data_ptr<float>(), values.data());
  EXPECT_EQ(t->features[6][2].item<float>(), values[20]);
}

// Features stored in another dtype (a sampler hands them over as stored) reach the model as
// float32, converted exactly; with or without an owner.
TEST(ToTensorsTest, FeaturesOfOtherDtypesAreConvertedToFloat32) {
  sampler::MiniBatch batch = HandBuiltBatch(3, 2);
  std::vector<float> expected(batch.features.as<float>(), batch.features.as<float>() + 21);
  auto halves = std::make_shared<std::vector<uint16_t>>(21);
  for (int i = 0; i < 21; ++i) {
    (*halves)[i] = core::FloatToHalf(expected[i] * 0.37f);
    expected[i] = core::HalfToFloat((*halves)[i]);
  }
  batch.features.owner = halves;
  batch.features.data = halves->data();
  batch.features.dtype = core::DType::kFloat16;
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->features.scalar_type(), at::kFloat);
  ASSERT_EQ(t->features.sizes(), (at::IntArrayRef{7, 3}));
  EXPECT_EQ(std::vector<float>(t->features.data_ptr<float>(), t->features.data_ptr<float>() + 21), expected);

  std::vector<double> doubles(21);
  for (int i = 0; i < 21; ++i) doubles[i] = 1.0 / (i + 3);
  batch.features = {nullptr, doubles.data(), core::DType::kFloat64, 7, 3};
  t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->features.scalar_type(), at::kFloat);
  for (int i = 0; i < 21; ++i) EXPECT_EQ(t->features.data_ptr<float>()[i], static_cast<float>(doubles[i]));
}

TEST(ToTensorsTest, MultiLayerBatchKeepsLayerOrderAndLeavesLabelsOutWhenAbsent) {
  testing::RandomBatchSpec spec;
  spec.num_layers = 3;
  sampler::MiniBatch batch = testing::MakeRandomBatch(spec);
  batch.labels.clear();
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->blocks.size(), 3u);
  for (size_t l = 0; l < 3; ++l) {
    EXPECT_EQ(t->blocks[l].num_src, batch.blocks[l].num_src());
    EXPECT_EQ(t->blocks[l].num_dst, batch.blocks[l].num_dst);
    EXPECT_EQ(t->blocks[l].in_degree.sum().item<int64_t>(), batch.blocks[l].num_edges());
  }
  EXPECT_EQ(t->blocks.back().num_dst, spec.num_seeds);
  EXPECT_FALSE(t->labels.defined());
}

// Each broken contract is INVALID_ARGUMENT with a message naming the culprit.
TEST(ToTensorsTest, RejectsBatchesThatBreakTheContract) {
  auto expect_invalid = [](const sampler::MiniBatch& batch, const std::string& needle,
                           int64_t num_classes = 0) {
    absl::StatusOr<BatchTensors> t = ToTensors(batch, {.num_classes = num_classes});
    ASSERT_FALSE(t.ok()) << needle;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status();
  };
  const sampler::MiniBatch good = HandBuiltBatch(3, 2);
  sampler::MiniBatch b = good;
  b.blocks[0].indices[2] = 7;
  expect_invalid(b, "indices[2] = 7");
  b = good;
  b.blocks[0].indptr = {0, 4, 3, 7, 9};
  expect_invalid(b, "indptr decreases at destination 1");
  b = good;
  b.blocks[0].indptr.pop_back();
  expect_invalid(b, "indptr has 4 entries");
  b = good;
  b.features.rows = 6;
  expect_invalid(b, "one row per input node (7)");
  b = good;
  b.labels.pop_back();
  expect_invalid(b, "3 labels for 4 output nodes");
}

TEST(ToTensorsTest, RejectsLabelsOutOfRangeAndUnchainedBlocks) {
  sampler::MiniBatch b = HandBuiltBatch(3, 2);
  b.labels[2] = 5;
  absl::StatusOr<BatchTensors> t = ToTensors(b, {.num_classes = 2});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("label 2 (node 102) is 5, not in [0, 2)"), std::string::npos);

  testing::RandomBatchSpec spec;
  sampler::MiniBatch two = testing::MakeRandomBatch(spec);
  std::swap(two.blocks[1].src_nodes[0], two.blocks[1].src_nodes[1]);
  t = ToTensors(two);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("block 1: source node 0"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace fanout::trainer
