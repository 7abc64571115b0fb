#include "runtime/mpi/world.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/trainer/trainer.h"
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

// The watchdog's expiry: the job's one line (ExpiryReport, runtime/common/watchdog.h), whole, from
// whichever process settles it, then the end of the job from every process. Called on the watchdog's
// thread (MPI_THREAD_MULTIPLE allows MPI_Abort there while other threads wait in MPI).
[[noreturn]] void watchdog_expired(const Watchdog& watchdog, const std::string& line) {
  const Watchdog::Wait& wait = watchdog.expired();
  const std::optional<ExpiryReport> report =
      ExpiryReport::of_job(Time::ns(2 * Watchdog::period(watchdog.limit()).nanoseconds()));
  const std::optional<std::string> printed =
      report ? report->settle(wait.rank, wait.peer, line) : std::optional<std::string>(line);
  if (printed) {
    std::fprintf(stderr, "%s; ending the job\n", printed->c_str());
    std::fflush(stderr);
  }
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return
}

// How a rank's part of a run ended (MpiWorld::run's agreement); a number on the wire.
enum class Outcome : int64_t { kOk = 0, kConfigError = 1, kDiverged = 2, kError = 3, kAborted = 4 };

// Whether the outcome is a failure of the rank itself (not Aborted by another rank's).
bool original(Outcome o) {
  return o != Outcome::kOk && o != Outcome::kAborted;
}

// Rank `rank`'s Diverged, from its message ("diverged: loss inf at iteration 7 on rank 2",
// core/trainer/trainer.cc): the same exception on a rank that did not see it.
Diverged diverged_from(const std::string& message, int rank, int64_t iteration) {
  const std::string head = "diverged: ";
  const size_t at = message.find(" at iteration ");
  const std::string which_value = message.rfind(head, 0) == 0 && at != std::string::npos
                                      ? message.substr(head.size(), at - head.size())
                                      : "";
  const size_t space = which_value.rfind(' ');
  const std::string which = space == std::string::npos ? "loss" : which_value.substr(0, space);
  const std::string value = space == std::string::npos ? "nan" : which_value.substr(space + 1);
  const double x = value == "inf"    ? std::numeric_limits<double>::infinity()
                   : value == "-inf" ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::quiet_NaN();
  Diverged d(rank, iteration, which.c_str(), x);
  BAGUA_CHECK(message == d.what(),
              "a Diverged rebuilt from '" + message + "' reads '" + d.what() + "'");
  return d;
}

// Waits for `request` (a collective of the agreement), watched by `watchdog` as a wait of `rank` for
// every other rank.
void agree(MPI_Request* request, Watchdog& watchdog, int rank, const char* what) {
  const Watchdog::Watch watched = watchdog.watch({.rank = rank, .what = what, .has_tag = false});
  for (;;) {
    int done = 0;
    BAGUA_MPI_CHECK(MPI_Test(request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
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
  // The communicator of the agreement at the end of run(): nothing else is ever sent on it.
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
      watchdog_(std::make_shared<Watchdog>(
          watchdog, [this](const std::string& line) { watchdog_expired(*watchdog_, line); })),
      abort_(std::make_shared<AbortSignal>(MPI_COMM_WORLD)) {
  auto transport = std::make_unique<MpiTransport>(MPI_COMM_WORLD, ranks_per_host, watchdog_, abort_);
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
  abort_.reset();
  // MPI_Finalize is not watched: it waits for every rank (Open MPI's ends with a fence of all
  // processes), and rank 0 may rightly come much later than the others (it writes the results).
  session_.reset();
  watchdog_.reset();
}

RankContext& MpiWorld::context() {
  return *context_;
}

void MpiWorld::set_link_hint(std::optional<LinkHint> hint) {
  transport().set_link_hint(hint);
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
  // This rank's outcome; a failure of its own raises the abort, so that ranks waiting for it stop.
  Outcome outcome = Outcome::kOk;
  int64_t iteration = 0;
  std::string error;
  std::exception_ptr own;
  try {
    work();
  } catch (const Aborted&) {
    outcome = Outcome::kAborted;
  } catch (const ConfigError& e) {
    outcome = Outcome::kConfigError;
    error = e.what();
  } catch (const Diverged& e) {
    outcome = Outcome::kDiverged;
    iteration = e.iteration();
    error = e.what();
    own = std::current_exception();
  } catch (const std::exception& e) {
    outcome = Outcome::kError;
    error = e.what();
  } catch (...) {
    outcome = Outcome::kError;
    error = "unknown exception";
  }
  if (original(outcome)) abort_->raise();

  // The agreement: every rank's outcome and iteration to every rank (a sum of tables in which each
  // rank fills its own row), then the chosen failure's message from its rank.
  const int me = rank();
  const int ranks = size();
  std::vector<int64_t> table(2 * static_cast<size_t>(ranks), 0);
  table[2 * static_cast<size_t>(me)] = static_cast<int64_t>(outcome);
  table[2 * static_cast<size_t>(me) + 1] = iteration;
  MPI_Request request = MPI_REQUEST_NULL;
  BAGUA_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, table.data(), static_cast<int>(table.size()),
                                 MPI_INT64_T, MPI_SUM, context_->agreement(), &request));
  agree(&request, *watchdog_, me, "the agreement at the end of a run");
  int raisers = 0;
  int chosen = -1;  // the earliest divergence (iteration, then rank), else the lowest failing rank
  auto key = [&](int r) {
    const bool diverged = static_cast<Outcome>(table[2 * static_cast<size_t>(r)]) == Outcome::kDiverged;
    return std::pair(
        diverged ? table[2 * static_cast<size_t>(r) + 1] : std::numeric_limits<int64_t>::max(), r);
  };
  for (int r = 0; r < ranks; ++r) {
    if (!original(static_cast<Outcome>(table[2 * static_cast<size_t>(r)]))) continue;
    ++raisers;
    if (chosen < 0 || key(r) < key(chosen)) chosen = r;
  }
  if (chosen < 0) {
    BAGUA_CHECK(outcome == Outcome::kOk, "rank " + std::to_string(me) + " aborted, but no rank failed");
    abort_->settle(0, false);
    return;
  }
  int64_t length = static_cast<int64_t>(error.size());
  BAGUA_MPI_CHECK(MPI_Ibcast(&length, 1, MPI_INT64_T, chosen, context_->agreement(), &request));
  agree(&request, *watchdog_, me, "the agreement at the end of a run");
  std::string message = me == chosen ? error : std::string(static_cast<size_t>(length), '\0');
  BAGUA_MPI_CHECK(MPI_Ibcast(message.data(), static_cast<int>(length), MPI_CHAR, chosen,
                             context_->agreement(), &request));
  agree(&request, *watchdog_, me, "the agreement at the end of a run");

  // Messages of the aborted run stay on the old communicator; the notices are received.
  context_->mpi_transport().renew();
  abort_->settle(raisers, original(outcome));

  const auto chosen_outcome = static_cast<Outcome>(table[2 * static_cast<size_t>(chosen)]);
  switch (chosen_outcome) {
    case Outcome::kConfigError:
      throw ConfigError(message);
    case Outcome::kDiverged:
      if (me == chosen) std::rethrow_exception(own);
      throw diverged_from(message, chosen, table[2 * static_cast<size_t>(chosen) + 1]);
    default:
      throw std::runtime_error("rank " + std::to_string(chosen) + ": " + message);
  }
}

bool MpiWorld::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace bagua::runtime::mpi
