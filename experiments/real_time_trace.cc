#include "experiments/real_time_trace.h"

#include <numeric>
#include <sstream>

#include "core/buffer.h"
#include "core/transport.h"

namespace bagua::experiments {

namespace {

// Every rank reports to rank 0, which then releases them all (subgroup: a fresh tag space).
void subgroup_barrier(Transport& transport) {
  if (transport.size() == 1) return;
  std::vector<int> everyone(static_cast<size_t>(transport.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  std::unique_ptr<Transport> group = transport.subgroup(everyone);
  constexpr Tag kArrive = 1;
  constexpr Tag kRelease = 2;
  uint8_t token = 0;
  const BufferView view = BufferView::of(std::span<uint8_t>(&token, 1));
  if (group->rank() == 0) {
    for (int r = 1; r < group->size(); ++r)
      group->recv(view, r, kArrive);
    for (int r = 1; r < group->size(); ++r)
      group->send(view, r, kRelease);
  } else {
    group->send(view, 0, kArrive);
    group->recv(view, 0, kRelease);
  }
}

}  // namespace

TracingContext::TracingContext(RankContext& inner, const TraceFilter& filter)
    : ForwardingContext(inner),
      tracer_(inner.transport().rank(), filter),
      clock_(inner.clock(), tracer_) {
  subgroup_barrier(inner.transport());
  tracer_.zero = inner.clock().now();
}

std::vector<TraceSpan> TracingContext::spans() {
  return tracer_.spans();
}

void TracingContext::RecordingTracer::span(std::string_view name, std::string_view category, int track,
                                           Time begin, Time end) {
  std::lock_guard<std::mutex> lock(mu_);
  log_.span(rank_, track, name, category, begin - zero, end - zero);
}

void TracingContext::RecordingTracer::begin_iteration(int64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  log_.begin_iteration(rank_, k);
}

std::vector<TraceSpan> TracingContext::RecordingTracer::spans() {
  std::lock_guard<std::mutex> lock(mu_);
  return log_.spans();
}

Time TracingContext::TracingClock::compute(const Work& work) {
  const Time begin = inner_.now();
  const Time d = inner_.compute(work);
  if (work.duration > Time::zero()) {
    tracer_.span(work.label.empty() ? std::string_view("compute") : work.label, "compute", 0, begin,
                 inner_.now());
  }
  return d;
}

std::string gather_trace(Transport& transport, std::vector<TraceSpan> mine, const TraceFilter& filter) {
  constexpr Tag kSizeTag = 1;
  constexpr Tag kBytesTag = 2;
  std::vector<int> everyone(static_cast<size_t>(transport.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  std::unique_ptr<Transport> group = transport.subgroup(everyone);
  if (group->rank() != 0) {
    std::vector<uint8_t> bytes = serialize_spans(mine);
    int64_t size = static_cast<int64_t>(bytes.size());
    group->send(BufferView::of(std::span<int64_t>(&size, 1)), 0, kSizeTag);
    group->send(BufferView::of(std::span<uint8_t>(bytes)), 0, kBytesTag);
    return "";
  }
  // The spans were filtered where they were recorded; the log filters only the metadata.
  TraceLog log(filter);
  log.add(std::move(mine));
  for (int r = 1; r < group->size(); ++r) {
    int64_t size = 0;
    group->recv(BufferView::of(std::span<int64_t>(&size, 1)), r, kSizeTag);
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    group->recv(BufferView::of(std::span<uint8_t>(bytes)), r, kBytesTag);
    log.add(deserialize_spans(bytes));
  }
  std::ostringstream out;
  log.write(out, group->size());
  return out.str();
}

}  // namespace bagua::experiments
