// FieldCount<T>(): the number of members of an aggregate struct, counted at compile time (the
// largest N for which T{x1, ..., xN} compiles, each x convertible to any member type). Code that
// must handle every member of a struct (a serialiser, a comparison) static_asserts the count it
// handles, so that a member added later fails the build there instead of being silently left out.
#pragma once

#include <cstddef>
#include <utility>

namespace fanout::base {
namespace field_count_internal {

struct AnyMember {
  template <typename T>
  operator T() const;  // never defined: only named in unevaluated contexts
};

template <typename T, std::size_t... I>
constexpr bool BraceInitializableWith(std::index_sequence<I...>) {
  return requires { T{((void)I, AnyMember{})...}; };
}

}  // namespace field_count_internal

template <typename T, std::size_t N = 0>
constexpr std::size_t FieldCount() {
  if constexpr (!field_count_internal::BraceInitializableWith<T>(std::make_index_sequence<N + 1>{})) {
    return N;
  } else {
    return FieldCount<T, N + 1>();
  }
}

}  // namespace fanout::base
