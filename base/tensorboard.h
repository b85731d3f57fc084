// TensorBoard event files without TensorFlow: scalars written as TFRecord-framed `Event` protos
// (the two messages' few fields are encoded by hand), readable by TensorBoard and by
// tensorboard's EventAccumulator. One writer per run, on rank 0.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::base {

// CRC-32C (Castagnoli), as TFRecord frames use it, and TFRecord's masked form of it.
uint32_t Crc32c(std::string_view data);
uint32_t MaskedCrc32c(std::string_view data);

// One record as TFRecord frames it: length, its masked CRC, the data, the data's masked CRC.
std::string TfRecord(std::string_view data);

// The bytes of an Event proto: wall_time (field 1), step (2), and either file_version (3) or a
// Summary (5) of scalar Values (tag 1, simple_value 2).
std::string EventProto(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& scalars,
                       std::string_view file_version = {});

class EventFileWriter {
 public:
  // Creates DIR (with parents) and DIR/events.out.tfevents.<seconds>.<host>, whose first record
  // names the format version. Errors name the path.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Open(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Appends one event of `scalars` at `step` and flushes it (a run that dies keeps its curves).
  absl::Status AddScalars(int64_t step, const std::vector<std::pair<std::string, float>>& scalars);
  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {}
  absl::Status Write(const std::string& event);
  std::string path_;
  std::FILE* f_;
};

}  // namespace fanout::base
