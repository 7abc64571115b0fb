// core/units.h: constructors and their rounding, arithmetic, the one mixing rule Bytes / Bandwidth ->
// Time (rounded up to a whole nanosecond), and the printed forms.
#include "core/units.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace bagua {
namespace {

TEST(Time, ConstructorsRoundToTheNearestNanosecond) {
  EXPECT_EQ(Time::ns(7).nanoseconds(), 7);
  EXPECT_EQ(Time::us(1.5).nanoseconds(), 1500);
  EXPECT_EQ(Time::us(0.0004).nanoseconds(), 0);  // 0.4 ns rounds down
  EXPECT_EQ(Time::us(0.0006).nanoseconds(), 1);  // 0.6 ns rounds up
  EXPECT_EQ(Time::ms(2.5).nanoseconds(), 2'500'000);
  EXPECT_EQ(Time::s(1.25).nanoseconds(), 1'250'000'000);
  EXPECT_EQ(Time::s(-0.5).nanoseconds(), -500'000'000);
  EXPECT_EQ(Time().nanoseconds(), 0);
  EXPECT_EQ(Time::zero(), Time::ns(0));
  EXPECT_GT(Time::max(), Time::s(1e9));  // about 292 years of nanoseconds
}

TEST(Time, ArithmeticIsExactAndScalingRounds) {
  Time t = Time::us(3) + Time::ns(250);
  EXPECT_EQ(t.nanoseconds(), 3250);
  t -= Time::ns(50);
  EXPECT_EQ(t.nanoseconds(), 3200);
  t += Time::us(1);
  EXPECT_EQ(t, Time::ns(4200));
  EXPECT_EQ(t - Time::ns(5000), Time::ns(-800));
  EXPECT_EQ(Time::ns(12) * 3, Time::ns(36));
  // scaled: 10 ns x 1.25 = 12.5 -> 13 (llround rounds halves away from zero); x 1.24 = 12.4 -> 12.
  EXPECT_EQ(Time::ns(10).scaled(1.25), Time::ns(13));
  EXPECT_EQ(Time::ns(10).scaled(1.24), Time::ns(12));
  EXPECT_DOUBLE_EQ(Time::ms(1.5).seconds(), 1.5e-3);
  EXPECT_DOUBLE_EQ(Time::ms(1.5).milliseconds(), 1.5);
  EXPECT_DOUBLE_EQ(Time::ms(1.5).microseconds(), 1500.0);
  EXPECT_LT(Time::ns(1), Time::ns(2));
}

TEST(Bytes, ArithmeticAndComparison) {
  Bytes b(1000);
  b += Bytes(24);
  EXPECT_EQ(b.count(), 1024);
  EXPECT_EQ((b - Bytes(24)).count(), 1000);
  EXPECT_EQ((b * 3).count(), 3072);
  EXPECT_EQ((Bytes(1) + Bytes(2)).count(), 3);
  EXPECT_EQ(Bytes().count(), 0);
  EXPECT_LT(Bytes(1), Bytes(2));
}

TEST(Bandwidth, UnitConversions) {
  // 100 Gbit/s = 12.5e9 bytes per second; 8 bit/s = 1 byte per second.
  EXPECT_DOUBLE_EQ(Bandwidth::gbps(100).bytes_per_second(), 12.5e9);
  EXPECT_DOUBLE_EQ(Bandwidth::gbps(100).gbps(), 100.0);
  EXPECT_DOUBLE_EQ(Bandwidth::bits_per_second(8).bytes_per_second(), 1.0);
  EXPECT_DOUBLE_EQ(Bandwidth::gigabytes_per_second(2).bytes_per_second(), 2e9);
  EXPECT_DOUBLE_EQ((Bandwidth::bytes_per_second(1000) * 0.5).bytes_per_second(), 500.0);
  EXPECT_LT(Bandwidth::gbps(1), Bandwidth::gbps(10));
}

TEST(TransferTime, BytesOverBandwidthRoundsUpToAWholeNanosecond) {
  // 1 MB at 1 GB/s: exactly 1 ms.
  EXPECT_EQ(Bytes(1'000'000) / Bandwidth::gigabytes_per_second(1), Time::ms(1));
  // 1 byte at 3 GB/s: 0.333 ns, rounded up to 1 ns, so a non-empty transfer never takes zero time.
  EXPECT_EQ(Bytes(1) / Bandwidth::gigabytes_per_second(3), Time::ns(1));
  // 10 bytes at 3 GB/s: 3.33 ns -> 4 ns; 9 bytes: exactly 3 ns, not rounded up to 4.
  EXPECT_EQ(Bytes(10) / Bandwidth::gigabytes_per_second(3), Time::ns(4));
  EXPECT_EQ(Bytes(9) / Bandwidth::gigabytes_per_second(3), Time::ns(3));
  // 1 MiB at 100 Gbit/s: 1048576 / 12.5e9 s = 83886.08 ns -> 83887 ns.
  EXPECT_EQ(Bytes(1 << 20) / Bandwidth::gbps(100), Time::ns(83887));
  // Nothing to move, or an infinite link: no time.
  EXPECT_EQ(Bytes(0) / Bandwidth::gbps(1), Time::zero());
  EXPECT_EQ(Bytes(0) / Bandwidth(), Time::zero());
  EXPECT_EQ(Bytes(1 << 30) / Bandwidth::infinite(), Time::zero());
  // Bytes over a zero bandwidth cannot be moved.
  EXPECT_THROW(Bytes(1) / Bandwidth(), std::invalid_argument);
  EXPECT_THROW(Bytes(1) / Bandwidth::gbps(-1), std::invalid_argument);
}

TEST(Units, PrintedForms) {
  EXPECT_EQ(to_string(Time::ns(999)), "999 ns");
  EXPECT_EQ(to_string(Time::ns(1500)), "1.500 us");
  EXPECT_EQ(to_string(Time::us(2500)), "2.500 ms");
  EXPECT_EQ(to_string(Time::ms(1234)), "1.234 s");
  EXPECT_EQ(to_string(Time::ns(-1500)), "-1.500 us");
  EXPECT_EQ(to_string(Bytes(1023)), "1023 B");
  EXPECT_EQ(to_string(Bytes(1536)), "1.50 KiB");
  EXPECT_EQ(to_string(Bytes(10 << 20)), "10.00 MiB");
  EXPECT_EQ(to_string(Bytes(int64_t{3} << 30)), "3.00 GiB");
  EXPECT_EQ(to_string(Bandwidth::gbps(100)), "100 Gbit/s");
  EXPECT_EQ(to_string(Bandwidth::bits_per_second(2.5e6)), "2.5 Mbit/s");
  EXPECT_EQ(to_string(Bandwidth::bits_per_second(800)), "800 bit/s");
}

}  // namespace
}  // namespace bagua
