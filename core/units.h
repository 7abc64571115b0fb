// Units in types: simulated and measured quantities never travel as bare numbers.
//
//   Time       integer nanoseconds (the simulator's clock is exact integer arithmetic)
//   Bytes      an integer count of bytes
//   Bandwidth  bytes per second (a double: link rates such as 100 Gbit/s are not integers of anything)
//
// `Bytes / Bandwidth -> Time` is the only way to mix them (rounded up to the next nanosecond, so a
// non-empty transfer never takes zero time).
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace bagua {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ns(int64_t v) { return Time(v); }
  static constexpr Time us(double v) { return Time(static_cast<int64_t>(std::llround(v * 1e3))); }
  static constexpr Time ms(double v) { return Time(static_cast<int64_t>(std::llround(v * 1e6))); }
  static constexpr Time s(double v) { return Time(static_cast<int64_t>(std::llround(v * 1e9))); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t nanoseconds() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double milliseconds() const { return static_cast<double>(ns_) * 1e-6; }
  constexpr double microseconds() const { return static_cast<double>(ns_) * 1e-3; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(ns_ + o.ns_); }
  constexpr Time operator-(Time o) const { return Time(ns_ - o.ns_); }
  constexpr Time& operator+=(Time o) {
    ns_ += o.ns_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ns_ -= o.ns_;
    return *this;
  }
  constexpr Time operator*(int64_t k) const { return Time(ns_ * k); }
  // Scaling by a model factor (latency factor, efficiency): rounded to the nearest nanosecond.
  Time scaled(double f) const {
    return Time(static_cast<int64_t>(std::llround(static_cast<double>(ns_) * f)));
  }

 private:
  constexpr explicit Time(int64_t v) : ns_(v) {}
  int64_t ns_ = 0;
};

class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t v) : n_(v) {}
  constexpr int64_t count() const { return n_; }
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
  constexpr Bytes& operator+=(Bytes o) {
    n_ += o.n_;
    return *this;
  }
  constexpr Bytes operator*(int64_t k) const { return Bytes(n_ * k); }

 private:
  int64_t n_ = 0;
};

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_second(double v) { return Bandwidth(v); }
  static constexpr Bandwidth bits_per_second(double v) { return Bandwidth(v / 8.0); }
  static constexpr Bandwidth gbps(double v) { return Bandwidth(v * 1e9 / 8.0); }  // Gbit/s
  static constexpr Bandwidth gigabytes_per_second(double v) { return Bandwidth(v * 1e9); }
  static constexpr Bandwidth infinite() { return Bandwidth(std::numeric_limits<double>::infinity()); }

  constexpr double bytes_per_second() const { return bps_; }
  constexpr double gbps() const { return bps_ * 8.0 / 1e9; }
  constexpr auto operator<=>(const Bandwidth&) const = default;
  constexpr Bandwidth operator*(double f) const { return Bandwidth(bps_ * f); }

 private:
  constexpr explicit Bandwidth(double v) : bps_(v) {}
  double bps_ = 0;
};

// The rule for a rate that must carry bytes (a link's bandwidth, a device's memory bandwidth): > 0 and
// finite. Returns the rule broken ("must be > 0", "must be finite") or nullptr. Every layer that checks
// a bandwidth asks this function and frames the answer with its own path.
constexpr const char* bandwidth_rule_broken(Bandwidth bw) {
  const double v = bw.bytes_per_second();
  if (!(v > 0)) return "must be > 0";
  if (v == std::numeric_limits<double>::infinity()) return "must be finite";
  return nullptr;
}

// Time to move `b` at rate `bw`, rounded up to a whole nanosecond.
inline Time operator/(Bytes b, Bandwidth bw) {
  if (b.count() == 0) return Time::zero();
  if (!(bw.bytes_per_second() > 0)) throw std::invalid_argument("transfer time at a bandwidth of 0");
  if (std::isinf(bw.bytes_per_second())) return Time::zero();
  double ns = static_cast<double>(b.count()) * 1e9 / bw.bytes_per_second();
  return Time::ns(static_cast<int64_t>(std::ceil(ns - 1e-6)));
}

std::string to_string(Time t);        // "1.234 ms"
std::string to_string(Bytes b);       // "10 MiB" / "1234 B"
std::string to_string(Bandwidth bw);  // "100 Gbit/s"

}  // namespace bagua
