#include "core/units.h"

#include <cstdio>

namespace bagua {

std::string to_string(Time t) {
  char buf[64];
  const int64_t ns = t.nanoseconds();
  const int64_t mag = ns < 0 ? -ns : ns;
  if (mag >= 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.3f s", t.seconds());
  else if (mag >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.3f ms", t.milliseconds());
  else if (mag >= 1'000)
    std::snprintf(buf, sizeof buf, "%.3f us", t.microseconds());
  else
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  return buf;
}

std::string to_string(Bytes b) {
  char buf[64];
  const double v = static_cast<double>(b.count());
  if (b.count() >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1 << 30));
  else if (b.count() >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1 << 20));
  else if (b.count() >= (int64_t{1} << 10))
    std::snprintf(buf, sizeof buf, "%.2f KiB", v / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b.count()));
  return buf;
}

std::string to_string(Bandwidth bw) {
  char buf[64];
  const double bits = bw.bytes_per_second() * 8;
  if (bits >= 1e9)
    std::snprintf(buf, sizeof buf, "%g Gbit/s", bits / 1e9);
  else if (bits >= 1e6)
    std::snprintf(buf, sizeof buf, "%g Mbit/s", bits / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%g bit/s", bits);
  return buf;
}

}  // namespace bagua
