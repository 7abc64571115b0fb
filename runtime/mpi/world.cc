#include "runtime/mpi/world.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "core/check.h"
#include "runtime/common/real_clock.h"
#include "runtime/common/thread_stream.h"
#include "runtime/mpi/transport.h"

namespace bagua::runtime::mpi {

namespace {

std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "thread level " + std::to_string(level);
  }
}

// How long a rank whose body threw a ConfigError waits for every other rank to report one too before
// it aborts the job. Ranks refusing the same config (an algorithm's init refusing the world size, say)
// get there within milliseconds; a rank that never gets there is blocked in communication with a
// failed rank or still running, and the job must end anyway.
constexpr std::chrono::seconds kConfigErrorAgreement{10};

[[noreturn]] void abort_job(int rank, const std::string& error) {
  std::fprintf(stderr, "rank %d: %s\n", rank, error.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

// The watchdog's expiry: its line, whole, then the end of the job. Called on the watchdog's thread
// (MPI_THREAD_MULTIPLE allows MPI_Abort there while other threads wait in MPI).
[[noreturn]] void watchdog_expired(const std::string& line) {
  std::fprintf(stderr, "%s; ending the job\n", line.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

[[noreturn]] void thread_level_too_low(int provided) {
  throw ConfigError("mpi runtime: the MPI library provides " + thread_level_name(provided) +
                    ", the runtime needs MPI_THREAD_MULTIPLE (compute and communication streams of one "
                    "rank use MPI concurrently); use an Open MPI built with thread support");
}

}  // namespace

struct MpiWorld::Session {
  Session(int* argc, char*** argv) {
    int initialized = 0, finalized = 0;
    BAGUA_MPI_CHECK(MPI_Finalized(&finalized));
    if (finalized)
      throw ConfigError(
          "mpi runtime: MPI was already finalized in this process; create one MpiWorld per "
          "process and call run() on it as often as needed");
    BAGUA_MPI_CHECK(MPI_Initialized(&initialized));
    int provided = MPI_THREAD_SINGLE;
    if (initialized) {
      BAGUA_MPI_CHECK(MPI_Query_thread(&provided));
      if (provided < MPI_THREAD_MULTIPLE) thread_level_too_low(provided);
      return;
    }
    BAGUA_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    owns = true;
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      owns = false;
      thread_level_too_low(provided);
    }
    // Errors come back to BAGUA_MPI_CHECK instead of aborting the job.
    BAGUA_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  }
  ~Session() {
    if (owns) MPI_Finalize();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool owns = false;  // MPI was initialized here
};

class MpiWorld::Context final : public RankContext {
 public:
  Context(std::unique_ptr<MpiTransport> transport, RealClock clock)
      : transport_(std::move(transport)), clock_(clock) {
    BAGUA_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &agreement_));
  }
  ~Context() override {
    if (agreement_ != MPI_COMM_NULL) MPI_Comm_free(&agreement_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  // The communicator of the ConfigError agreement in run(): nothing else is ever sent on it.
  MPI_Comm agreement() const { return agreement_; }
  Transport& transport() override { return *transport_; }
  MpiTransport& mpi_transport() { return *transport_; }
  Clock& clock() override { return clock_; }
  std::unique_ptr<Stream> make_stream(std::string name) override {
    return std::make_unique<ThreadStream>(std::move(name));
  }
  EventPtr make_event() override { return std::make_shared<ThreadEvent>(); }

 private:
  std::unique_ptr<MpiTransport> transport_;
  RealClock clock_;
  MPI_Comm agreement_ = MPI_COMM_NULL;
};

MpiWorld::MpiWorld(int* argc, char*** argv, int ranks_per_host, Time watchdog)
    : session_(std::make_unique<Session>(argc, argv)),
      watchdog_(std::make_shared<Watchdog>(watchdog, watchdog_expired)) {
  auto transport = std::make_unique<MpiTransport>(MPI_COMM_WORLD, ranks_per_host, watchdog_);
  // Every rank takes its clock's origin right after the same barrier: times of different ranks are
  // comparable to within the barrier's skew (microseconds on one host).
  {
    const Watchdog::Watch watched =
        watchdog_->watch({.rank = transport->rank(), .what = "MPI_Barrier at start", .has_tag = false});
    BAGUA_MPI_CHECK(MPI_Barrier(transport->comm()));
  }
  context_ = std::make_unique<Context>(std::move(transport), RealClock(RealClock::Steady::now()));
}

MpiWorld::~MpiWorld() {
  context_.reset();  // communicators are freed before MPI is finalized
  // MPI_Finalize is not watched: it waits for every rank (Open MPI's ends with a fence of all
  // processes), and rank 0 may rightly come much later than the others (it writes the results).
  session_.reset();
  watchdog_.reset();
}

RankContext& MpiWorld::context() {
  return *context_;
}

MpiTransport& MpiWorld::transport() {
  return context_->mpi_transport();
}

int MpiWorld::rank() const {
  return context_->mpi_transport().rank();
}

int MpiWorld::size() const {
  return context_->mpi_transport().size();
}

void MpiWorld::run(const std::function<void(RankContext&)>& body) {
  guard([&] { body(*context_); });
}

void MpiWorld::guard(const std::function<void()>& work) {
  std::string error;
  try {
    work();
    return;
  } catch (const ConfigError& e) {
    error = e.what();
  } catch (const std::exception& e) {
    abort_job(rank(), e.what());
  } catch (...) {
    abort_job(rank(), "unknown exception");
  }
  // A ConfigError: if every rank's body threw one (the same config refused everywhere), it is thrown
  // on every rank, so that the caller reports it as any other config error. Ranks count themselves
  // in a non-blocking allreduce on their own communicator; ranks that returned never join it, so it
  // completes only when every rank failed this way.
  int failed = 1;
  int all_failed = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  BAGUA_MPI_CHECK(
      MPI_Iallreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, context_->agreement(), &request));
  const auto deadline = std::chrono::steady_clock::now() + kConfigErrorAgreement;
  for (;;) {
    int done = 0;
    BAGUA_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    if (std::chrono::steady_clock::now() > deadline) abort_job(rank(), error);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  BAGUA_CHECK_EQ(all_failed, size(), "every rank joins the agreement only after a ConfigError");
  throw ConfigError(error);
}

bool MpiWorld::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace bagua::runtime::mpi
