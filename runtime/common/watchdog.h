// The watchdog of the real runtimes: a wait of a rank (a receive, a send, a native collective) that
// lasts longer than a limit ends the run, with one line that names the rank, the peer it waits for,
// the operation and the bucket. Without it, a stopped or lost rank hangs every other rank forever.
//
// After Bagua's comm-op watchdog: BaguaCommBackend::new in BaguaSys/bagua
// rust/bagua-core/bagua-core-internal/src/lib.rs starts a `comm_monitor` thread that waits
// `recv_timeout(Duration::from_secs(300))` for each scheduled comm op to finish and panics with
// "comm op has not finished for 5 min" otherwise. kDefaultLimit is that 300 s.
//
// Terms:
//   limit    how long one wait may take
//   wait     one blocking wait of a rank's stream, watched from start to end: the rank (world
//            numbering), the peer it waits for (world numbering; kEveryPeer for a wait on a whole
//            group, a native collective or a barrier), what it waits for ("recv", "send",
//            "MPI_Allreduce"), the tag, and the waiting thread's operation (core/operation.h), taken
//            when the wait starts
//   expiry   a wait older than the limit: the watchdog's thread calls `expire` once, with the wait's
//            line, and stops watching (expire ends the run: MPI_Abort, or aborting every wait)
//   period   how often the thread looks: a tenth of the limit, between 1 ms and 1 s, so that an expiry
//            comes at most a period late
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/transport.h"
#include "core/units.h"

namespace bagua::runtime {

class Watchdog {
 public:
  static constexpr Time kDefaultLimit =
      Time::ns(300 * 1000000000LL);  // Bagua's comm_monitor (see above)
  static constexpr int kEveryPeer = -1;

  struct Wait {
    int rank = 0;
    int peer = kEveryPeer;
    const char* what = "";
    Tag tag = 0;
    bool has_tag = true;              // false for waits that carry none (a native collective)
    const char* operation = nullptr;  // core/operation.h's label when the wait started
  };

  using Expire = std::function<void(const std::string& line)>;

  // ConfigError unless limit > 0.
  Watchdog(Time limit, Expire expire);
  ~Watchdog();  // stops the thread (an expiry in progress finishes first)
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // A wait, watched while the Watch lives.
  class Watch {
   public:
    Watch() = default;
    Watch(Watch&& o) noexcept : watchdog_(o.watchdog_), id_(o.id_) { o.watchdog_ = nullptr; }
    Watch& operator=(Watch&&) = delete;
    Watch(const Watch&) = delete;
    ~Watch();

   private:
    friend class Watchdog;
    Watch(Watchdog* watchdog, uint64_t id) : watchdog_(watchdog), id_(id) {}
    Watchdog* watchdog_ = nullptr;
    uint64_t id_ = 0;
  };

  // Starts watching `wait` (its operation is filled in from this thread's label).
  Watch watch(Wait wait);
  Time limit() const { return limit_; }

  // The line of a wait that expired after `waited`, e.g.
  //   watchdog: rank 2 waited 5 s for rank 3 (limit 5 s): recv in ring allreduce, gradient bucket 0
  //   (tag 1048576)
  static std::string line(const Wait& wait, Time waited, Time limit);

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    Wait wait;
    Clock::time_point start;
  };
  void loop();
  void unwatch(uint64_t id);

  Time limit_;
  Expire expire_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Entry> waits_;  // by id: ids grow, so the first entry is the oldest wait
  uint64_t next_id_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// Watches `wait` on `watchdog`, or nothing when it is null.
inline Watchdog::Watch watch(Watchdog* watchdog, const Watchdog::Wait& wait) {
  return watchdog ? watchdog->watch(wait) : Watchdog::Watch();
}

}  // namespace bagua::runtime
