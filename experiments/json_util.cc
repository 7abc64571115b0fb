#include "experiments/json_util.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "experiments/quantity.h"

namespace bagua::experiments {

std::string json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string:
      return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::null:
      return "null";
    default:
      return "value";
  }
}

std::string json_text(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

std::optional<int64_t> json_integer(const Json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_number_float()) return std::nullopt;
  const double x = v.get<double>();
  if (!std::isfinite(x) || std::trunc(x) != x || std::fabs(x) >= 9e15) return std::nullopt;
  return static_cast<int64_t>(x);
}

void throw_type_error(std::string_view path, std::string_view expected, const Json& got) {
  throw ConfigError(std::string(path) + ": expected " + std::string(expected) + ", got " +
                    json_text(got));
}

Json parse_json(const std::string& text, const std::string& origin) {
  try {
    return Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const Json::parse_error& e) {
    // what() reads "[json.exception.parse_error.101] parse error at line 3, column 5: ..."; keep the
    // rest.
    std::string what = e.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    for (char& c : what)
      if (c == '\n') c = ' ';
    throw ConfigError(origin + ": invalid JSON: " + what);
  }
}

std::string read_text_file(const std::filesystem::path& file, const std::string& shown) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(shown + ": cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Json read_json_file(const std::filesystem::path& file, const std::string& shown) {
  return parse_json(read_text_file(file, shown), shown);
}

std::string join_path(std::string_view base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return std::string(base) + "." + std::string(key);
}

std::vector<std::string> split_path(std::string_view dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string_view part =
        dotted.substr(start, dot == std::string_view::npos ? dotted.npos : dot - start);
    if (part.empty())
      throw ConfigError("\"" + std::string(dotted) +
                        "\": not a dotted path such as cluster.nic.bandwidth");
    parts.emplace_back(part);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

void set_path(Json& root, std::string_view dotted, Json value) {
  const std::vector<std::string> keys = split_path(dotted);
  Json* node = &root;
  std::string walked;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (node->is_null()) *node = Json::object();
    if (!node->is_object()) {
      throw ConfigError("cannot set inside " + (walked.empty() ? std::string("the config") : walked) +
                        ", which is " + json_type_name(*node) + " " + json_text(*node) +
                        ", not an object");
    }
    walked = join_path(walked, keys[i]);
    node = &(*node)[keys[i]];
  }
  *node = std::move(value);
}

void merge_into(Json& base, const Json& overrides) {
  if (!base.is_object() || !overrides.is_object()) {
    base = overrides;
    return;
  }
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    auto found = base.find(it.key());
    if (found != base.end() && found->is_object() && it->is_object())
      merge_into(*found, *it);
    else
      base[it.key()] = *it;
  }
}

Json parse_override_value(std::string_view text) {
  const std::string s(text);
  Json v = Json::parse(s, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/false);
  if (v.is_discarded()) return Json(s);
  return v;
}

// ---- ObjectReader -----------------------------------------------------------------------------------

ObjectReader::ObjectReader(const Json& value, std::string path, std::vector<std::string> known)
    : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) throw_type_error(path_.empty() ? "config" : path_, "an object", value_);
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    bool ok = false;
    for (const std::string& k : known)
      ok = ok || k == it.key();
    if (ok) continue;
    std::string list;
    for (const std::string& k : known)
      list += (list.empty() ? "" : ", ") + k;
    throw ConfigError(path_of(it.key()) + ": unknown key (known: " + list + ")");
  }
}

bool ObjectReader::has(std::string_view key) const {
  return find(key) != nullptr;
}

const Json* ObjectReader::find(std::string_view key) const {
  auto it = value_.find(std::string(key));
  return it == value_.end() ? nullptr : &*it;
}

const Json& ObjectReader::required(std::string_view key) const {
  const Json* v = find(key);
  if (!v) throw ConfigError(path_of(key) + ": missing (required)");
  return *v;
}

std::string ObjectReader::get_string(std::string_view key) const {
  const Json& v = required(key);
  if (!v.is_string()) throw_type_error(path_of(key), "string", v);
  return v.get<std::string>();
}

std::string ObjectReader::get_string(std::string_view key, std::string def) const {
  return has(key) ? get_string(key) : def;
}

std::string ObjectReader::get_choice(std::string_view key, std::string def,
                                     const std::vector<std::string>& choices) const {
  const std::string s = get_string(key, std::move(def));
  std::string list;
  for (const std::string& c : choices) {
    if (c == s) return s;
    list += (list.empty() ? "" : "|") + c;
  }
  throw ConfigError(path_of(key) + ": must be one of " + list + ", got \"" + s + "\"");
}

bool ObjectReader::get_bool(std::string_view key, bool def) const {
  const Json* v = find(key);
  if (!v) return def;
  if (!v->is_boolean()) throw_type_error(path_of(key), "bool", *v);
  return v->get<bool>();
}

int64_t ObjectReader::get_int(std::string_view key, std::optional<int64_t> def, int64_t min) const {
  const Json* v = def ? find(key) : &required(key);
  if (!v) return *def;
  const std::optional<int64_t> integer = json_integer(*v);
  if (!integer) throw_type_error(path_of(key), "integer", *v);
  const int64_t x = *integer;
  if (x < min)
    throw ConfigError(path_of(key) + ": must be >= " + std::to_string(min) + ", got " + json_text(*v));
  return x;
}

double ObjectReader::get_double(std::string_view key, double def, std::optional<double> min,
                                std::optional<double> max, bool min_exclusive) const {
  const Json* v = find(key);
  if (!v) return def;
  if (!v->is_number()) throw_type_error(path_of(key), "number", *v);
  const double x = v->get<double>();
  if (min && (min_exclusive ? !(x > *min) : !(x >= *min))) {
    throw ConfigError(path_of(key) + ": must be " + (min_exclusive ? "> " : ">= ") + shortest(*min) +
                      ", got " + json_text(*v));
  }
  if (max && !(x <= *max)) {
    throw ConfigError(path_of(key) + ": must be <= " + shortest(*max) + ", got " + json_text(*v));
  }
  return x;
}

namespace {

// A quantity must be a string with a unit; a bare number is refused with an example.
const std::string& quantity_text(const ObjectReader& r, std::string_view key, const Json& v,
                                 const char* kind, const char* example) {
  if (v.is_number()) {
    throw ConfigError(r.path_of(key) + ": expected a " + kind + " with a unit, e.g. " + example +
                      ", got " + json_text(v));
  }
  if (!v.is_string())
    throw_type_error(r.path_of(key), std::string("a ") + kind + " string such as " + example, v);
  return v.get_ref<const std::string&>();
}

template <class F>
auto with_path(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

}  // namespace

Bandwidth ObjectReader::get_bandwidth(std::string_view key) const {
  const Json& v = required(key);
  const std::string& text = quantity_text(*this, key, v, "bandwidth", kBandwidthExample);
  const Bandwidth bw = with_path(path_of(key), [&] { return parse_bandwidth(text); });
  if (const char* broken = bandwidth_rule_broken(bw))  // core's rule (core/units.h)
    throw ConfigError(path_of(key) + ": " + broken + ", got " + json_text(v));
  return bw;
}

Time ObjectReader::get_time(std::string_view key) const {
  const Json& v = required(key);
  const std::string& text = quantity_text(*this, key, v, "time", kTimeExample);
  const Time t = with_path(path_of(key), [&] { return parse_time(text); });
  if (t < Time::zero()) throw ConfigError(path_of(key) + ": must be >= 0, got " + json_text(v));
  return t;
}

Bytes ObjectReader::get_bytes(std::string_view key, Bytes def) const {
  const Json* v = find(key);
  if (!v) return def;
  const std::string& text = quantity_text(*this, key, *v, "size", kBytesExample);
  const Bytes b = with_path(path_of(key), [&] { return parse_bytes(text); });
  if (b.count() < 0) throw ConfigError(path_of(key) + ": must be >= 0, got " + json_text(*v));
  return b;
}

double ObjectReader::get_flops(std::string_view key, double def) const {
  const Json* v = find(key);
  if (!v) return def;
  const std::string& text = quantity_text(*this, key, *v, "flops", kFlopsExample);
  const double f = with_path(path_of(key), [&] { return parse_flops(text); });
  if (!(f > 0)) throw ConfigError(path_of(key) + ": must be > 0, got " + json_text(*v));
  return f;
}

}  // namespace bagua::experiments
