#include "core/params.h"

#include <cmath>
#include <sstream>

#include "core/check.h"
#include "core/units.h"

namespace bagua {

std::string to_string(ParamType t) {
  switch (t) {
    case ParamType::kBool:
      return "bool";
    case ParamType::kInt:
      return "integer";
    case ParamType::kDouble:
      return "number";
    case ParamType::kString:
      return "string";
  }
  return "?";
}

std::string to_string(ParamUnit u) {
  switch (u) {
    case ParamUnit::kNone:
      return "none";
    case ParamUnit::kBandwidth:
      return "bandwidth";
    case ParamUnit::kTime:
      return "time";
  }
  return "?";
}

std::string to_string(ParamPresence p) {
  switch (p) {
    case ParamPresence::kDefaulted:
      return "defaulted";
    case ParamPresence::kRequired:
      return "required";
    case ParamPresence::kOptional:
      return "optional";
  }
  return "?";
}

std::string to_string(const ParamValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          os << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::string>)
          os << '"' << x << '"';
        else
          os << x;
      },
      v);
  return os.str();
}

ParamSchema& ParamSchema::add_bool(std::string name, bool def, std::string description) {
  specs_.push_back({std::move(name), ParamType::kBool, def, std::move(description), {}, {}, {}, false});
  return *this;
}

ParamSchema& ParamSchema::add_int(std::string name, int64_t def, std::string description,
                                  std::optional<int64_t> min, std::optional<int64_t> max) {
  ParamSpec s{std::move(name), ParamType::kInt, def, std::move(description), {}, {}, {}, false};
  if (min) s.min = static_cast<double>(*min);
  if (max) s.max = static_cast<double>(*max);
  specs_.push_back(std::move(s));
  return *this;
}

ParamSchema& ParamSchema::add_double(std::string name, double def, std::string description,
                                     std::optional<double> min, std::optional<double> max,
                                     bool min_exclusive) {
  specs_.push_back(
      {std::move(name), ParamType::kDouble, def, std::move(description), min, max, {}, min_exclusive});
  return *this;
}

ParamSchema& ParamSchema::add_string(std::string name, std::string def, std::string description,
                                     std::vector<std::string> choices) {
  specs_.push_back({std::move(name),
                    ParamType::kString,
                    std::move(def),
                    std::move(description),
                    {},
                    {},
                    std::move(choices),
                    false});
  return *this;
}

ParamSchema& ParamSchema::add_bandwidth(std::string name, std::string description) {
  ParamSpec s{std::move(name), ParamType::kDouble, 0.0, std::move(description), {}, {}, {}, false};
  s.unit = ParamUnit::kBandwidth;  // > 0 and finite: core's bandwidth rule (core/units.h)
  s.presence = ParamPresence::kOptional;
  specs_.push_back(std::move(s));
  return *this;
}

ParamSchema& ParamSchema::add_time(std::string name, std::string description) {
  ParamSpec s{std::move(name), ParamType::kInt, int64_t{0}, std::move(description), 0.0, {}, {}, false};
  s.unit = ParamUnit::kTime;
  s.presence = ParamPresence::kOptional;
  specs_.push_back(std::move(s));
  return *this;
}

ParamSchema& ParamSchema::required() {
  BAGUA_CHECK(!specs_.empty(), "required() before any parameter");
  specs_.back().presence = ParamPresence::kRequired;
  return *this;
}

ParamSchema& ParamSchema::add(ParamSpec spec) {
  specs_.push_back(std::move(spec));
  return *this;
}

ParamSchema& ParamSchema::extend(const ParamSchema& other) {
  for (const ParamSpec& s : other.specs_)
    if (!find(s.name)) specs_.push_back(s);
  return *this;
}

const ParamSpec* ParamSchema::find(const std::string& name) const {
  for (const ParamSpec& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

std::optional<std::string> ParamSchema::validate(const std::string& name,
                                                 const ParamValue& value) const {
  const ParamSpec* s = find(name);
  if (!s) return "unknown parameter";
  auto type_of = [](const ParamValue& v) {
    return static_cast<ParamType>(v.index());  // variant order matches ParamType
  };
  const bool int_as_double = s->type == ParamType::kDouble && type_of(value) == ParamType::kInt;
  if (type_of(value) != s->type && !int_as_double) {
    return "expected " + to_string(s->type) + ", got " + to_string(type_of(value)) + " " +
           to_string(value);
  }
  if (s->type == ParamType::kInt || s->type == ParamType::kDouble) {
    const double x = std::holds_alternative<int64_t>(value)
                         ? static_cast<double>(std::get<int64_t>(value))
                         : std::get<double>(value);
    if (s->unit == ParamUnit::kBandwidth) {
      if (const char* broken = bandwidth_rule_broken(Bandwidth::bytes_per_second(x)))
        return std::string(broken) + ", got " + to_string(value);
    }
    if (!std::isfinite(x)) return "must be finite, got " + to_string(value);
    if (s->min && (s->min_exclusive ? !(x > *s->min) : !(x >= *s->min))) {
      std::ostringstream os;
      os << "must be " << (s->min_exclusive ? "> " : ">= ") << *s->min << ", got " << to_string(value);
      return os.str();
    }
    if (s->max && !(x <= *s->max)) {
      std::ostringstream os;
      os << "must be <= " << *s->max << ", got " << to_string(value);
      return os.str();
    }
  }
  if (s->type == ParamType::kString && !s->choices.empty()) {
    const auto& str = std::get<std::string>(value);
    bool ok = false;
    std::string list;
    for (const auto& c : s->choices) {
      ok = ok || c == str;
      list += (list.empty() ? "" : "|") + c;
    }
    if (!ok) return "must be one of " + list + ", got \"" + str + "\"";
  }
  return std::nullopt;
}

Params::Params(const ParamSchema& schema, const std::map<std::string, ParamValue>& values) {
  for (const ParamSpec& s : schema.specs())
    if (s.presence == ParamPresence::kDefaulted) values_[s.name] = s.default_value;
  for (const auto& [k, v] : values) {
    BAGUA_CHECK(schema.find(k) != nullptr, "parameter '" + k + "' is not declared");
    values_[k] = v;
  }
}

const ParamValue& Params::at(const std::string& name) const {
  auto it = values_.find(name);
  BAGUA_CHECK(it != values_.end(), "parameter '" + name + "' was read but never declared");
  return it->second;
}

bool Params::get_bool(const std::string& name) const {
  const ParamValue& v = at(name);
  BAGUA_CHECK(std::holds_alternative<bool>(v), "parameter '" + name + "' is not a bool");
  return std::get<bool>(v);
}

int64_t Params::get_int(const std::string& name) const {
  const ParamValue& v = at(name);
  BAGUA_CHECK(std::holds_alternative<int64_t>(v), "parameter '" + name + "' is not an integer");
  return std::get<int64_t>(v);
}

double Params::get_double(const std::string& name) const {
  const ParamValue& v = at(name);
  if (std::holds_alternative<int64_t>(v)) return static_cast<double>(std::get<int64_t>(v));
  BAGUA_CHECK(std::holds_alternative<double>(v), "parameter '" + name + "' is not a number");
  return std::get<double>(v);
}

const std::string& Params::get_string(const std::string& name) const {
  const ParamValue& v = at(name);
  BAGUA_CHECK(std::holds_alternative<std::string>(v), "parameter '" + name + "' is not a string");
  return std::get<std::string>(v);
}

}  // namespace bagua
