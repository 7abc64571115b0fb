// In-process transport: every rank is a thread of one process, messages are copies through a shared
// mailbox. A real runtime (real time, real concurrency) without mpirun — for tests under sanitizers and
// for quick real runs on one machine.
//
// Matching: a message is keyed by (group, source, destination, tag); messages with the same key are
// matched in posting order. Sends are eager (the data is copied at isend, which completes at once), so
// no pattern of sends and receives can deadlock on buffering.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/transport.h"
#include "runtime/common/watchdog.h"

namespace bagua::runtime::threads {

// Shared by every rank of a world.
class Mailbox {
 public:
  // Receives are watched by `watchdog` (may be null: never), which must outlive their waits.
  explicit Mailbox(Watchdog* watchdog = nullptr) : watchdog_(watchdog) {}
  Watchdog* watchdog() const { return watchdog_; }

  struct Key {
    uint64_t group;
    int src;  // world ranks
    int dst;
    Tag tag;
    auto operator<=>(const Key&) const = default;
  };
  struct Slot;  // one posted receive or one buffered message

  // Posts a message (copied); completes a matching posted receive if there is one.
  void post_send(const Key& key, const BufferView& data);
  // Posts a receive; the returned slot completes when a message has been copied into `data`.
  std::shared_ptr<Slot> post_recv(const Key& key, const BufferView& data);
  bool done(const Slot& slot);
  // The receive's request is gone: a later message must not be delivered into its buffer.
  void cancel(Slot& slot);
  void wait(const Slot& slot);
  // Wakes every waiter with an error: a rank failed, nobody should wait forever.
  void abort(const std::string& why);

 private:
  struct Queue {
    std::deque<std::vector<uint8_t>> messages;  // sent, not yet received (meta: empty payload)
    std::deque<std::pair<std::shared_ptr<Slot>, BufferView>> receives;  // posted, not yet matched
    std::deque<int64_t> message_bytes;
  };
  void deliver(Slot& slot, const BufferView& into, const uint8_t* bytes, int64_t size, bool meta);

  Watchdog* watchdog_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Queue> queues_;
  std::string abort_reason_;
};

class ThreadsTransport final : public Transport {
 public:
  // `members[i]` is the world rank of group rank i; `hosts[i]` its host.
  ThreadsTransport(std::shared_ptr<Mailbox> mailbox, uint64_t group, std::vector<int> members,
                   std::vector<int> hosts, int rank);
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int host_of(int rank) const override;
  RequestPtr isend(const BufferView& data, int dst, Tag tag) override;
  RequestPtr irecv(const BufferView& data, int src, Tag tag) override;
  std::unique_ptr<Transport> make_subgroup(std::span<const int> ranks) override;

 private:
  void check_peer(int peer, const char* what) const;
  std::shared_ptr<Mailbox> mailbox_;
  uint64_t group_;
  std::vector<int> members_;
  std::vector<int> hosts_;
  int rank_;
};

}  // namespace bagua::runtime::threads
