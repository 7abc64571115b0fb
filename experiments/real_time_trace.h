// Timelines on the real runtimes (threads, mpi, nccl): the same Chrome trace-event format as the
// simulator's (core/trace.h), in real time.
//
// The runner wraps each rank's RankContext in a TracingContext, which
//   - starts the rank's clock at zero when it leaves a barrier of all ranks before training (so the
//     ranks' timelines line up to within one message's latency, the barrier's release),
//   - records the spans the algorithms open (TraceScope: "allreduce bucket 3" on the communication
//     track) and, on the compute track, every compute of a profiled duration (the emulated layers of a
//     profile workload: "forward conv1_1", "backward fc8"; the real arithmetic of a synthetic model is
//     not cut into layers and shows as the gaps between them),
//   - keeps only what output.trace_ranks and output.trace_iterations keep.
// After training every rank sends its spans to rank 0 (gather_trace), which writes trace.json.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/trace.h"

namespace bagua::experiments {

class TracingContext final : public ForwardingContext {
 public:
  // Runs the barrier (a collective call: every rank of the world constructs one).
  TracingContext(RankContext& inner, const TraceFilter& filter);

  Clock& clock() override { return clock_; }
  Tracer* tracer() override { return &tracer_; }

  // This rank's spans so far (times since the barrier).
  std::vector<TraceSpan> spans();

 private:
  class RecordingTracer final : public Tracer {
   public:
    RecordingTracer(int rank, const TraceFilter& filter) : rank_(rank), log_(filter) {}
    void span(std::string_view name, std::string_view category, int track, Time begin,
              Time end) override;
    void begin_iteration(int64_t k) override;
    std::vector<TraceSpan> spans();
    Time zero;  // the clock's reading at the barrier

   private:
    int rank_;
    std::mutex mu_;  // the communication stream's thread records too
    TraceLog log_;
  };

  // Forwards to the inner clock; records each compute of a profiled duration.
  class TracingClock final : public Clock {
   public:
    TracingClock(Clock& inner, RecordingTracer& tracer) : inner_(inner), tracer_(tracer) {}
    Time now() const override { return inner_.now(); }
    Time compute(const Work& work) override;
    void sleep(Time d) override { inner_.sleep(d); }

   private:
    Clock& inner_;
    RecordingTracer& tracer_;
  };

  RecordingTracer tracer_;
  TracingClock clock_;
};

// Every rank's spans to rank 0 over a subgroup of all ranks (a fresh tag space). Rank 0 gets the trace
// text of the whole world (`ranks` processes), the others "".
std::string gather_trace(Transport& transport, std::vector<TraceSpan> mine, const TraceFilter& filter);

}  // namespace bagua::experiments
