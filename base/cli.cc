#include "base/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"

namespace fanout::base {
namespace {
absl::Status BadValue(const std::string& name, const std::string& v, const std::string& want) {
  return absl::InvalidArgumentError(StrCat("--", name, ": '", v, "' is not ", want));
}

// Calls item(token) for each non-empty comma-separated token of `v`.
template <typename Fn>
absl::Status ForEachToken(const std::string& v, Fn item) {
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    std::string tok(StripSpaces(std::string_view(v).substr(start, comma - start)));
    if (!tok.empty()) RETURN_IF_ERROR(item(tok));
    start = comma + 1;
  }
  return absl::OkStatus();
}
}  // namespace

void ArgParser::AddString(const std::string& name, std::string* out, const std::string& help) {
  flags_.push_back({name, help, *out, false, [out](const std::string& v) {
                      *out = v;
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddString(const std::string& name, std::string* out, const std::string& help,
                          std::function<absl::Status(const std::string&)> check) {
  flags_.push_back({name, help, *out, false, [out, name, check](const std::string& v) {
                      if (absl::Status s = check(v); !s.ok()) {
                        return absl::Status(s.code(), StrCat("--", name, ": ", s.message()));
                      }
                      *out = v;
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddSetter(const std::string& name, const std::string& help, std::string default_text,
                          std::function<absl::Status(const std::string&)> set) {
  flags_.push_back({name, help, std::move(default_text), false, [name, set](const std::string& v) {
                      if (absl::Status s = set(v); !s.ok()) {
                        return absl::Status(s.code(), StrCat("--", name, ": ", s.message()));
                      }
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddInt(const std::string& name, int64_t* out, const std::string& help) {
  flags_.push_back({name, help, std::to_string(*out), false, [out, name](const std::string& v) {
                      if (!ParseInt64(v, out)) return BadValue(name, v, "an integer");
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddInt(const std::string& name, int* out, const std::string& help) {
  flags_.push_back({name, help, std::to_string(*out), false, [out, name](const std::string& v) {
                      int64_t x;
                      if (!ParseInt64(v, &x) || x < INT32_MIN || x > INT32_MAX) {
                        return BadValue(name, v, "a 32-bit integer");
                      }
                      *out = static_cast<int>(x);
                      return absl::OkStatus();
                    }});
}

namespace {
// "--x must be >= 1, got 0", or "... >= 0 and <= 1000 ..." when the range has a top.
absl::Status OutOfRange(const std::string& name, int64_t v, int64_t min, int64_t max, int64_t type_max) {
  return absl::InvalidArgumentError(
      StrCat("--", name, " must be >= ", min, max < type_max ? StrCat(" and <= ", max) : "", ", got ", v));
}
}  // namespace

void ArgParser::AddInt(const std::string& name, int64_t* out, const std::string& help, int64_t min, int64_t max) {
  AddInt(name, out, help);
  flags_.back().set = [out, name, min, max](const std::string& v) {
    int64_t x;
    if (!ParseInt64(v, &x)) return BadValue(name, v, "an integer");
    if (x < min || x > max) return OutOfRange(name, x, min, max, std::numeric_limits<int64_t>::max());
    *out = x;
    return absl::OkStatus();
  };
}

void ArgParser::AddInt(const std::string& name, int* out, const std::string& help, int min, int max) {
  AddInt(name, out, help);
  flags_.back().set = [out, name, min, max](const std::string& v) {
    int64_t x;
    if (!ParseInt64(v, &x) || x < INT32_MIN || x > INT32_MAX) return BadValue(name, v, "a 32-bit integer");
    if (x < min || x > max) return OutOfRange(name, x, min, max, std::numeric_limits<int>::max());
    *out = static_cast<int>(x);
    return absl::OkStatus();
  };
}

void ArgParser::AddBytes(const std::string& name, int64_t* out, const std::string& help) {
  flags_.push_back({name, help, std::to_string(*out), false, [out, name](const std::string& v) {
                      size_t digits = 0;
                      while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
                      const std::string unit = v.substr(digits);
                      int shift = -1;
                      for (auto [s, u] : {std::pair{0, ""}, {10, "K"}, {20, "M"}, {30, "G"}, {40, "T"}}) {
                        if (unit == u || (shift < 0 && s > 0 && unit == std::string(u) + "iB")) shift = s;
                      }
                      int64_t x;
                      if (digits == 0 || shift < 0 || !ParseInt64(v.substr(0, digits), &x) ||
                          x > (std::numeric_limits<int64_t>::max() >> shift)) {
                        return BadValue(name, v, "a size in bytes, e.g. 1048576, 512M or 4G");
                      }
                      *out = x << shift;
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddUint(const std::string& name, uint64_t* out, const std::string& help) {
  flags_.push_back({name, help, std::to_string(*out), false, [out, name](const std::string& v) {
                      int64_t x;
                      if (!ParseInt64(v, &x) || x < 0) return BadValue(name, v, "a non-negative integer");
                      *out = static_cast<uint64_t>(x);
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddDouble(const std::string& name, double* out, const std::string& help) {
  flags_.push_back({name, help, StrCat(*out), false, [out, name](const std::string& v) {
                      double x;
                      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                      if (ec != std::errc() || p != v.data() + v.size() || v.empty()) {
                        return BadValue(name, v, "a number");
                      }
                      // No flag means anything by nan or inf, and every range check written as
                      // `x < lo` lets nan through (issue 11: --lr nan reached LibTorch).
                      if (!std::isfinite(x)) return BadValue(name, v, "a finite number");
                      *out = x;
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddBool(const std::string& name, bool* out, const std::string& help) {
  flags_.push_back({name, help, *out ? "true" : "false", true, [out, name](const std::string& v) {
                      if (v == "true" || v == "1" || v == "yes") {
                        *out = true;
                      } else if (v == "false" || v == "0" || v == "no") {
                        *out = false;
                      } else {
                        return BadValue(name, v, "true or false");
                      }
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddRepeatedString(const std::string& name, std::vector<std::string>* out,
                                  const std::string& help) {
  flags_.push_back({name, help + " (repeatable)", "", false, [out](const std::string& v) {
                      out->push_back(v);
                      return absl::OkStatus();
                    }});
}

void ArgParser::AddIntList(const std::string& name, std::vector<int64_t>* out, const std::string& help) {
  flags_.push_back({name, help, "", false, [out, name](const std::string& v) {
                      out->clear();
                      return ForEachToken(v, [&](const std::string& tok) {
                        int64_t a, b;
                        size_t colon = tok.find(':');
                        if (colon == std::string::npos) {
                          if (!ParseInt64(tok, &a)) return BadValue(name, tok, "an integer or an a:b range");
                          out->push_back(a);
                        } else {
                          if (!ParseInt64(tok.substr(0, colon), &a) || !ParseInt64(tok.substr(colon + 1), &b) || a > b) {
                            return BadValue(name, tok, "an integer or an a:b range");
                          }
                          for (int64_t i = a; i < b; ++i) out->push_back(i);
                        }
                        return absl::OkStatus();
                      });
                    }});
}

void ArgParser::AddFloatList(const std::string& name, std::vector<float>* out, const std::string& help) {
  flags_.push_back({name, help, "", false, [out, name](const std::string& v) {
                      out->clear();
                      return ForEachToken(v, [&](const std::string& tok) {
                        float x;
                        if (!ParseFloat(tok, &x)) return BadValue(name, tok, "a number");
                        out->push_back(x);
                        return absl::OkStatus();
                      });
                    }});
}

void ArgParser::AddBoolChoice(const std::string& name, bool* out, std::string off_name, std::string on_name,
                              const std::string& help) {
  const std::string h = StrCat(help, " (", off_name, "|", on_name, ")");
  AddSetter(name, h, *out ? on_name : off_name, [out, off_name, on_name](const std::string& v) -> absl::Status {
    if (v != off_name && v != on_name) {
      return absl::InvalidArgumentError(StrCat("'", v, "' is not one of ", off_name, ", ", on_name));
    }
    *out = v == on_name;
    return absl::OkStatus();
  });
}

void ArgParser::AddChoice(const std::string& name, std::string* out, std::vector<std::string> choices,
                          const std::string& help) {
  std::string h = StrCat(help, " (", StrJoin(choices, "|"), ")");
  flags_.push_back({name, h, *out, false, [out, name, choices](const std::string& v) {
                      if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
                        return BadValue(name, v, StrCat("one of ", StrJoin(choices, ", ")));
                      }
                      *out = v;
                      return absl::OkStatus();
                    }});
}

ArgParser::Flag* ArgParser::Find(const std::string& name) {
  for (auto& f : flags_) {
    if (f.name == name || std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) return &f;
  }
  return nullptr;
}

void ArgParser::AddAlias(const std::string& alias, const std::string& name) {
  Flag* f = Find(name);
  FANOUT_CHECK(f != nullptr && Find(alias) == nullptr) << "alias --" << alias << " of --" << name;
  f->aliases.push_back(alias);
}

void ArgParser::SetDefaultText(const std::string& name, std::string text) {
  Flag* f = Find(name);
  FANOUT_CHECK(f != nullptr) << "--" << name;
  f->default_text = std::move(text);
}

void ArgParser::MarkRequired(const std::string& name) {
  Flag* f = Find(name);
  FANOUT_CHECK(f != nullptr) << "--" << name;
  f->required = true;
}

namespace {
// Edit distance (insertions, deletions, substitutions), for "did you mean".
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string ArgParser::Nearest(const std::string& name) const {
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 4) + 1;  // a typo or two, not another word
  for (const Flag& f : flags_) {
    std::vector<std::string> names = f.aliases;
    names.insert(names.begin(), f.name);
    for (const std::string& n : names) {
      // A prefix of one flag only (--epoch for --epochs) is as good as a typo.
      const size_t d = n.rfind(name, 0) == 0 && name.size() >= 3 ? 1 : EditDistance(name, n);
      if (d < best_distance) {
        best_distance = d;
        best = f.name;
      }
    }
  }
  return best;
}

bool ArgParser::WasSet(const std::string& name) const {
  return std::find(set_.begin(), set_.end(), name) != set_.end();
}

absl::Status ArgParser::Parse(int argc, char** argv, std::vector<std::string>* positional) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg == "--version") {
      version_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (positional != nullptr) {
        positional->push_back(arg);
        continue;
      }
      return absl::InvalidArgumentError(StrCat("unexpected argument '", arg, "'"));
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* f = Find(name);
    if (f == nullptr && !has_value && name.rfind("no-", 0) == 0) {
      Flag* b = Find(name.substr(3));
      if (b != nullptr && b->is_bool) {
        set_.push_back(b->name);
        RETURN_IF_ERROR(b->set("false"));
        continue;
      }
    }
    if (f == nullptr) {
      const std::string near = Nearest(name);
      return absl::InvalidArgumentError(
          StrCat("unknown flag --", name, near.empty() ? std::string() : StrCat(" (did you mean --", near, "?)")));
    }
    if (!has_value) {
      if (f->is_bool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(StrCat("--", name, " needs a value"));
      }
    }
    set_.push_back(f->name);
    if (absl::Status st = f->set(value); !st.ok()) {
      // The error names the flag as it was typed (an alias too).
      if (name != f->name) return absl::Status(st.code(), StrCat("--", name, " (= --", f->name, "): ", st.message()));
      return st;
    }
  }
  return absl::OkStatus();
}

std::optional<int> ArgParser::ParseForMain(int argc, char** argv, std::vector<std::string>* positional) {
  absl::Status st = Parse(argc, argv, positional);
  if (help_) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  if (version_) {
    std::printf("%s %s\n", tool_.c_str(), Version());
    return 0;
  }
  if (!st.ok()) {
    // One line: a job of many trainers with a typo prints it once per trainer.
    std::fprintf(stderr, "%s: error: %s; '%s --help' lists the flags\n", tool_.c_str(),
                 std::string(st.message()).c_str(), tool_.c_str());
    return 2;
  }
  return std::nullopt;
}

int ArgParser::Fail(const absl::Status& status) const {
  std::fprintf(stderr, "%s: error: %s\n", tool_.c_str(), std::string(status.message()).c_str());
  return 1;
}

std::string ArgParser::Usage() const {
  std::string u = StrCat(description_, "usage: ", tool_, " ", synopsis_, "\n\nflags:\n");
  for (const auto& f : flags_) {
    std::string lhs = StrCat("  --", f.name, f.is_bool ? "" : " VALUE");
    if (lhs.size() < 30) lhs.append(30 - lhs.size(), ' ');
    u += StrCat(lhs, " ", f.help);
    if (f.required) {
      u += " [required]";
    } else if (!f.default_text.empty()) {
      u += StrCat(" [default: ", f.default_text, "]");
    }
    if (!f.aliases.empty()) u += StrCat(" (also --", StrJoin(f.aliases, ", --"), ")");
    u += "\n";
  }
  for (const auto& [lhs, help] : {std::pair<std::string, const char*>{"  --help, -h", "this text"},
                                  {"  --version", "print the version and exit"}}) {
    u += StrCat(lhs, std::string(30 - lhs.size(), ' '), " ", help, "\n");
  }
  return u;
}

const char* Version() { return FANOUT_VERSION; }

}  // namespace fanout::base
