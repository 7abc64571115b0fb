#include "runtime/mpi/world.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

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
      : transport_(std::move(transport)), clock_(clock) {}
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
};

MpiWorld::MpiWorld(int* argc, char*** argv, int ranks_per_host)
    : session_(std::make_unique<Session>(argc, argv)) {
  auto transport = std::make_unique<MpiTransport>(MPI_COMM_WORLD, ranks_per_host);
  // Every rank takes its clock's origin right after the same barrier: times of different ranks are
  // comparable to within the barrier's skew (microseconds on one host).
  BAGUA_MPI_CHECK(MPI_Barrier(transport->comm()));
  context_ = std::make_unique<Context>(std::move(transport), RealClock(RealClock::Steady::now()));
}

MpiWorld::~MpiWorld() {
  context_.reset();  // communicators are freed before MPI is finalized
  session_.reset();
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
  std::string error;
  try {
    body(*context_);
    return;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  std::fprintf(stderr, "rank %d: %s\n", rank(), error.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

bool MpiWorld::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace bagua::runtime::mpi
