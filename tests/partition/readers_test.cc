#include "partition/readers.h"

#include <cstring>
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::partition {
namespace {

using testing::TempDir;
using testing::WriteGz;
using testing::WriteText;

void ExpectSameData(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.num_nodes, b.num_nodes);
  ASSERT_EQ(a.num_edges(), b.num_edges());
  EXPECT_EQ(0, std::memcmp(a.edges.data(), b.edges.data(), a.edges.nbytes()));
  for (const char* name : {"feat", "label"}) {
    const Field* fa = a.FindNodeField(name);
    const Field* fb = b.FindNodeField(name);
    ASSERT_NE(fa, nullptr);
    ASSERT_NE(fb, nullptr);
    EXPECT_EQ(fa->data.shape(), fb->data.shape());
    EXPECT_EQ(0, std::memcmp(fa->data.data(), fb->data.data(), fa->data.nbytes())) << name;
  }
  EXPECT_EQ(a.train_idx, b.train_idx);
  EXPECT_EQ(a.valid_idx, b.valid_idx);
  EXPECT_EQ(a.test_idx, b.test_idx);
  EXPECT_EQ(a.num_classes, b.num_classes);
}

TEST(ReadersTest, OgbLayoutRoundTrip) {
  TempDir dir;
  Dataset src = testing::MakeRandomDataset({.num_nodes = 200, .num_edges = 900, .edge_field = false});
  testing::WriteOgbLayout(src, dir.Sub("ds"), "random");
  auto d = ReadDataset({.input_dir = dir.Sub("ds")});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->layout, "ogb");
  EXPECT_EQ(d->name, "ds");
  ExpectSameData(src, *d);
}

TEST(ReadersTest, PlainNpyLayoutRoundTripWithExtraFields) {
  TempDir dir;
  Dataset src = testing::MakeRandomDataset({.num_nodes = 150, .num_edges = 600});
  testing::WritePlainLayout(src, dir.path());
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->layout, "plain");
  ExpectSameData(src, *d);
  ASSERT_EQ(d->edge_fields.size(), 1u);
  EXPECT_EQ(d->edge_fields[0].name, "weight");
  EXPECT_TRUE(d->edges.is_mapped());  // large inputs are mapped, not copied
}

// DGL's chunked graph format is read by the serial tool too (the same reader as --distributed's),
// with edges in text or .npy chunks and fields in several chunks each: the plain layout's data.
TEST(ReadersTest, DglChunkedLayoutReadsAsThePlainOne) {
  TempDir dir;
  Dataset src = testing::MakeRandomDataset({.num_nodes = 150, .num_edges = 600});
  src.has_split = false;
  src.train_idx.clear();
  src.valid_idx.clear();
  src.test_idx.clear();
  for (const char* format : {"csv", "numpy"}) {
    const std::string root = dir.Sub(format);
    testing::WriteDglChunkedLayout(src, root, format, {0, 250, 251, src.num_edges()}, {0, 100, src.num_nodes});
    auto d = ReadDataset({.input_dir = root});
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->layout, "dgl-chunked");
    ExpectSameData(src, *d);
    ASSERT_EQ(d->edge_fields.size(), src.edge_fields.size());
    for (size_t i = 0; i < src.edge_fields.size(); ++i) {
      EXPECT_EQ(d->edge_fields[i].name, src.edge_fields[i].name);
      EXPECT_EQ(0, std::memcmp(d->edge_fields[i].data.data(), src.edge_fields[i].data.data(), src.edge_fields[i].data.nbytes()));
    }
  }
}

// Each split file is optional on its own: train_idx.npy without valid/test is a split with
// empty validation and test sets (the README documents every split file as optional).
TEST(ReadersTest, EachSplitFileIsOptionalOnItsOwn) {
  TempDir dir;
  Dataset src = testing::MakeRandomDataset({.num_nodes = 150, .num_edges = 600});
  testing::WritePlainLayout(src, dir.path());
  std::filesystem::remove(dir.Sub("valid_idx.npy"));
  std::filesystem::remove(dir.Sub("test_idx.npy"));
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->has_split);
  EXPECT_EQ(d->train_idx, src.train_idx);
  EXPECT_TRUE(d->valid_idx.empty());
  EXPECT_TRUE(d->test_idx.empty());
}

// PyG's edge_index layout, [2, E] (a row of sources, a row of destinations), reads as the same
// dataset as DGL's [E, 2]: detected by shape, or stated with --edge-layout.
TEST(ReadersTest, PygEdgeIndexLayoutIsDetectedOrStated) {
  TempDir dir;
  Dataset src = testing::MakeRandomDataset({.num_nodes = 150, .num_edges = 600});
  testing::WritePlainLayout(src, dir.path());
  const int64_t e = src.num_edges();
  const int64_t* rows = src.edges.data_as<int64_t>();
  std::vector<int64_t> columns(static_cast<size_t>(2 * e));
  for (int64_t i = 0; i < e; ++i) {
    columns[i] = rows[2 * i];
    columns[e + i] = rows[2 * i + 1];
  }
  ASSERT_TRUE(core::WriteNpy(dir.Sub("edges.npy"), core::DType::kInt64, {2, e}, columns.data()).ok());
  for (const char* layout : {"auto", "columns"}) {
    auto d = ReadDataset({.input_dir = dir.path(), .edge_layout = layout});
    ASSERT_TRUE(d.ok()) << layout << ": " << d.status();
    ExpectSameData(src, *d);
  }
  auto wrong = ReadDataset({.input_dir = dir.path(), .edge_layout = "rows"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(std::string(wrong.status().message()).find("--edge-layout rows expects an [E, 2] array"), std::string::npos)
      << wrong.status();
  auto bad = ReadDataset({.input_dir = dir.path(), .edge_layout = "sideways"});
  EXPECT_NE(std::string(bad.status().message()).find("--edge-layout: 'sideways'"), std::string::npos) << bad.status();
  // Two edges are ambiguous: [2, 2] reads as rows unless stated.
  std::filesystem::remove_all(dir.Sub("edge_data"));  // its rows are per edge of the big graph
  const int64_t two[] = {0, 1, 2, 3};  // rows: (0,1), (2,3); columns: (0,2), (1,3)
  ASSERT_TRUE(core::WriteNpy(dir.Sub("edges.npy"), core::DType::kInt64, {2, 2}, two).ok());
  auto as_rows = ReadDataset({.input_dir = dir.path()});
  auto as_columns = ReadDataset({.input_dir = dir.path(), .edge_layout = "columns"});
  ASSERT_TRUE(as_rows.ok() && as_columns.ok()) << as_rows.status() << as_columns.status();
  EXPECT_EQ(as_rows->edges.data_as<int64_t>()[1], 1);
  EXPECT_EQ(as_columns->edges.data_as<int64_t>()[1], 2);
  // Any other shape names the file and the shape.
  const int64_t three[] = {0, 1, 2, 3, 4, 5};
  ASSERT_TRUE(core::WriteNpy(dir.Sub("edges.npy"), core::DType::kInt64, {3, 2, 1}, three).ok());
  auto odd = ReadDataset({.input_dir = dir.path()});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(std::string(odd.status().message()).find("edges.npy: expected an [E, 2] array of (src, dst) or PyG's [2, E] "
                                                     "edge_index; the shape is [3, 2, 1]"),
            std::string::npos)
      << odd.status();
}

TEST(ReadersTest, PlainCsvEdgesInferNodeCount) {
  TempDir dir;
  WriteText(dir.Sub("edges.tsv"), "# src\tdst\n0\t1\n1\t2\n\n5\t3\n");
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->num_nodes, 6);
  EXPECT_EQ(d->num_edges(), 3);
  EXPECT_FALSE(d->has_split);
  // Where the inferred count came from, down to the line of the largest ID.
  EXPECT_EQ(d->num_nodes_source, "the largest node ID in " + dir.Sub("edges.tsv") + ", 5 on line 5");
  auto fixed = ReadDataset({.input_dir = dir.path(), .num_nodes = 10});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->num_nodes, 10);
  auto small = ReadDataset({.input_dir = dir.path(), .num_nodes = 4});
  ASSERT_FALSE(small.ok());
  EXPECT_NE(std::string(small.status().message()).find("edges.tsv:5"), std::string::npos) << small.status();
}

TEST(ReadersTest, OgbLabelsNanBecomeMinusOne) {
  TempDir dir;
  WriteGz(dir.Sub("raw/edge.csv.gz"), "0,1\n1,2\n");
  WriteGz(dir.Sub("raw/num-node-list.csv.gz"), "3\n");
  WriteGz(dir.Sub("raw/node-label.csv.gz"), "1\nnan\n4.0\n");
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_TRUE(d.ok()) << d.status();
  const int64_t* y = d->FindNodeField("label")->data.data_as<int64_t>();
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(y[1], -1);
  EXPECT_EQ(y[2], 4);
  EXPECT_EQ(d->num_classes, 5);
}

// Writes a valid small OGB dataset into `dir`, then lets the caller break one file.
void WriteSmallOgb(const std::string& dir) {
  WriteGz(dir + "/raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n");
  WriteGz(dir + "/raw/num-node-list.csv.gz", "4\n");
  WriteGz(dir + "/raw/num-edge-list.csv.gz", "4\n");
  WriteGz(dir + "/raw/node-feat.csv.gz", "0.1,0.2\n0.3,0.4\n0.5,0.6\n0.7,0.8\n");
  WriteGz(dir + "/raw/node-label.csv.gz", "0\n1\n0\n1\n");
  WriteGz(dir + "/split/s/train.csv.gz", "0\n1\n");
  WriteGz(dir + "/split/s/valid.csv.gz", "2\n");
  WriteGz(dir + "/split/s/test.csv.gz", "3\n");
}

struct BadInput {
  const char* name;
  const char* file;      // relative to the dataset folder
  const char* content;   // replaces that file (gzip-compressed when it ends in .gz)
  const char* expected;  // substring of the error
};

class BadOgbInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadOgbInputTest, FailsNamingFileAndLine) {
  TempDir dir;
  WriteSmallOgb(dir.path());
  auto ok = ReadDataset({.input_dir = dir.path()});
  ASSERT_TRUE(ok.ok()) << ok.status();
  const BadInput& b = GetParam();
  std::string path = dir.Sub(b.file);
  if (std::string(b.file).ends_with(".gz")) {
    WriteGz(path, b.content);
  } else {
    WriteText(path, b.content);
  }
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_FALSE(d.ok()) << b.name;
  EXPECT_NE(std::string(d.status().message()).find(b.expected), std::string::npos)
      << b.name << ": " << d.status();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOgbInputTest,
    ::testing::Values(
        BadInput{"edge_missing_dst", "raw/edge.csv.gz", "0,1\n1,2\n2\n3,0\n", "edge.csv.gz:3: expected 'src,dst'"},
        BadInput{"edge_not_number", "raw/edge.csv.gz", "0,1\n1,x\n2,3\n3,0\n", "edge.csv.gz:2"},
        BadInput{"edge_id_too_big", "raw/edge.csv.gz", "0,1\n1,2\n2,4\n3,0\n", "edge.csv.gz:3: node ID 4 is outside [0, 4)"},
        BadInput{"edge_negative", "raw/edge.csv.gz", "0,1\n-1,2\n2,3\n3,0\n", "edge.csv.gz:2: node ID -1"},
        BadInput{"edges_fewer_than_count", "raw/edge.csv.gz", "0,1\n1,2\n2,3\n", "has 3 edges but num-edge-list.csv.gz says 4"},
        BadInput{"feat_short_row", "raw/node-feat.csv.gz", "0.1,0.2\n0.3\n0.5,0.6\n0.7,0.8\n", "node-feat.csv.gz:2: has 1 values"},
        BadInput{"feat_bad_value", "raw/node-feat.csv.gz", "0.1,0.2\n0.3,0.4\n0.5,zz\n0.7,0.8\n", "node-feat.csv.gz:3: column 2"},
        BadInput{"feat_rows_fewer", "raw/node-feat.csv.gz", "0.1,0.2\n0.3,0.4\n", "has 2 rows but the graph has 4 nodes"},
        BadInput{"feat_rows_more", "raw/node-feat.csv.gz", "1,1\n1,1\n1,1\n1,1\n1,1\n", "node-feat.csv.gz:5: more rows"},
        BadInput{"labels_fewer", "raw/node-label.csv.gz", "0\n1\n", "has 2 labels but the graph has 4"},
        BadInput{"labels_multi", "raw/node-label.csv.gz", "0,1\n1,0\n0,0\n1,1\n", "node-label.csv.gz:1"},
        BadInput{"split_out_of_range", "split/s/valid.csv.gz", "2\n9\n", "valid.csv.gz:2: value 9 is outside [0, 4)"},
        BadInput{"split_not_number", "split/s/test.csv.gz", "3x\n", "test.csv.gz:1"},
        BadInput{"num_nodes_junk", "raw/num-node-list.csv.gz", "four\n", "num-node-list.csv.gz:1"},
        BadInput{"feat_binary_junk", "raw/node-feat.csv.gz", "\x01\x02,\x03\n", "node-feat.csv.gz:1"},
        // Found by fuzzing (issue 11): counts the files cannot hold made the readers reserve
        // terabytes (or overflow computing how much) before reading a line.
        BadInput{"num_nodes_huge", "raw/num-node-list.csv.gz", "1000000000000\n", "has 4 rows but the graph has 1000000000000 nodes"},
        BadInput{"num_nodes_overflow", "raw/num-node-list.csv.gz", "4611686018427387904\n", "has 4 rows but the graph has 4611686018427387904 nodes"},
        BadInput{"label_float_outside_int64", "raw/node-label.csv.gz", "0\n1\n8.9e21\n1\n", "node-label.csv.gz:3: label '8.9e21' is not an integer"},
        BadInput{"num_edges_overflow", "raw/num-edge-list.csv.gz", "4611686018427387904\n", "has 4 edges but num-edge-list.csv.gz says 4611686018427387904"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ReadersTest, PlainLayoutErrors) {
  TempDir dir;
  Dataset src = testing::MakeRandomDataset({.num_nodes = 50, .num_edges = 100});
  testing::WritePlainLayout(src, dir.path());
  // Features with the wrong number of rows.
  Dataset other = testing::MakeRandomDataset({.num_nodes = 49, .num_edges = 100});
  ASSERT_TRUE(core::WriteNpy(dir.Sub("node_label.npy"), other.FindNodeField("label")->data.dtype(),
                             {49}, other.FindNodeField("label")->data.data()).ok());
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("node_label.npy"), std::string::npos) << d.status();
  EXPECT_NE(std::string(d.status().message()).find("49 rows but the graph has 50 nodes (from "), std::string::npos);
  EXPECT_NE(std::string(d.status().message()).find("node_feat.npy)"), std::string::npos) << d.status();

  // Edge ID out of range in edges.npy names the row.
  TempDir dir2;
  testing::WritePlainLayout(src, dir2.path());
  std::vector<int64_t> e = {0, 1, 2, 50};
  ASSERT_TRUE(core::WriteNpy(dir2.Sub("edges.npy"), core::DType::kInt64, {2, 2}, e.data()).ok());
  ASSERT_TRUE(core::WriteNpy(dir2.Sub("edge_data/weight.npy"), core::DType::kInt64, {2}, e.data()).ok());
  auto d2 = ReadDataset({.input_dir = dir2.path()});
  ASSERT_FALSE(d2.ok());
  EXPECT_NE(std::string(d2.status().message()).find("edges.npy row 1: dst 50 is outside [0, 50)"),
            std::string::npos) << d2.status();

  // Split index out of range.
  TempDir dir3;
  testing::WritePlainLayout(src, dir3.path());
  ASSERT_TRUE(core::WriteNpy(dir3.Sub("test_idx.npy"), std::vector<int64_t>{1, 2, 77}).ok());
  auto d3 = ReadDataset({.input_dir = dir3.path()});
  ASSERT_FALSE(d3.ok());
  EXPECT_NE(std::string(d3.status().message()).find("test_idx.npy row 2: index 77"), std::string::npos) << d3.status();
}

TEST(ReadersTest, LargestPossibleNodeIdIsRefused) {
  // Found by fuzzing (issue 11): the node count inferred as max ID + 1 overflowed int64.
  TempDir dir;
  WriteText(dir.Sub("edges.csv"), "0 9223372036854775807\n");
  auto d = ReadDataset({.input_dir = dir.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("edges.csv: node ID 9223372036854775807 is too large"),
            std::string::npos) << d.status();
}

TEST(ReadersTest, MissingOrEmptyInputs) {
  auto none = ReadDataset({.input_dir = "/nonexistent/fanout"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("/nonexistent/fanout"), std::string::npos);
  TempDir dir;
  auto empty = ReadDataset({.input_dir = dir.path()});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(std::string(empty.status().message()).find("edges.npy"), std::string::npos);
}

TEST(ReadersTest, SplitSelection) {
  TempDir dir;
  WriteSmallOgb(dir.path());
  WriteGz(dir.Sub("split/other/train.csv.gz"), "3\n");
  WriteGz(dir.Sub("split/other/valid.csv.gz"), "2\n");
  WriteGz(dir.Sub("split/other/test.csv.gz"), "1\n");
  auto ambiguous = ReadDataset({.input_dir = dir.path()});
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(std::string(ambiguous.status().message()).find("--split"), std::string::npos);
  auto chosen = ReadDataset({.input_dir = dir.path(), .split = "other"});
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->train_idx, std::vector<int64_t>{3});
  auto wrong = ReadDataset({.input_dir = dir.path(), .split = "nope"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(std::string(wrong.status().message()).find("found: other, s"), std::string::npos) << wrong.status();
}

TEST(ReadersTest, AssignmentFiles) {
  TempDir dir;
  WriteText(dir.Sub("a.txt"), "0\n1\n1\n0\n");
  auto a = ReadAssignment(dir.Sub("a.txt"), 4, 2);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, (std::vector<int32_t>{0, 1, 1, 0}));
  auto range = ReadAssignment(dir.Sub("a.txt"), 4, 1);
  ASSERT_FALSE(range.ok());
  EXPECT_NE(std::string(range.status().message()).find("a.txt:2"), std::string::npos) << range.status();
  auto count = ReadAssignment(dir.Sub("a.txt"), 5, 2);
  ASSERT_FALSE(count.ok());
  EXPECT_NE(std::string(count.status().message()).find("has 4 entries but the graph has 5 nodes"), std::string::npos);
  ASSERT_TRUE(core::WriteNpy(dir.Sub("a.npy"), std::vector<int32_t>{2, 0, 3}).ok());
  auto npy = ReadAssignment(dir.Sub("a.npy"), 3, 3);
  ASSERT_FALSE(npy.ok());
  EXPECT_NE(std::string(npy.status().message()).find("a.npy row 2: partition 3"), std::string::npos) << npy.status();
  // Found by fuzzing (issue 11): with 0 partitions every value passed the range check.
  auto none = ReadAssignment(dir.Sub("a.txt"), 4, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("--num-parts must be at least 1"), std::string::npos)
      << none.status();
}

}  // namespace
}  // namespace fanout::partition
