// Fuzzes the line reader and field parsers (base/text_reader.cc): the input is a whole text file,
// plain or gzip (detected from its content, as for a dataset's edge.csv.gz). Every line is split
// into fields and each field parsed as an integer and a float, as the dataset readers do.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "base/text_reader.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fanout::fuzz::TempDir() + "/input.txt";
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fanout::fuzz::WriteFile(path, text);
  auto reader = fanout::base::LineReader::Open(path);
  FANOUT_CHECK(reader.ok()) << reader.status();
  std::vector<std::string_view> fields;
  std::string_view line;
  int64_t lines = 0;
  while (true) {
    auto more = (*reader)->Next(&line);
    if (!more.ok() || !*more) break;
    ++lines;
    FANOUT_CHECK((*reader)->line_number() == lines);
    FANOUT_CHECK(line.find('\n') == std::string_view::npos);
    fanout::base::SplitFields(line, &fields);
    for (std::string_view f : fields) {
      FANOUT_CHECK(f.data() >= line.data() && f.data() + f.size() <= line.data() + line.size());
      int64_t i;
      float x;
      fanout::base::ParseInt64(f, &i);
      fanout::base::ParseFloat(f, &x);
    }
  }
  // Plain text (no gzip magic) is read back byte for byte.
  if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) {
    FANOUT_CHECK((*reader)->bytes_read() == static_cast<int64_t>(size))
        << (*reader)->bytes_read() << " of " << size;
  }
  return 0;
}
