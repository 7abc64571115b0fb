// The results directory of an experiment, written so that an interrupted sweep resumes without losing
// or duplicating a row.
//
//   DIR/results.csv              a header, then one row per point, in point order
//   DIR/points/<point-id>/       iterations.csv, summary.json, and for the simulator links.csv,
//                                ranks.csv (and trace.json when asked)
//
// Protocol:
//   - A point's files are written into DIR/points/.<id>.partial/ and the folder is renamed to
//     DIR/points/<id>/ once complete: a point folder that exists is complete.
//   - Its row is then appended to results.csv with a single write() of the whole line (O_APPEND).
//   - Rows go in point order: a point that finishes before an earlier one waits (OrderedRows).
//   - On opening, a torn last line (an append cut short) is cut off; rows already present are known by
//     their point id, so a resumed run skips points that have both a folder and a row, appends the row
//     of a point that has a folder but no row (made from its summary.json), and never writes a row
//     twice.
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "experiments/json_util.h"

namespace bagua::experiments {

class ResultStore {
 public:
  // Opens DIR's results.csv, checks that its header is `header` (ConfigError otherwise: the directory
  // holds another experiment's results) and repairs a torn last line. Creates nothing until the first
  // write. Throws ConfigError when DIR exists but is not a directory.
  ResultStore(std::filesystem::path dir, std::vector<std::string> header);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path results_file() const { return dir_ / "results.csv"; }
  std::filesystem::path point_dir(const std::string& id) const { return dir_ / "points" / id; }

  bool has_row(const std::string& id) const { return rows_.count(id) != 0; }
  // The summary.json of a completed point, or nullopt.
  std::optional<Json> read_summary(const std::string& id) const;

  // Writes a completed point's files (name, content), atomically as a folder (see above).
  void write_point(const std::string& id,
                   const std::vector<std::pair<std::string, std::string>>& files);
  // Appends a row (its first field is the point id) with one write; does nothing if the id has a row.
  void append_row(const std::vector<std::string>& fields);

 private:
  void ensure_header();

  std::filesystem::path dir_;
  std::vector<std::string> header_;
  bool header_present_ = false;
  std::set<std::string> rows_;
};

// Appends rows in point order while points complete in any order. Thread-safe.
class OrderedRows {
 public:
  OrderedRows(ResultStore& store, size_t points);
  // Point `index` is done; `row` is its row, or nullopt when it needs none (already present, or
  // failed).
  void done(size_t index, std::optional<std::vector<std::string>> row);

 private:
  std::mutex mu_;
  ResultStore& store_;
  std::vector<bool> finished_;
  std::vector<std::optional<std::vector<std::string>>> pending_;
  size_t next_ = 0;
};

}  // namespace bagua::experiments
