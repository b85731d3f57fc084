// Unit tests of the sampler's pieces with no servers: the training-set split, the per-epoch
// shuffle, the ID map, the shared-memory batch format, and multi-layer sampling of a
// single-partition graph read from its files.
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <set>

#include "core/dtype.h"
#include "core/partition_book.h"
#include "core/random.h"
#include "gtest/gtest.h"
#include "sampler/batch_checksum.h"
#include "sampler/dist_graph.h"
#include "sampler/id_map.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "sampler/shm_batch.h"
#include "tests/sampler/sampler_truth.h"
#include "tests/testing/testing.h"

namespace fanout::sampler {
namespace {

using core::DType;

float* Floats(char* p) { return reinterpret_cast<float*>(p); }

TEST(SplitSeedsTest, EqualSharesPreferringTheOwnPartition) {
  // 3 machines x 2 trainers; partition 0 owns far more training nodes than the others.
  auto book = core::RangePartitionBook::FromBounds({0, 1000, 1500, 3000});
  ASSERT_TRUE(book.ok());
  std::vector<int64_t> ids;
  for (int64_t v = 0; v < 1000; v += 2) ids.push_back(v);     // 500 in partition 0
  for (int64_t v = 1000; v < 1500; v += 25) ids.push_back(v);  // 20 in partition 1
  for (int64_t v = 1500; v < 3000; v += 10) ids.push_back(v);  // 150 in partition 2
  const int64_t total = static_cast<int64_t>(ids.size());      // 670 = 6 * 111 + 4
  auto split = SplitSeeds(ids, *book, 2);
  ASSERT_EQ(split.size(), 6u);
  std::vector<int64_t> all;
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(static_cast<int64_t>(split[r].size()), total / 6 + (r < total % 6 ? 1 : 0)) << "rank " << r;
    all.insert(all.end(), split[r].begin(), split[r].end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, ids) << "every training node goes to exactly one trainer";
  auto owned_by = [&](int r, int p) {
    return std::count_if(split[r].begin(), split[r].end(), [&](int64_t v) { return book->PartOf(v) == p; });
  };
  // Machine 1 owns only 20 nodes: both its trainers hold all 20, the rest borrowed. Machine 0
  // (surplus) keeps only its own nodes; machine 2 keeps all 150 of its own.
  EXPECT_EQ(owned_by(2, 1) + owned_by(3, 1), 20);
  EXPECT_EQ(owned_by(0, 0), static_cast<int64_t>(split[0].size()));
  EXPECT_EQ(owned_by(1, 0), static_cast<int64_t>(split[1].size()));
  EXPECT_EQ(owned_by(4, 2) + owned_by(5, 2), 150);
  for (int r = 0; r < 6; ++r) EXPECT_TRUE(std::is_sorted(split[r].begin(), split[r].end()));
}

TEST(SplitSeedsTest, EpochSeedsAreEqualInNumberAndReshuffled) {
  std::vector<int64_t> mine(101);
  std::iota(mine.begin(), mine.end(), 1000);
  auto e0 = EpochSeeds(mine, 100, true, 7, 0, 1);
  auto e0b = EpochSeeds(mine, 100, true, 7, 0, 1);
  auto e1 = EpochSeeds(mine, 100, true, 7, 1, 1);
  auto other_rank = EpochSeeds(mine, 100, true, 7, 0, 2);
  EXPECT_EQ(e0.size(), 100u);
  EXPECT_EQ(e0, e0b) << "same (seed, epoch, rank), same order";
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, other_rank);
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 100u);
  for (int64_t v : e0) EXPECT_TRUE(v >= 1000 && v < 1101);
  auto plain = EpochSeeds(mine, 100, false, 7, 3, 0);
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), mine.begin()));
}

// The epoch's draw from a range equals the draw from the same IDs as a list, and a few drawn
// from many (the sparse path: only the swapped positions held) equals the whole Fisher-Yates
// on a copy, the way it was computed before: the same batches for the same (seed, epoch, rank).
TEST(SplitSeedsTest, EpochSeedsOfARangeAndOfAFewAmongManyEqualTheWholeShuffle) {
  const int64_t n = 100000, first = 7000000000;
  std::vector<int64_t> list(n);
  std::iota(list.begin(), list.end(), first);
  const SeedArray range = SeedArray::Range(first, n);
  EXPECT_TRUE(range.is_range());
  EXPECT_EQ(range.size(), n);
  EXPECT_EQ(range[n - 1], first + n - 1);
  EXPECT_EQ(range.ToVector(), list);
  EXPECT_TRUE(SeedArray::Of(list).is_range());
  EXPECT_FALSE(SeedArray::Of({3, 5, 6}).is_range());
  EXPECT_EQ(SeedArray::Of({3, 5, 6}).ToVector(), (std::vector<int64_t>{3, 5, 6}));
  auto whole = [&](int64_t count, int64_t epoch) {  // the dense Fisher-Yates, written out
    std::vector<int64_t> out = list;
    uint64_t state = core::SplitMix64(11 ^ core::SplitMix64(static_cast<uint64_t>(epoch) * 0x10001 + 3 + 1));
    for (int64_t i = 0; i < count; ++i) {
      state = core::SplitMix64(state);
      const uint64_t left = static_cast<uint64_t>(n - i);
      std::swap(out[i], out[i + static_cast<int64_t>((static_cast<unsigned __int128>(state) * left) >> 64)]);
    }
    out.resize(count);
    return out;
  };
  for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{64}, int64_t{5000}, n / 8, n / 8 + 1, n / 2, n}) {
    for (int64_t epoch : {0, 5}) {
      const std::vector<int64_t> expect = whole(count, epoch);
      EXPECT_EQ(EpochSeeds(list, count, true, 11, epoch, 3), expect) << count;
      EXPECT_EQ(EpochSeeds(range, count, true, 11, epoch, 3), expect) << count;
      EXPECT_EQ(EpochSeeds(SeedArray(list), count, true, 11, epoch, 3), expect) << count;
    }
  }
  const std::vector<int64_t> plain = EpochSeeds(range, 10, false, 11, 0, 3);
  EXPECT_EQ(plain, std::vector<int64_t>(list.begin(), list.begin() + 10));
}

TEST(IdMapTest, FirstInsertionOrderAndGrowth) {
  IdMap m;
  m.Reset(2);
  std::vector<int64_t> expect;
  for (int64_t i = 0; i < 5000; ++i) {
    const int64_t id = (i * 7919) % 3001;  // repeats after 3001
    int64_t idx = m.Insert(id);
    if (i < 3001) {
      EXPECT_EQ(idx, i);
      expect.push_back(id);
    } else {
      EXPECT_EQ(idx, i - 3001);
    }
  }
  EXPECT_EQ(m.ids(), expect);
  m.Reset(10);
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.Insert(42), 0);
}

MiniBatch HandMadeBatch() {
  MiniBatch mb;
  mb.epoch = 3;
  mb.step = 9;
  mb.seeds = {10, 11};
  mb.labels = {1, 0};
  Block b0{{5, 6, 10, 11, 12}, 3, {0, 2, 2, 4}, {3, 4, 0, 1}, {100, 101, 102, 103}};
  Block b1{{10, 11, 12}, 2, {0, 1, 3}, {2, 0, 1}, {7, 8, 9}};
  mb.blocks = {b0, b1};
  return mb;
}

// A batch's arrays (sampler/array.h): owned while a sampler builds them, borrowed from a batch
// file, handed to a tensor without a copy, and never changed under whoever holds them.
TEST(ArrayTest, SharedContentsAreFrozenAndBorrowedOnesCopiedOnWrite) {
  Int64Array a = {1, 2, 3};
  Int64Array copy = a;  // a copy owns its own elements
  copy[1] = 7;
  EXPECT_EQ(a, (std::vector<int64_t>{1, 2, 3}));
  const int64_t* before = a.data();
  std::shared_ptr<const void> held = a.Share();
  a[0] = 9;  // copies first: the holder keeps seeing 1, 2, 3
  EXPECT_NE(a.data(), before);
  EXPECT_EQ(before[0], 1);
  EXPECT_EQ(a, (std::vector<int64_t>{9, 2, 3}));

  auto file = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{4, 5, 6, 7});
  std::weak_ptr<const void> alive = file;
  Int64Array b = Int64Array::Borrow(file, file->data() + 1, 2);
  file.reset();
  EXPECT_FALSE(alive.expired());  // the array keeps what it borrows alive
  EXPECT_TRUE(b.borrowed());
  EXPECT_EQ(b, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(b.Share().get(), alive.lock().get());  // sharing a borrowed array hands on its owner
  b.push_back(8);  // owns a copy from now on, and lets go of the file
  EXPECT_FALSE(b.borrowed());
  EXPECT_TRUE(alive.expired());
  EXPECT_EQ(b, (std::vector<int64_t>{5, 6, 8}));
}

// The trainer reads a sampler process's blocks in place, and every block carries its edges'
// destinations (derived by the writer for a block built without them).
TEST(ShmBatchTest, BlocksAreBorrowedFromTheFileWithTheirDestinations) {
  MiniBatch mb = HandMadeBatch();
  ShmSlot slot;
  ASSERT_TRUE(slot.Write(mb, 5, 3, DType::kFloat32).ok());
  auto back = ReadShmBatch(slot.fd());
  ASSERT_TRUE(back.ok()) << back.status();
  for (const Block& b : back->blocks) {
    for (const Int64Array* a : {&b.src_nodes, &b.indptr, &b.indices, &b.eids, &b.dst}) EXPECT_TRUE(a->borrowed());
  }
  EXPECT_EQ(back->blocks[0].dst, (std::vector<int64_t>{0, 0, 2, 2}));
  EXPECT_EQ(back->blocks[1].dst, (std::vector<int64_t>{0, 1, 1}));
}

// A batch read through writable mappings (the Python data plane's) may be written in place, and
// nothing is lost by it: the sampler rewrites the file in full for its next batch, which reads
// back whole through the same (reused) mapping. Read-only mappings stay read-only.
TEST(ShmBatchTest, AWritableBatchCanBeWrittenAndTheNextBatchInItsFileIsWhole) {
  MiniBatch mb = HandMadeBatch();
  ShmSlot slot;
  auto features = slot.Write(mb, 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok()) << features.status();
  for (int i = 0; i < 15; ++i) Floats(*features)[i] = 1.0f + i;
  BatchMappings mappings(/*max_idle=*/2, /*writable=*/true);
  bool released = false;
  {
    auto mine = ReadShmBatch(slot.fd(), [&] { released = true; }, &mappings);
    ASSERT_TRUE(mine.ok()) << mine.status();
    float* rows = const_cast<float*>(static_cast<const float*>(mine->features.data));
    for (int i = 0; i < 15; ++i) rows[i] *= -1;  // would be SIGSEGV on a read-only mapping
    for (Block& b : mine->blocks) {
      ASSERT_TRUE(b.indices.borrowed());
      for (const Int64Array* a : {&b.src_nodes, &b.indptr, &b.indices, &b.eids, &b.dst}) {
        std::fill_n(const_cast<int64_t*>(a->data()), a->size(), int64_t{-7});
      }
    }
    EXPECT_EQ(Floats(*features)[0], -1.0f) << "the writes land in the file";
  }
  EXPECT_TRUE(released);
  // The sampler's next batch in this file: a different one, read back whole.
  MiniBatch next = HandMadeBatch();
  next.blocks[0].src_nodes[0] = 99;
  features = slot.Write(next, 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok()) << features.status();
  for (int i = 0; i < 15; ++i) Floats(*features)[i] = 2.0f * i;
  auto back = ReadShmBatch(slot.fd(), {}, &mappings);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(mappings.maps_made(), 1) << "the same mapping, reused";
  next.features = back->features;
  testing::ExpectSameBatch(next, *back);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(static_cast<const float*>(back->features.data)[i], 2.0f * i);
}

// Batches waiting for the trainer: `prefetch` of them, fewer when they are large, never none.
TEST(ShmBatchTest, BatchesAheadAreCappedByBytesButNeverNone) {
  constexpr size_t kMb = size_t{1} << 20;
  EXPECT_EQ(BatchesAhead(2, 0), 2) << "nothing made yet";
  EXPECT_EQ(BatchesAhead(2, 83 * kMb), 2) << "a training batch";
  EXPECT_EQ(BatchesAhead(8, 83 * kMb), 6) << "512 MiB of them";
  EXPECT_EQ(BatchesAhead(2, 300 * kMb), 1);
  EXPECT_EQ(BatchesAhead(2, 4096 * kMb), 1) << "one, however large";
  EXPECT_EQ(BatchesAhead(1, 1), 1);
}

TEST(ShmBatchTest, RoundTripsThroughAMemfdAndASocketAndIsReused) {
  MiniBatch mb = HandMadeBatch();
  ShmSlot slot;
  auto features = slot.Write(mb, 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok()) << features.status();
  for (int i = 0; i < 15; ++i) Floats(*features)[i] = 0.5f * i;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
  ASSERT_TRUE(SendBatch(sv[0], 77, 4, slot.fd()).ok());
  int64_t index = -1, slot_id = -1;
  int fd = -1;
  bool closed = false;
  ASSERT_TRUE(ReceiveMessage(sv[1], &index, &slot_id, &fd, &closed).ok());
  EXPECT_EQ(index, 77);
  EXPECT_EQ(slot_id, 4);
  bool released = false;
  auto back = ReadShmBatch(fd, [&] { released = SendRelease(sv[1], 4); });
  close(fd);
  ASSERT_TRUE(back.ok()) << back.status();
  mb.features = back->features;  // compare everything else field by field
  testing::ExpectSameBatch(mb, *back);
  ASSERT_EQ(back->features.rows, 5);
  ASSERT_EQ(back->features.cols, 3);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(back->features.as<float>()[i], 0.5f * i);
  mb.features = {};
  EXPECT_FALSE(released);
  *back = MiniBatch();  // the last reference to the mapping goes: the slot is released
  EXPECT_TRUE(released);
  EXPECT_EQ(ReadTrainerMessage(sv[0]), 4);
  ASSERT_TRUE(SendTaken(sv[1]));
  EXPECT_EQ(ReadTrainerMessage(sv[0]), kBatchTaken);

  // The slot is rewritten in place with a larger batch (the file grows).
  MiniBatch big = HandMadeBatch();
  big.step = 10;
  auto f2 = slot.Write(big, 5, 300, DType::kFloat32);
  ASSERT_TRUE(f2.ok());
  for (int i = 0; i < 1500; ++i) Floats(*f2)[i] = 1.0f * i;
  auto again = ReadShmBatch(slot.fd());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->step, 10);
  EXPECT_EQ(again->features.cols, 300);
  EXPECT_EQ(again->features.as<float>()[1499], 1499.0f);

  // An error travels as a status with its code and text.
  ASSERT_TRUE(SendError(sv[0], 3, absl::UnavailableError("partition 1 server x:1: down")).ok());
  absl::Status s = ReceiveMessage(sv[1], &index, &slot_id, &fd, &closed);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "partition 1 server x:1: down");
  close(sv[0]);
  EXPECT_EQ(ReceiveMessage(sv[1], &index, &slot_id, &fd, &closed).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(closed);
  EXPECT_EQ(ReadTrainerMessage(sv[1]), -1);
  close(sv[1]);
}

TEST(ShmBatchTest, MappingsAreReusedWhileTheFileKeepsItsSizeAndSeeItsNewContents) {
  ShmSlot slot;
  MiniBatch mb = HandMadeBatch();
  auto features = slot.Write(mb, 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok());
  Floats(*features)[0] = 1.0f;
  BatchMappings mappings(/*max_idle=*/2);
  bool released = false;
  auto first = ReadShmBatch(slot.fd(), [&] { released = true; }, &mappings);
  ASSERT_TRUE(first.ok()) << first.status();
  const void* where = first->features.data;
  EXPECT_EQ(static_cast<const float*>(where)[0], 1.0f);
  *first = MiniBatch();  // let go: the mapping is kept, the release still runs
  EXPECT_TRUE(released);
  EXPECT_EQ(mappings.maps_made(), 1);

  // The sampler rewrites the same file (same size): the same mapping, the new contents.
  mb.step = 2;
  features = slot.Write(mb, 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok());
  Floats(*features)[0] = 2.0f;
  auto second = ReadShmBatch(slot.fd(), {}, &mappings);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->features.data, where);
  EXPECT_EQ(second->features.as<float>()[0], 2.0f);
  EXPECT_EQ(second->step, 2);
  EXPECT_EQ(mappings.maps_made(), 1);
  // While it is held, another batch of the same file needs a mapping of its own.
  auto third = ReadShmBatch(slot.fd(), {}, &mappings);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third->features.data, where);
  EXPECT_EQ(mappings.maps_made(), 2);
  *second = MiniBatch();
  *third = MiniBatch();

  // A grown file is mapped anew at its new size.
  features = slot.Write(mb, 5, 300, DType::kFloat32);
  ASSERT_TRUE(features.ok());
  Floats(*features)[1499] = 3.0f;
  auto grown = ReadShmBatch(slot.fd(), {}, &mappings);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->features.as<float>()[1499], 3.0f);
  EXPECT_EQ(mappings.maps_made(), 3);
}

TEST(ShmBatchTest, HeldBatchesOutliveTheirMappingsObject) {
  ShmSlot slot;
  auto features = slot.Write(HandMadeBatch(), 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok());
  Floats(*features)[14] = 7.0f;
  absl::StatusOr<MiniBatch> held;
  {
    BatchMappings mappings;
    held = ReadShmBatch(slot.fd(), {}, &mappings);
    ASSERT_TRUE(held.ok());
  }
  EXPECT_EQ(held->features.as<float>()[14], 7.0f);
  *held = MiniBatch();  // unmapped now, without the mappings object
}

// Features cross in their stored dtype: float16 rows arrive as the same two-byte values, tagged.
TEST(ShmBatchTest, FeaturesKeepTheirDtype) {
  ShmSlot slot;
  auto features = slot.Write(HandMadeBatch(), 5, 3, DType::kFloat16);
  ASSERT_TRUE(features.ok());
  std::vector<uint16_t> halves(15);
  for (int i = 0; i < 15; ++i) halves[i] = core::FloatToHalf(0.25f * i - 1.0f);
  std::memcpy(*features, halves.data(), 30);
  auto back = ReadShmBatch(slot.fd());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->features.dtype, DType::kFloat16);
  EXPECT_EQ(back->features.bytes(), 30u);
  EXPECT_EQ(std::memcmp(back->features.data, halves.data(), 30), 0);
  *back = MiniBatch();

  // The same slot, rewritten with float64 rows, lays them out at eight bytes each.
  features = slot.Write(HandMadeBatch(), 5, 3, DType::kFloat64);
  ASSERT_TRUE(features.ok());
  for (int i = 0; i < 15; ++i) reinterpret_cast<double*>(*features)[i] = 1.0 / (i + 1);
  back = ReadShmBatch(slot.fd());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->features.dtype, DType::kFloat64);
  EXPECT_EQ(back->features.as<double>()[14], 1.0 / 15);
}

// With a trainer's feature cache the batch file carries each input's slot, and only the rows
// of the uncached inputs.
TEST(ShmBatchTest, FeatureSlotsCrossWithTheBatch) {
  ShmSlot slot;
  MiniBatch mb = HandMadeBatch();
  mb.feature_slots = {2, -1, 0, -1, -1};  // inputs 5, 6, 10, 11, 12: two held by the trainer
  auto features = slot.Write(mb, 3, 2, DType::kFloat32);
  ASSERT_TRUE(features.ok()) << features.status();
  for (int i = 0; i < 6; ++i) Floats(*features)[i] = static_cast<float>(i);
  auto back = ReadShmBatch(slot.fd());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->feature_slots, (std::vector<int64_t>{2, -1, 0, -1, -1}));
  EXPECT_EQ(back->features.rows, 3);
  EXPECT_EQ(back->features.as<float>()[5], 5.0f);
  EXPECT_EQ(back->blocks[0].src_nodes, mb.blocks[0].src_nodes);
  *back = MiniBatch();

  // The same slot without a cache: no slots, a row per input.
  ASSERT_TRUE(slot.Write(HandMadeBatch(), 5, 2, DType::kFloat32).ok());
  back = ReadShmBatch(slot.fd());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->feature_slots.empty());
  EXPECT_EQ(back->features.rows, 5);
  *back = MiniBatch();

  // Slots that do not cover the input nodes are refused: a producer's bug, caught before it is
  // written (and a reader would refuse the file, below).
  mb.feature_slots = {0, -1};  // two slots for five inputs
  auto refused = slot.Write(mb, 1, 2, DType::kFloat32);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(refused.status().message().find("'feature_slots'"), std::string::npos)
      << refused.status();
}

// The batch file's table (sampler/batch_schema.h): the header's array count, then per array a
// 72-byte entry (name[32], domain, layer, dtype, unused, width, count, offset).
constexpr off_t kTableAt = 64, kEntryBytes = 72;
int64_t ArraysInFile(int fd) {
  int64_t n = 0;
  EXPECT_EQ(pread(fd, &n, 8, 6 * 8), 8);
  return n;
}
// The index of array `name` (of `layer`, -1: any) in the file's table, or -1.
int64_t EntryOf(int fd, const std::string& name, int32_t layer = -1) {
  for (int64_t i = 0; i < ArraysInFile(fd); ++i) {
    char entry[kEntryBytes];
    EXPECT_EQ(pread(fd, entry, kEntryBytes, kTableAt + i * kEntryBytes), kEntryBytes);
    int32_t at_layer;
    std::memcpy(&at_layer, entry + 36, 4);
    if (std::string(entry) == name && (layer < 0 || at_layer == layer)) return i;
  }
  return -1;
}

// Fields of every domain cross by name, with their dtype and width, in their order; the
// checksum covers them.
TEST(ShmBatchTest, FieldsCrossByNameWithTheirDtypeAndWidth) {
  MiniBatch mb = HandMadeBatch();
  for (Block& b : mb.blocks) {
    const auto edges = static_cast<int32_t>(b.num_edges());
    Int64Array& when = b.fields.Add<int64_t>("edge_time");
    FloatArray& feat = b.fields.AddRows<float>(kEdgeFeat, 2);
    for (int32_t e = 0; e < edges; ++e) {
      when.push_back(1000 + e);
      feat.push_back(0.5f * e);
      feat.push_back(-1.0f * e);
    }
  }
  mb.input_fields.Add<int32_t>(kInputTypes) = std::vector<int32_t>{0, 1, 1, 0, 2};
  mb.seed_fields.Add<float>("seed_weight") = std::vector<float>{0.25f, 4.0f};
  ShmSlot slot;
  auto features = slot.Write(mb, 5, 3, DType::kFloat32);
  ASSERT_TRUE(features.ok()) << features.status();
  auto back = ReadShmBatch(slot.fd());
  ASSERT_TRUE(back.ok()) << back.status();
  mb.features = back->features;
  testing::ExpectSameBatch(mb, *back);
  const Field* feat = back->blocks[1].fields.Find(kEdgeFeat);
  ASSERT_NE(feat, nullptr);
  EXPECT_EQ(feat->width, 2);
  EXPECT_EQ(feat->count(), 3);
  EXPECT_TRUE(std::get<FloatArray>(feat->values).borrowed()) << "fields stay in the file";
  EXPECT_EQ(back->input_types(), (std::vector<int32_t>{0, 1, 1, 0, 2}));

  const uint32_t before = BatchChecksum(*back);
  MiniBatch changed = HandMadeBatch();
  changed.features = back->features;
  for (size_t l = 0; l < 2; ++l) changed.blocks[l].fields = back->blocks[l].fields;
  changed.input_fields = back->input_fields;
  changed.seed_fields.Add<float>("seed_weight") = std::vector<float>{0.25f, 5.0f};
  EXPECT_NE(BatchChecksum(changed), before) << "a seed field's value is covered";
  changed.seed_fields = back->seed_fields;
  EXPECT_EQ(BatchChecksum(changed), before);
}

// Whatever its header and table say, a batch file is read back whole or refused: a reader never
// hands out an array that reaches past the file (the sanitizer build would catch the read).
// Random bytes of the header and table, and random truncations, of a batch with fields.
TEST(ShmBatchTest, CorruptHeadersAndTablesAreRefusedOrReadWithinTheFile) {
  MiniBatch mb = HandMadeBatch();
  for (Block& b : mb.blocks) b.fields.AddRows<float>(kEdgeFeat, 2).assign(2 * static_cast<size_t>(b.num_edges()), 1.0f);
  mb.input_fields.Add<int32_t>(kInputTypes).assign(5, 1);
  ShmSlot slot;
  ASSERT_TRUE(slot.Write(mb, 5, 3, DType::kFloat32).ok());
  std::string file(slot.bytes(), '\0');
  ASSERT_EQ(pread(slot.fd(), file.data(), file.size(), 0), static_cast<ssize_t>(file.size()));
  const size_t table_end = kTableAt + static_cast<size_t>(ArraysInFile(slot.fd())) * kEntryBytes;
  int refused = 0, read = 0;
  uint64_t r = 1;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = file;
    r = core::SplitMix64(r);
    if (r % 8 == 0) {
      bad.resize(r % file.size());
    } else {
      for (int k = 0; k < 1 + static_cast<int>(r % 4); ++k) {
        r = core::SplitMix64(r);
        bad[(r >> 8) % table_end] = static_cast<char>(r >> 40);
      }
    }
    const int fd = memfd_create("corrupt-batch", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, bad.data(), bad.size()), static_cast<ssize_t>(bad.size()));
    LinkPairs pairs;
    auto back = ReadShmBatch(fd, {}, nullptr, &pairs);
    close(fd);
    if (!back.ok()) {
      EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss) << back.status();
      ++refused;
      continue;
    }
    ++read;
    // Every array handed out lies inside the file's mapping (the batch's owner is its start),
    // has one entry per member of its domain, and is read to its end (for the sanitizer build).
    const auto* file_at = static_cast<const char*>(back->features.owner.get());
    uint64_t sum = 0;
    auto inside = [&](const void* data, size_t bytes) {
      const auto* p = static_cast<const char*>(data);
      EXPECT_TRUE(bytes == 0 || (p >= file_at && p + bytes <= file_at + bad.size())) << "trial " << trial;
      for (size_t i = 0; i < bytes; ++i) sum += static_cast<unsigned char>(p[i]);
    };
    for (const Block& b : back->blocks) {
      ASSERT_EQ(static_cast<int64_t>(b.indptr.size()), b.num_dst + 1);
      for (const Int64Array* a : {&b.src_nodes, &b.indptr, &b.indices, &b.eids, &b.dst}) {
        inside(a->data(), a->size() * 8);
      }
      for (const Field& f : b.fields) {
        EXPECT_EQ(f.count(), b.num_edges()) << f.name;
        inside(f.data(), f.bytes());
      }
    }
    for (const Field& f : back->input_fields) {
      EXPECT_EQ(f.count(), back->blocks.empty() ? 0 : back->blocks[0].num_src()) << f.name;
      inside(f.data(), f.bytes());
    }
    inside(back->features.data, back->features.bytes());
  }
  EXPECT_GT(refused, 1000);
  EXPECT_GT(read, 10) << "some changes (a name's unused bytes, the epoch) leave a readable file";
}

// A file whose table disagrees with the schema or the file is refused, naming the array.
TEST(ShmBatchTest, ATableThatDisagreesIsRefusedNamingTheArray) {
  MiniBatch mb = HandMadeBatch();
  for (Block& b : mb.blocks)
    b.fields.Add<float>(kEdgeWeight).assign(static_cast<size_t>(b.num_edges()), 1.0f);
  ShmSlot slot;
  ASSERT_TRUE(slot.Write(mb, 5, 3, DType::kFloat32).ok());
  const int64_t weight = EntryOf(slot.fd(), "edge_weight", 1);
  ASSERT_GE(weight, 0);
  const int64_t four = 4;  // layer 1 has 3 edges
  ASSERT_EQ(pwrite(slot.fd(), &four, 8, kTableAt + weight * kEntryBytes + 56), 8);
  auto back = ReadShmBatch(slot.fd());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(back.status().message().find("'edge_weight' of layer 1 has 4 entries"),
            std::string::npos)
      << back.status();

  // The features' dtype, unknown.
  ASSERT_TRUE(slot.Write(mb, 5, 3, DType::kFloat32).ok());
  const int64_t rows = EntryOf(slot.fd(), "features");
  ASSERT_EQ(rows, ArraysInFile(slot.fd()) - 1) << "the features come last";
  const int32_t bad = 99;
  ASSERT_EQ(pwrite(slot.fd(), &bad, 4, kTableAt + rows * kEntryBytes + 40), 4);
  back = ReadShmBatch(slot.fd());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(back.status().message().find("('features') has a bad table entry (domain 8, dtype 99"),
            std::string::npos)
      << back.status();

  // A file of another version.
  ASSERT_TRUE(slot.Write(mb, 5, 3, DType::kFloat32).ok());
  const char six = '6';
  ASSERT_EQ(pwrite(slot.fd(), &six, 1, 7), 1);
  back = ReadShmBatch(slot.fd());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(back.status().message().find("version 6; this reader reads 7"), std::string::npos)
      << back.status();

  // A layer without its edge IDs.
  ASSERT_TRUE(slot.Write(mb, 5, 3, DType::kFloat32).ok());
  const int64_t eids = EntryOf(slot.fd(), "eids", 0);
  ASSERT_GE(eids, 0);
  ASSERT_EQ(pwrite(slot.fd(), "xids", 5, kTableAt + eids * kEntryBytes), 5);
  back = ReadShmBatch(slot.fd());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(back.status().message().find("layer 0 has no 'eids' array"), std::string::npos)
      << back.status();
}

TEST(ShmBatchTest, RejectsAFileThatDisagreesWithItsHeader) {
  ShmSlot slot;
  ASSERT_TRUE(slot.Write(HandMadeBatch(), 5, 3, DType::kFloat32).ok());
  ASSERT_EQ(ftruncate(slot.fd(), 64), 0);
  EXPECT_EQ(ReadShmBatch(slot.fd()).status().code(), absl::StatusCode::kDataLoss);
}

// `d` in one partition (reverse edges added) under dir/parts, opened as a graph; fails the test
// on error. Returns the partition config's path.
std::string OpenOnePartition(const partition::Dataset& d, const testing::TempDir& dir, std::unique_ptr<DistGraph>* graph) {
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 1;
  o.add_reverse_edges = true;
  o.quiet = true;
  auto s = partition::PartitionDataset(d, o);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return "";
  auto cfg = core::LoadPartitionConfig(s->config_path);
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  if (!cfg.ok()) return "";
  auto g = DistGraph::Open(*cfg, {.machine_id = 0});
  EXPECT_TRUE(g.ok()) << g.status();
  if (g.ok()) *graph = std::move(*g);
  return s->config_path;
}

class LocalSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = testing::MakeRandomDataset({.num_nodes = 600, .num_edges = 4000, .feat_dim = 6});
    config_path_ = OpenOnePartition(d_, dir_, &graph_);
    ASSERT_NE(graph_, nullptr);
  }
  testing::TempDir dir_;
  partition::Dataset d_;
  std::string config_path_;
  std::unique_ptr<DistGraph> graph_;
};

// The cache's slot index: dense (4 bytes a node) for a large share of the nodes, hashed for a
// small one; the same answers either way.
TEST(NodeSlotsTest, DenseAndHashedFormsAgree) {
  std::vector<int64_t> ids;  // 20 of the first 100 nodes, out of ID order
  for (int64_t v = 95; v >= 0; v -= 5) ids.push_back(v);
  const NodeSlots sparse(ids, 100000), dense(ids, 100);
  EXPECT_FALSE(sparse.dense());  // 400 KB as a table against about 800 bytes hashed
  EXPECT_TRUE(dense.dense());    // 400 bytes as a table
  for (const NodeSlots* s : {&sparse, &dense}) {
    EXPECT_EQ(s->ids(), ids);
    EXPECT_EQ(s->size(), 20u);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(s->Find(ids[i]), static_cast<int64_t>(i));
    for (int64_t absent : {1, 4, 89, 99, 100, 5000, -1}) EXPECT_EQ(s->Find(absent), -1) << absent;
  }
}

// With SamplerOptions::cached_nodes a batch leaves the cached inputs' rows out and says which
// slot holds each; sampling itself is unchanged, and the rows it does fetch are the same.
TEST_F(LocalSamplingTest, CachedNodesAreLeftOutAndNamedBySlot) {
  SamplerOptions plain;
  plain.fanouts = {4, 3};
  plain.batch_size = 50;
  std::vector<int64_t> seeds(200);
  std::iota(seeds.begin(), seeds.end(), 0);
  SamplerOptions cached = plain;
  std::vector<int64_t> held;  // every third node, in an order that is not ID order
  for (int64_t v = graph_->num_nodes() - 1; v >= 0; v -= 3) held.push_back(v);
  cached.cached_nodes = IndexNodes(held, graph_->num_nodes());
  ASSERT_TRUE(ValidateSamplerOptions(cached, *graph_).ok());
  MiniBatchSampler a(graph_.get(), plain, seeds), b(graph_.get(), cached, seeds);
  const size_t row_bytes = a.feature_row_bytes();
  for (int64_t step = 0; step < a.steps_per_epoch(); ++step) {
    auto want = a.Sample(1, step);
    auto got = b.Sample(1, step);
    ASSERT_TRUE(want.ok() && got.ok());
    ASSERT_EQ(got->input_nodes(), want->input_nodes());
    EXPECT_TRUE(want->feature_slots.empty());
    const Int64Array& inputs = got->input_nodes();
    ASSERT_EQ(got->feature_slots.size(), inputs.size());
    int64_t misses = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t slot = got->feature_slots[i];
      if (slot >= 0) {
        EXPECT_EQ(held[slot], inputs[i]) << "input " << i;
        continue;
      }
      EXPECT_NE(inputs[i] % 3, (graph_->num_nodes() - 1) % 3) << "node " << inputs[i] << " is cached";
      EXPECT_EQ(std::memcmp(static_cast<const char*>(got->features.data) + misses * row_bytes,
                            static_cast<const char*>(want->features.data) + i * row_bytes, row_bytes),
                0)
          << "the row of input " << i;
      ++misses;
    }
    EXPECT_EQ(got->features.rows, misses);
    EXPECT_GT(misses, 0);
    EXPECT_LT(misses, static_cast<int64_t>(inputs.size()));
  }
  cached.cached_nodes = IndexNodes({0, graph_->num_nodes()}, graph_->num_nodes() + 1);
  EXPECT_EQ(ValidateSamplerOptions(cached, *graph_).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LocalSamplingTest, BlocksFeaturesAndLabelsMatchTheDataset) {
  testing::BatchTruth truth(d_, true, config_path_);
  auto mask = graph_->PullWholeNodeField("train_mask");
  ASSERT_TRUE(mask.ok()) << mask.status();
  std::vector<int64_t> train = MaskToIds(*mask);
  ASSERT_EQ(train.size(), d_.train_idx.size());
  for (auto [fanouts, replace] : std::vector<std::pair<std::vector<int64_t>, bool>>{
           {{4, 3}, false}, {{-1, 2}, false}, {{5, 3, 2}, true}, {{-1}, false}}) {
    SamplerOptions so;
    so.fanouts = fanouts;
    so.replace = replace;
    so.batch_size = 37;
    so.seed = 11;
    ASSERT_TRUE(ValidateSamplerOptions(so, *graph_).ok());
    MiniBatchSampler s(graph_.get(), so, train);
    ASSERT_EQ(s.steps_per_epoch(), (static_cast<int64_t>(train.size()) + 36) / 37);
    std::set<int64_t> seen;
    for (int64_t step = 0; step < s.steps_per_epoch(); ++step) {
      auto mb = s.Sample(0, step);
      ASSERT_TRUE(mb.ok()) << mb.status();
      truth.Check(*mb, fanouts, replace);
      seen.insert(mb->seeds.begin(), mb->seeds.end());
    }
    EXPECT_EQ(seen.size(), train.size()) << "an epoch visits every seed once";
  }
}

// float16 fields are first-class: node features reach the batch as stored (two bytes a value,
// tagged float16, for the trainer to convert), and a float16 edge weight converts exactly.
TEST(Float16SamplingTest, FeaturesComeAsStoredAndEdgeWeightsConvert) {
  partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 300, .num_edges = 2000, .feat_dim = 4});
  partition::Field* feat = const_cast<partition::Field*>(d.FindNodeField("feat"));
  ASSERT_NE(feat, nullptr);
  core::NpyArray half = core::NpyArray::Owned(DType::kFloat16, feat->data.shape());
  for (int64_t i = 0; i < feat->data.num_elements(); ++i) {
    static_cast<uint16_t*>(half.mutable_data())[i] = core::FloatToHalf(feat->data.data_as<float>()[i] / 64);
  }
  feat->data = std::move(half);
  core::NpyArray w16 = core::NpyArray::Owned(DType::kFloat16, {d.num_edges()});
  for (int64_t row = 0; row < d.num_edges(); ++row) static_cast<uint16_t*>(w16.mutable_data())[row] = core::FloatToHalf((row % 16) / 8.0f);
  d.edge_fields.push_back({"w16", std::move(w16)});
  testing::TempDir dir;
  std::unique_ptr<DistGraph> graph;
  const std::string config_path = OpenOnePartition(d, dir, &graph);
  ASSERT_NE(graph, nullptr);

  SamplerOptions so;
  so.fanouts = {4, 3};
  so.batch_size = 25;
  so.edge = {.weight_field = "w16", .feature_field = "weight"};  // "weight": each edge's input row
  ASSERT_TRUE(ValidateSamplerOptions(so, *graph).ok()) << ValidateSamplerOptions(so, *graph);
  std::vector<int64_t> seeds(100);
  std::iota(seeds.begin(), seeds.end(), 0);
  MiniBatchSampler s(graph.get(), so, seeds);
  EXPECT_EQ(s.feature_dtype(), DType::kFloat16);
  EXPECT_EQ(s.feature_row_bytes(), 8u);
  testing::BatchTruth truth(d, true, config_path);
  for (int64_t step = 0; step < s.steps_per_epoch(); ++step) {
    auto mb = s.Sample(0, step);
    ASSERT_TRUE(mb.ok()) << mb.status();
    EXPECT_EQ(mb->features.dtype, DType::kFloat16);
    EXPECT_EQ(mb->features.bytes(), mb->input_nodes().size() * 8);
    truth.Check(*mb, so.fanouts, false);  // the rows, byte for byte
    for (const Block& b : mb->blocks) {
      const FloatArray& weight = b.edge_weight();
      const FloatArray& feat = b.fields.Get<float>(sampler::kEdgeFeat);
      ASSERT_EQ(weight.size(), b.eids.size());
      for (size_t e = 0; e < b.eids.size(); ++e) {
        const auto row = static_cast<int64_t>(feat[e]);
        ASSERT_EQ(weight[e], (row % 16) / 8.0f) << "edge " << b.eids[e];
      }
    }
  }
}

TEST_F(LocalSamplingTest, SameSeedSameBatchAndOtherwiseDifferent) {
  SamplerOptions so;
  so.fanouts = {5, 5};
  so.batch_size = 16;
  so.seed = 3;
  std::vector<int64_t> seeds(200);
  std::iota(seeds.begin(), seeds.end(), 100);
  MiniBatchSampler a(graph_.get(), so, seeds), b(graph_.get(), so, seeds);
  auto x = a.Sample(1, 2), y = b.Sample(1, 2);
  ASSERT_TRUE(x.ok() && y.ok());
  testing::ExpectSameBatch(*x, *y);
  so.seed = 4;
  MiniBatchSampler c(graph_.get(), so, seeds);
  auto z = c.Sample(1, 2);
  ASSERT_TRUE(z.ok());
  EXPECT_NE(x->seeds, z->seeds);
}

TEST_F(LocalSamplingTest, BadOptionsAreRefusedWithTheFlagNamed) {
  SamplerOptions so;
  so.fanouts = {5, 0};
  EXPECT_NE(ValidateSamplerOptions(so, *graph_).message().find("--fanouts: layer 1 has fanout 0"), std::string::npos);
  so.fanouts = {5};
  so.batch_size = 0;
  EXPECT_NE(ValidateSamplerOptions(so, *graph_).message().find("--batch-size"), std::string::npos);
  so.batch_size = 8;
  so.feature_field = "nope";
  absl::Status s = ValidateSamplerOptions(so, *graph_);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("'nope'"), std::string::npos);
  EXPECT_NE(s.message().find("feat"), std::string::npos) << "lists the fields that exist: " << s.message();
  so.feature_field = "feat";
  so.label_field = "feat";
  EXPECT_NE(ValidateSamplerOptions(so, *graph_).message().find("one integer per node"), std::string::npos);
}

TEST_F(LocalSamplingTest, OutOfGraphSeedIsAnErrorNamingIt) {
  core::SampledEdges e;
  std::vector<int64_t> seeds = {1, 600};
  absl::Status s = graph_->SampleNeighbors(seeds, {.fanout = 2}, &e);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("node ID 600"), std::string::npos) << s;
}

TEST(ServerListTest, ParsesAndFormats) {
  auto m = ParseServerList("0=a:1, 1=b:2,0=c:3", 2);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->addresses[0], (std::vector<std::string>{"a:1", "c:3"}));
  EXPECT_EQ(FormatServerList(*m), "0=a:1,0=c:3,1=b:2");
  EXPECT_FALSE(ParseServerList("2=a:1", 2).ok());
  EXPECT_FALSE(ParseServerList("a:1", 2).ok());
  EXPECT_FALSE(ParseServerList("0=", 2).ok());
}

}  // namespace
}  // namespace fanout::sampler
