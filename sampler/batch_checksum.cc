#include "sampler/batch_checksum.h"

#include <zlib.h>

#include <algorithm>
#include <span>

namespace fanout::sampler {
namespace {

uLong Add(uLong crc, const void* data, size_t bytes) {
  // zlib's length is a uInt: feed large arrays in pieces.
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    bytes -= n;
  }
  return crc;
}

uLong AddIds(uLong crc, std::span<const int64_t> ids) { return Add(crc, ids.data(), ids.size_bytes()); }


uLong AddFields(uLong crc, const Fields& fields) {
  for (const Field& f : fields) crc = Add(crc, f.data(), f.bytes());
  return crc;
}

}  // namespace

uint32_t BatchChecksum(const MiniBatch& mb) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = AddIds(crc, mb.seeds);
  for (const Block& b : mb.blocks) {
    crc = AddIds(crc, b.src_nodes);
    crc = Add(crc, &b.num_dst, sizeof(b.num_dst));
    crc = AddIds(crc, b.indptr);
    crc = AddIds(crc, b.indices);
    crc = AddIds(crc, b.eids);
    crc = AddFields(crc, b.fields);
  }
  crc = AddFields(crc, mb.input_fields);
  if (mb.features.data != nullptr) crc = Add(crc, mb.features.data, mb.features.bytes());
  crc = AddIds(crc, mb.labels);
  crc = AddFields(crc, mb.seed_fields);
  return static_cast<uint32_t>(crc);
}

}  // namespace fanout::sampler
