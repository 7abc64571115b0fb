// A simulated sweep under mpirun (experiments/distribute.h): rank 0 writes, every process runs points.
//
// What must hold: the results folder is byte for byte that of the same sweep run by one process alone
// (every point is a deterministic simulation, whichever process runs it; rank 0 writes each point's
// files as they come and the rows in sweep order), the progress shows each point once, and a job that
// loses a process mid-sweep leaves only complete point folders and a prefix of the rows, from which a
// rerun runs only the points that were not written.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/experiments/scratch.h"

#if !defined(BAGUA_BINARY) || !defined(BAGUA_SOURCE_DIR) || !defined(BAGUA_MPI_LAUNCH) || \
    !defined(BAGUA_NUMPROC_FLAG)
#error "the build defines BAGUA_BINARY, BAGUA_SOURCE_DIR, BAGUA_MPI_LAUNCH, BAGUA_NUMPROC_FLAG"
#endif

namespace {

// Apart from the same-named helpers of test_mpi_cli's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace distribute_test {

namespace fs = std::filesystem;
using bagua::testing::lines_of;

using bagua::testing::read_file;
using bagua::testing::run_command;
using bagua::testing::shell_quote;
using Result = bagua::testing::CommandResult;

const char* kConfig = "configs/quickstart.json";

// 4 algorithms x 3 bandwidths: 12 points of unequal length (by algorithm).
const char* kSweep =
    R"(sweep={"axes": {"algorithm": [{"name": "gradient_allreduce"}, {"name": "bytegrad"},
                                      {"name": "decentralized", "peer_selection_mode": "ring"},
                                      {"name": "low_precision_decentralized"}],
                       "cluster.nic.bandwidth": ["1 Gbps", "10 Gbps", "100 Gbps"]}})";
constexpr int kPoints = 12;

// What a run leaves that a one-process run must equal: results.csv and every file under points/.
std::map<std::string, std::string> results_of(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (fs::exists(root / "results.csv")) files["results.csv"] = read_file(root / "results.csv");
  if (!fs::exists(root / "points")) return files;
  for (const auto& e : fs::recursive_directory_iterator(root / "points"))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = read_file(e.path());
  return files;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// The first difference between two results folders, or "".
std::string first_difference(const std::map<std::string, std::string>& want,
                             const std::map<std::string, std::string>& got) {
  for (const auto& [path, content] : want) {
    const auto it = got.find(path);
    if (it == got.end()) return path + " is missing";
    if (it->second != content) return path + " differs";
  }
  for (const auto& [path, content] : got)
    if (!want.count(path)) return path + " is extra";
  return "";
}

class Distribute : public bagua::testing::ScratchDirTest {
 protected:
  Distribute() : ScratchDirTest("bagua_distribute_test") {}

  static std::string launcher(int ranks) {
    return std::string(BAGUA_MPI_LAUNCH) + " " + BAGUA_NUMPROC_FLAG + " " + std::to_string(ranks) + " ";
  }

  // `bagua run` of the sweep into `out`: under mpirun with `ranks` processes when ranks > 0.
  Result run(int ranks, const fs::path& out, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {BAGUA_BINARY, "run",   kConfig, "--out",
                                     out.string(), "--set", kSweep};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_command(BAGUA_SOURCE_DIR, ranks > 0 ? launcher(ranks) : "", args, dir_);
  }

  // The reference: the sweep run by one process alone, one point at a time; its progress lines in
  // alone_progress_.
  std::map<std::string, std::string> alone(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--jobs", "1"});
    const Result r = run(0, dir_ / "alone", extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    alone_progress_ = point_lines(r.err);
    const std::map<std::string, std::string> files = results_of(dir_ / "alone");
    EXPECT_EQ(files.size(), 1u + 4u * kPoints) << "results.csv and 4 files per point";
    return files;
  }

  // Each point's progress line without its count ("[3/12] ") and wall time (" [wall 0.12 s]"),
  // sorted: what rank 0 prints of a point a worker ran is what a process alone prints of it.
  static std::vector<std::string> point_lines(const std::string& err) {
    std::vector<std::string> points;
    for (const std::string& line : lines_of(err)) {
      if (line.empty() || line[0] != '[') continue;
      const size_t start = line.find("] ");
      const size_t wall = line.rfind(" [wall ");
      points.push_back(line.substr(start + 2, wall == std::string::npos ? wall : wall - start - 2));
    }
    std::sort(points.begin(), points.end());
    return points;
  }

  std::vector<std::string> alone_progress_;
};

// 2, 3 and 4 processes (the 2-process run with --jobs' default: this node's cores shared among the
// job's processes) give the files of one process alone, and the progress and the summary are
// rank 0's only, each point once. A rerun of a finished sweep under mpirun runs nothing and changes
// nothing.
TEST_F(Distribute, TwoToFourProcessesWriteWhatOneProcessWrites) {
  const std::map<std::string, std::string> want = alone();
  ASSERT_EQ(alone_progress_.size(), static_cast<size_t>(kPoints));
  for (int ranks : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " processes");
    const fs::path out = dir_ / ("np" + std::to_string(ranks));
    std::vector<std::string> jobs;
    if (ranks != 2) jobs = {"--jobs", "1"};
    const Result r = run(ranks, out, jobs);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_difference(want, results_of(out)), "");
    EXPECT_EQ(count_of(r.err, std::to_string(kPoints) + " points over " + std::to_string(ranks) +
                                  " processes, "),
              1u)
        << r.err;
    for (int i = 1; i <= kPoints; ++i)
      EXPECT_EQ(count_of(r.err, "[" + std::to_string(i) + "/" + std::to_string(kPoints) + "] "), 1u)
          << "progress line " << i << "\n"
          << r.err;
    EXPECT_EQ(count_of(r.out, "quickstart: " + std::to_string(kPoints) + " points\n"), 1u) << r.out;
    EXPECT_EQ(count_of(r.out, "results: "), 1u) << r.out;
    EXPECT_EQ(point_lines(r.err), alone_progress_);
  }
  const Result again = run(3, dir_ / "np3", {"--jobs", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(count_of(again.err, "already done, skipped"), static_cast<size_t>(kPoints)) << again.err;
  EXPECT_EQ(first_difference(want, results_of(dir_ / "np3")), "");
}

// The processes of `mpirun` (pid): its children, with their world rank from Open MPI's environment.
std::map<int, pid_t> ranks_of(pid_t mpirun) {
  std::map<int, pid_t> ranks;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after the last ')'.
    const std::string stat = read_file(e.path() / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != mpirun) continue;
    const std::string environ = read_file(e.path() / "environ");
    const std::string key = std::string("OMPI_COMM_WORLD_RANK=");
    for (size_t at = 0; at < environ.size(); at = environ.find('\0', at) + 1) {
      if (environ.compare(at, key.size(), key) == 0) {
        ranks[std::stoi(environ.substr(at + key.size()))] = static_cast<pid_t>(std::stoi(name));
        break;
      }
      if (environ.find('\0', at) == std::string::npos) break;
    }
  }
  return ranks;
}

size_t folders_in(const fs::path& points) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(points, ec); !ec && it != fs::directory_iterator(); ++it)
    if (it->path().filename().string().front() != '.') ++n;  // not a .partial folder
  return n;
}

// 3 processes, one point at a time each; once rank 0 has written 3 points, rank 2 is killed (SIGKILL).
// mpirun ends the job (Open MPI ends every process of a job when one dies). What was written is whole:
// every point folder is the one-process run's, the rows are its first rows; the rerun (under mpirun
// again) runs exactly the points that have no folder and ends with the one-process run's files.
TEST_F(Distribute, AKilledWorkerLosesOnlyThePointsInFlightAndTheRerunCompletes) {
  // 400 iterations a point (4 times the quickstart's): long enough that the kill comes mid-sweep.
  const std::string iterations = "schedule.iterations=400";
  const std::map<std::string, std::string> want = alone({"--set", iterations});
  const fs::path out = dir_ / "killed";
  std::string cmd = "cd " + shell_quote(BAGUA_SOURCE_DIR) + " && exec " + launcher(3);
  for (const std::string& w :
       {std::string(BAGUA_BINARY), std::string("run"), std::string(kConfig), std::string("--out"),
        out.string(), std::string("--set"), std::string(kSweep), std::string("--set"), iterations,
        std::string("--jobs"), std::string("1")})
    cmd += shell_quote(w) + " ";
  cmd += "</dev/null >" + shell_quote((dir_ / "killed.out").string()) + " 2>" +
         shell_quote((dir_ / "killed.err").string());
  const pid_t mpirun = fork();
  ASSERT_GE(mpirun, 0);
  if (mpirun == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  pid_t victim = 0;
  int status = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(mpirun, &status, WNOHANG) == mpirun) {
      exited = true;
      break;
    }
    if (folders_in(out / "points") >= 3) {
      const std::map<int, pid_t> ranks = ranks_of(mpirun);
      if (ranks.count(2)) {
        victim = ranks.at(2);
        kill(victim, SIGKILL);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!exited) {
    ASSERT_EQ(waitpid(mpirun, &status, 0), mpirun);
  }
  ASSERT_NE(victim, 0) << "the sweep ended before a worker could be killed:\n"
                       << read_file(dir_ / "killed.err");
  const size_t written = folders_in(out / "points");
  ASSERT_LT(written, static_cast<size_t>(kPoints)) << "every point was written before the kill";
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "mpirun reported success after losing a process";

  // Whole folders, each the one-process run's; rows: a prefix of its rows, whole lines.
  const std::map<std::string, std::string> got = results_of(out);
  size_t point_files = 0;
  for (const auto& [path, content] : got) {
    if (path == "results.csv") continue;
    ++point_files;
    ASSERT_TRUE(want.count(path)) << path;
    EXPECT_EQ(content, want.at(path)) << path;
  }
  EXPECT_EQ(point_files, 4 * written);
  const std::string rows = got.count("results.csv") ? got.at("results.csv") : "";
  EXPECT_EQ(want.at("results.csv").compare(0, rows.size(), rows), 0) << rows;
  EXPECT_TRUE(rows.empty() || rows.back() == '\n') << rows;

  const Result rerun = run(2, out, {"--set", iterations, "--jobs", "1"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(count_of(rerun.err, "already done, skipped"), written) << rerun.err;
  EXPECT_EQ(first_difference(want, results_of(out)), "");
}

// A config that the dry run refuses (rank 0's check, before any point runs: shift_one cannot pair 3
// ranks) ends every process of the job as it ends a run alone: exit status 2, one line, nothing
// written.
TEST_F(Distribute, AConfigErrorOfTheDryRunEndsEveryProcess) {
  const std::vector<std::string> refused = {
      "--set",
      "cluster.hosts=3",
      "--set",
      "cluster.devices_per_host=1",
      "--set",
      R"(algorithm={"name": "decentralized", "peer_selection_mode": "shift_one", "hierarchical": false})",
      "--set",
      R"(sweep={"axes": {"seed": [1, 2, 3]}})"};
  const Result one = run(0, dir_ / "alone", refused);
  const Result job = run(3, dir_ / "job", refused);
  ASSERT_EQ(one.exit_code, 2) << one.err;
  EXPECT_EQ(job.exit_code, 2) << job.err;
  const std::vector<std::string> lines = lines_of(job.err);
  size_t ours = 0;
  for (const std::string& l : lines)
    if (l.rfind("config error:", 0) == 0 || l.rfind("error:", 0) == 0 || l.rfind("rank ", 0) == 0)
      ++ours;
  EXPECT_EQ(ours, 1u) << job.err;
  EXPECT_NE(job.err.find(one.err), std::string::npos) << job.err << "\nalone:\n" << one.err;
  EXPECT_FALSE(fs::exists(dir_ / "job"));
}

// "threads" points measure this machine in real time inside one process: under a job of 2 processes
// both would run the whole sweep into one folder at once. Refused before anything runs, one line.
TEST_F(Distribute, ThreadsPointsUnderAJobOfSeveralProcessesAreRefused) {
  // A sweep of seeds: a network axis on a real runtime may be refused on its own grounds.
  const Result job = run(2, dir_ / "job",
                         {"--set", "runtime=threads", "--set", R"(sweep={"axes": {"seed": [1, 2]}})"});
  EXPECT_EQ(job.exit_code, 2) << job.err;
  size_t ours = 0;
  for (const std::string& l : lines_of(job.err)) {
    if (l.rfind("config error:", 0) == 0 || l.rfind("error:", 0) == 0 || l.rfind("rank ", 0) == 0) {
      ++ours;
      EXPECT_EQ(l,
                "config error: runtime: \"threads\" runs every rank in one process, in real time: "
                "under mpirun each process would run the whole sweep; run bagua alone, or use "
                "\"mpi\"");
    }
  }
  EXPECT_EQ(ours, 1u) << job.err;
  EXPECT_FALSE(fs::exists(dir_ / "job"));
}

}  // namespace distribute_test
}  // namespace
