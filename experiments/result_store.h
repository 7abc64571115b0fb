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
//   - A row whose status is not "ok" (a failed or diverged point, experiments/results.h) is replaced
//     in place when its point is run again: the file is rewritten whole into results.csv.tmp and
//     renamed over results.csv (atomic), every other row unchanged and in its place.
//   - A results.csv written before rows had a status (its header is the expected one without the
//     trailing "status" and "error" columns) keeps its columns: rows are cut to them, every row
//     present counts as ok, and a point that is not ok gets no row (its summary.json records it).
//
// The folder itself belongs to one experiment (ExperimentDir, below):
//   DIR/experiment.json          {"name", "config_hash"}: the experiment whose results these are
//   DIR/.lock                    held (flock) by the run writing into DIR; it names the holder
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
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
  // The status column of a point's row ("ok" for a row of a results.csv without statuses), or
  // nullopt when it has no row.
  std::optional<std::string> row_status(const std::string& id) const;
  // The ids of the rows present, in file order, whose status is (or is not, `negate`) `status`.
  std::vector<std::string> rows_with_status(const std::string& status, bool negate = false) const;
  // The summary.json of a completed point, or nullopt.
  std::optional<Json> read_summary(const std::string& id) const;

  // Writes a completed point's files (name, content), atomically as a folder (see above).
  void write_point(const std::string& id,
                   const std::vector<std::pair<std::string, std::string>>& files);
  // Appends a row (its first field is the point id) with one write; does nothing if the id has an ok
  // row; replaces (see above) a row that is not ok.
  void append_row(const std::vector<std::string>& fields);

 private:
  void ensure_header();
  void replace_row(const std::vector<std::string>& fields);

  std::filesystem::path dir_;
  std::vector<std::string> header_;
  size_t columns_;  // header_.size(), or 2 fewer for a results.csv without statuses
  bool header_present_ = false;
  std::map<std::string, std::string> rows_;  // point id -> status
  std::vector<std::string> order_;           // point ids, in file order
};

// Claims an experiment's results folder for one run (the writer's): creates it (ConfigError naming it
// when that fails or it cannot be written), takes its lock (ConfigError naming the holder's pid, host
// and start time when another run holds it) and checks that it belongs to this experiment:
//   - DIR/experiment.json present with another config hash: ConfigError naming both experiments;
//     with `fresh`, the old folder is moved aside to DIR.old-<UTC time> (moved_aside()) and DIR starts
//     empty;
//   - absent, in a folder that already has results (written before experiment.json existed): to be
//     written, provided that every row of its results.csv is a point of this experiment (ConfigError
//     otherwise);
//   - absent in a new or empty folder: to be written.
// experiment.json is written by record(), once the caller has opened the folder's ResultStore (whose
// header check may still refuse the folder: then nothing is written).
// The lock is released (and DIR/.lock removed) by the destructor.
class ExperimentDir {
 public:
  ExperimentDir(std::filesystem::path dir, const std::string& name, const std::string& config_hash,
                const std::set<std::string>& point_ids, bool fresh);
  ~ExperimentDir();
  ExperimentDir(const ExperimentDir&) = delete;
  ExperimentDir& operator=(const ExperimentDir&) = delete;

  // Where --fresh moved the old folder; empty when nothing was moved.
  const std::filesystem::path& moved_aside() const { return moved_aside_; }
  // Writes DIR/experiment.json if absent (see above).
  void record();

 private:
  std::filesystem::path dir_;
  std::string name_;
  std::string config_hash_;
  std::filesystem::path moved_aside_;
  int lock_fd_ = -1;
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
