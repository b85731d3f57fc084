// An enum's spellings in one table, read both ways: a flag's value parsed into the enum and the
// enum printed back (in lines, specs, checkpoints). A table is
//   constexpr std::pair<Kind, std::string_view> kKindNames[] = {{Kind::kA, "a"}, ...};
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace fanout::base {

// `value`'s name in `table`, or "?" for a value the table lacks.
template <typename E, size_t N>
constexpr std::string_view EnumName(const std::pair<E, std::string_view> (&table)[N], E value) {
  for (const auto& [kind, name] : table) {
    if (kind == value) return name;
  }
  return "?";
}

// The value named `name` in `table`; nullopt for a name it lacks.
template <typename E, size_t N>
constexpr std::optional<E> EnumFromName(const std::pair<E, std::string_view> (&table)[N], std::string_view name) {
  for (const auto& [kind, known] : table) {
    if (known == name) return kind;
  }
  return std::nullopt;
}

// The table's names for an error message: "a, b or c".
template <typename E, size_t N>
std::string EnumNameList(const std::pair<E, std::string_view> (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].second;
  }
  return out;
}

}  // namespace fanout::base
