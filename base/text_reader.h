// Line-oriented reading of text files, plain or gzip-compressed (detected from the content, so
// `edge.csv.gz` and `edges.csv` read the same way), with the line number kept for error messages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fanout::base {

// Not thread-safe.
class LineReader {
 public:
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path);
  ~LineReader();

  // Sets *line to the next line without its "\n" or "\r\n"; the view is valid until the next
  // call. Returns false at the end of the file; an error for a read failure or a truncated or
  // corrupt gzip stream.
  absl::StatusOr<bool> Next(std::string_view* line);

  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // "path:line", for error messages.
  std::string Where() const;
  // Bytes of (decompressed) text consumed so far, for progress reports.
  int64_t bytes_read() const { return bytes_read_; }

 private:
  LineReader() = default;
  absl::StatusOr<bool> Fill();

  std::string path_;
  void* gz_ = nullptr;  // gzFile
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  std::string carry_;  // a line longer than the buffer
  int64_t line_number_ = 0;
  int64_t bytes_read_ = 0;
};

// Parses a whole token as a base-10 integer / a float ("nan" accepted). False on any junk.
bool ParseInt64(std::string_view token, int64_t* out);
bool ParseFloat(std::string_view token, float* out);

// Splits a CSV/TSV line on ',' or '\t' (or runs of spaces), trimming spaces around each field.
void SplitFields(std::string_view line, std::vector<std::string_view>* fields);

}  // namespace fanout::base
