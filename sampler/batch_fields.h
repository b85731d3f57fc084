// The named arrays of a mini-batch beyond its structure: a block's per-edge fields (edge weights,
// edge features, edge types), the batch's per-input-node fields (node types) and per-seed fields.
// A field is a name, a width and count x width values of one dtype; the batch file
// (sampler/shm_batch.h), the trainer's tensors (trainer/batch_tensors.h), TorchScript's block
// dicts, the Python extension's dicts and the batch checksum all iterate them, so a new field is
// one producer (who adds it) and one consumer (who reads it by name), and everything between
// carries it unchanged.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/check.h"
#include "core/dtype.h"
#include "sampler/array.h"

namespace fanout::sampler {

// The standard fields' names (what models and loaders look them up by).
inline constexpr std::string_view kEdgeWeight =
    "edge_weight";  // per edge, float32: a weight per message
inline constexpr std::string_view kEdgeFeat = "edge_feat";  // per edge, float32 x width
inline constexpr std::string_view kEdgeType = "etype";      // per edge, int32: its relation
inline constexpr std::string_view kInputTypes =
    "input_types";  // per input node, int32: its node type

// Longest field name a batch file holds (its name table has fixed-size slots).
inline constexpr size_t kMaxFieldName = 31;

struct Field {
  std::string name;
  int64_t width = 1;    // values per entry (per edge, node or seed)
  bool matrix = false;  // [count, width] (a row per entry, even of width 1), else [count]
  std::variant<Int64Array, Int32Array, FloatArray> values;

  core::DType dtype() const {
    return std::visit(
        [](const auto& a) {
          return core::DTypeOf<typename std::decay_t<decltype(a)>::value_type>();
        },
        values);
  }
  size_t num_values() const {
    return std::visit([](const auto& a) { return a.size(); }, values);
  }
  // Entries: values / width (width >= 1: Fields checks it).
  int64_t count() const { return static_cast<int64_t>(num_values()) / width; }
  const void* data() const {
    return std::visit([](const auto& a) -> const void* { return a.data(); }, values);
  }
  size_t bytes() const { return num_values() * core::DTypeSize(dtype()); }
  std::vector<int64_t> shape() const {
    return matrix ? std::vector<int64_t>{count(), width} : std::vector<int64_t>{count()};
  }
  // Keeps data() alive and unchanged for as long as it is held (sampler/array.h's Share()).
  std::shared_ptr<const void> Share() const {
    return std::visit([](const auto& a) { return a.Share(); }, values);
  }
};

// A small ordered set of fields of one domain, kept in the order they were added (the order they
// are written, listed and checksummed in). A reference Add returns stays valid while its field
// is in the set (adding others does not move it).
class Fields {
 public:
  // Field `name`, one value of T per entry ([count]): its values, added empty when absent.
  // CHECK-fails when the field holds another dtype.
  template <typename T>
  Array<T>& Add(std::string_view name) {
    return Put<T>(name, 1, false);
  }
  // Field `name`, a row of `width` values of T per entry ([count, width]), entry-major.
  template <typename T>
  Array<T>& AddRows(std::string_view name, int64_t width) {
    return Put<T>(name, width, true);
  }
  void Add(Field f) {
    FANOUT_CHECK(f.name.size() <= kMaxFieldName && Find(f.name) == nullptr && f.width >= 1 &&
                 (f.matrix || f.width == 1));
    fields_.push_back(std::move(f));
  }
  const Field* Find(std::string_view name) const {
    for (const Field& f : fields_) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // Field `name`'s values as T, or an empty array when there is no such field. CHECK-fails when it
  // holds another dtype.
  template <typename T>
  const Array<T>& Get(std::string_view name) const {
    static const Array<T> kNone;
    const Field* f = Find(name);
    if (f == nullptr) return kNone;
    FANOUT_CHECK(std::holds_alternative<Array<T>>(f->values));
    return std::get<Array<T>>(f->values);
  }
  size_t size() const { return fields_.size(); }
  std::list<Field>::const_iterator begin() const { return fields_.begin(); }
  std::list<Field>::const_iterator end() const { return fields_.end(); }

 private:
  template <typename T>
  Array<T>& Put(std::string_view name, int64_t width, bool matrix) {
    FANOUT_CHECK(width >= 1 && (matrix || width == 1));
    for (Field& f : fields_) {
      if (f.name == name) {
        FANOUT_CHECK(std::holds_alternative<Array<T>>(f.values));
        f.width = width;
        f.matrix = matrix;
        return std::get<Array<T>>(f.values);
      }
    }
    FANOUT_CHECK(name.size() <= kMaxFieldName);
    fields_.push_back(Field{std::string(name), width, matrix, Array<T>()});
    return std::get<Array<T>>(fields_.back().values);
  }

  std::list<Field> fields_;
};

}  // namespace fanout::sampler
