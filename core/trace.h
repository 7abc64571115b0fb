// The timeline of a run in the Chrome trace-event format (opened by Perfetto and chrome://tracing):
//   {"traceEvents":[ ...metadata ("ph":"M")..., ...complete events ("ph":"X")... ]}
// pid = rank, tid = track (0 compute, 1 communication, 2+ further streams); ts and dur are
// microseconds, written with exactly three decimals, so that every nanosecond of the clock is kept and
// the output is bit-identical for identical runs. The simulator writes it in virtual time; the real
// runtimes (experiments/runner.cc) in each rank's real time since a common barrier.
//
// A TraceFilter keeps a run's trace small: only the spans of the listed ranks, recorded while their
// rank is in one of the listed iterations (a rank's iteration is the one it last began, -1 before the
// first; spans recorded after the last iteration count as the last one's).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace bagua {

struct TraceFilter {
  std::vector<int> ranks;  // empty: every rank
  int64_t first_iteration = std::numeric_limits<int64_t>::min();
  int64_t last_iteration = std::numeric_limits<int64_t>::max();

  bool keeps_rank(int rank) const;
  bool keeps_iteration(int64_t iteration) const {
    return iteration >= first_iteration && iteration <= last_iteration;
  }
  bool keeps_everything() const {
    return ranks.empty() && first_iteration == std::numeric_limits<int64_t>::min() &&
           last_iteration == std::numeric_limits<int64_t>::max();
  }
};

struct TraceSpan {
  int rank = 0;
  int track = 0;
  std::string name;
  std::string category;
  Time begin;
  Time end;
  int64_t bytes = -1;  // >= 0 adds {"bytes": n} to the event's args
};

class TraceLog {
 public:
  TraceLog() = default;
  explicit TraceLog(TraceFilter filter) : filter_(std::move(filter)) {}

  // Records a span unless the filter drops it.
  void span(int rank, int track, std::string_view name, std::string_view category, Time begin, Time end,
            int64_t bytes = -1);
  // `rank` begins iteration `k`.
  void begin_iteration(int rank, int64_t k);
  // Adds spans recorded (and filtered) elsewhere, e.g. gathered from other processes.
  void add(std::vector<TraceSpan> spans);
  const std::vector<TraceSpan>& spans() const { return spans_; }
  // `ranks` processes get their metadata (the filter's ranks only, when it lists some).
  void write(std::ostream& out, int ranks) const;

 private:
  int64_t iteration_of(int rank) const;

  TraceFilter filter_;
  std::vector<int64_t> iteration_;  // per rank
  std::vector<TraceSpan> spans_;
};

// Spans to bytes and back (native byte order), to gather them from the ranks of a job.
std::vector<uint8_t> serialize_spans(const std::vector<TraceSpan>& spans);
std::vector<TraceSpan> deserialize_spans(const std::vector<uint8_t>& bytes);

}  // namespace bagua
