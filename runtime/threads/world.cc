#include "runtime/threads/world.h"

#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "core/check.h"
#include "runtime/common/real_clock.h"
#include "runtime/common/thread_stream.h"
#include "runtime/threads/transport.h"

namespace bagua::runtime::threads {

namespace {

class ThreadsContext final : public RankContext {
 public:
  ThreadsContext(std::unique_ptr<Transport> transport, RealClock clock)
      : transport_(std::move(transport)), clock_(clock) {}
  Transport& transport() override { return *transport_; }
  Clock& clock() override { return clock_; }
  std::unique_ptr<Stream> make_stream(std::string name) override {
    return std::make_unique<ThreadStream>(std::move(name));
  }
  EventPtr make_event() override { return std::make_shared<ThreadEvent>(); }

 private:
  std::unique_ptr<Transport> transport_;
  RealClock clock_;
};

}  // namespace

ThreadsWorld::ThreadsWorld(int ranks, int ranks_per_host, Time watchdog, int service_ranks)
    : ranks_(ranks),
      ranks_per_host_(ranks_per_host),
      watchdog_(watchdog),
      service_ranks_(service_ranks) {
  if (service_ranks < 0)
    throw ConfigError("threads world: service_ranks must be >= 0, got " +
                      std::to_string(service_ranks));
  if (ranks < 1) throw ConfigError("threads world: ranks must be >= 1, got " + std::to_string(ranks));
  if (ranks_per_host < 1)
    throw ConfigError("threads world: ranks_per_host must be >= 1, got " +
                      std::to_string(ranks_per_host));
  if (watchdog <= Time::zero())
    throw ConfigError("threads world: the watchdog limit must be > 0, got " + to_string(watchdog));
}

void ThreadsWorld::run(const std::function<void(RankContext&)>& body) {
  // The watchdog outlives the mailbox's waits (the ranks are joined before it is destroyed); its
  // expiry wakes every wait with its line.
  std::shared_ptr<Mailbox> mailbox;
  Watchdog watchdog(watchdog_, [&mailbox](const std::string& line) { mailbox->abort(line); });
  mailbox = std::make_shared<Mailbox>(&watchdog);
  const int all = ranks_ + service_ranks_;
  std::vector<int> members(static_cast<size_t>(all));
  std::iota(members.begin(), members.end(), 0);
  // Workers on host r / ranks_per_host; service rank s on the host after them plus s.
  const int worker_hosts = (ranks_ + ranks_per_host_ - 1) / ranks_per_host_;
  std::vector<int> hosts(members.size());
  for (int r = 0; r < all; ++r)
    hosts[static_cast<size_t>(r)] = r < ranks_ ? r / ranks_per_host_ : worker_hosts + (r - ranks_);
  const RealClock clock;

  std::mutex mu;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  threads.reserve(members.size());
  for (int r = 0; r < all; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto transport = std::make_unique<ThreadsTransport>(mailbox, 0, members, hosts, r);
        transport->set_link_hint(hint_);
        ThreadsContext ctx(std::move(transport), clock);
        body(ctx);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!first_error) first_error = std::current_exception();
        }
        mailbox->abort("aborted: rank " + std::to_string(r) + " failed");
      }
    });
  }
  for (auto& t : threads)
    t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace bagua::runtime::threads
