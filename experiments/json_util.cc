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

namespace {

// The length of `text` cut to at most `max` bytes without splitting a UTF-8 sequence.
size_t utf8_cut(std::string_view text, size_t max) {
  if (text.size() <= max) return text.size();
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80)
    --n;
  return n;
}

}  // namespace

std::string echo(std::string_view text) {
  const size_t kept = utf8_cut(text, kMaxEchoChars);
  std::string out = "\"";
  for (size_t i = 0; i < kept; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (kept < text.size()) return out + "...\" (" + std::to_string(text.size()) + " bytes)";
  return out + "\"";
}

std::string one_line(std::string_view message) {
  std::string out(message.substr(0, utf8_cut(message, kMaxMessageChars)));
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  if (out.size() < message.size()) out += "... (message cut)";
  return out;
}

namespace {

// Levenshtein distance, stopping early (returning `limit` + 1) once every cell of a row exceeds `limit`.
size_t edit_distance(std::string_view a, std::string_view b, size_t limit) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string> did_you_mean(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  const size_t limit = word.size() <= 4 ? 1 : word.size() / 3;
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t longer = std::max(c.size(), word.size());
    const size_t shorter = std::min(c.size(), word.size());
    if (longer - shorter > limit) continue;  // also keeps a 10 MB key from costing 10 MB per candidate
    const size_t d = edit_distance(word, c, limit);
    // Ties go to a candidate with the word's first character ("Gbs": "Gbps" rather than "bps").
    const bool tie_won = d == best_distance && best && !word.empty() && !c.empty() &&
                         c.front() == word.front() && best->front() != word.front();
    if (d < best_distance || tie_won) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean_text(std::string_view word, const std::vector<std::string>& candidates) {
  const std::optional<std::string> m = did_you_mean(word, candidates);
  return m ? ", did you mean " + echo(*m) + "?" : "";
}

std::string json_text(const Json& v) {
  // Strings taken from the command line may hold bytes that are not UTF-8: replaced, not thrown on.
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > kMaxEchoChars) {
    const std::string total = " (" + std::to_string(s.size()) + " characters)";
    s = s.substr(0, utf8_cut(s, kMaxEchoChars - 3)) + "..." + total;
  }
  return s;
}

std::optional<int64_t> json_integer(const Json& v) {
  if (v.is_number_integer()) {
    // An unsigned integer above int64's range is no int64.
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return v.get<int64_t>();
  }
  if (!v.is_number_float()) return std::nullopt;
  const double x = v.get<double>();
  if (!std::isfinite(x) || std::trunc(x) != x || std::fabs(x) >= 9e15) return std::nullopt;
  return static_cast<int64_t>(x);
}

void throw_type_error(std::string_view path, std::string_view expected, const Json& got) {
  throw ConfigError(std::string(path) + ": expected " + std::string(expected) + ", got " +
                    json_text(got));
}

void throw_integer_error(std::string_view path, const Json& got) {
  const bool whole =
      got.is_number_unsigned() || (got.is_number_float() && std::isfinite(got.get<double>()) &&
                                   std::trunc(got.get<double>()) == got.get<double>());
  if (whole) {
    throw ConfigError(std::string(path) +
                      ": integer out of range (at most 9223372036854775807, or 9e15 written as a "
                      "decimal number), got " +
                      json_text(got));
  }
  throw_type_error(path, "integer", got);
}

namespace {

// Builds the document as nlohmann's own DOM parser does (json_sax_dom_parser), and refuses what that
// parser accepts silently: a key given twice in one object, nesting deeper than kMaxJsonDepth. A
// number beyond a double's range the library reports through parse_error (its error 406). Errors are
// thrown as ConfigError "PATH: problem", PATH the JSON path of the offending value below `base`.
class CheckedDomBuilder {
 public:
  CheckedDomBuilder(Json& root, std::string base) : root_(root), base_(std::move(base)) {}

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(Json::number_integer_t v) { return add(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return add(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return add(v); }
  bool string(Json::string_t& v) { return add(std::move(v)); }
  bool binary(Json::binary_t& v) { return add(std::move(v)); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(Json::string_t& k) {
    Level& level = levels_.back();
    if (level.node->contains(k))
      throw ConfigError(path_with(join_key(level.path, k)) + ": key given twice in one object");
    level.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range.406: "number overflow parsing '1e400'"
      overflow_ = path_with(next_path()) +
                  ": number out of range (a double holds up to 1.8e308), got " + echo(token);
      overflow_end_ = position;
      overflow_token_ = token;
      return false;
    }
    syntax_error_ = e.what();
    syntax_error_path_ = next_path();
    return false;
  }

  // After a parse stopped at a number beyond a double's range: the message, and where the number ends
  // in the text and what it is.
  const std::string& overflow() const { return overflow_; }
  size_t overflow_end() const { return overflow_end_; }
  const std::string& overflow_token() const { return overflow_token_; }

  // After a failed parse: "PATH: invalid JSON: " ("invalid JSON: " at the root) and the library's
  // text without its "[json.exception.parse_error.101] " tag.
  std::string syntax_error() const {
    std::string what = syntax_error_;
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    if (syntax_error_path_.empty() && base_.empty()) return "invalid JSON: " + what;
    return path_with(syntax_error_path_) + ": invalid JSON: " + what;
  }

 private:
  struct Level {
    Json* node;        // an object or an array being filled
    std::string path;  // its JSON path below base_
    std::string key;   // an object's current key
  };

  static std::string join_key(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  std::string path_with(const std::string& path) const {
    std::string p = base_.empty() || path.empty() ? base_ + path
                    : path.front() == '['         ? base_ + path
                                                  : base_ + "." + path;
    if (p.size() > kMaxEchoChars) p = p.substr(0, kMaxEchoChars) + "...";
    if (p.empty()) return "config";
    // A key may hold any character: control characters escaped, so that the message stays one line.
    std::string shown;
    for (const char ch : p) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c == 0x7F) {
        static const char kHex[] = "0123456789abcdef";
        shown += "\\x";
        shown += kHex[c >> 4];
        shown += kHex[c & 15];
      } else {
        shown += ch;
      }
    }
    return shown;
  }

  // The path of the next value added at the current level.
  std::string next_path() const {
    if (levels_.empty()) return "";
    const Level& level = levels_.back();
    if (level.node->is_array()) return level.path + "[" + std::to_string(level.node->size()) + "]";
    return join_key(level.path, level.key);
  }

  template <class V>
  Json* insert(V&& v) {
    if (levels_.empty()) {
      root_ = Json(std::forward<V>(v));
      return &root_;
    }
    Level& level = levels_.back();
    if (level.node->is_array()) {
      level.node->emplace_back(std::forward<V>(v));
      return &level.node->back();
    }
    Json& slot = (*level.node)[level.key];
    slot = Json(std::forward<V>(v));
    return &slot;
  }

  template <class V>
  bool add(V&& v) {
    insert(std::forward<V>(v));
    return true;
  }

  bool open(Json empty) {
    const std::string path = next_path();
    if (levels_.size() >= static_cast<size_t>(kMaxJsonDepth))
      throw ConfigError(path_with(path) + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels of objects and arrays");
    Json* node = insert(std::move(empty));
    levels_.push_back({node, path, ""});
    return true;
  }

  bool close() {
    levels_.pop_back();
    return true;
  }

  Json& root_;
  std::string base_;
  std::vector<Level> levels_;
  std::string syntax_error_;
  std::string syntax_error_path_;
  std::string overflow_;
  size_t overflow_end_ = 0;
  std::string overflow_token_;
};

// Parses `text` into `out`; returns false with the builder's syntax error on a syntax error, throws
// ConfigError "PATH: ..." (PATH below `base`) on a value the rules above refuse. A number beyond a
// double's range is such a value only in text that is JSON otherwise: with `overflow_is_syntax` (a
// --set value, which may be any text) the number is replaced by 0 and the text parsed again, so that
// "1e400 Gbps" stays text while "[1e400]" is refused.
bool parse_checked(std::string text, const std::string& base, bool ignore_comments,
                   bool overflow_is_syntax, Json& out, std::string& syntax_error) {
  std::string first_overflow;
  for (int attempt = 0;; ++attempt) {
    CheckedDomBuilder builder(out, base);
    if (Json::sax_parse(text, &builder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                        ignore_comments)) {
      if (!first_overflow.empty()) throw ConfigError(first_overflow);
      return true;
    }
    if (builder.overflow().empty()) {
      syntax_error = one_line(builder.syntax_error());
      return false;
    }
    if (first_overflow.empty()) first_overflow = builder.overflow();
    const size_t n = builder.overflow_token().size();
    const size_t end = builder.overflow_end();
    // Stop at the first (or, to bound the work, the 100th) number out of range when the text cannot
    // be anything else, or when the library's position does not hold the number.
    if (!overflow_is_syntax || attempt == 100 || end < n || end > text.size() ||
        text.compare(end - n, n, builder.overflow_token()) != 0)
      throw ConfigError(first_overflow);
    text.replace(end - n, n, "0");
  }
}

}  // namespace

Json parse_json(const std::string& text, const std::string& origin) {
  Json out;
  std::string syntax_error;
  try {
    if (parse_checked(text, "", /*ignore_comments=*/true, /*overflow_is_syntax=*/false, out,
                      syntax_error))
      return out;
  } catch (const ConfigError& e) {
    throw ConfigError(origin + ": " + e.what());
  }
  throw ConfigError(origin + ": " + syntax_error);
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
      throw ConfigError(echo(dotted) + ": not a dotted path such as cluster.nic.bandwidth");
    if (parts.size() == static_cast<size_t>(kMaxJsonDepth)) {
      throw ConfigError(echo(dotted) + ": more than " + std::to_string(kMaxJsonDepth) +
                        " segments in a dotted path");
    }
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

Json parse_override_value(std::string_view text, std::string_view path) {
  const std::string s(text);
  Json v;
  std::string syntax_error;
  try {
    if (parse_checked(s, std::string(path), /*ignore_comments=*/false, /*overflow_is_syntax=*/true, v,
                      syntax_error))
      return v;
  } catch (const ConfigError& e) {
    throw ConfigError("--set " + std::string(e.what()));
  }
  // Not JSON: the text itself, which a resolved config (JSON text) can hold only if it is UTF-8.
  Json string(s);
  try {
    (void)string.dump();
  } catch (const Json::type_error&) {
    throw ConfigError("--set " + std::string(path) + ": not UTF-8 text, got " + echo(s));
  }
  return string;
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
    // A key far too long to be a typo is echoed cut, in quotes, in place of the path.
    const std::string shown =
        it.key().size() <= kMaxEchoChars ? path_of(it.key()) : path_of(echo(it.key()));
    throw ConfigError(shown + ": unknown key" + did_you_mean_text(it.key(), known) +
                      " (known: " + list + ")");
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
  throw ConfigError(path_of(key) + ": must be one of " + list + ", got " + echo(s) +
                    did_you_mean_text(s, choices));
}

bool ObjectReader::get_bool(std::string_view key, bool def) const {
  const Json* v = find(key);
  if (!v) return def;
  if (!v->is_boolean()) throw_type_error(path_of(key), "bool", *v);
  return v->get<bool>();
}

int64_t ObjectReader::get_int(std::string_view key, std::optional<int64_t> def, int64_t min,
                              std::optional<int64_t> max) const {
  const Json* v = def ? find(key) : &required(key);
  if (!v) return *def;
  const std::optional<int64_t> integer = json_integer(*v);
  if (!integer) throw_integer_error(path_of(key), *v);
  const int64_t x = *integer;
  if (x < min)
    throw ConfigError(path_of(key) + ": must be >= " + std::to_string(min) + ", got " + json_text(*v));
  if (max && x > *max)
    throw ConfigError(path_of(key) + ": must be <= " + std::to_string(*max) + ", got " + json_text(*v));
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
  // The clock's range (experiments/quantity.h, "Ranges").
  if (bw < kMinBandwidth) {
    throw ConfigError(path_of(key) + ": must be at least " + format_bandwidth(kMinBandwidth) +
                      " (slower, a message's time leaves the nanosecond clock's range), got " +
                      json_text(v));
  }
  if (bw > kMaxBandwidth) {
    throw ConfigError(path_of(key) + ": must be at most " + format_bandwidth(kMaxBandwidth) + ", got " +
                      json_text(v));
  }
  return bw;
}

Time ObjectReader::get_time(std::string_view key) const {
  const Json& v = required(key);
  const std::string& text = quantity_text(*this, key, v, "time", kTimeExample);
  const Time t = with_path(path_of(key), [&] { return parse_time(text); });
  if (t < Time::zero()) throw ConfigError(path_of(key) + ": must be >= 0, got " + json_text(v));
  if (t > kMaxTime) {  // the clock's range (experiments/quantity.h, "Ranges")
    throw ConfigError(path_of(key) + ": must be at most " + format_time(kMaxTime) +
                      " (the nanosecond clock adds up many such times), got " + json_text(v));
  }
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
