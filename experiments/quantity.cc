#include "experiments/quantity.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "experiments/json_util.h"

namespace bagua::experiments {

const char* const kBandwidthExample = "\"100 Gbps\" or \"12.5 GB/s\"";
const char* const kTimeExample = "\"5 us\" or \"1.5 ms\"";
const char* const kBytesExample = "\"10 MiB\" or \"4096 B\"";
const char* const kFlopsExample = "\"15.7 TFLOPS\"";

namespace {

struct Unit {
  std::string_view name;
  double factor;  // value of one unit in the base unit (bytes/s, ns, bytes, FLOP/s)
};

// Bits per second go to bytes per second by the factor 1/8.
const std::vector<Unit>& bandwidth_units() {
  static const std::vector<Unit> units = {
      {"bps", 1.0 / 8},
      {"Kbps", 1e3 / 8},
      {"kbps", 1e3 / 8},
      {"Mbps", 1e6 / 8},
      {"Gbps", 1e9 / 8},
      {"Tbps", 1e12 / 8},
      {"bit/s", 1.0 / 8},
      {"kbit/s", 1e3 / 8},
      {"Kbit/s", 1e3 / 8},
      {"Mbit/s", 1e6 / 8},
      {"Gbit/s", 1e9 / 8},
      {"Tbit/s", 1e12 / 8},
      {"b/s", 1.0 / 8},
      {"kb/s", 1e3 / 8},
      {"Kb/s", 1e3 / 8},
      {"Mb/s", 1e6 / 8},
      {"Gb/s", 1e9 / 8},
      {"Tb/s", 1e12 / 8},
      {"B/s", 1},
      {"kB/s", 1e3},
      {"KB/s", 1e3},
      {"MB/s", 1e6},
      {"GB/s", 1e9},
      {"TB/s", 1e12},
      {"KiB/s", 1024.0},
      {"MiB/s", 1048576.0},
      {"GiB/s", 1073741824.0},
      {"TiB/s", 1099511627776.0},
  };
  return units;
}

const std::vector<Unit>& time_units() {
  static const std::vector<Unit> units = {
      {"ns", 1}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6}, {"s", 1e9},
  };
  return units;
}

const std::vector<Unit>& byte_units() {
  static const std::vector<Unit> units = {
      {"B", 1},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
  };
  return units;
}

const std::vector<Unit>& flops_units() {
  static const std::vector<Unit> units = {
      {"FLOPS", 1},     {"kFLOPS", 1e3},  {"KFLOPS", 1e3},   {"MFLOPS", 1e6},   {"GFLOPS", 1e9},
      {"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"FLOP/s", 1},     {"kFLOP/s", 1e3},  {"KFLOP/s", 1e3},
      {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
  };
  return units;
}

std::string quoted(std::string_view s) {
  return echo(s);
}

// Splits "12.5 GB/s" into 12.5 and "GB/s" and returns the value in the base unit.
double parse_with(std::string_view text, const std::vector<Unit>& units, const char* kind,
                  const char* example) {
  std::string_view s = text;
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  double value = 0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range)
    throw ConfigError(std::string(kind) + " out of a double's range, got " + quoted(text));
  if (ec != std::errc() || ptr == begin) {
    throw ConfigError("expected a " + std::string(kind) + " such as " + example + ", got " +
                      quoted(text));
  }
  std::string_view unit(ptr, static_cast<size_t>(end - ptr));
  while (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  if (unit.empty()) {
    throw ConfigError(std::string(kind) + " needs a unit, e.g. " + example + ", got " + quoted(text));
  }
  if (!std::isfinite(value))
    throw ConfigError(std::string(kind) + " must be finite, got " + quoted(text));
  for (const Unit& u : units)
    if (u.name == unit) return value * u.factor;
  std::string known;
  std::vector<std::string> names;
  for (const Unit& u : units) {
    known += (known.empty() ? "" : " ") + std::string(u.name);
    names.emplace_back(u.name);
  }
  throw ConfigError("unknown " + std::string(kind) + " unit " + quoted(unit) + " in " + quoted(text) +
                    did_you_mean_text(unit, names) + " (known: " + known + ")");
}

}  // namespace

Bandwidth parse_bandwidth(std::string_view text) {
  return Bandwidth::bytes_per_second(
      parse_with(text, bandwidth_units(), "bandwidth", kBandwidthExample));
}

Time parse_time(std::string_view text) {
  const double ns = parse_with(text, time_units(), "time", kTimeExample);
  if (std::fabs(ns) > 9.2e18) throw ConfigError("time out of range, got " + quoted(text));
  return Time::ns(static_cast<int64_t>(std::llround(ns)));
}

Bytes parse_bytes(std::string_view text) {
  const double b = parse_with(text, byte_units(), "size", kBytesExample);
  if (std::fabs(b) > 9.2e18) throw ConfigError("size out of range, got " + quoted(text));
  const double whole = std::round(b);
  // Decimal fractions ("1.1 MB") carry a rounding error in the last bits of a double.
  if (std::fabs(b - whole) > 1e-9 * std::max(1.0, std::fabs(b))) {
    throw ConfigError("size must be a whole number of bytes, got " + quoted(text));
  }
  return Bytes(static_cast<int64_t>(whole));
}

double parse_flops(std::string_view text) {
  return parse_with(text, flops_units(), "flops", kFlopsExample);
}

std::string shortest(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, x);
  BAGUA_CHECK(ec == std::errc(), "to_chars failed");
  return std::string(buf, ptr);
}

std::string format_bandwidth(Bandwidth bw) {
  const double bytes = bw.bytes_per_second();
  if (std::isinf(bytes)) return "inf";
  // Device fabrics and memories (100 GB/s and up) in bytes, networks in bits, as their datasheets do.
  if (std::fabs(bytes) >= 100e9) return shortest(bytes / 1e9) + " GB/s";
  const double bits = bytes * 8;
  if (std::fabs(bits) >= 1e9) return shortest(bits / 1e9) + " Gbps";
  if (std::fabs(bits) >= 1e6) return shortest(bits / 1e6) + " Mbps";
  if (std::fabs(bits) >= 1e3) return shortest(bits / 1e3) + " Kbps";
  return shortest(bits) + " bps";
}

std::string format_time(Time t) {
  const int64_t ns = t.nanoseconds();
  if (ns == 0) return "0 ns";
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + " s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + " ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + " us";
  return std::to_string(ns) + " ns";
}

std::string format_bytes(Bytes b) {
  const int64_t n = b.count();
  if (n == 0) return "0 B";
  static const std::pair<int64_t, const char*> units[] = {
      {int64_t{1} << 40, "TiB"}, {1'000'000'000'000, "TB"},
      {int64_t{1} << 30, "GiB"}, {1'000'000'000, "GB"},
      {int64_t{1} << 20, "MiB"}, {1'000'000, "MB"},
      {int64_t{1} << 10, "KiB"}, {1'000, "kB"},
  };
  for (const auto& [size, name] : units)
    if (n % size == 0) return std::to_string(n / size) + " " + name;
  return std::to_string(n) + " B";
}

std::string format_flops(double flops) {
  const double a = std::fabs(flops);
  if (a >= 1e15) return shortest(flops / 1e15) + " PFLOPS";
  if (a >= 1e12) return shortest(flops / 1e12) + " TFLOPS";
  if (a >= 1e9) return shortest(flops / 1e9) + " GFLOPS";
  if (a >= 1e6) return shortest(flops / 1e6) + " MFLOPS";
  return shortest(flops) + " FLOPS";
}

}  // namespace bagua::experiments
