#include "base/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::base {
namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutTag(int field, int wire_type, std::string* out) { PutVarint(static_cast<uint64_t>(field << 3 | wire_type), out); }
template <typename T>
void PutFixed(T v, std::string* out) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // protobuf and TFRecord are little-endian, as x86 and ARM are
  out->append(b, sizeof(T));
}
void PutBytes(int field, std::string_view bytes, std::string* out) {
  PutTag(field, 2, out);
  PutVarint(bytes.size(), out);
  out->append(bytes);
}

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t c = Crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string TfRecord(std::string_view data) {
  std::string len;
  PutFixed<uint64_t>(data.size(), &len);
  std::string out = len;
  PutFixed<uint32_t>(MaskedCrc32c(len), &out);
  out.append(data);
  PutFixed<uint32_t>(MaskedCrc32c(data), &out);
  return out;
}

std::string EventProto(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& scalars,
                       std::string_view file_version) {
  std::string e;
  PutTag(1, 1, &e);
  PutFixed<double>(wall_time, &e);
  PutTag(2, 0, &e);
  PutVarint(static_cast<uint64_t>(step), &e);
  if (!file_version.empty()) {
    PutBytes(3, file_version, &e);
    return e;
  }
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    PutBytes(1, tag, &v);
    PutTag(2, 5, &v);
    PutFixed<float>(value, &v);
    PutBytes(1, v, &summary);
  }
  PutBytes(5, summary, &e);
  return e;
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(StrCat("cannot create ", dir, ": ", ec.message()));
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string base = StrCat(dir, "/events.out.tfevents.", static_cast<int64_t>(WallTime()), ".", host, ".",
                                  getpid());
  std::string path = base;
  std::FILE* f = nullptr;
  // Never over another run's file ("x"): a second writer in the same second gets a suffix.
  for (int attempt = 0; f == nullptr; ++attempt) {
    path = attempt == 0 ? base : StrCat(base, ".", attempt);
    f = std::fopen(path.c_str(), "wbx");
    if (f == nullptr && (errno != EEXIST || attempt >= 100)) {
      return absl::PermissionDeniedError(StrCat("cannot create ", path, ": ", std::strerror(errno)));
    }
  }
  std::unique_ptr<EventFileWriter> w(new EventFileWriter(path, f));
  RETURN_IF_ERROR(w->Write(EventProto(WallTime(), 0, {}, "brain.Event:2")));
  return w;
}

EventFileWriter::~EventFileWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

absl::Status EventFileWriter::Write(const std::string& event) {
  const std::string record = TfRecord(event);
  if (std::fwrite(record.data(), 1, record.size(), f_) != record.size() || std::fflush(f_) != 0) {
    return absl::DataLossError(StrCat("cannot write ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status EventFileWriter::AddScalars(int64_t step, const std::vector<std::pair<std::string, float>>& scalars) {
  return Write(EventProto(WallTime(), step, scalars));
}

}  // namespace fanout::base
