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
//
// One line per job (ExpiryReport below). In a job every rank has its own watchdog; when one rank stops
// (or dies under mpirun --enable-recovery), the waits of every other rank expire within about a period
// of one another, each in its own process. They settle which one line is printed through files in a
// folder that every rank of one host sees: Open MPI's session folder of the job
// (OMPI_MCA_orte_jobfam_session_dir, removed by mpirun when the job ends), else the temporary folder;
// the files are named by the job's id (OMPI_MCA_ess_base_jobid, else PMIX_NAMESPACE).
//
// Terms (ExpiryReport):
//   record   <folder>/bagua-watchdog-<job>.<rank>: the peer and the line of a rank's expired wait,
//            written (whole, by a rename) by every rank whose wait expired
//   window   how long a rank waits after writing its record for the others' records: two periods (the
//            waits that one culprit blocks expire within one period of the first)
//   culprit  a rank that waits for nothing recorded: it stopped, died, or is still busy elsewhere
//   report   the record of the lowest rank that waits directly for a culprit (its peer has no record);
//            when no record does (every peer waits itself, or the waits are on whole groups), the
//            record of the lowest rank
//   claim    <folder>/bagua-watchdog-<job>.claim, created exclusively (O_EXCL): the first rank whose
//            window ends claims it and prints the report, whichever rank's it is; every other rank
//            ends the same way (MPI_Abort, exit status 1) without a line
//
// On one host this prints exactly one watchdog line per job. Across hosts each host settles its own:
// the records of another host are not seen, so every host with an expired wait prints one line (the
// job ends at the first MPI_Abort, so a host whose waits expire later prints none), and a peer on
// another host counts as a culprit. Where the folder cannot be written, each rank prints its own line.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
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
  // How often the watchdog looks for a wait past `limit` (see the terms above).
  static Time period(Time limit);
  // The wait that expired; set before `expire` is called, and valid from then on.
  const Wait& expired() const { return expired_; }

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
  Wait expired_;
  std::thread thread_;
};

// Which process of a job prints the watchdog's line (see "One line per job" above).
class ExpiryReport {
 public:
  // Records in `folder`, named by `job`; each rank waits `window` for the others' records.
  ExpiryReport(std::filesystem::path folder, std::string job, Time window);
  // The report of this process's Open MPI job (folder and job from its environment), or nullopt when
  // this process is not one of such a job.
  static std::optional<ExpiryReport> of_job(Time window);

  // Records this rank's expired wait (`rank` and `peer` in world numbering, `line` its line), waits the
  // window, and returns the line this process must print, or nullopt when another process of the job
  // prints the job's line. Without a writable folder: `line` itself.
  std::optional<std::string> settle(int rank, int peer, const std::string& line) const;

 private:
  std::filesystem::path folder_;
  std::string job_;
  Time window_;
};

// Watches `wait` on `watchdog`, or nothing when it is null.
inline Watchdog::Watch watch(Watchdog* watchdog, const Watchdog::Wait& wait) {
  return watchdog ? watchdog->watch(wait) : Watchdog::Watch();
}

}  // namespace bagua::runtime
