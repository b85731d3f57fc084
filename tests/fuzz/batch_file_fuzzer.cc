// Fuzzes the batch file reader (sampler/shm_batch.cc ReadShmBatch, with the schema's
// PlaceArray and CheckArrayCounts): the input is a whole batch file, in a memfd as a sampler
// process hands it over. Whatever its header and table say, a batch read back must hand out only
// bytes inside the file, and a refused one is DATA_LOSS.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/check.h"
#include "sampler/shm_batch.h"

namespace {

unsigned Touch(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  unsigned sum = 0;
  for (size_t i = 0; i < bytes; ++i) sum += p[i];
  return sum;
}

unsigned TouchFields(const fanout::sampler::Fields& fields, int64_t count) {
  unsigned sum = 0;
  for (const fanout::sampler::Field& f : fields) {
    FANOUT_CHECK(f.count() == count) << f.name << ": " << f.count() << " entries for " << count;
    sum += Touch(f.data(), f.bytes());
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout::sampler;
  const int fd = memfd_create("fuzz-batch", MFD_CLOEXEC);
  FANOUT_CHECK(fd >= 0);
  FANOUT_CHECK(write(fd, data, size) == static_cast<ssize_t>(size));
  LinkPairs pairs;
  auto mb = ReadShmBatch(fd, {}, nullptr, &pairs);
  close(fd);
  // FANOUT_FUZZ_VERBOSE=1: say whether each input reads (to check a seed corpus).
  if (std::getenv("FANOUT_FUZZ_VERBOSE") != nullptr)
    std::fprintf(stderr, "batch file: %s\n",
                 mb.ok() ? "read" : std::string(mb.status().message()).c_str());
  if (!mb.ok()) {
    FANOUT_CHECK(mb.status().code() == absl::StatusCode::kDataLoss) << mb.status();
    return 0;
  }
  unsigned sum = 0;
  for (const Block& b : mb->blocks) {
    for (const Int64Array* a : {&b.src_nodes, &b.indptr, &b.indices, &b.eids, &b.dst})
      sum += Touch(a->data(), a->size() * 8);
    FANOUT_CHECK(b.num_dst + 1 == static_cast<int64_t>(b.indptr.size()));
    sum += TouchFields(b.fields, b.num_edges());
  }
  if (!mb->blocks.empty()) sum += TouchFields(mb->input_fields, mb->blocks[0].num_src());
  sum += TouchFields(mb->seed_fields, static_cast<int64_t>(mb->seeds.size()));
  FANOUT_CHECK(mb->features.bytes() <= size);
  sum += Touch(mb->features.data, mb->features.bytes());
  for (const auto* v : {&pairs.pos_src, &pairs.pos_dst, &pairs.neg_src, &pairs.neg_dst}) {
    for (int64_t p : *v) FANOUT_CHECK(p >= 0 && p < static_cast<int64_t>(mb->seeds.size()));
  }
  (void)sum;
  return 0;
}
