#include "experiments/result_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>

#include "core/check.h"
#include "experiments/results.h"

namespace bagua::experiments {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error(p.string() + ": cannot write the file");
}

// Appends `text` with a single write() on an O_APPEND descriptor, so a line is never interleaved with
// another writer's and an interruption leaves at most one torn line at the end.
void append_once(const fs::path& p, const std::string& text) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(p.string() + ": cannot open for appending: " + std::strerror(errno));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    throw std::runtime_error(p.string() +
                             ": short append: " + (n < 0 ? std::strerror(err) : "partial write"));
  }
}

}  // namespace

ResultStore::ResultStore(fs::path dir, std::vector<std::string> header)
    : dir_(std::move(dir)), header_(std::move(header)), columns_(header_.size()) {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec)) {
    throw ConfigError("output directory " + dir_.string() + " exists and is not a directory");
  }
  const fs::path file = results_file();
  if (!fs::exists(file, ec)) return;

  std::string text = read_text_file(file, file.string());
  // A torn last line (an interrupted append): cut it off.
  const size_t keep =
      text.empty() || text.back() == '\n' ? text.size() : text.rfind('\n') + 1;  // npos+1 = 0
  if (keep != text.size()) {
    fs::resize_file(file, keep);
    text.resize(keep);
  }
  if (text.empty()) return;  // the header will be written again

  const std::string expected = csv_line(header_);
  const size_t eol = text.find('\n');
  const std::string first = text.substr(0, eol + 1);
  const bool with_status =
      header_.size() >= 2 && header_[header_.size() - 2] == "status" && header_.back() == "error";
  if (first != expected) {
    const std::vector<std::string> legacy(header_.begin(), header_.end() - (with_status ? 2 : 0));
    if (!with_status || first != csv_line(legacy)) {
      throw ConfigError(
          file.string() +
          ": holds results of another experiment (its columns differ); choose another --out");
    }
    columns_ = legacy.size();
  }
  header_present_ = true;
  size_t at = eol + 1;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    const std::string id = line.substr(0, line.find(','));
    // The status is the next-to-last field; the error after it may be quoted and hold commas, but
    // statuses never do: the field before the error's start.
    std::string status = "ok";
    if (columns_ == header_.size() && with_status) {
      const size_t error_start = line.back() == '"' ? line.rfind(",\"") : line.rfind(',');
      const size_t status_start = line.rfind(',', error_start - 1);
      status = line.substr(status_start + 1, error_start - status_start - 1);
    }
    if (rows_.emplace(id, status).second) order_.push_back(id);
    at = end + 1;
  }
}

std::optional<std::string> ResultStore::row_status(const std::string& id) const {
  const auto it = rows_.find(id);
  if (it == rows_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ResultStore::rows_with_status(const std::string& status, bool negate) const {
  std::vector<std::string> out;
  for (const std::string& id : order_)
    if ((rows_.at(id) == status) != negate) out.push_back(id);
  return out;
}

std::optional<Json> ResultStore::read_summary(const std::string& id) const {
  const fs::path p = point_dir(id) / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  try {
    return read_json_file(p, p.string());
  } catch (const ConfigError&) {
    return std::nullopt;  // unreadable: the point runs again
  }
}

void ResultStore::write_point(const std::string& id,
                              const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path points = dir_ / "points";
  fs::create_directories(points);
  const fs::path partial = points / ("." + id + ".partial");
  fs::remove_all(partial);
  fs::create_directories(partial);
  for (const auto& [name, content] : files)
    write_file(partial / name, content);
  const fs::path final_dir = point_dir(id);
  fs::remove_all(final_dir);
  fs::rename(partial, final_dir);
}

void ResultStore::ensure_header() {
  if (header_present_) return;
  fs::create_directories(dir_);
  append_once(results_file(), csv_line(header_));
  header_present_ = true;
}

void ResultStore::append_row(const std::vector<std::string>& row) {
  BAGUA_CHECK(!row.empty(), "a row needs its point id");
  const std::vector<std::string> fields(
      row.begin(), row.begin() + static_cast<std::ptrdiff_t>(std::min(columns_, row.size())));
  const bool with_status =
      header_.size() >= 2 && header_[header_.size() - 2] == "status" && header_.back() == "error";
  const std::string status = with_status && row.size() == header_.size() ? row[row.size() - 2] : "ok";
  // A file without statuses gets no row of a point that is not ok (its summary.json says why): the
  // rerun that completes it appends its row.
  if (columns_ < header_.size() && status != "ok") return;
  const auto it = rows_.find(fields.front());
  if (it != rows_.end()) {
    if (it->second != "ok") {
      replace_row(fields);
      it->second = status;
    }
    return;
  }
  ensure_header();
  append_once(results_file(), csv_line(fields));
  rows_.emplace(fields.front(), status);
  order_.push_back(fields.front());
}

void ResultStore::replace_row(const std::vector<std::string>& fields) {
  const fs::path file = results_file();
  const std::string text = read_text_file(file, file.string());
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at + 1);
    out += at > 0 && line.substr(0, line.find(',')) == fields.front() ? csv_line(fields) : line;
    at = end + 1;
  }
  const fs::path tmp = dir_ / "results.csv.tmp";
  write_file(tmp, out);
  fs::rename(tmp, file);
}

OrderedRows::OrderedRows(ResultStore& store, size_t points)
    : store_(store), finished_(points, false), pending_(points) {}

void OrderedRows::done(size_t index, std::optional<std::vector<std::string>> row) {
  std::lock_guard<std::mutex> lock(mu_);
  BAGUA_CHECK(index < finished_.size() && !finished_[index], "point reported done twice");
  finished_[index] = true;
  pending_[index] = std::move(row);
  while (next_ < finished_.size() && finished_[next_]) {
    if (pending_[next_]) store_.append_row(*pending_[next_]);
    pending_[next_].reset();
    ++next_;
  }
}

namespace {

// "2026-12-01T11:33:48Z"
std::string utc_now(const char* format) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// Takes DIR/.lock (flock, not waiting) and writes the holder into it. A holder releasing removes the
// file before closing it, so a lock taken on a file that is no longer DIR/.lock is let go and taken
// again on the new one.
int take_lock(const fs::path& dir) {
  const fs::path lock = dir / ".lock";
  for (;;) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw ConfigError("--out " + dir.string() +
                        ": cannot write in the folder: " + std::strerror(errno));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      std::string holder;
      char buf[256];
      const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
      if (n > 0) holder.assign(buf, static_cast<size_t>(n));
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\r'))
        holder.pop_back();
      ::close(fd);
      if (err != EWOULDBLOCK)
        throw ConfigError("--out " + dir.string() + ": cannot lock " + lock.string() + ": " +
                          std::strerror(err));
      throw ConfigError("--out " + dir.string() + ": another bagua run is writing into it (" +
                        (holder.empty() ? "holder unknown" : holder) + "); wait for it to end");
    }
    struct stat held {
    }, now{};
    if (::fstat(fd, &held) == 0 && ::stat(lock.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      const std::string holder = "pid " + std::to_string(::getpid()) + " on host " + host_name() +
                                 " since " + utc_now("%Y-%m-%dT%H:%M:%SZ") + "\n";
      if (::ftruncate(fd, 0) != 0 ||
          ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
        const int err = errno;
        ::close(fd);
        throw ConfigError("--out " + dir.string() +
                          ": cannot write in the folder: " + std::strerror(err));
      }
      return fd;
    }
    ::close(fd);  // released and removed meanwhile: take the new one
  }
}

void release_lock(const fs::path& dir, int fd) {
  std::error_code ec;
  fs::remove(dir / ".lock", ec);
  ::close(fd);
}

}  // namespace

ExperimentDir::ExperimentDir(fs::path dir, const std::string& name, const std::string& config_hash,
                             const std::set<std::string>& point_ids, bool fresh)
    : dir_(std::move(dir)), name_(name), config_hash_(config_hash) {
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
    throw ConfigError("--out " + dir_.string() + ": exists and is not a directory");
  fs::create_directories(dir_, ec);
  if (ec) throw ConfigError("--out " + dir_.string() + ": cannot create the folder: " + ec.message());
  lock_fd_ = take_lock(dir_);
  try {
    const fs::path file = dir_ / "experiment.json";
    std::string other;  // why DIR is not this experiment's
    if (fs::exists(file, ec)) {
      const Json held = read_json_file(file, file.string());
      const std::string held_hash = held.value("config_hash", std::string());
      if (held_hash != config_hash) {
        other = "holds results of experiment \"" + held.value("name", std::string("?")) +
                "\" (config hash " + held_hash + "), not of \"" + name + "\" (config hash " +
                config_hash + ")";
      }
    } else if (fs::exists(dir_ / "results.csv", ec)) {
      // Written before experiment.json existed: its rows must be points of this experiment.
      const std::string text = read_text_file(dir_ / "results.csv", "results.csv");
      size_t at = text.find('\n');
      while (at != std::string::npos && at + 1 < text.size()) {
        const size_t end = text.find('\n', at + 1);
        const std::string line = text.substr(at + 1, end - at - 1);
        const std::string id = line.substr(0, line.find(','));
        if (!id.empty() && point_ids.count(id) == 0) {
          other = "holds results of another experiment (its point " + id + " is not one of \"" + name +
                  "\", config hash " + config_hash + ")";
          break;
        }
        at = end;
      }
    }
    if (!other.empty()) {
      if (!fresh)
        throw ConfigError("--out " + dir_.string() + ": " + other +
                          "; use --fresh to move it aside and start afresh, or choose another --out");
      moved_aside_ = dir_.string() + ".old-" + utc_now("%Y%m%dT%H%M%SZ");
      for (int i = 2; fs::exists(moved_aside_, ec); ++i)
        moved_aside_ = dir_.string() + ".old-" + utc_now("%Y%m%dT%H%M%SZ") + "-" + std::to_string(i);
      fs::rename(dir_, moved_aside_);
      // The lock moved with the folder: take the new folder's (a run that waited on the old one finds
      // its lock file gone, and takes the new one's too, which this run now holds).
      const int old_fd = lock_fd_;
      lock_fd_ = -1;
      fs::create_directories(dir_);
      lock_fd_ = take_lock(dir_);
      release_lock(moved_aside_, old_fd);
    }
  } catch (...) {
    if (lock_fd_ >= 0) release_lock(dir_, lock_fd_);
    throw;
  }
}

void ExperimentDir::record() {
  const fs::path file = dir_ / "experiment.json";
  std::error_code ec;
  if (fs::exists(file, ec)) return;
  Json record = Json::object();
  record["name"] = name_;
  record["config_hash"] = config_hash_;
  write_file(dir_ / "experiment.json.tmp", record.dump(2) + "\n");
  fs::rename(dir_ / "experiment.json.tmp", file);
}

ExperimentDir::~ExperimentDir() {
  if (lock_fd_ >= 0) release_lock(dir_, lock_fd_);
}

}  // namespace bagua::experiments
