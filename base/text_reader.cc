#include "base/text_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "base/strings.h"

namespace fanout::base {
namespace {
// Buffers are sized to the file within these bounds: datasets come with files of a few bytes
// (OGB's num-node-list.csv.gz) that need no 1 MiB line buffer and 768 KiB of zlib buffers each.
constexpr size_t kMinBufSize = 4 << 10;
constexpr size_t kMaxBufSize = 1 << 20;
}

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  std::unique_ptr<LineReader> r(new LineReader());
  r->path_ = path;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    std::string msg = StrCat(path, ": cannot open: ", std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(msg) : absl::InvalidArgumentError(msg);
  }
  struct stat st;
  bool regular = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  size_t file_size = regular ? static_cast<size_t>(st.st_size) : kMaxBufSize;  // pipes: no size
  size_t buf_size = std::clamp(file_size, kMinBufSize, kMaxBufSize);
  gzbuffer(gz, static_cast<unsigned>(std::min<size_t>(buf_size, 1 << 18)));
  r->gz_ = gz;
  r->buf_.resize(buf_size);
  return r;
}

LineReader::~LineReader() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
}

std::string LineReader::Where() const { return StrCat(path_, ":", line_number_); }

absl::StatusOr<bool> LineReader::Fill() {
  gzFile gz = static_cast<gzFile>(gz_);
  int n = gzread(gz, buf_.data(), static_cast<unsigned>(buf_.size()));
  int err = Z_OK;
  const char* msg = gzerror(gz, &err);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    // zlib reports a cut-off stream as Z_BUF_ERROR "unexpected end of file".
    return absl::DataLossError(StrCat(path_, ": read failed after line ", line_number_, ": ",
                                            msg, err == Z_BUF_ERROR ? " (file truncated?)" : ""));
  }
  begin_ = 0;
  end_ = static_cast<size_t>(n);
  bytes_read_ += n;
  if (n == 0) eof_ = true;
  return n > 0;
}

absl::StatusOr<bool> LineReader::Next(std::string_view* line) {
  carry_.clear();
  bool carrying = false;
  while (true) {
    if (begin_ == end_) {
      if (eof_) break;
      auto filled = Fill();
      if (!filled.ok()) return filled.status();
      if (!*filled) break;
    }
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      size_t len = static_cast<const char*>(nl) - start;
      begin_ += len + 1;
      ++line_number_;
      std::string_view piece(start, len);
      if (carrying) {
        carry_.append(piece);
        piece = carry_;
      }
      if (!piece.empty() && piece.back() == '\r') piece.remove_suffix(1);
      *line = piece;
      return true;
    }
    carry_.append(start, end_ - begin_);
    carrying = true;
    begin_ = end_;
  }
  if (!carrying || carry_.empty()) return false;
  // Last line without a trailing newline.
  ++line_number_;
  std::string_view piece = carry_;
  if (!piece.empty() && piece.back() == '\r') piece.remove_suffix(1);
  *line = piece;
  return true;
}

bool ParseInt64(std::string_view t, int64_t* out) {
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
  return ec == std::errc() && p == t.data() + t.size() && !t.empty();
}

bool ParseFloat(std::string_view t, float* out) {
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty()) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
  if (ec == std::errc::result_out_of_range) return false;
  return ec == std::errc() && p == t.data() + t.size();
}

void SplitFields(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  if (line.find_first_of(",\t") != std::string_view::npos) {
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i) {
      if (i == line.size() || line[i] == ',' || line[i] == '\t') {
        fields->push_back(trim(line.substr(start, i - start)));
        start = i + 1;
      }
    }
    return;
  }
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) fields->push_back(line.substr(i, j - i));
    i = j;
  }
}

}  // namespace fanout::base
