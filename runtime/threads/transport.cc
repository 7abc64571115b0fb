#include "runtime/threads/transport.h"

#include <cstring>

#include "core/check.h"
#include "core/ops.h"

namespace bagua::runtime::threads {

struct Mailbox::Slot {
  bool done = false;
  bool cancelled = false;  // its request was destroyed before a message arrived: never deliver
};

namespace {

class DoneRequest final : public Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class RecvRequest final : public Request {
 public:
  // `key` in world ranks: the receiving rank is key.dst, the peer key.src.
  RecvRequest(std::shared_ptr<Mailbox> mailbox, std::shared_ptr<Mailbox::Slot> slot,
              const Mailbox::Key& key)
      : mailbox_(std::move(mailbox)), slot_(std::move(slot)), key_(key) {}
  // A receive abandoned before completion (its rank is unwinding an exception) must never be written
  // into: its buffer may be gone.
  ~RecvRequest() override { mailbox_->cancel(*slot_); }
  RecvRequest(const RecvRequest&) = delete;
  RecvRequest& operator=(const RecvRequest&) = delete;
  bool test() override { return mailbox_->done(*slot_); }
  void wait() override {
    const Watchdog::Watch watched = watch(
        mailbox_->watchdog(), {.rank = key_.dst, .peer = key_.src, .what = "recv", .tag = key_.tag});
    mailbox_->wait(*slot_);
  }

 private:
  std::shared_ptr<Mailbox> mailbox_;
  std::shared_ptr<Mailbox::Slot> slot_;
  Mailbox::Key key_;
};

}  // namespace

void Mailbox::deliver(Slot& slot, const BufferView& into, const uint8_t* bytes, int64_t size,
                      bool meta) {
  BAGUA_CHECK(into.bytes().count() == size, "receive of " + std::to_string(into.bytes().count()) +
                                                " bytes matched a send of " + std::to_string(size) +
                                                " bytes");
  if (!meta && !into.is_meta() && size > 0) {
    if (into.is_host()) {
      std::memcpy(into.data(), bytes, static_cast<size_t>(size));
    } else {
      const std::vector<uint8_t> tmp(bytes, bytes + size);
      copy(into,
           BufferView(const_cast<uint8_t*>(tmp.data()), into.count(), into.dtype(), &host_space()));
    }
  }
  slot.done = true;
}

void Mailbox::post_send(const Key& key, const BufferView& data) {
  const bool meta = data.is_meta();
  std::vector<uint8_t> payload;
  if (!meta && data.count() > 0) {
    payload.resize(static_cast<size_t>(data.bytes().count()));
    if (data.is_host()) {
      std::memcpy(payload.data(), data.data(), payload.size());
    } else {
      copy(BufferView(payload.data(), data.count(), data.dtype(), &host_space()), data);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Queue& q = queues_[key];
  while (!q.receives.empty() && q.receives.front().first->cancelled)
    q.receives.pop_front();
  if (!q.receives.empty()) {
    auto [slot, into] = std::move(q.receives.front());
    q.receives.pop_front();
    deliver(*slot, into, payload.data(), data.bytes().count(), meta);
    cv_.notify_all();
    return;
  }
  q.messages.push_back(std::move(payload));
  q.message_bytes.push_back(meta ? -1 - data.bytes().count() : data.bytes().count());
}

std::shared_ptr<Mailbox::Slot> Mailbox::post_recv(const Key& key, const BufferView& data) {
  auto slot = std::make_shared<Slot>();
  std::lock_guard<std::mutex> lock(mu_);
  Queue& q = queues_[key];
  if (!q.messages.empty()) {
    std::vector<uint8_t> payload = std::move(q.messages.front());
    int64_t size = q.message_bytes.front();
    q.messages.pop_front();
    q.message_bytes.pop_front();
    const bool meta = size < 0;
    if (meta) size = -1 - size;
    deliver(*slot, data, payload.data(), size, meta);
    return slot;
  }
  q.receives.emplace_back(slot, data);
  return slot;
}

bool Mailbox::done(const Slot& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!abort_reason_.empty()) throw std::runtime_error(abort_reason_);
  return slot.done;
}

void Mailbox::wait(const Slot& slot) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return slot.done || !abort_reason_.empty(); });
  if (!slot.done) throw std::runtime_error(abort_reason_);
}

void Mailbox::cancel(Slot& slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!slot.done) slot.cancelled = true;
}

void Mailbox::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abort_reason_.empty()) abort_reason_ = why;
  }
  cv_.notify_all();
}

ThreadsTransport::ThreadsTransport(std::shared_ptr<Mailbox> mailbox, uint64_t group,
                                   std::vector<int> members, std::vector<int> hosts, int rank)
    : mailbox_(std::move(mailbox)),
      group_(group),
      members_(std::move(members)),
      hosts_(std::move(hosts)),
      rank_(rank) {}

int ThreadsTransport::host_of(int rank) const {
  check_peer(rank, "host_of");
  return hosts_[static_cast<size_t>(rank)];
}

void ThreadsTransport::check_peer(int peer, const char* what) const {
  BAGUA_CHECK(peer >= 0 && peer < size(), std::string(what) + ": rank " + std::to_string(peer) +
                                              " outside a group of " + std::to_string(size()));
}

RequestPtr ThreadsTransport::isend(const BufferView& data, int dst, Tag tag) {
  check_peer(dst, "isend");
  mailbox_->post_send(
      {group_, members_[static_cast<size_t>(rank_)], members_[static_cast<size_t>(dst)], tag}, data);
  return std::make_unique<DoneRequest>();
}

RequestPtr ThreadsTransport::irecv(const BufferView& data, int src, Tag tag) {
  check_peer(src, "irecv");
  const Mailbox::Key key{group_, members_[static_cast<size_t>(src)],
                         members_[static_cast<size_t>(rank_)], tag};
  auto slot = mailbox_->post_recv(key, data);
  return std::make_unique<RecvRequest>(mailbox_, std::move(slot), key);
}

std::unique_ptr<Transport> ThreadsTransport::make_subgroup(std::span<const int> ranks) {
  const int me = subgroup_position(*this, ranks);
  std::vector<int> members;
  std::vector<int> hosts;
  for (int r : ranks) {
    members.push_back(members_[static_cast<size_t>(r)]);
    hosts.push_back(hosts_[static_cast<size_t>(r)]);
  }
  const uint64_t id = subgroup_id(group_, members);
  return std::make_unique<ThreadsTransport>(mailbox_, id, std::move(members), std::move(hosts), me);
}

}  // namespace bagua::runtime::threads
