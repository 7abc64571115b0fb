#include "experiments/quantity.h"

#include <gtest/gtest.h>

#include <string>

#include "core/check.h"

namespace bagua::experiments {
namespace {

struct BandwidthCase {
  const char* text;
  double bytes_per_second;
};

TEST(Quantity, BandwidthTable) {
  // Bits use decimal prefixes and divide by 8; bytes use decimal or binary prefixes.
  const BandwidthCase cases[] = {
      {"100 Gbps", 12.5e9},  {"100 Gbit/s", 12.5e9},  {"100Gbps", 12.5e9},  {"100 Gb/s", 12.5e9},
      {"12.5 GB/s", 12.5e9}, {"800 Mbps", 1e8},       {"1 Kbps", 125},      {"8 bps", 1},
      {"1 Tbps", 1.25e11},   {"150 GB/s", 1.5e11},    {"1 MiB/s", 1048576}, {"2 KiB/s", 2048},
      {"1e3 Mbps", 1.25e8},  {"  25 Gbps ", 3.125e9}, {"0.5 kB/s", 500},
  };
  for (const auto& c : cases) {
    EXPECT_DOUBLE_EQ(parse_bandwidth(c.text).bytes_per_second(), c.bytes_per_second) << c.text;
  }
}

TEST(Quantity, TimeTable) {
  EXPECT_EQ(parse_time("5 us").nanoseconds(), 5'000);
  EXPECT_EQ(parse_time("5us").nanoseconds(), 5'000);
  EXPECT_EQ(parse_time("1.5 ms").nanoseconds(), 1'500'000);
  EXPECT_EQ(parse_time("100 ns").nanoseconds(), 100);
  EXPECT_EQ(parse_time("2 s").nanoseconds(), 2'000'000'000);
  EXPECT_EQ(parse_time("0 s").nanoseconds(), 0);
  EXPECT_EQ(parse_time("2.5 \xC2\xB5s").nanoseconds(), 2'500);  // the micro sign
  EXPECT_EQ(parse_time("0.4 ns").nanoseconds(), 0);             // nearest nanosecond
  EXPECT_EQ(parse_time("0.6 ns").nanoseconds(), 1);
}

TEST(Quantity, BytesTable) {
  EXPECT_EQ(parse_bytes("10 MiB").count(), 10 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("1 MB").count(), 1'000'000);
  EXPECT_EQ(parse_bytes("4096 B").count(), 4096);
  EXPECT_EQ(parse_bytes("1.5 KiB").count(), 1536);
  EXPECT_EQ(parse_bytes("1.1 MB").count(), 1'100'000);  // 1.1 * 1e6 is not exact in binary
  EXPECT_EQ(parse_bytes("2 GiB").count(), int64_t{2} << 30);
  EXPECT_EQ(parse_bytes("3 kB").count(), 3'000);
}

TEST(Quantity, FlopsTable) {
  EXPECT_DOUBLE_EQ(parse_flops("15.7 TFLOPS"), 15.7e12);
  EXPECT_DOUBLE_EQ(parse_flops("125 TFLOP/s"), 125e12);
  EXPECT_DOUBLE_EQ(parse_flops("2 GFLOPS"), 2e9);
  EXPECT_DOUBLE_EQ(parse_flops("1 PFLOPS"), 1e15);
}

std::string error_of(void (*f)(const char*), const char* text) {
  try {
    f(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Quantity, ErrorsNameTheTextAndGiveAnExample) {
  auto bw = [](const char* t) { parse_bandwidth(t); };
  EXPECT_EQ(error_of(bw, "100"),
            "bandwidth needs a unit, e.g. \"100 Gbps\" or \"12.5 GB/s\", got \"100\"");
  EXPECT_EQ(error_of(bw, "fast"),
            "expected a bandwidth such as \"100 Gbps\" or \"12.5 GB/s\", got \"fast\"");
  const std::string unit = error_of(bw, "100 Gbs");
  EXPECT_EQ(
      unit.rfind(
          "unknown bandwidth unit \"Gbs\" in \"100 Gbs\", did you mean \"Gbps\"? (known: bps Kbps", 0),
      0u)
      << unit;
  auto t = [](const char* s) { parse_time(s); };
  EXPECT_EQ(error_of(t, "5 min").rfind("unknown time unit \"min\"", 0), 0u);
  EXPECT_EQ(error_of(t, "5"), "time needs a unit, e.g. \"5 us\" or \"1.5 ms\", got \"5\"");
  auto b = [](const char* s) { parse_bytes(s); };
  EXPECT_EQ(error_of(b, "1.5 B"), "size must be a whole number of bytes, got \"1.5 B\"");
  EXPECT_EQ(error_of(b, "10 Mib").rfind("unknown size unit \"Mib\"", 0), 0u);
  auto f = [](const char* s) { parse_flops(s); };
  EXPECT_EQ(error_of(f, "inf TFLOPS"), "flops must be finite, got \"inf TFLOPS\"");
}

TEST(Quantity, FormatsReadBack) {
  EXPECT_EQ(format_bandwidth(parse_bandwidth("12.5 GB/s")), "100 Gbps");
  EXPECT_EQ(format_bandwidth(parse_bandwidth("800 Mbps")), "800 Mbps");
  EXPECT_EQ(format_bandwidth(parse_bandwidth("150 GB/s")), "150 GB/s");
  EXPECT_EQ(format_bandwidth(parse_bandwidth("800 Gbps")), "100 GB/s");
  EXPECT_EQ(format_bandwidth(parse_bandwidth("400 Gbps")), "400 Gbps");
  EXPECT_EQ(format_bandwidth(Bandwidth::infinite()), "inf");
  EXPECT_EQ(format_time(parse_time("1.5 ms")), "1500 us");
  EXPECT_EQ(format_time(parse_time("2 s")), "2 s");
  EXPECT_EQ(format_time(parse_time("7 ns")), "7 ns");
  EXPECT_EQ(format_bytes(parse_bytes("10 MiB")), "10 MiB");
  EXPECT_EQ(format_bytes(parse_bytes("1 MB")), "1 MB");
  EXPECT_EQ(format_bytes(Bytes(4097)), "4097 B");
  EXPECT_EQ(format_flops(15.7e12), "15.7 TFLOPS");
  for (const char* s : {"1 Gbps", "25 Gbps", "10 Gbps", "100 Gbps", "150 GB/s", "900 GB/s", "3 Mbps"})
    EXPECT_EQ(parse_bandwidth(format_bandwidth(parse_bandwidth(s))), parse_bandwidth(s)) << s;
  EXPECT_EQ(shortest(0.1), "0.1");
  EXPECT_EQ(shortest(1e-7), "1e-07");
}

}  // namespace
}  // namespace bagua::experiments
