// Fuzzes the partition config loader (core/partition_config.cc) on a whole <name>.json. What it
// accepts must give valid partition books and field sizes, and must survive a write/load round
// trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "core/partition_config.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

bool SameFields(const std::vector<fanout::core::FieldSchema>& a,
                const std::vector<fanout::core::FieldSchema>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].row_shape != b[i].row_shape) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fanout::fuzz::TempDir() + "/graph.json";
  static const std::string path2 = fanout::fuzz::TempDir() + "/again.json";
  fanout::fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto c = fanout::core::LoadPartitionConfig(path);
  if (!c.ok()) return 0;
  FANOUT_CHECK(c->num_parts >= 1);
  FANOUT_CHECK(static_cast<int>(c->node_bounds.size()) == c->num_parts + 1);
  FANOUT_CHECK(c->NodeBook().ok()) << c->NodeBook().status();
  FANOUT_CHECK(c->EdgeBook().ok()) << c->EdgeBook().status();
  // Readers size buffers from a field's row shape.
  for (const auto* fields : {&c->node_fields, &c->edge_fields}) {
    for (const auto& f : *fields) {
      FANOUT_CHECK(f.row_elems() >= 0);
      (void)f.row_bytes();
    }
  }
  auto json = fanout::core::PartitionConfigToJson(*c, "");
  FANOUT_CHECK(json.ok()) << json.status();
  fanout::fuzz::WriteFile(path2, *json);
  auto again = fanout::core::LoadPartitionConfig(path2);
  FANOUT_CHECK(again.ok()) << again.status();
  FANOUT_CHECK(again->graph_name == c->graph_name && again->num_nodes == c->num_nodes &&
               again->num_edges == c->num_edges && again->num_parts == c->num_parts &&
               again->halo_hops == c->halo_hops && again->part_method == c->part_method &&
               again->node_bounds == c->node_bounds && again->edge_bounds == c->edge_bounds &&
               again->num_classes == c->num_classes &&
               SameFields(again->node_fields, c->node_fields) &&
               SameFields(again->edge_fields, c->edge_fields));
  return 0;
}
