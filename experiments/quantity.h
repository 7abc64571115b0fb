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
// The parse functions throw ConfigError with a message that does not name a path (the config loader
// prefixes it). The format functions give the canonical text used in resolved configs: parsing it back
// gives the same value.
#pragma once

#include <string>
#include <string_view>

#include "core/units.h"

namespace bagua::experiments {

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
