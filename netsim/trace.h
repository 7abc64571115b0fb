// The timeline of a run in the Chrome trace-event format (opened by Perfetto and chrome://tracing):
//   {"traceEvents":[ ...metadata ("ph":"M")..., ...complete events ("ph":"X")... ]}
// pid = rank, tid = track (0 compute, 1 communication, 2+ further streams); ts and dur are
// microseconds, written with exactly three decimals, so that every nanosecond of the virtual clock is
// kept and the output is bit-identical for identical runs.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace bagua::netsim {

class TraceLog {
 public:
  // `bytes` >= 0 adds {"bytes": n} to the event's args.
  void span(int rank, int track, std::string_view name, std::string_view category, Time begin, Time end,
            int64_t bytes = -1);
  void write(std::ostream& out, int ranks) const;

 private:
  struct Span {
    int rank;
    int track;
    std::string name;
    std::string category;
    Time begin;
    Time end;
    int64_t bytes;
  };
  std::vector<Span> spans_;
};

}  // namespace bagua::netsim
