#include "core/trace.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <set>
#include <utility>

#include "core/check.h"

namespace bagua {

namespace {

// A JSON string literal: '"', '\\' and control characters escaped (short forms where JSON has them,
// else \u00xx), everything else as is.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

// Nanoseconds as microseconds with three decimals, by integer arithmetic (no rounding anywhere).
std::string micros(Time t) {
  const int64_t ns = t.nanoseconds();
  const char* sign = ns < 0 ? "-" : "";
  const int64_t abs = ns < 0 ? -ns : ns;
  const int64_t whole = abs / 1000;
  const int64_t frac = abs % 1000;
  std::string s = sign + std::to_string(whole) + ".";
  if (frac < 100) s += '0';
  if (frac < 10) s += '0';
  return s + std::to_string(frac);
}

std::string track_name(int track) {
  if (track == 0) return "compute";
  if (track == 1) return "communication";
  return "stream " + std::to_string(track);
}

template <class T>
void put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put(out, static_cast<uint64_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}
template <class T>
T get(const std::vector<uint8_t>& in, size_t& at) {
  BAGUA_CHECK(at + sizeof(T) <= in.size(), "truncated trace spans");
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}
std::string get_string(const std::vector<uint8_t>& in, size_t& at) {
  const auto n = static_cast<size_t>(get<uint64_t>(in, at));
  BAGUA_CHECK(at + n <= in.size(), "truncated trace spans");
  std::string s(reinterpret_cast<const char*>(in.data() + at), n);
  at += n;
  return s;
}

}  // namespace

bool TraceFilter::keeps_rank(int rank) const {
  return ranks.empty() || std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

int64_t TraceLog::iteration_of(int rank) const {
  const auto r = static_cast<size_t>(rank);
  return r < iteration_.size() ? iteration_[r] : -1;
}

void TraceLog::begin_iteration(int rank, int64_t k) {
  const auto r = static_cast<size_t>(rank);
  if (r >= iteration_.size()) iteration_.resize(r + 1, -1);
  iteration_[r] = k;
}

void TraceLog::span(int rank, int track, std::string_view name, std::string_view category, Time begin,
                    Time end, int64_t bytes) {
  if (!filter_.keeps_rank(rank)) return;
  if (!filter_.keeps_iteration(iteration_of(rank))) return;
  spans_.push_back({rank, track, std::string(name), std::string(category), begin, end, bytes});
}

void TraceLog::add(std::vector<TraceSpan> spans) {
  for (TraceSpan& s : spans)
    spans_.push_back(std::move(s));
}

void TraceLog::write(std::ostream& out, int ranks) const {
  // Events of one lane in time order (the log is in order of completion); stable, so ties keep it.
  std::vector<const TraceSpan*> order;
  order.reserve(spans_.size());
  for (const TraceSpan& s : spans_)
    order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const TraceSpan* a, const TraceSpan* b) {
    if (a->rank != b->rank) return a->rank < b->rank;
    if (a->track != b->track) return a->track < b->track;
    return a->begin < b->begin;
  });
  std::set<std::pair<int, int>> lanes;  // (rank, track)
  for (int r = 0; r < ranks; ++r) {
    if (!filter_.keeps_rank(r)) continue;
    lanes.insert({r, 0});
    lanes.insert({r, 1});
  }
  for (const TraceSpan& s : spans_)
    lanes.insert({s.rank, s.track});

  out << "{\"traceEvents\":[\n";
  bool first = true;
  auto next = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (int r = 0; r < ranks; ++r) {
    if (!filter_.keeps_rank(r)) continue;
    next();
    out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << r << ",\"args\":{\"name\":\"rank " << r
        << "\"}}";
  }
  for (const auto& [rank, track] : lanes) {
    next();
    out << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"tid\":" << track
        << ",\"args\":{\"name\":" << json_string(track_name(track)) << "}}";
  }
  for (const TraceSpan* s : order) {
    next();
    out << "{\"name\":" << json_string(s->name) << ",\"cat\":" << json_string(s->category)
        << ",\"ph\":\"X\",\"pid\":" << s->rank << ",\"tid\":" << s->track
        << ",\"ts\":" << micros(s->begin) << ",\"dur\":" << micros(s->end - s->begin);
    if (s->bytes >= 0) out << ",\"args\":{\"bytes\":" << s->bytes << "}";
    out << "}";
  }
  out << "\n]}\n";
}

std::vector<uint8_t> serialize_spans(const std::vector<TraceSpan>& spans) {
  std::vector<uint8_t> out;
  put(out, static_cast<uint64_t>(spans.size()));
  for (const TraceSpan& s : spans) {
    put(out, s.rank);
    put(out, s.track);
    put_string(out, s.name);
    put_string(out, s.category);
    put(out, s.begin.nanoseconds());
    put(out, s.end.nanoseconds());
    put(out, s.bytes);
  }
  return out;
}

std::vector<TraceSpan> deserialize_spans(const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  const auto n = static_cast<size_t>(get<uint64_t>(bytes, at));
  std::vector<TraceSpan> spans;
  spans.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    TraceSpan s;
    s.rank = get<int>(bytes, at);
    s.track = get<int>(bytes, at);
    s.name = get_string(bytes, at);
    s.category = get_string(bytes, at);
    s.begin = Time::ns(get<int64_t>(bytes, at));
    s.end = Time::ns(get<int64_t>(bytes, at));
    s.bytes = get<int64_t>(bytes, at);
    spans.push_back(std::move(s));
  }
  BAGUA_CHECK(at == bytes.size(), "trailing bytes after the trace spans");
  return spans;
}

}  // namespace bagua
