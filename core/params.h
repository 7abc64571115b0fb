// Typed, validated parameters, declared next to the code that reads them (SimGrid's habit).
//
// An algorithm, compressor, model or optimizer publishes a ParamSchema: each parameter's name, type,
// default, one-line description and validator (range or choices). The experiments layer checks a JSON
// object against the schema — unknown keys and wrong types are rejected with the JSON path named — and
// hands the component a Params holding a value for every declared name. core/ never sees JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace bagua {

enum class ParamType : uint8_t { kBool, kInt, kDouble, kString };
std::string to_string(ParamType t);

// What a number stands for. A config gives a bandwidth or a time as a quantity with its unit
// ("100 Gbps", "5 us"); the component reads a bandwidth as a kDouble in bytes per second and a time as a
// kInt in nanoseconds.
enum class ParamUnit : uint8_t { kNone, kBandwidth, kTime };
std::string to_string(ParamUnit u);

// Whether a parameter takes its default when absent, must be given, or may be absent (the component
// then derives it, as its description says; Params::has tells).
enum class ParamPresence : uint8_t { kDefaulted, kRequired, kOptional };
std::string to_string(ParamPresence p);

using ParamValue = std::variant<bool, int64_t, double, std::string>;
std::string to_string(const ParamValue& v);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kDouble;
  ParamValue default_value;
  std::string description;
  std::optional<double> min;         // inclusive, for kInt and kDouble
  std::optional<double> max;         // inclusive
  std::vector<std::string> choices;  // for kString; empty = any
  bool min_exclusive = false;        // min is exclusive (e.g. a learning rate > 0)
  ParamUnit unit = ParamUnit::kNone;
  ParamPresence presence = ParamPresence::kDefaulted;  // kRequired, kOptional: default_value unused
};

class ParamSchema {
 public:
  ParamSchema& add_bool(std::string name, bool def, std::string description);
  ParamSchema& add_int(std::string name, int64_t def, std::string description,
                       std::optional<int64_t> min = std::nullopt,
                       std::optional<int64_t> max = std::nullopt);
  ParamSchema& add_double(std::string name, double def, std::string description,
                          std::optional<double> min = std::nullopt,
                          std::optional<double> max = std::nullopt, bool min_exclusive = false);
  ParamSchema& add_string(std::string name, std::string def, std::string description,
                          std::vector<std::string> choices = {});
  // A bandwidth (bytes per second), > 0 and finite when given; a time (nanoseconds), >= 0. Both are
  // optional: absent, the component derives the value (its description says how).
  ParamSchema& add_bandwidth(std::string name, std::string description);
  ParamSchema& add_time(std::string name, std::string description);
  // Marks the parameter added last as one the config must give (its default is then unused).
  ParamSchema& required();
  // Adds a parameter declared elsewhere (e.g. another schema's, under a new name).
  ParamSchema& add(ParamSpec spec);
  // Adds every entry of `other` (e.g. a compressor's parameters inside an algorithm's).
  ParamSchema& extend(const ParamSchema& other);

  const std::vector<ParamSpec>& specs() const { return specs_; }
  const ParamSpec* find(const std::string& name) const;

  // Checks `value` for parameter `name`; returns an error message (without the path) or nullopt.
  std::optional<std::string> validate(const std::string& name, const ParamValue& value) const;

 private:
  std::vector<ParamSpec> specs_;
};

// Values for every parameter of a schema. Accessors throw InternalError on an undeclared name or a
// type mismatch: a component may only read what it declared.
class Params {
 public:
  Params() = default;
  // Every default of `schema` (kDefaulted parameters), overridden by `values` (which must already be
  // validated).
  Params(const ParamSchema& schema, const std::map<std::string, ParamValue>& values = {});

  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, ParamValue v) { values_[name] = std::move(v); }
  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  const ParamValue& at(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
};

}  // namespace bagua
