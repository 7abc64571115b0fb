#include "experiments/result_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
    : dir_(std::move(dir)), header_(std::move(header)) {
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
  if (first != expected) {
    throw ConfigError(
        file.string() +
        ": holds results of another experiment (its columns differ); choose another --out");
  }
  header_present_ = true;
  size_t at = eol + 1;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    rows_.insert(line.substr(0, line.find(',')));
    at = end + 1;
  }
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

void ResultStore::append_row(const std::vector<std::string>& fields) {
  BAGUA_CHECK(!fields.empty(), "a row needs its point id");
  if (has_row(fields.front())) return;
  ensure_header();
  append_once(results_file(), csv_line(fields));
  rows_.insert(fields.front());
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

}  // namespace bagua::experiments
