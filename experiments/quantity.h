// Quantities with units, as they appear in experiment configs: "100 Gbps", "5 us", "10 MiB",
// "15.7 TFLOPS".
//
// Grammar: a decimal number (optionally with an exponent), optional spaces, then a unit. A bare number
// is refused: a config never leaves a unit implied.
//
//   bandwidth  bits per second, decimal prefixes:
//                bps Kbps kbps Mbps Gbps Tbps, bit/s kbit/s Kbit/s Mbit/s Gbit/s Tbit/s,
//                b/s kb/s Kb/s Mb/s Gb/s Tb/s
//              bytes per second, decimal or binary prefixes:
//                B/s kB/s KB/s MB/s GB/s TB/s, KiB/s MiB/s GiB/s TiB/s
//   time       ns us µs ms s      (rounded to the nearest nanosecond)
//   size       B kB KB MB GB TB   (decimal), KiB MiB GiB TiB (binary); a whole number of bytes
//   flops      FLOPS kFLOPS KFLOPS MFLOPS GFLOPS TFLOPS PFLOPS, and the same with FLOP/s
//
// Ranges. Time is integer nanoseconds in an int64 (up to 9.2e18 ns, 292 years), and a run adds many
// times up (each step of each collective of each iteration); a rate turns bytes into such a time. A
// config's quantities therefore stay well inside what the clock holds (the loader checks them, naming the
// JSON path; the parse functions check only the syntax and the int64 range):
//   time       0 .. kMaxTime (1 day = 8.64e13 ns): 1e5 such times add up before the clock's range.
//              "1e18 ns" (31 years) fits an int64 but overflows as soon as a run adds a few of them.
//   bandwidth  kMinBandwidth (1 Kbps = 125 B/s) .. kMaxBandwidth (1e18 B/s). At 1 Kbps a byte takes
//              8 ms and 1 GiB 8.6e15 ns (100 days), a thousandth of the clock's range; at "1e-6 bps" one
//              megabyte would take 8e21 ns, beyond it, and at "1e-300 bps" a byte's time is infinite.
//              1e18 B/s is a million times NVLink 4's 900 GB/s (NVIDIA H100 datasheet), and keeps the
//              sums of rates in the max-min solver far from a double's overflow.
//
// The parse functions throw ConfigError with a message that does not name a path (the config loader
// prefixes it). The format functions give the canonical text used in resolved configs: parsing it back
// gives the same value.
#pragma once

#include <string>
#include <string_view>

#include "core/units.h"

namespace bagua::experiments {

inline constexpr Time kMaxTime = Time::ns(86'400'000'000'000);                // 1 day
inline constexpr Bandwidth kMinBandwidth = Bandwidth::bytes_per_second(125);  // 1 Kbps
inline constexpr Bandwidth kMaxBandwidth = Bandwidth::bytes_per_second(1e18);

Bandwidth parse_bandwidth(std::string_view text);
Time parse_time(std::string_view text);
Bytes parse_bytes(std::string_view text);
double parse_flops(std::string_view text);  // FLOP/s

// An example of each kind, for error messages ("e.g. \"100 Gbps\"").
extern const char* const kBandwidthExample;
extern const char* const kTimeExample;
extern const char* const kBytesExample;
extern const char* const kFlopsExample;

std::string format_bandwidth(
    Bandwidth bw);                       // "100 Gbps", "800 Mbps", "150 GB/s" (from 100 GB/s up), "inf"
std::string format_time(Time t);         // "5 us", "1500 us", "2 s", "0 s"
std::string format_bytes(Bytes b);       // "10 MiB", "1 MB", "4097 B"
std::string format_flops(double flops);  // "15.7 TFLOPS"

// The shortest decimal text that reads back as exactly `x` ("0.1", "1e-07", "nan"/"inf" as such).
std::string shortest(double x);

}  // namespace bagua::experiments
