#include "runtime/common/watchdog.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <utility>
#include <vector>

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

Time Watchdog::period(Time limit) {
  return std::clamp(Time::ns(limit.nanoseconds() / 10), Time::ms(1), Time::s(1));
}

void Watchdog::loop() {
  const auto limit = std::chrono::nanoseconds(limit_.nanoseconds());
  const auto period = std::chrono::nanoseconds(Watchdog::period(limit_).nanoseconds());
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [&] { return stop_; });
    if (stop_ || waits_.empty()) continue;
    const Entry& oldest = waits_.begin()->second;
    const auto waited =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - oldest.start);
    if (waited < limit) continue;
    const std::string text = line(oldest.wait, Time::ns(waited.count()), limit_);
    expired_ = oldest.wait;
    lock.unlock();
    expire_(text);
    return;  // one expiry ends the run: nothing more to watch
  }
}

ExpiryReport::ExpiryReport(std::filesystem::path folder, std::string job, Time window)
    : folder_(std::move(folder)), job_(std::move(job)), window_(window) {}

std::optional<ExpiryReport> ExpiryReport::of_job(Time window) {
  const char* job = std::getenv("OMPI_MCA_ess_base_jobid");
  if (!job || !*job) job = std::getenv("PMIX_NAMESPACE");
  if (!job || !*job) return std::nullopt;
  std::filesystem::path folder;
  if (const char* session = std::getenv("OMPI_MCA_orte_jobfam_session_dir"); session && *session) {
    folder = session;
  } else {
    std::error_code ec;
    folder = std::filesystem::temp_directory_path(ec);
    if (ec) folder = "/tmp";
  }
  // A job id names a file: keep letters, digits and '.', '-', '_' (PMIx namespaces may hold '@').
  std::string name;
  for (const char ch : std::string(job))
    name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' ? ch : '_';
  return ExpiryReport(std::move(folder), std::move(name), window);
}

std::optional<std::string> ExpiryReport::settle(int rank, int peer, const std::string& line) const {
  const std::string prefix = "bagua-watchdog-" + job_ + ".";
  // record: "<peer>\n<line>\n", whole or not at all (written aside, then renamed).
  {
    const std::filesystem::path aside = folder_ / (prefix + "writing." + std::to_string(rank));
    std::ofstream out(aside, std::ios::trunc);
    out << peer << "\n" << line << "\n";
    out.close();
    if (!out) return line;
    std::error_code ec;
    std::filesystem::rename(aside, folder_ / (prefix + std::to_string(rank)), ec);
    if (ec) return line;
  }
  // window
  std::this_thread::sleep_for(std::chrono::nanoseconds(window_.nanoseconds()));

  struct Record {
    int peer = Watchdog::kEveryPeer;
    std::string line;
  };
  std::map<int, Record> records;  // by rank
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string suffix = name.substr(prefix.size());
    if (suffix.empty() || suffix.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path());
    Record r;
    if (!(in >> r.peer)) continue;
    in.ignore(1);
    if (!std::getline(in, r.line) || r.line.empty()) continue;
    records[std::stoi(suffix)] = std::move(r);
  }
  records.try_emplace(rank, Record{peer, line});  // this rank's own record, read back or not

  // report: the lowest rank waiting directly for a culprit, else the lowest rank.
  const Record* report = &records.begin()->second;
  for (const auto& [r, record] : records) {
    if (record.peer != Watchdog::kEveryPeer && !records.count(record.peer)) {
      report = &record;
      break;
    }
  }
  // claim
  const std::string claim = (folder_ / (prefix + "claim")).string();
  const int fd = ::open(claim.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd >= 0) {
    ::close(fd);
    return report->line;
  }
  if (errno == EEXIST) return std::nullopt;
  return line;  // the folder cannot be written: this rank's own line
}

}  // namespace bagua::runtime
