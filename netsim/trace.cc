#include "netsim/trace.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <utility>

namespace bagua::netsim {

namespace {

std::string json_string(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Nanoseconds as microseconds with three decimals, by integer arithmetic (no rounding anywhere).
std::string micros(Time t) {
  const int64_t ns = t.nanoseconds();
  const int64_t whole = ns / 1000;
  const int64_t frac = ns % 1000;
  std::string s = std::to_string(whole) + ".";
  if (frac < 100) s += '0';
  if (frac < 10) s += '0';
  return s + std::to_string(frac);
}

std::string track_name(int track) {
  if (track == 0) return "compute";
  if (track == 1) return "communication";
  return "stream " + std::to_string(track);
}

}  // namespace

void TraceLog::span(int rank, int track, std::string_view name, std::string_view category, Time begin,
                    Time end, int64_t bytes) {
  spans_.push_back({rank, track, std::string(name), std::string(category), begin, end, bytes});
}

void TraceLog::write(std::ostream& out, int ranks) const {
  // Events of one lane in time order (the log is in order of completion); stable, so ties keep it.
  std::vector<const Span*> order;
  order.reserve(spans_.size());
  for (const Span& s : spans_)
    order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const Span* a, const Span* b) {
    if (a->rank != b->rank) return a->rank < b->rank;
    if (a->track != b->track) return a->track < b->track;
    return a->begin < b->begin;
  });
  std::set<std::pair<int, int>> lanes;  // (rank, track)
  for (int r = 0; r < ranks; ++r) {
    lanes.insert({r, 0});
    lanes.insert({r, 1});
  }
  for (const Span& s : spans_)
    lanes.insert({s.rank, s.track});

  out << "{\"traceEvents\":[\n";
  bool first = true;
  auto next = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int r = 0; r < ranks; ++r) {
    next();
    out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << r << ",\"args\":{\"name\":\"rank " << r
        << "\"}}";
  }
  for (const auto& [rank, track] : lanes) {
    next();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"tid\":" << track
        << ",\"args\":{\"name\":" << json_string(track_name(track)) << "}}";
  }
  for (const Span* s : order) {
    next();
    out << "{\"name\":" << json_string(s->name) << ",\"cat\":" << json_string(s->category)
        << ",\"ph\":\"X\",\"pid\":" << s->rank << ",\"tid\":" << s->track
        << ",\"ts\":" << micros(s->begin) << ",\"dur\":" << micros(s->end - s->begin);
    if (s->bytes >= 0) out << ",\"args\":{\"bytes\":" << s->bytes << "}";
    out << "}";
  }
  out << "\n]}\n";
}

}  // namespace bagua::netsim
