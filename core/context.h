// RankContext: everything one rank's code may use — its transport, its clock, streams and events, and
// the space its tensors live in. A backend (netsim, threads, mpi, nccl) provides one per rank;
// algorithm, primitive and trainer code takes a RankContext& and never learns which backend it runs on.
//
// Streams: a stream runs submitted tasks one after another, in submission order, concurrently with the
// stream that submitted them (a second fiber in the simulator, a thread on a real runtime). The trainer
// runs on the rank's main (compute) stream; communication goes to a communication stream, so buckets
// are communicated while the backward pass of earlier layers still computes.
//
// Rule for shared state between streams: a critical section (std::mutex) must not block on the
// transport, the clock or an event — in the simulator all streams of all ranks share one OS thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/buffer.h"
#include "core/clock.h"
#include "core/transport.h"

namespace bagua {
struct ServiceRanks;  // core/services.h
}

namespace bagua {

// A one-shot flag: set once, waited for by any stream of the same rank.
class Event {
 public:
  virtual ~Event() = default;
  virtual void set() = 0;
  virtual bool test() const = 0;
  virtual void wait() = 0;
};
using EventPtr = std::shared_ptr<Event>;

class Stream {
 public:
  virtual ~Stream() = default;
  virtual const std::string& name() const = 0;
  // Queue `task`; the returned event is set when it has run. An exception thrown by a task is rethrown
  // by the next synchronize().
  virtual EventPtr submit(std::function<void()> task) = 0;
  // Wait until every submitted task has run.
  virtual void synchronize() = 0;
};

// Records spans of activity for a timeline (Chrome trace-event format); may be absent.
class Tracer {
 public:
  virtual ~Tracer() = default;
  // `track` separates lanes of one rank: 0 compute, 1 communication, 2+ others.
  virtual void span(std::string_view name, std::string_view category, int track, Time begin,
                    Time end) = 0;
  // The rank begins iteration `k` (the trainer calls it; a filter may keep only some iterations).
  virtual void begin_iteration(int64_t k) {}
};

class RankContext {
 public:
  virtual ~RankContext() = default;
  virtual Transport& transport() = 0;
  virtual Clock& clock() = 0;
  virtual std::unique_ptr<Stream> make_stream(std::string name) = 0;
  virtual EventPtr make_event() = 0;
  // The space where this rank's materialized tensors live (host memory, or a GPU's).
  virtual const Space& space() const { return host_space(); }
  virtual Tracer* tracer() { return nullptr; }
  // The world's service ranks (core/services.h) when this rank is a worker of a world that has them;
  // null otherwise (every rank trains).
  virtual const ServiceRanks* services() const { return nullptr; }
};

// A RankContext that hands every member to an inner one: the base of a decorator, which overrides
// only what it changes (a worker group's transport, a tracing clock, a logging transport).
class ForwardingContext : public RankContext {
 public:
  explicit ForwardingContext(RankContext& inner) : inner_(inner) {}
  Transport& transport() override { return inner_.transport(); }
  Clock& clock() override { return inner_.clock(); }
  std::unique_ptr<Stream> make_stream(std::string name) override {
    return inner_.make_stream(std::move(name));
  }
  EventPtr make_event() override { return inner_.make_event(); }
  const Space& space() const override { return inner_.space(); }
  Tracer* tracer() override { return inner_.tracer(); }
  const ServiceRanks* services() const override { return inner_.services(); }

 protected:
  RankContext& inner() { return inner_; }

 private:
  RankContext& inner_;
};

// Records a span from construction to destruction on the rank's tracer, if any.
class TraceScope {
 public:
  TraceScope(RankContext& ctx, std::string name, std::string_view category, int track)
      : ctx_(ctx),
        name_(std::move(name)),
        category_(category),
        track_(track),
        begin_(ctx.clock().now()) {}
  ~TraceScope() {
    if (Tracer* t = ctx_.tracer()) t->span(name_, category_, track_, begin_, ctx_.clock().now());
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  RankContext& ctx_;
  std::string name_;
  std::string_view category_;
  int track_;
  Time begin_;
};

}  // namespace bagua
