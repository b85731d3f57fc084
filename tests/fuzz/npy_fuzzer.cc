// Fuzzes the .npy reader (core/npy.cc): the input is a whole file, mapped as a read-only and as a
// copy-on-write array. Whatever the header says, a mapped array must cover exactly its bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "core/npy.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void Touch(const fanout::core::NpyArray& a, size_t file_size) {
  // Every byte the array claims must be readable (ASan and the mapping catch it otherwise).
  FANOUT_CHECK(a.nbytes() <= file_size) << a.nbytes() << " > " << file_size;
  const auto* p = static_cast<const unsigned char*>(a.data());
  unsigned sum = 0;
  for (size_t i = 0; i < a.nbytes(); ++i) sum += p[i];
  if (a.rows() > 0 && a.row_bytes() > 0) {
    sum += static_cast<unsigned char>(*a.row(a.rows() - 1));
  }
  (void)sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fanout::fuzz::TempDir() + "/input.npy";
  static const std::string path2 = fanout::fuzz::TempDir() + "/again.npy";
  fanout::fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto a = fanout::core::NpyArray::Map(path);
  auto b = fanout::core::NpyArray::MapCopyOnWrite(path);
  FANOUT_CHECK(a.ok() == b.ok()) << a.status() << " vs " << b.status();
  if (!a.ok()) return 0;
  Touch(*a, size);
  Touch(*b, size);
  // A copy-on-write mapping is writable and leaves the file alone.
  if (b->nbytes() > 0) static_cast<unsigned char*>(b->mutable_data())[0] ^= 1;
  FANOUT_CHECK(a->shape() == b->shape());
  // The header fanout writes for the same dtype and shape must parse back to the same array.
  std::string header = fanout::core::EncodeNpyHeader(a->dtype(), a->shape());
  std::string again = header;
  again.append(static_cast<const char*>(a->data()), a->nbytes());
  fanout::fuzz::WriteFile(path2, again);
  auto c = fanout::core::NpyArray::Map(path2);
  FANOUT_CHECK(c.ok()) << c.status();
  FANOUT_CHECK(c->dtype() == a->dtype() && c->shape() == a->shape());
  return 0;
}
