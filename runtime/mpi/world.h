// A world of ranks as Open MPI processes: this process is one rank of the job mpirun started (a job
// World, core/world.h).
//
// Launch with mpirun, one process per rank, e.g.
//   mpirun -np 4 bagua run CONFIG.json
// (as root add --allow-run-as-root; with more ranks than cores add --oversubscribe).
//
// One MpiWorld per process: it initializes MPI (MPI_THREAD_MULTIPLE, so that a rank's compute and
// communication streams may both use the transport) and finalizes it on destruction; MPI cannot be
// initialized twice in one process, so run() may be called any number of times on the same world
// instead. If MPI was already initialized by someone else, the world uses it and leaves finalizing to
// them.
#pragma once

#include <functional>
#include <memory>

#include "core/context.h"
#include "core/units.h"
#include "core/world.h"
#include "runtime/common/watchdog.h"
#include "runtime/mpi/abort.h"

namespace bagua::runtime::mpi {

class MpiTransport;

class MpiWorld final : public World {
 public:
  // Initializes MPI (collective over every process of the job). Rank r's host is r / ranks_per_host
  // when ranks_per_host > 0 (one machine emulating several hosts), otherwise the node MPI placed it on.
  // Throws ConfigError if the MPI library cannot provide MPI_THREAD_MULTIPLE or MPI was finalized.
  //
  // Watchdog (runtime/common/watchdog.h): a wait of this rank's transport (and its subgroups') or the
  // barrier at start that lasts longer than `watchdog` prints the watchdog's line on stderr and ends
  // the job (MPI_Abort, so that mpirun ends every other rank too; exit status 1); of all the ranks of
  // one host whose waits expire, one prints its line (ExpiryReport).
  MpiWorld(int* argc, char*** argv, int ranks_per_host = 0, Time watchdog = Watchdog::kDefaultLimit);
  ~MpiWorld();  // frees the context's communicators, then finalizes MPI
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  // This process's rank: its transport (over MPI_COMM_WORLD), a real clock whose origin all ranks took
  // right after one barrier, thread streams and thread events.
  RankContext& context();
  MpiTransport& transport();
  int rank() const override;
  int size() const override;
  bool is_job() const override { return true; }
  void set_link_hint(std::optional<LinkHint> hint) override;

  // Runs `body` on this process's rank; every rank of the job returns, or throws the same failure.
  // A rank whose body throws raises the abort (runtime/mpi/abort.h): the waits of its transport on the
  // other ranks stop with Aborted. Then every rank joins the agreement (a non-blocking allreduce of
  // every rank's outcome on a communicator of its own, watched by the watchdog): if a rank failed
  // (not merely Aborted), the chosen failure is broadcast from its rank and thrown on every rank, and
  // the transport is renewed. The chosen failure is the earliest divergence (core/trainer: Diverged,
  // by iteration, then rank), else the lowest failing rank's; it is thrown as a ConfigError for a
  // ConfigError, as that rank's Diverged, else as std::runtime_error("rank R: what").
  //
  // What a run survives this way: any failure where the other ranks are in a transport's wait, in
  // computation, or already done (a config error when the run sets up, a divergence, an exception in
  // one or several ranks). What it does not: a rank that fails while another waits for it inside an
  // MPI collective (native_allreduce's MPI_Allreduce, the barrier at start), or a rank that never
  // returns (stopped, killed, in an endless loop): there the watchdog ends the job.
  void run(const std::function<void(RankContext&)>& body) override;
  // run()'s error handling around any work of this rank (NcclWorld runs its own context through it).
  void guard(const std::function<void()>& work);

  // The watchdog of this rank's waits, for transports built over this world (the NCCL runtime's).
  const std::shared_ptr<Watchdog>& watchdog() const { return watchdog_; }

  // Whether this process was started by mpirun (Open MPI's or PMIx's environment is present).
  static bool launched_by_mpirun();

 private:
  struct Session;  // MPI initialized here or before, finalized on destruction
  class Context;
  std::unique_ptr<Session> session_;
  std::shared_ptr<Watchdog> watchdog_;
  std::shared_ptr<AbortSignal> abort_;
  std::unique_ptr<Context> context_;
};

}  // namespace bagua::runtime::mpi
