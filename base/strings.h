// String helpers. Debian 12's Abseil is built in its pre-C++17 mode, where absl::string_view is
// its own type and absl::StrCat rejects std::string_view; fanout uses Abseil for Status only and
// this for messages.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fanout::base {

// Concatenates anything with an operator<< (numbers, strings, both string_views).
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename T>
std::string StrJoin(const std::vector<T>& v, std::string_view sep) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) os << sep;
    os << v[i];
  }
  return os.str();
}

// The pieces of `s` between occurrences of `sep` (non-empty): "a___b" by "___" is {"a", "b"}; an
// empty piece stays ("a::b" by ":" is {"a", "", "b"}).
inline std::vector<std::string> StrSplit(std::string_view s, std::string_view sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.emplace_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + sep.size();
  }
}

inline std::string_view StripSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace fanout::base
