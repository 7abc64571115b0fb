#include "netsim/transport.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>

#include "core/check.h"
#include "core/ops.h"
#include "netsim/world.h"

namespace bagua::netsim {

namespace {

// A record of type T in a block of `lists`, and its end (T::destroy, once its last Ref is dropped).
template <class T>
Ref<T> make_record(BlockLists& lists) {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "over-aligned record");
  // Default-initialized: every member has its initializer (value-initialization would zero the
  // record first, a `rep stos` whose start-up cost was a third of post_send's time).
  T* record = new (lists.take(sizeof(T))) T;
  record->lists = &lists;
  return Ref<T>(record);
}
template <class T>
void destroy_record(T* record) {
  BlockLists* lists = record->lists;
  record->~T();
  lists->give(record, sizeof(T));
}

}  // namespace

struct Message {
  MatchKey key{};
  BufferView data;  // the send buffer
  int64_t bytes = 0;
  Time start;
  bool arrived = false;      // the flow completed (its last byte landed)
  bool send_done = false;    // the send completed (at arrival, or once buffered)
  bool rendezvous = false;   // above the eager limit: waits for a clear-to-send before its flow
  bool rts_arrived = false;  // its request-to-send reached the receiver
  bool holds_slot = false;   // holds one of its connection's credit slots
  uint32_t credits = 0;      // its connection's (Mailbox::credits_of), under kCreditSlots
  bool stashed = false;
  Time delay;  // before its injection (SimTransport::isend_after), then zero
  std::vector<uint8_t> stash;
  Ref<Receive> receive;  // matched, not yet completed
  WaitList waiters;
  Ref<Message> next;  // in its key's queue of unmatched sends
  uint32_t refs = 0;  // Ref's count
  BlockLists* lists = nullptr;

  static Ref<Message> make(BlockLists& lists) { return make_record<Message>(lists); }
  static void destroy(Message* m) { destroy_record(m); }
};

struct Receive {
  MatchKey key{};
  BufferView data;
  bool done = false;
  WaitList waiters;
  Ref<Receive> next;  // in its key's queue of unmatched receives
  uint32_t refs = 0;  // Ref's count
  BlockLists* lists = nullptr;

  static Ref<Receive> make(BlockLists& lists) { return make_record<Receive>(lists); }
  static void destroy(Receive* r) { destroy_record(r); }
};

namespace {

bool moves_data(const BufferView& v) {
  return !v.is_meta() && v.bytes().count() > 0;
}

// dst := src, byte for byte, unless either side is meta.
void copy_payload(const BufferView& dst, const BufferView& src) {
  if (!moves_data(dst) || !moves_data(src)) return;
  copy(dst.reinterpret(DType::kU8), src.reinterpret(DType::kU8));
}

// A request's memory comes from the mailbox's recycled blocks as well. A RequestPtr deletes it through
// the class's own operator delete, which finds the lists in a header in front of the object.
class RecycledRequest : public Request {
 public:
  static void* operator new(size_t size, BlockLists& lists) {
    void* block = lists.take(kHeader + size);
    *static_cast<BlockLists**>(block) = &lists;
    return static_cast<char*>(block) + kHeader;
  }
  static void operator delete(void* p, size_t size) {
    void* block = static_cast<char*>(p) - kHeader;
    (*static_cast<BlockLists**>(block))->give(block, kHeader + size);
  }

 private:
  static constexpr size_t kHeader = __STDCPP_DEFAULT_NEW_ALIGNMENT__;  // keeps the object aligned
};

class SendRequest final : public RecycledRequest {
 public:
  SendRequest(Mailbox& mailbox, Ref<Message> m) noexcept : mailbox_(mailbox), m_(std::move(m)) {}
  bool test() override { return Mailbox::done(*m_); }
  void wait() override { mailbox_.wait(*m_); }

 private:
  Mailbox& mailbox_;
  Ref<Message> m_;
};

class ReceiveRequest final : public RecycledRequest {
 public:
  ReceiveRequest(Mailbox& mailbox, Ref<Receive> r) noexcept : mailbox_(mailbox), r_(std::move(r)) {}
  bool test() override { return Mailbox::done(*r_); }
  void wait() override { mailbox_.wait(*r_); }

 private:
  Mailbox& mailbox_;
  Ref<Receive> r_;
};

}  // namespace

Mailbox::Mailbox(World& world)
    : world_(world),
      blocks_(BlockLists::create()),
      last_credits_(static_cast<size_t>(world.topology.ranks())),
      next_injection_(static_cast<size_t>(world.topology.ranks())),
      last_queue_(static_cast<size_t>(world.topology.ranks())),
      last_route_(static_cast<size_t>(world.topology.ranks())) {}

Mailbox::~Mailbox() = default;

void Mailbox::check_sizes(const Message& m, const Receive& r) {
  if (r.data.bytes().count() != m.bytes) sizes_differ(m, r);
}

void Mailbox::sizes_differ(const Message& m, const Receive& r) {
  BAGUA_CHECK(r.data.bytes().count() == m.bytes,
              "receive of " + std::to_string(r.data.bytes().count()) + " bytes at rank " +
                  std::to_string(r.key.dst) + " matched a send of " + std::to_string(m.bytes) +
                  " bytes from rank " + std::to_string(m.key.src) + " (tag " +
                  std::to_string(m.key.tag) + ")");
  std::abort();  // not reached: the check fails
}

Ref<Message> Mailbox::post_send(const MatchKey& caller_key, const BufferView& data, Time delay) {
  const MatchKey key = caller_key;  // into registers (MatchKey's copy)
  Ref<Message> m = Message::make(*blocks_);
  m->key = key;
  m->data = data;
  m->delay = delay;
  m->bytes = data.bytes().count();
  m->start = world_.engine.now();

  const uint32_t index = queue_of(key);
  Queue& q = queues_[index];
  if (!q.receives.empty()) {
    check_sizes(*m, *q.receives.head);
    m->receive = q.receives.pop();
  } else {
    q.sends.push(m);
  }

  if (key.src == key.dst) {  // a local copy, no network
    arrive(*m);
    return m;
  }
  world_.comm_begin(key.src);
  world_.comm_begin(key.dst);
  const TransportModel& transport = world_.spec.transport;
  switch (transport.completion) {
    case SendCompletion::kArrival:
      break;
    case SendCompletion::kEagerRendezvous: {
      const bool same_host = world_.topology.host_of(key.src) == world_.topology.host_of(key.dst);
      const Bytes limit = same_host ? transport.eager_limit_intra_host : transport.eager_limit;
      if (m->bytes <= limit.count())
        buffered(*m);  // eager
      else
        m->rendezvous = true;
      break;
    }
    case SendCompletion::kCreditSlots: {
      m->credits = credits_of(key);
      Credits& credits = credits_[m->credits];
      if (credits.in_use == transport.slots) {  // every slot taken: wait for one
        credits.waiting.push_back(m);
        return m;
      }
      ++credits.in_use;
      m->holds_slot = true;
      if (m->bytes <= transport.slot_bytes.count()) buffered(*m);  // in its slot
      break;
    }
  }
  inject(m);
  return m;
}

// A message's steps (inject, depart, take) and the parking of its record are inlined into one
// another and into their events: each was a call with a frame of its own, 7 % of the 1024-rank ring's
// instructions in all. They are used in this file only.
[[gnu::always_inline]] inline void Mailbox::inject(const Ref<Message>& m) {
  if (m->delay > Time::zero()) {  // the sender's work before the message is handed over
    const Time delay = std::exchange(m->delay, Time::zero());
    world_.engine.post(delay, {&Mailbox::inject_event, this, park(m)});
    return;
  }
  const ModelFactors& factors = world_.spec.factors;
  if ((factors.message_overhead == Time::zero() && factors.message_gap == Time::zero()) ||
      !between_hosts(m->key)) {
    depart(m);
    return;
  }
  // LogGP: the sender's CPU spends o on the message, then it leaves; the next message of this rank
  // starts its o no sooner than max(o, g) after this one started.
  Time& next = next_injection_[static_cast<size_t>(m->key.src)];
  const Time now = world_.engine.now();
  const Time begin = std::max(now, next);
  next = begin + std::max(factors.message_overhead, factors.message_gap);
  world_.engine.post(begin + factors.message_overhead - now, {&Mailbox::depart_event, this, park(m)});
}

bool Mailbox::between_hosts(const MatchKey& key) const {
  return world_.topology.host_of(key.src) != world_.topology.host_of(key.dst);
}

[[gnu::always_inline]] inline void Mailbox::depart(const Ref<Message>& m) {
  if (!m->rendezvous) {
    start_flow(m);
    return;
  }
  // Rendezvous: the request-to-send takes one route latency to reach the receiver.
  const Time latency = route(m->key.src, m->key.dst).latency;
  world_.engine.post(latency, {&Mailbox::request_arrived_event, this, park(m)}, /*recurring=*/true);
}

void Mailbox::request_arrived(const Ref<Message>& m) {
  m->rts_arrived = true;
  if (m->receive) clear_to_send(m);  // the receive is posted already
}

void Mailbox::clear_to_send(const Ref<Message>& m) {
  // The clear-to-send takes one route latency back to the sender, whose flow then starts.
  const Time latency = world_.topology.route(m->key.dst, m->key.src).latency;
  world_.engine.post(latency, {&Mailbox::start_flow_event, this, park(m)}, /*recurring=*/true);
}

void Mailbox::start_flow(const Ref<Message>& m) {
  const MatchKey& key = m->key;
  const int src_host = world_.topology.host_of(key.src);
  const int dst_host = world_.topology.host_of(key.dst);
  FlowHosts hosts;
  if (src_host != dst_host)  // the TCP connection (slow start): the ordered pair of world ranks
    hosts = {src_host, dst_host, static_cast<int64_t>(key.src) * world_.topology.ranks() + key.dst};
  // The flow's completion event refers to the message by its parked index: a message on the wire lives
  // until it arrives or the run is torn down (the network drops its flows, the mailbox its parked
  // messages).
  // Ordered transfer: the connection is the ordered pair of world ranks (TransportModel::ordered).
  const int64_t connection = world_.spec.transport.ordered
                                 ? static_cast<int64_t>(key.src) * world_.topology.ranks() + key.dst
                                 : FlowNetwork::kNoConnection;
  world_.network.start(route(key.src, key.dst), Bytes(m->bytes),
                       {&Mailbox::arrive_event, this, park(m)}, hosts, connection);
}

[[gnu::always_inline]] inline const Route& Mailbox::route(int src, int dst) {
  LastRoute& last = last_route_[static_cast<size_t>(src)];
  if (last.dst != dst) {
    last.route = world_.topology.route(src, dst);
    last.dst = dst;
  }
  return last.route;
}

[[gnu::always_inline]] inline uint64_t Mailbox::park(Ref<Message> m) {
  if (free_parked_.empty()) {
    parked_.push_back(std::move(m));
    return parked_.size() - 1;
  }
  const uint64_t index = free_parked_.back();
  free_parked_.pop_back();
  parked_[index] = std::move(m);
  return index;
}

[[gnu::always_inline]] inline Ref<Message> Mailbox::unpark(uint64_t index) {
  Ref<Message> m = std::move(parked_[index]);
  free_parked_.push_back(index);
  return m;
}

void Mailbox::inject_event(void* mailbox, uint64_t parked) {
  auto* self = static_cast<Mailbox*>(mailbox);
  self->inject(self->unpark(parked));
}

void Mailbox::depart_event(void* mailbox, uint64_t parked) {
  auto* self = static_cast<Mailbox*>(mailbox);
  self->depart(self->unpark(parked));
}

void Mailbox::request_arrived_event(void* mailbox, uint64_t parked) {
  auto* self = static_cast<Mailbox*>(mailbox);
  self->request_arrived(self->unpark(parked));
}

void Mailbox::start_flow_event(void* mailbox, uint64_t parked) {
  auto* self = static_cast<Mailbox*>(mailbox);
  self->start_flow(self->unpark(parked));
}

void Mailbox::receive_taken_event(void* mailbox, uint64_t parked) {
  auto* self = static_cast<Mailbox*>(mailbox);
  self->complete_receive(*self->unpark(parked));
}

[[gnu::always_inline]] inline void Mailbox::take(Message& m) {
  const Time overhead = world_.spec.factors.message_overhead;
  if (overhead == Time::zero() || !between_hosts(m.key)) {
    complete_receive(m);
    return;
  }
  // LogGP: the receiver's CPU spends o on the message before its receive completes.
  world_.engine.post(overhead, {&Mailbox::receive_taken_event, this, park(Ref<Message>(&m))},
                     /*recurring=*/true);
}

[[gnu::always_inline]] inline void Mailbox::complete_receive(Message& m) {
  Ref<Receive> r = std::move(m.receive);
  r->done = true;
  r->waiters.wake_all(world_.fibers);
  if (m.holds_slot) free_slot(m);
}

void Mailbox::free_slot(Message& m) {
  // The receiver has taken the message: its slot goes to the connection's next waiting send.
  m.holds_slot = false;
  Credits& credits = credits_[m.credits];
  --credits.in_use;
  if (credits.waiting.empty()) return;
  Ref<Message> next = std::move(credits.waiting.front());
  credits.waiting.pop_front();
  ++credits.in_use;
  next->holds_slot = true;
  if (next->bytes <= world_.spec.transport.slot_bytes.count()) {
    buffered(*next);
    next->waiters.wake_all(world_.fibers);
  }
  inject(next);
}

Ref<Receive> Mailbox::post_receive(const MatchKey& caller_key, const BufferView& data) {
  const MatchKey key = caller_key;  // into registers (MatchKey's copy)
  Ref<Receive> r = Receive::make(*blocks_);
  r->key = key;
  r->data = data;

  const uint32_t index = queue_of(key);
  Queue& q = queues_[index];
  if (!q.sends.empty()) {
    Ref<Message> m = q.sends.pop();
    check_sizes(*m, *r);
    m->receive = r;
    if (m->arrived) {  // arrived before the receive was posted: copy from the stash now
      if (m->stashed) {
        copy_payload(data, BufferView(m->stash.data(), m->stash.size(), DType::kU8, &host_space()));
        m->stash = {};  // the sender's request may keep the message alive; not its copy
      }
      take(*m);
    } else if (m->rendezvous && m->rts_arrived) {
      clear_to_send(m);  // the request-to-send has been waiting for this receive
    }
  } else {
    q.receives.push(r);
  }
  return r;
}

uint32_t Mailbox::credits_of(MatchKey key) {
  const MatchKey connection{key.group, key.src, key.dst, 0};
  LastQueue& last = last_credits_[static_cast<size_t>(key.src)];
  if (last.key == connection) return last.index;
  uint32_t index;
  if (const uint32_t* found = credits_index_.find(connection)) {
    index = *found;
  } else {
    index = static_cast<uint32_t>(credits_.size());
    credits_.emplace_back();
    credits_index_.insert(connection, index);
  }
  last = {connection, index};
  return index;
}

uint32_t Mailbox::queue_of_slow(MatchKey key) {
  LastQueue& last = last_queue_[static_cast<size_t>(key.dst)];
  if (const uint32_t* index = queue_index_.find(key)) {
    last = {key, *index};
    return *index;
  }
  if (queue_index_.size() >= sweep_at_) {
    for (LastQueue& l : last_queue_)
      l = LastQueue{};
    queue_index_.erase_if([&](const MatchKey&, uint32_t index) {
      const Queue& q = queues_[index];
      if (!q.sends.empty() || !q.receives.empty()) return false;
      free_queues_.push_back(index);
      return true;
    });
    sweep_at_ = std::max(kMinSweep, 2 * queue_index_.size());
  }
  uint32_t index;
  if (!free_queues_.empty()) {
    index = free_queues_.back();
    free_queues_.pop_back();
  } else {
    index = static_cast<uint32_t>(queues_.size());
    queues_.emplace_back();
  }
  queue_index_.insert(key, index);
  last = {key, index};
  return index;
}

void Mailbox::arrive_event(void* mailbox, uint64_t parked) {
  auto* self = static_cast<Mailbox*>(mailbox);
  self->arrive(*self->unpark(parked));
}

[[gnu::always_inline]] inline void Mailbox::arrive(Message& m) {
  m.arrived = true;
  m.send_done = true;
  if (m.key.src != m.key.dst) {
    world_.comm_end(m.key.src);
    world_.comm_end(m.key.dst);
    if (world_.tracing) {
      const Time now = world_.engine.now();
      world_.trace.span(m.key.src, 1, "send to " + std::to_string(m.key.dst), "comm", m.start, now,
                        m.bytes);
      world_.trace.span(m.key.dst, 1, "recv from " + std::to_string(m.key.src), "comm", m.start, now,
                        m.bytes);
    }
  }
  if (m.receive) {
    if (m.stashed) {  // buffered when its send completed
      copy_payload(m.receive->data,
                   BufferView(m.stash.data(), m.stash.size(), DType::kU8, &host_space()));
      m.stash = {};
    } else {
      copy_payload(m.receive->data, m.data);
    }
    take(m);
  } else if (!m.stashed) {
    stash(m);
  }
  m.waiters.wake_all(world_.fibers);
}

void Mailbox::stash(Message& m) {
  if (!moves_data(m.data)) return;
  m.stash.resize(static_cast<size_t>(m.bytes));
  copy_payload(BufferView(m.stash.data(), m.stash.size(), DType::kU8, &host_space()), m.data);
  m.stashed = true;
}

void Mailbox::buffered(Message& m) {
  // The sender may reuse its buffer once the send has completed: the payload is copied now.
  stash(m);
  m.send_done = true;
}

bool Mailbox::done(const Message& m) {
  return m.send_done;
}
bool Mailbox::done(const Receive& r) {
  return r.done;
}

namespace {

WaitReason send_reason(const Message& m) {
  return {WaitKind::kSend, m.key.dst, m.key.tag, m.key.group != 0};
}
WaitReason receive_reason(const Receive& r) {
  return {WaitKind::kReceive, r.key.src, r.key.tag, r.key.group != 0};
}

}  // namespace

// The waits are inlined into their callers (all in this file): a fiber resumed here returns through
// every frame between its switch and its body, each return mispredicted (the processor's return stack
// holds the engine's calls, not the fiber's), so a frame less is a misprediction less per message:
// the ring exchange at 64 and 1024 ranks 7 % and 6 % faster (seven and five alternated runs).
[[gnu::always_inline]] inline void Mailbox::wait(Message& m) {
  while (!m.send_done) {
    m.waiters.add(world_.fibers.current());
    world_.fibers.block(send_reason(m));
  }
}

[[gnu::always_inline]] inline void Mailbox::wait(Receive& r) {
  while (!r.done) {
    r.waiters.add(world_.fibers.current());
    world_.fibers.block(receive_reason(r));
  }
}

bool Mailbox::receive_done_or_wait(void* receive, Fibers::Fiber& f) {
  Receive& r = *static_cast<Receive*>(receive);
  if (r.done) return true;
  r.waiters.add(f);
  f.reason = receive_reason(r);
  return false;
}

[[gnu::always_inline]] inline void Mailbox::wait(Message& m, Receive& r) {
  while (!m.send_done) {
    m.waiters.add(world_.fibers.current());
    world_.fibers.block(send_reason(m), {&Mailbox::receive_done_or_wait, &r});
  }
  wait(r);
}

SimTransport::SimTransport(World& world, uint64_t group, Members members, int rank)
    : world_(world),
      group_(group),
      members_(std::move(members)),
      member_ranks_(members_ == nullptr ? nullptr : members_->data()),
      rank_(rank) {}

int SimTransport::size() const {
  return members_ == nullptr ? world_.topology.ranks() : static_cast<int>(members_->size());
}

int SimTransport::host_of(int rank) const {
  check_peer(rank, "host_of");
  return world_.topology.host_of(world_rank(rank));
}

void SimTransport::peer_out_of_range(int peer, const char* what) const {
  BAGUA_CHECK(peer >= 0 && peer < size(), std::string(what) + ": rank " + std::to_string(peer) +
                                              " outside a group of " + std::to_string(size()));
}

RequestPtr SimTransport::isend(const BufferView& data, int dst, Tag tag) {
  auto m = world_.mailbox.post_send(send_key(dst, tag), data);
  return RequestPtr(new (world_.mailbox.blocks()) SendRequest(world_.mailbox, std::move(m)));
}

void SimTransport::sendrecv(const BufferView& out, int dst, const BufferView& in, int src, Tag tag) {
  Mailbox& mailbox = world_.mailbox;
  const Ref<Receive> r = mailbox.post_receive(receive_key(src, tag), in);
  const Ref<Message> m = mailbox.post_send(send_key(dst, tag), out);
  mailbox.wait(*m, *r);
}

RequestPtr SimTransport::isend_after(Time delay, const BufferView& data, int dst, Tag tag) {
  const MatchKey key = send_key(dst, tag);
  BAGUA_CHECK(delay >= Time::zero(), "isend_after a delay of " + to_string(delay));
  auto m = world_.mailbox.post_send(key, data, delay);
  return RequestPtr(new (world_.mailbox.blocks()) SendRequest(world_.mailbox, std::move(m)));
}

RequestPtr SimTransport::irecv(const BufferView& data, int src, Tag tag) {
  auto r = world_.mailbox.post_receive(receive_key(src, tag), data);
  return RequestPtr(new (world_.mailbox.blocks()) ReceiveRequest(world_.mailbox, std::move(r)));
}

std::optional<LinkHint> SimTransport::link_hint() const {
  return link_hint_of(world_.spec);
}

void SimTransport::concurrently(std::span<const ConcurrentStream> streams) {
  Fibers& fibers = world_.fibers;
  std::map<int, std::unique_ptr<SimTransport>> spaces;
  for (const ConcurrentStream& stream : streams) {
    BAGUA_CHECK(stream.space >= 0, "concurrently: space " + std::to_string(stream.space));
    if (stream.space == 0 || spaces.contains(stream.space)) continue;
    const int marker[] = {-stream.space};  // no subgroup lists a negative rank
    spaces[stream.space] =
        std::make_unique<SimTransport>(world_, subgroup_id(group_, marker), members_, rank_);
  }
  auto transport_of = [&](int space) -> Transport& {
    return space == 0 ? static_cast<Transport&>(*this) : *spaces.at(space);
  };
  struct Join {
    size_t running = 0;
    WaitList waiters;
    std::exception_ptr error;
  } join;
  auto run = [&](const ConcurrentStream& stream) {
    try {
      stream.body(transport_of(stream.space));
    } catch (const FiberAbort&) {
      throw;
    } catch (...) {
      if (!join.error) join.error = std::current_exception();
    }
  };
  for (size_t i = 1; i < streams.size(); ++i) {
    ++join.running;
    fibers.spawn_child([&, i] {
      run(streams[i]);
      if (--join.running == 0) join.waiters.wake_all(fibers);
    });
  }
  if (!streams.empty()) run(streams[0]);
  while (join.running > 0) {
    join.waiters.add(fibers.current());
    fibers.block({WaitKind::kEvent});
  }
  if (join.error) std::rethrow_exception(join.error);
}

collectives::CollectiveGranularity SimTransport::collective_granularity() const {
  return world_.spec.collective_granularity;
}

void SimTransport::pause(Time d) {
  BAGUA_CHECK(d >= Time::zero(), "SimTransport::pause of " + to_string(d));
  if (d > Time::zero()) world_.fibers.sleep(d);
}

Time SimTransport::transfer_time(int src, int dst, Bytes bytes) const {
  check_peer(src, "transfer_time");
  check_peer(dst, "transfer_time");
  return lone_transfer_time(world_.spec, world_.topology, world_rank(src), world_rank(dst), bytes);
}

bool SimTransport::ordered_streams() const {
  return world_.spec.transport.ordered;
}

std::vector<double> SimTransport::sharing_factors(
    std::span<const std::pair<int, int>> transfers) const {
  const std::vector<Link>& links = world_.topology.links();
  std::vector<Route> routes;
  routes.reserve(transfers.size());
  std::map<int32_t, int> crossing;  // link -> the transfers on it
  for (const auto& [src, dst] : transfers) {
    check_peer(src, "sharing_factors");
    check_peer(dst, "sharing_factors");
    routes.push_back(world_.topology.route(world_rank(src), world_rank(dst)));
    for (const int32_t link : routes.back().links)
      ++crossing[link];
  }
  std::vector<double> factors;
  factors.reserve(transfers.size());
  for (const Route& route : routes) {
    double narrowest = 0;  // the route's least capacity, alone
    for (const int32_t link : route.links) {
      const double capacity = links[static_cast<size_t>(link)].capacity.bytes_per_second();
      narrowest = narrowest == 0 ? capacity : std::min(narrowest, capacity);
    }
    double shared = narrowest;  // its least capacity, shared
    for (const int32_t link : route.links)
      shared = std::min(shared, links[static_cast<size_t>(link)].capacity.bytes_per_second() /
                                    crossing[link]);
    factors.push_back(narrowest / shared);
  }
  return factors;
}

void SimTransport::start_together(Tag tag) {
  world_.meetings.meet(world_.fibers, group_, tag, rank_, size(), members_ != nullptr);
}

std::unique_ptr<Transport> SimTransport::make_subgroup(std::span<const int> ranks) {
  const int me = subgroup_position(*this, ranks);
  // Every rank of the subgroup builds it in turn (a gather of all P ranks: P hashes of P members),
  // and shares the list of the rank before it.
  World::LastSubgroup& last = world_.last_subgroup;
  bool same = last.id != 0 && last.parent == group_ && last.members->size() == ranks.size();
  for (size_t i = 0; same && i < ranks.size(); ++i)
    same = (*last.members)[i] == world_rank(ranks[i]);
  if (!same) {
    auto members = std::make_shared<std::vector<int>>(ranks.size());
    for (size_t i = 0; i < ranks.size(); ++i)
      (*members)[i] = world_rank(ranks[i]);
    last = {group_, members, subgroup_id(group_, *members)};
  }
  return std::make_unique<SimTransport>(world_, last.id, last.members, me);
}

}  // namespace bagua::netsim
