// The simulated Transport: point-to-point messages as flows of the network model.
//
// Terms:
//   key        (group, source, destination, tag), source and destination as world ranks; messages with
//              the same key are matched first-posted first-matched, in both directions
//   message    one isend. With the default transport model (SendCompletion::kArrival) its flow starts
//              when isend is called (the receive need not be posted) and the send completes when the
//              flow has completed (its last byte arrived): the alpha-beta model
//   receive    one irecv: it completes at max(posted, arrival), plus the receiver's overhead o
//   eager      (kEagerRendezvous) a message of at most the eager limit (the intra-host one within a
//              host): its flow starts at once and the send completes at once, buffered, as Open MPI's
//              ob1 does with its BTL's eager limit
//   rendezvous (kEagerRendezvous) a larger message: a request-to-send reaches the receiver after one
//              route latency; once the receive is posted too, a clear-to-send reaches the sender after
//              one route latency and the flow starts; the send completes when the flow has completed
//   slot       (kCreditSlots) one of `slots` credits of a (group, source, destination) connection, as
//              NCCL's NCCL_STEPS buffer slots: a message takes one (waiting first-come first-served
//              while all are taken), then its flow starts; a message of at most slot_bytes completes
//              its send once it holds the slot (buffered), a larger one when its flow has completed;
//              the slot is freed when the receive completes (the receiver has taken the message)
//   ordered    (TransportModel::ordered, with any completion rule) every flow from one world rank to
//              another belongs to the connection (source, destination) of the network model
//              (network.h): a message's bytes move only after those of the previous flow to that peer
//              have landed, in the order the flows started; request-to-send and clear-to-send are
//              not flows and do not queue
//   o, g       LogGP's overhead and gap (ModelFactors), for messages between hosts (the network
//              transport's CPU work; NVLink / shared-memory messages within a host pay neither): a
//              message's first departure (its flow, or its
//              request-to-send) is o after its injection began; one rank begins injections at least
//              max(o, g) apart, in isend order (a message waiting for a slot is injected once it has
//              one)
//   stash      a copy of the payload taken when the send completes before the arrival (buffered), or
//              else at arrival when no receive is posted yet; copied into the receive buffer at
//              arrival or when the receive is posted. Otherwise a matched receive gets the payload
//              straight from the send buffer at arrival (the sender may not touch it before its send
//              completes, as in MPI)
//
// Meta buffers move no data and cost their full size. A receive must be exactly as large as the send it
// matches. A rank sending to itself completes at once (a local copy, no network).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/collectives/nccl_flow.h"
#include "core/transport.h"
#include "netsim/fibers.h"
#include "netsim/flat_map.h"
#include "netsim/recycler.h"
#include "netsim/topology.h"

namespace bagua::netsim {

class World;

struct MatchKey {
  uint64_t group;
  int src;  // world ranks
  int dst;
  Tag tag;
  MatchKey() = default;
  MatchKey(uint64_t g, int s, int d, Tag t) : group(g), src(s), dst(d), tag(t) {}
  // Copied member by member, as Callback (engine.h), and the ranks as opaque values (the empty asm
  // statements), so that no pass merges their two 4-byte loads into one. A key is built a store per
  // member just before it is copied (sendrecv builds two, post_send and post_receive copy them into
  // their records); copied as a whole, or its ranks as one 8-byte load, the loads span several of
  // those stores, which the processor cannot forward while they are in flight: it waits until they,
  // and every store before them, have reached the cache (a store-forwarding stall: a tenth of
  // sendrecv's time under perf on an AMD EPYC, a fifth of post_send's and post_receive's on an Intel
  // Xeon). Loads as wide as the stores they read take their bytes from them at once.
  MatchKey(const MatchKey& k) : group(k.group), src(opaque(k.src)), dst(opaque(k.dst)), tag(k.tag) {}
  MatchKey& operator=(const MatchKey& k) {
    group = k.group;
    src = opaque(k.src);
    dst = opaque(k.dst);
    tag = k.tag;
    return *this;
  }
  auto operator<=>(const MatchKey&) const = default;

 private:
  static int opaque(int rank) {
    asm("" : "+r"(rank));
    return rank;
  }
};

struct Message;
struct Receive;

// A counted reference to a Message or Receive record, which counts its references itself (`refs`):
// a plain integer, since a simulation is single-threaded (std::shared_ptr counts atomically once the
// process has a second thread, as `bagua run` has: a locked instruction per copy and per drop). The
// last reference gives the record back to its mailbox's BlockLists.
template <class T>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T* p) noexcept : p_(p) {
    if (p_ != nullptr) ++p_->refs;
  }
  Ref(const Ref& other) noexcept : Ref(other.p_) {}
  Ref(Ref&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  Ref& operator=(Ref other) noexcept {
    std::swap(p_, other.p_);
    return *this;
  }
  // Always inline: GCC otherwise left some drops (a moved-from Ref's among them) out of line, a call
  // each (the 1024-rank ring: 0.6 % of its instructions).
  [[gnu::always_inline]] ~Ref() {
    if (p_ != nullptr && --p_->refs == 0) T::destroy(p_);
  }
  T* get() const { return p_; }
  T& operator*() const { return *p_; }
  T* operator->() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

class Mailbox {
 public:
  explicit Mailbox(World& world);
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  // `delay`: the message is injected (takes its credit slot first) that long after the call.
  Ref<Message> post_send(const MatchKey& key, const BufferView& data, Time delay = Time::zero());
  Ref<Receive> post_receive(const MatchKey& key, const BufferView& data);
  // Blocks the calling fiber until the operation completes.
  void wait(Message& m);
  void wait(Receive& r);
  // wait(m), then wait(r) (Transport::sendrecv's order), where a receive still pending when the send
  // completes keeps the fiber blocked without a switch into it and back (Fibers::Gate): one switch
  // per step of a ring whose sends land before its receives (a host's fast links feeding a slow one).
  void wait(Message& m, Receive& r);
  static bool done(const Message& m);
  static bool done(const Receive& r);
  // Recycled memory for the records of messages and receives and for requests.
  BlockLists& blocks() { return *blocks_; }

 private:
  // A first-in first-out list threaded through the elements' own `next` (no allocation of its own).
  template <class T>
  struct Fifo {
    Ref<T> head;
    T* tail = nullptr;
    bool empty() const { return !head; }
    void push(Ref<T> x) {
      T* raw = x.get();
      if (tail != nullptr)
        tail->next = std::move(x);
      else
        head = std::move(x);
      tail = raw;
    }
    Ref<T> pop() {
      Ref<T> x = std::move(head);
      head = std::move(x->next);
      if (!head) tail = nullptr;
      return x;
    }
  };
  struct Queue {
    Fifo<Message> sends;     // posted, not yet matched
    Fifo<Receive> receives;  // posted, not yet matched
  };
  static void arrive_event(void* mailbox, uint64_t parked);
  // The gate of wait(m, r): true when receive `r` is done, else `f` waits for it, as wait(r) would.
  static bool receive_done_or_wait(void* r, Fibers::Fiber& f);
  inline void arrive(Message& m);
  // The life of a message between isend and its arrival; each step as above. The `inline` steps
  // here and below are defined (and used) in transport.cc only.
  inline void inject(const Ref<Message>& m);
  bool between_hosts(const MatchKey& key) const;
  inline void depart(const Ref<Message>& m);
  void request_arrived(const Ref<Message>& m);
  void clear_to_send(const Ref<Message>& m);
  void start_flow(const Ref<Message>& m);
  // Copies the payload of `m` into its stash (nothing for meta buffers).
  static void stash(Message& m);
  // The send of `m` completes before its arrival (eager, or in a credit slot): its payload is
  // stashed, since the sender may now reuse the buffer.
  void buffered(Message& m);
  // The matched receive of `m` (arrived) is taken, after the receiver's overhead.
  inline void take(Message& m);
  inline void complete_receive(Message& m);
  // The credit slot of `m` (taken) goes to its connection's next waiting send, if any.
  void free_slot(Message& m);
  static void inject_event(void* mailbox, uint64_t parked);
  static void depart_event(void* mailbox, uint64_t parked);
  static void request_arrived_event(void* mailbox, uint64_t parked);
  static void start_flow_event(void* mailbox, uint64_t parked);
  static void receive_taken_event(void* mailbox, uint64_t parked);
  // A message referred to by a scheduled event (or by its flow, until it arrives), by index: parked_
  // owns it until the event runs (or the run is torn down).
  inline uint64_t park(Ref<Message> m);
  inline Ref<Message> unpark(uint64_t index);
  static void check_sizes(const Message& m, const Receive& r);  // and its error, out of line:
  [[noreturn]] static void sizes_differ(const Message& m, const Receive& r);

  struct KeyHash {
    size_t operator()(const MatchKey& k) const {
      uint64_t h = k.group * 0x9e3779b97f4a7c15ull;
      h ^= (static_cast<uint64_t>(static_cast<uint32_t>(k.src)) << 32 | static_cast<uint32_t>(k.dst)) +
           0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h ^= static_cast<uint64_t>(k.tag) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };

  // The queue of `key` (an index into queues_), made if there is none. The last one of its
  // destination inline (two calls a message, each a frame of its own when out of line: 1.4 % of the
  // 1024-rank ring's instructions), the rest out of line.
  uint32_t queue_of(const MatchKey& key) {
    const LastQueue& last = last_queue_[static_cast<size_t>(key.dst)];
    return last.key == key ? last.index : queue_of_slow(key);
  }
  // By value, as credits_of: post_send and post_receive keep their copy of the key in registers,
  // which a reference would make them store first.
  [[gnu::noinline]] uint32_t queue_of_slow(MatchKey key);
  // The route from world rank `src` to `dst` (src != dst), from the cache of `src`'s last route.
  inline const Route& route(int src, int dst);

  // A connection's credit slots (kCreditSlots), keyed by (group, source, destination, 0).
  struct Credits {
    int in_use = 0;
    std::deque<Ref<Message>> waiting;  // for a slot, first-come first-served
  };
  // The credits of the connection of `key` (an index into credits_), made if there are none; the
  // last one of each source rank is remembered (a rank's messages go to the same few peers).
  uint32_t credits_of(MatchKey key);
  // Per destination world rank: the key whose queue it last looked up, and that queue. A rank's
  // sends to one peer and that peer's receives from it share a key (every step of a ring, say), so
  // most lookups end here, at an entry of their destination's, without hashing. Cleared when the
  // table is swept (queue indices are freed there).
  struct LastQueue {
    MatchKey key{~uint64_t{0}, -1, -1, 0};  // matches no key
    uint32_t index = 0;
  };
  // Per source world rank: the destination of its last flow and that route (a rank sends to the same
  // few peers over and over).
  struct LastRoute {
    int dst = -1;
    Route route;
  };

  World& world_;
  BlockLists::Owned blocks_;  // for the Message and Receive records
  std::vector<Ref<Message>> parked_;
  std::vector<uint64_t> free_parked_;
  // The connections' credits, by index; a message that takes a slot (or waits for one) keeps its
  // connection's index. Looked up in a hash table, not a std::map: a tree walk per message and per
  // receive was about a tenth of the paper's VGG16 bandwidth sweep's time (perf; 55.8 -> 49.5 s of
  // CPU without it). Never iterated.
  FlatMap<MatchKey, uint32_t, KeyHash> credits_index_;
  std::vector<Credits> credits_;
  std::vector<LastQueue> last_credits_;  // per source world rank
  std::vector<Time> next_injection_;  // per world rank: the earliest its next injection may begin
  std::vector<LastQueue> last_queue_;
  std::vector<LastRoute> last_route_;
  // The keys that have had a queue since the last sweep: a key used again (every step of a collective
  // uses the same few keys) finds its queue without inserting anything. Once the table has grown to
  // sweep_at_ keys, the keys whose queues are empty are dropped (an absent key and an empty queue match
  // alike, so dropping them changes no match); the table is otherwise only looked up and inserted
  // into, never iterated: its order cannot leak into a run.
  FlatMap<MatchKey, uint32_t, KeyHash> queue_index_;
  std::vector<Queue> queues_;  // by index; those on free_queues_ are empty
  std::vector<uint32_t> free_queues_;
  size_t sweep_at_ = kMinSweep;
  static constexpr size_t kMinSweep = 4096;
};

// FlowCapable: NCCL's collectives at the cluster's collective_granularity (slice unless the cluster
// asks for flow), pause as the fiber's sleep, transfer_time as lone_transfer_time, and ordered_streams
// as the cluster's transport.ordered, sharing_factors from the topology's routes, start_together as
// a meeting of the group's fibers (World::meetings) at no cost in time. DelayedSend: NCCL's per-step protocol work before a message
// leaves (core/collectives/nccl.h, StepLatency).
class SimTransport final : public Transport,
                           public collectives::FlowCapable,
                           public collectives::DelayedSend {
 public:
  // `(*members)[i]` is the world rank of group rank i; null for the world group (identity). Shared:
  // every rank of a subgroup holds the same list (a results gather of P ranks builds P subgroups of
  // all P, which as copies of their own took P^2 ints: 64 MiB at 4096 ranks).
  using Members = std::shared_ptr<const std::vector<int>>;
  SimTransport(World& world, uint64_t group, Members members, int rank);
  int rank() const override { return rank_; }
  int size() const override;
  int host_of(int rank) const override;
  RequestPtr isend(const BufferView& data, int dst, Tag tag) override;
  RequestPtr irecv(const BufferView& data, int src, Tag tag) override;
  // Transport::sendrecv's steps in its order, on the mailbox's records without two requests around
  // them (every step of a ring: a fifth of a message's cost in the simulator's ring benchmark).
  void sendrecv(const BufferView& out, int dst, const BufferView& in, int src, Tag tag) override;
  // DelayedSend: the message is injected `delay` after the call (Mailbox::post_send).
  RequestPtr isend_after(Time delay, const BufferView& data, int dst, Tag tag) override;
  std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) override;
  std::optional<LinkHint> link_hint() const override;
  // Each stream but the first on a fiber of its own (Fibers::spawn_child), the first on the calling
  // one; space k > 0 a transport of this group whose group id is derived from this one's and k (as a
  // subgroup's is from its members), so that its messages, and its credit slots, are its own.
  void concurrently(std::span<const ConcurrentStream> streams) override;
  collectives::CollectiveGranularity collective_granularity() const override;
  void pause(Time d) override;
  Time transfer_time(int src, int dst, Bytes bytes) const override;
  bool ordered_streams() const override;
  // Each transfer's route from the topology; a link's capacity split evenly among the transfers on it.
  std::vector<double> sharing_factors(std::span<const std::pair<int, int>> transfers) const override;
  // A meeting of the group's ranks in World::meetings.
  void start_together(Tag tag) override;
  // native_allreduce: not offered (the default returns false), collectives run the reference algorithm.

 private:
  int world_rank(int rank) const { return members_ == nullptr ? rank : member_ranks_[rank]; }
  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size()) peer_out_of_range(peer, what);
  }
  void peer_out_of_range(int peer, const char* what) const;  // check_peer's error
  // The mailbox's key of a message from this rank to group rank `dst` (checked), and of one from `src`
  // to this rank.
  MatchKey send_key(int dst, Tag tag) const {
    check_peer(dst, "isend");
    return {group_, world_rank(rank_), world_rank(dst), tag};
  }
  MatchKey receive_key(int src, Tag tag) const {
    check_peer(src, "irecv");
    return {group_, world_rank(src), world_rank(rank_), tag};
  }

  World& world_;
  uint64_t group_;
  Members members_;
  const int* member_ranks_;  // members_->data(), read once per message
  int rank_;
};

}  // namespace bagua::netsim
