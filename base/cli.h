// A small command-line parser for fanout's tools: `--flag value`, `--flag=value`, boolean
// `--flag` / `--no-flag` / `--flag=false`, `--help`. Errors name the flag and what is valid.
// Options are bound to fields of the tool's Options struct, whose defaults stay the defaults.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fanout::base {

class ArgParser {
 public:
  ArgParser(std::string tool, std::string synopsis) : tool_(std::move(tool)), synopsis_(std::move(synopsis)) {}

  // Text printed above the flags by --help.
  void SetDescription(std::string text) { description_ = std::move(text); }

  void AddString(const std::string& name, std::string* out, const std::string& help);
  void AddInt(const std::string& name, int64_t* out, const std::string& help);
  // A string that `check` accepts; its error, prefixed with the flag, is a usage error.
  void AddString(const std::string& name, std::string* out, const std::string& help,
                 std::function<absl::Status(const std::string&)> check);
  void AddInt(const std::string& name, int* out, const std::string& help);
  // An integer in [min, max]: another value is a usage error (exit 2) naming the flag, its range
  // and the value, so that a main states a flag's range where it declares the flag.
  void AddInt(const std::string& name, int64_t* out, const std::string& help, int64_t min,
              int64_t max = std::numeric_limits<int64_t>::max());
  void AddInt(const std::string& name, int* out, const std::string& help, int min,
              int max = std::numeric_limits<int>::max());
  void AddUint(const std::string& name, uint64_t* out, const std::string& help);
  // A size in bytes: a non-negative integer, optionally with a binary suffix K, M, G or T (also
  // KiB, MiB, GiB, TiB): "4G" is 4 << 30.
  void AddBytes(const std::string& name, int64_t* out, const std::string& help);
  // A finite number: nan and inf are refused.
  void AddDouble(const std::string& name, double* out, const std::string& help);
  void AddBool(const std::string& name, bool* out, const std::string& help);
  // A flag that may be repeated: every occurrence's value is appended to *out.
  void AddRepeatedString(const std::string& name, std::vector<std::string>* out, const std::string& help);
  // Comma-separated integers, where "a:b" stands for every integer in [a, b): "0:4,17".
  void AddIntList(const std::string& name, std::vector<int64_t>* out, const std::string& help);
  // Comma-separated numbers.
  void AddFloatList(const std::string& name, std::vector<float>* out, const std::string& help);
  // An enum, set as the flag is read: `parse(name)` gives the value or an error saying what is
  // valid (prefixed with the flag), `name_of(value)` its name (--help's default). The option's
  // field is the enum itself, so no string copy of the setting waits to be converted.
  template <typename E, typename Parse, typename NameOf>
  void AddEnum(const std::string& name, E* out, const std::string& help, Parse parse, NameOf name_of) {
    AddSetter(name, help, std::string(name_of(*out)), [out, parse](const std::string& v) -> absl::Status {
      auto value = parse(v);
      if (!value.ok()) return value.status();
      *out = *value;
      return absl::OkStatus();
    });
  }
  // A setting of two named values held as a bool: `off_name` sets false, `on_name` true
  // ("--wire-rows float32|bfloat16").
  void AddBoolChoice(const std::string& name, bool* out, std::string off_name, std::string on_name,
                     const std::string& help);
  // A string restricted to `choices`.
  void AddChoice(const std::string& name, std::string* out, std::vector<std::string> choices,
                 const std::string& help);

  // `alias` is another name of the flag `name` (an older or another tool's spelling); --help
  // lists it beside the flag. Call after adding `name`.
  void AddAlias(const std::string& alias, const std::string& name);
  // What --help shows as the flag's default, instead of the bound field's value: a rule
  // ("cores / trainers per machine") where the field holds a placeholder. "" shows none.
  void SetDefaultText(const std::string& name, std::string text);
  // --help shows the flag as required instead of a default (the tool checks it).
  void MarkRequired(const std::string& name);

  // Parses argv[1..]. Positional arguments are errors unless `positional` is non-null.
  absl::Status Parse(int argc, char** argv, std::vector<std::string>* positional = nullptr);
  bool help_requested() const { return help_; }  // --help or -h (--version too prints and exits)
  // For a tool's main(): parses argv; on --help prints the usage and returns 0, on a bad command
  // line prints one line, "<tool>: error: ...; '<tool> --help' lists the flags", and returns 2;
  // otherwise returns nullopt.
  // Positional arguments are collected into `positional` when it is non-null.
  std::optional<int> ParseForMain(int argc, char** argv, std::vector<std::string>* positional = nullptr);
  // Prints "<tool>: error: <message>" to stderr and returns 1, the exit code of a failed run.
  int Fail(const absl::Status& status) const;
  // Names of the flags given on the command line (without "--").
  bool WasSet(const std::string& name) const;
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_bool = false;
    std::function<absl::Status(const std::string&)> set;
    std::vector<std::string> aliases;
    bool required = false;
  };
  Flag* Find(const std::string& name);
  // A flag whose value `set` takes; its error is prefixed with the flag.
  void AddSetter(const std::string& name, const std::string& help, std::string default_text,
                 std::function<absl::Status(const std::string&)> set);
  // The flag a mistyped `name` most likely meant ("" when none is close).
  std::string Nearest(const std::string& name) const;

  std::string tool_, synopsis_, description_;
  std::vector<Flag> flags_;
  std::vector<std::string> set_;
  bool help_ = false;
  bool version_ = false;
};

// fanout's version (the CMake project version), as every tool's --version prints it.
const char* Version();

}  // namespace fanout::base
