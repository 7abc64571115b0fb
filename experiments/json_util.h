// JSON utilities for configs: reading files (comments allowed), dotted paths, deep merge, and a reader
// that checks an object's keys and value types, naming the JSON path in every error.
//
// Objects keep their keys in document order (nlohmann::ordered_json), so that sweep axes run in the
// order they were written.
//
// What the JSON library would accept silently, the reader refuses, naming the JSON path
// ("cluster.nic.latency", "sweep.axes.seed[2]"):
//   a key given twice in one object     (the library keeps the last)
//   nesting deeper than kMaxJsonDepth   (64 levels; the configs of this tree nest at most 6)
//   a number beyond a double's range    (1e400: the library's own "number overflow" text otherwise)
// Values echoed in messages are cut to kMaxEchoChars characters, control characters escaped, so that
// every message stays one readable line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace bagua::experiments {

using Json = nlohmann::ordered_json;

// The deepest nesting of objects and arrays a config document (or a --set value) may have, and the most
// segments a dotted path may have.
inline constexpr int kMaxJsonDepth = 64;
// The most characters of a value a message echoes.
inline constexpr size_t kMaxEchoChars = 80;

// `text` for a message: in double quotes, control characters escaped, cut to kMaxEchoChars characters
// with the full size after a cut. "10 Gbpz" gives "\"10 Gbpz\"", a 10 MB string
// "\"aaaa...aaa...\" (10485760 bytes)".
std::string echo(std::string_view text);
// `message` made one line of at most kMaxMessageChars characters (line breaks become spaces): the
// last guard before a ConfigError's text reaches the user.
inline constexpr size_t kMaxMessageChars = 600;
std::string one_line(std::string_view message);

// The candidate nearest to `word` by edit distance (Levenshtein: insertions, deletions and
// substitutions of one character), when it is near enough to be a typo: at most 1 edit for words of up
// to 4 characters, else at most a third of the word's length. nullopt when none is.
std::optional<std::string> did_you_mean(std::string_view word,
                                        const std::vector<std::string>& candidates);
// ", did you mean "iterations"?" for a near miss, else "".
std::string did_you_mean_text(std::string_view word, const std::vector<std::string>& candidates);

// "string", "integer", "number", "bool", "object", "array", "null".
std::string json_type_name(const Json& v);
// Compact JSON text of a value, for messages: "0 Gbps" (with quotes), 3, true.
std::string json_text(const Json& v);

// The value as an integer: a JSON integer, or a number with no fractional part (1e3 written for 1000);
// nullopt otherwise.
std::optional<int64_t> json_integer(const Json& v);

// Parses JSON text; `//` and `/* */` comments are allowed. ConfigError names `origin`, the JSON path and,
// for a syntax error, the position: "test.json: cluster.nic.latency: key given twice".
Json parse_json(const std::string& text, const std::string& origin);
// A file's whole content; ConfigError "SHOWN: cannot read the file", `shown` naming the file.
std::string read_text_file(const std::filesystem::path& file, const std::string& shown);
// Reads and parses a file; `shown` is how the file is named in errors.
Json read_json_file(const std::filesystem::path& file, const std::string& shown);

// "a.b" + "c" -> "a.b.c" (an empty base gives "c").
std::string join_path(std::string_view base, std::string_view key);
// Splits "a.b.c" into {"a", "b", "c"}; ConfigError on an empty segment or more than kMaxJsonDepth.
std::vector<std::string> split_path(std::string_view dotted);
// Sets the value at a dotted path, creating missing objects on the way; ConfigError (without the path:
// callers name it) if a value on the way is not an object.
void set_path(Json& root, std::string_view dotted, Json value);

// Deep merge: objects merge key by key (recursively), anything else in `overrides` replaces.
void merge_into(Json& base, const Json& overrides);

// The value of a `--set path=value` override: JSON when it parses as JSON, otherwise the text as a
// string. ConfigError "--set PATH...: ..." when it is JSON that breaks a rule above (a key twice, too
// deep, a number out of range), or a string that is not UTF-8.
Json parse_override_value(std::string_view text, std::string_view path);

// Reads one JSON object at `path`. Construction rejects a non-object and any key not in `known` with
// "PATH.KEY: unknown key, did you mean "b"? (known: a, b, c)" (the question only for a near miss).
// Accessors name "PATH.KEY" in their errors.
class ObjectReader {
 public:
  ObjectReader(const Json& value, std::string path, std::vector<std::string> known);

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const { return join_path(path_, key); }
  bool has(std::string_view key) const;
  const Json* find(std::string_view key) const;
  // ConfigError "PATH.KEY: missing (required)" when absent.
  const Json& required(std::string_view key) const;

  std::string get_string(std::string_view key) const;  // required
  std::string get_string(std::string_view key, std::string def) const;
  // One of `choices`.
  std::string get_choice(std::string_view key, std::string def,
                         const std::vector<std::string>& choices) const;
  bool get_bool(std::string_view key, bool def) const;
  int64_t get_int(std::string_view key, std::optional<int64_t> def, int64_t min,
                  std::optional<int64_t> max = std::nullopt) const;
  // With min/max (inclusive unless min_exclusive).
  double get_double(std::string_view key, double def, std::optional<double> min,
                    std::optional<double> max, bool min_exclusive = false) const;

  // Quantities: a string with a unit (a bare number is refused, with an example), within the ranges
  // of experiments/quantity.h (kMinBandwidth..kMaxBandwidth, 0..kMaxTime).
  Bandwidth get_bandwidth(std::string_view key) const;       // required
  Time get_time(std::string_view key) const;                 // required
  Bytes get_bytes(std::string_view key, Bytes def) const;    // >= 0
  double get_flops(std::string_view key, double def) const;  // > 0

 private:
  const Json& value_;
  std::string path_;
};

// Throws ConfigError "PATH: expected TYPE, got VALUE".
[[noreturn]] void throw_type_error(std::string_view path, std::string_view expected, const Json& got);
// For a value json_integer refused: "PATH: integer out of range, got 1e+19" when it is a whole number,
// else the type error.
[[noreturn]] void throw_integer_error(std::string_view path, const Json& got);

}  // namespace bagua::experiments
