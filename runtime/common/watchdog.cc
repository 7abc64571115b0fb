#include "runtime/common/watchdog.h"

#include <algorithm>
#include <utility>

#include "core/algorithms/tags.h"
#include "core/check.h"
#include "core/operation.h"

namespace bagua::runtime {

Watchdog::Watchdog(Time limit, Expire expire) : limit_(limit), expire_(std::move(expire)) {
  if (limit <= Time::zero())
    throw ConfigError("watchdog: the limit must be > 0, got " + to_string(limit));
  BAGUA_CHECK(static_cast<bool>(expire_), "a watchdog needs an expiry action");
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Watchdog::Watch::~Watch() {
  if (watchdog_) watchdog_->unwatch(id_);
}

Watchdog::Watch Watchdog::watch(Wait wait) {
  wait.operation = current_operation();
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  waits_.emplace(id, Entry{wait, Clock::now()});
  return Watch(this, id);
}

void Watchdog::unwatch(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  waits_.erase(id);
}

std::string Watchdog::line(const Wait& wait, Time waited, Time limit) {
  std::string s = "watchdog: rank " + std::to_string(wait.rank) + " waited " + to_string(waited) +
                  (wait.peer == kEveryPeer ? std::string(" for the other ranks")
                                           : " for rank " + std::to_string(wait.peer)) +
                  " (limit " + to_string(limit) + "): " + wait.what;
  if (wait.operation) s += std::string(" in ") + wait.operation;
  if (wait.has_tag) s += ", " + tags::describe(wait.tag);
  return s;
}

void Watchdog::loop() {
  const auto limit = std::chrono::nanoseconds(limit_.nanoseconds());
  const auto period = std::clamp<std::chrono::nanoseconds>(limit / 10, std::chrono::milliseconds(1),
                                                           std::chrono::seconds(1));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [&] { return stop_; });
    if (stop_ || waits_.empty()) continue;
    const Entry& oldest = waits_.begin()->second;
    const auto waited =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - oldest.start);
    if (waited < limit) continue;
    const std::string text = line(oldest.wait, Time::ns(waited.count()), limit_);
    lock.unlock();
    expire_(text);
    return;  // one expiry ends the run: nothing more to watch
  }
}

}  // namespace bagua::runtime
