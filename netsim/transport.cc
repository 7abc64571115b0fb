#include "netsim/transport.h"

#include <set>

#include "core/check.h"
#include "core/ops.h"
#include "netsim/world.h"

namespace bagua::netsim {

struct Message {
  Mailbox* mailbox;
  MatchKey key;
  BufferView data;  // the send buffer
  int64_t bytes = 0;
  Time start;
  bool arrived = false;  // the flow completed: the send is done
  bool stashed = false;
  std::vector<uint8_t> stash;
  std::shared_ptr<Receive> receive;  // matched, not yet delivered
  WaitList waiters;
  std::shared_ptr<Message> next;  // in its key's queue of unmatched sends
};

struct Receive {
  MatchKey key;
  BufferView data;
  bool done = false;
  WaitList waiters;
  std::shared_ptr<Receive> next;  // in its key's queue of unmatched receives
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

class SendRequest final : public Request {
 public:
  SendRequest(Mailbox& mailbox, std::shared_ptr<Message> m) : mailbox_(mailbox), m_(std::move(m)) {}
  bool test() override { return Mailbox::done(*m_); }
  void wait() override { mailbox_.wait(*m_); }

 private:
  Mailbox& mailbox_;
  std::shared_ptr<Message> m_;
};

class ReceiveRequest final : public Request {
 public:
  ReceiveRequest(Mailbox& mailbox, std::shared_ptr<Receive> r) : mailbox_(mailbox), r_(std::move(r)) {}
  bool test() override { return Mailbox::done(*r_); }
  void wait() override { mailbox_.wait(*r_); }

 private:
  Mailbox& mailbox_;
  std::shared_ptr<Receive> r_;
};

}  // namespace

void Mailbox::check_sizes(const Message& m, const Receive& r) {
  BAGUA_CHECK(r.data.bytes().count() == m.bytes,
              "receive of " + std::to_string(r.data.bytes().count()) + " bytes at rank " +
                  std::to_string(r.key.dst) + " matched a send of " + std::to_string(m.bytes) +
                  " bytes from rank " + std::to_string(m.key.src) + " (tag " +
                  std::to_string(m.key.tag) + ")");
}

std::shared_ptr<Message> Mailbox::post_send(const MatchKey& key, const BufferView& data) {
  auto m = std::make_shared<Message>();
  m->mailbox = this;
  m->key = key;
  m->data = data;
  m->bytes = data.bytes().count();
  m->start = world_.engine.now();

  auto it = queues_.try_emplace(key).first;
  Queue& q = it->second;
  if (!q.receives.empty()) {
    check_sizes(*m, *q.receives.head);
    m->receive = q.receives.pop();
  } else {
    q.sends.push(m);
  }
  if (q.sends.empty() && q.receives.empty()) queues_.erase(it);

  if (key.src == key.dst) {  // a local copy, no network
    arrive(*m);
    return m;
  }
  world_.comm_begin(key.src);
  world_.comm_begin(key.dst);
  // The flow's completion owns a reference: a message on the wire lives until it arrives or the run is
  // torn down (the network drops its flows).
  world_.network.start(world_.topology.route(key.src, key.dst), Bytes(m->bytes),
                       [m] { m->mailbox->arrive(*m); });
  return m;
}

std::shared_ptr<Receive> Mailbox::post_receive(const MatchKey& key, const BufferView& data) {
  auto r = std::make_shared<Receive>();
  r->key = key;
  r->data = data;

  auto it = queues_.try_emplace(key).first;
  Queue& q = it->second;
  if (!q.sends.empty()) {
    std::shared_ptr<Message> m = q.sends.pop();
    check_sizes(*m, *r);
    if (m->arrived) {  // arrived before the receive was posted: copy from the stash now
      if (m->stashed) {
        copy_payload(data, BufferView(m->stash.data(), m->stash.size(), DType::kU8, &host_space()));
        m->stash = {};  // the sender's request may keep the message alive; not its copy
      }
      r->done = true;
    } else {
      m->receive = r;
    }
  } else {
    q.receives.push(r);
  }
  if (q.sends.empty() && q.receives.empty()) queues_.erase(it);
  return r;
}

void Mailbox::arrive(Message& m) {
  m.arrived = true;
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
    copy_payload(m.receive->data, m.data);
    m.receive->done = true;
    m.receive->waiters.wake_all(world_.fibers);
    m.receive.reset();
  } else if (moves_data(m.data)) {
    m.stash.resize(static_cast<size_t>(m.bytes));
    copy_payload(BufferView(m.stash.data(), m.stash.size(), DType::kU8, &host_space()), m.data);
    m.stashed = true;
  }
  m.waiters.wake_all(world_.fibers);
}

bool Mailbox::done(const Message& m) {
  return m.arrived;
}
bool Mailbox::done(const Receive& r) {
  return r.done;
}

void Mailbox::wait(Message& m) {
  while (!m.arrived) {
    m.waiters.add(world_.fibers.current());
    world_.fibers.block({WaitKind::kSend, m.key.dst, m.key.tag, m.key.group != 0});
  }
}

void Mailbox::wait(Receive& r) {
  while (!r.done) {
    r.waiters.add(world_.fibers.current());
    world_.fibers.block({WaitKind::kReceive, r.key.src, r.key.tag, r.key.group != 0});
  }
}

SimTransport::SimTransport(World& world, uint64_t group, std::vector<int> members, int rank)
    : world_(world), group_(group), members_(std::move(members)), rank_(rank) {}

int SimTransport::size() const {
  return members_.empty() ? world_.topology.ranks() : static_cast<int>(members_.size());
}

int SimTransport::host_of(int rank) const {
  check_peer(rank, "host_of");
  return world_.topology.host_of(world_rank(rank));
}

void SimTransport::check_peer(int peer, const char* what) const {
  BAGUA_CHECK(peer >= 0 && peer < size(), std::string(what) + ": rank " + std::to_string(peer) +
                                              " outside a group of " + std::to_string(size()));
}

RequestPtr SimTransport::isend(const BufferView& data, int dst, Tag tag) {
  check_peer(dst, "isend");
  auto m = world_.mailbox.post_send({group_, world_rank(rank_), world_rank(dst), tag}, data);
  return std::make_unique<SendRequest>(world_.mailbox, std::move(m));
}

RequestPtr SimTransport::irecv(const BufferView& data, int src, Tag tag) {
  check_peer(src, "irecv");
  auto r = world_.mailbox.post_receive({group_, world_rank(src), world_rank(rank_), tag}, data);
  return std::make_unique<ReceiveRequest>(world_.mailbox, std::move(r));
}

std::unique_ptr<Transport> SimTransport::subgroup(std::span<const int> ranks) {
  std::vector<int> members;
  std::set<int> seen;
  int me = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    check_peer(ranks[i], "subgroup");
    BAGUA_CHECK(seen.insert(ranks[i]).second,
                "subgroup lists rank " + std::to_string(ranks[i]) + " twice");
    if (ranks[i] == rank_) me = static_cast<int>(i);
    members.push_back(world_rank(ranks[i]));
  }
  BAGUA_CHECK(me >= 0, "rank " + std::to_string(rank_) + " creates a subgroup it is not in");
  const uint64_t id = subgroup_id(group_, members);
  return std::make_unique<SimTransport>(world_, id, std::move(members), me);
}

uint64_t subgroup_id(uint64_t parent, std::span<const int> world_members) {
  uint64_t h = 1469598103934665603ull ^ parent;  // FNV-1a 64-bit offset basis
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;  // FNV-1a 64-bit prime
    }
  };
  mix(world_members.size());
  for (int m : world_members)
    mix(static_cast<uint64_t>(static_cast<uint32_t>(m)));
  if (h == 0) h = 1;  // 0 is the world group
  return h;
}

}  // namespace bagua::netsim
