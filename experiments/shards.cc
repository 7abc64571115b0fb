#include "experiments/shards.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <regex>
#include <set>

#include "core/check.h"
#include "experiments/result_store.h"
#include "experiments/results.h"

namespace bagua::experiments {

namespace fs = std::filesystem;

namespace {

constexpr const char* kShardsFolder = "shards";
constexpr const char* kPartFile = "part.json";
// How many point ids one error line names before it only counts the rest.
constexpr size_t kIdsNamed = 12;

std::optional<int64_t> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit))
    return std::nullopt;
  return std::stoll(text);
}

int64_t slurm_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v) {
    throw ConfigError(std::string(name) +
                      " is not set, but SLURM_ARRAY_TASK_ID is: cannot tell this task's shard; give "
                      "--shard K/N");
  }
  const std::optional<int64_t> n = whole_number(v);
  if (!n) throw ConfigError(std::string(name) + ": expected a whole number, got \"" + v + "\"");
  return *n;
}

// One CSV line (without its '\n') into fields; "" is a quote inside a quoted field (csv_line's form).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

// "p001-..., p004-... (14 in all)".
std::string id_list(const std::vector<std::string>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < kIdsNamed; ++i)
    s += (i ? ", " : "") + ids[i];
  if (ids.size() > kIdsNamed) s += ", ... (" + std::to_string(ids.size()) + " in all)";
  return s;
}

// One part folder as merge reads it.
struct Part {
  std::string name;  // "K-of-N"
  fs::path dir;
  bool has_manifest = false;
  Json manifest;
  std::map<std::string, std::string> rows;  // point id -> its whole line in results.csv
};

Part read_part(const fs::path& dir) {
  Part part;
  part.name = dir.filename().string();
  part.dir = dir;
  const fs::path manifest = dir / kPartFile;
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return part;
  part.manifest = read_json_file(manifest, manifest.string());
  part.has_manifest = true;
  const fs::path results = dir / "results.csv";
  if (!fs::is_regular_file(results, ec)) return part;
  const std::string text = read_text_file(results, results.string());
  size_t at = text.find('\n');  // after the header
  while (at != std::string::npos && at + 1 < text.size()) {
    const size_t end = text.find('\n', at + 1);
    if (end == std::string::npos) break;  // a torn last line (an interrupted append)
    const std::string line = text.substr(at + 1, end - at - 1);
    part.rows.emplace(line.substr(0, line.find(',')), line);
    at = end;
  }
  return part;
}

// The files of a completed point folder, by name.
std::vector<std::pair<std::string, std::string>> point_files(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const fs::directory_entry& f : fs::directory_iterator(dir)) {
    BAGUA_CHECK(f.is_regular_file(), f.path().string() + ": a point folder holds files only");
    files.emplace_back(f.path().filename().string(), read_text_file(f.path(), f.path().string()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string Shard::folder() const {
  return std::to_string(index) + "-of-" + std::to_string(count);
}

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const std::optional<int64_t> k = whole_number(text.substr(0, slash));
  const std::optional<int64_t> n =
      slash == std::string::npos ? std::nullopt : whole_number(text.substr(slash + 1));
  if (!k || !n || *k < 1 || *k > *n)
    throw ConfigError("--shard: expected K/N with 1 <= K <= N, got \"" + text + "\"");
  return Shard{static_cast<int>(*k), static_cast<int>(*n)};
}

std::optional<Shard> shard_from_slurm() {
  if (!std::getenv("SLURM_ARRAY_TASK_ID")) return std::nullopt;
  const int64_t id = slurm_number("SLURM_ARRAY_TASK_ID");
  const int64_t count = slurm_number("SLURM_ARRAY_TASK_COUNT");
  const int64_t min = slurm_number("SLURM_ARRAY_TASK_MIN");
  const int64_t max = slurm_number("SLURM_ARRAY_TASK_MAX");
  const int64_t step = std::getenv("SLURM_ARRAY_TASK_STEP") ? slurm_number("SLURM_ARRAY_TASK_STEP") : 1;
  if (step < 1 || count < 1 || max < min || (max - min) % step != 0 ||
      (max - min) / step + 1 != count || id < min || id > max || (id - min) % step != 0) {
    throw ConfigError("SLURM_ARRAY_TASK_ID: the array (" + std::to_string(count) + " tasks, " +
                      std::to_string(min) + " to " + std::to_string(max) + " step " +
                      std::to_string(step) + ", this one " + std::to_string(id) +
                      ") is not one range with one step; give --shard K/N");
  }
  return Shard{static_cast<int>((id - min) / step + 1), static_cast<int>(count)};
}

Experiment shard_of(const Experiment& e, const Shard& shard) {
  if (shard.whole()) return e;
  Experiment part = e;
  part.points.clear();
  for (const PointConfig& p : e.points)
    if (p.index % shard.count == shard.index - 1) part.points.push_back(p);
  part.output_dir = (fs::path(e.output_dir) / kShardsFolder / shard.folder()).string();
  return part;
}

void write_part(const Experiment& whole, const Shard& shard) {
  Json manifest = Json::object();
  manifest["experiment"] = whole.name;
  manifest["shard"] = shard.index;
  manifest["shards"] = shard.count;
  manifest["columns"] = results_header(whole.axes);
  Json ids = Json::array();
  for (const PointConfig& p : whole.points)
    ids.push_back(p.id);
  manifest["points"] = std::move(ids);
  const fs::path dir = fs::path(whole.output_dir) / kShardsFolder / shard.folder();
  fs::create_directories(dir);
  // Written aside and renamed: a part.json that exists is whole.
  const fs::path tmp = dir / (std::string(kPartFile) + ".tmp");
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << manifest.dump(2) << "\n";
    f.close();
    if (!f) throw std::runtime_error(tmp.string() + ": cannot write the file");
  }
  fs::rename(tmp, dir / kPartFile);
}

void merge_parts(const fs::path& dir, std::ostream& out) {
  const fs::path shards = dir / kShardsFolder;
  std::error_code ec;
  if (!fs::is_directory(shards, ec)) {
    throw ConfigError("merge: " + shards.string() +
                      " is not a folder: no parts to merge (bagua run CONFIG --shard K/N makes them)");
  }
  static const std::regex kPartName("([1-9][0-9]*)-of-([1-9][0-9]*)");
  std::vector<Part> parts;
  for (const fs::directory_entry& d : fs::directory_iterator(shards)) {
    if (d.is_directory() && std::regex_match(d.path().filename().string(), kPartName))
      parts.push_back(read_part(d.path()));
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.name < b.name; });
  const auto reference =
      std::find_if(parts.begin(), parts.end(), [](const Part& p) { return p.has_manifest; });
  if (reference == parts.end()) {
    throw ConfigError("merge: no part under " + shards.string() +
                      " has a part.json (a shard's run writes it when it ends)");
  }
  // Every part of one experiment: the same columns and the same points.
  const Json& columns = reference->manifest.at("columns");
  const Json& ids = reference->manifest.at("points");
  std::vector<std::string> unfinished;
  for (const Part& p : parts) {
    if (!p.has_manifest) {
      unfinished.push_back(p.name);
      continue;
    }
    if (p.manifest.at("columns") != columns || p.manifest.at("points") != ids ||
        p.manifest.at("experiment") != reference->manifest.at("experiment")) {
      throw ConfigError("merge: " + (shards / p.name / kPartFile).string() +
                        " is a part of another experiment (or of other points) than " +
                        (shards / reference->name / kPartFile).string());
    }
  }

  // Where each point is: the parts holding both its folder and its row.
  std::vector<std::string> missing, duplicated;
  std::vector<const Part*> source;
  for (const Json& id_json : ids) {
    const std::string id = id_json.get<std::string>();
    std::vector<const Part*> holders;
    for (const Part& p : parts) {
      if (p.has_manifest && p.rows.count(id) && fs::is_directory(p.dir / "points" / id, ec))
        holders.push_back(&p);
    }
    if (holders.empty()) missing.push_back(id);
    if (holders.size() > 1) {
      std::string where;
      for (const Part* h : holders)
        where += (where.empty() ? "" : " and ") + h->name;
      duplicated.push_back(id + " (" + where + ")");
    }
    source.push_back(holders.empty() ? nullptr : holders.front());
  }
  if (!duplicated.empty()) {
    throw ConfigError("merge: points in more than one part of " + shards.string() + ": " +
                      id_list(duplicated) + "; remove the parts of the other sharding");
  }
  if (!missing.empty()) {
    std::string why;
    if (!unfinished.empty()) {
      std::string names;
      for (const std::string& u : unfinished)
        names += (names.empty() ? "" : ", ") + u;
      why = " (no part.json, their run did not end: " + names + ")";
    }
    throw ConfigError("merge: missing points in " + shards.string() + ": " + id_list(missing) + why +
                      "; rerun their shards");
  }

  // Into DIR through the result store, in sweep order: a merge cut short resumes.
  ResultStore store(dir, columns.get<std::vector<std::string>>());
  std::set<std::string> parts_used;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string id = ids[i].get<std::string>();
    const Part& part = *source[i];
    parts_used.insert(part.name);
    if (store.has_row(id) && fs::is_directory(store.point_dir(id), ec)) continue;
    store.write_point(id, point_files(part.dir / "points" / id));
    const std::string& line = part.rows.at(id);
    const std::vector<std::string> fields = csv_fields(line);
    BAGUA_CHECK_EQ(csv_line(fields), line + "\n", "a row read back from " + part.name);
    store.append_row(fields);
  }
  out << "merged " << ids.size() << " point" << (ids.size() == 1 ? "" : "s") << " from "
      << parts_used.size() << " part" << (parts_used.size() == 1 ? "" : "s") << " into "
      << store.results_file().string() << "\n";
}

}  // namespace bagua::experiments
