// Every mistake answered in one line: a table of config mistakes, each loaded through the real
// components (make_components) as `bagua run` loads it, each expected to give one ConfigError that
// names the JSON path of the mistake on a single line of readable length. A few rows run through the
// `bagua` binary too, to check the exit status (2) and that stderr holds that one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/check.h"
#include "experiments/config.h"
#include "tests/experiments/scratch.h"

#ifndef BAGUA_BINARY
#error "BAGUA_BINARY (the path of the bagua executable) must be defined by the build"
#endif
#ifndef BAGUA_SOURCE_DIR
#error "BAGUA_SOURCE_DIR must be defined by the build"
#endif

namespace bagua::experiments {
namespace {

// configs/quickstart.json without its comments: a valid config for the real components.
const std::string kBase = R"({
  "name": "quickstart",
  "seed": 1,
  "runtime": "sim",
  "cluster": {
    "hosts": 2,
    "devices_per_host": 4,
    "intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},
    "nic": {"bandwidth": "100 Gbps", "latency": "5 us"}
  },
  "workload": {"name": "logistic_regression", "batch_size": 32, "features": 32, "samples": 8192},
  "algorithm": {"name": "gradient_allreduce"},
  "optimizer": {"name": "sgd", "lr": 0.5},
  "schedule": {"iterations": 100, "eval_interval": 10, "bucket_size": "0 B", "overlap": true}
})";

// kBase with the one occurrence of `from` replaced by `to`.
std::string edit(const std::string& from, const std::string& to) {
  const size_t at = kBase.find(from);
  if (at == std::string::npos || kBase.find(from, at + 1) != std::string::npos)
    throw InternalError("edit: \"" + from + "\" is not in the base config exactly once");
  return kBase.substr(0, at) + to + kBase.substr(at + from.size());
}

std::string nested_arrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
}

struct Mistake {
  std::string config;             // the config text
  std::vector<std::string> sets;  // --set overrides
  std::string path;               // the JSON path the message must name (at its start, after any
                                  // "FILE: " or "--set ")
  std::string also;               // another part of the message ("" for none)
};

// The ConfigError's message ("" when loading succeeds). Anything else thrown fails the test.
std::string error_of(const Mistake& m) {
  static const auto components = make_components();
  LoadOptions options;
  options.sets = m.sets;
  try {
    load_experiment_json(parse_json(m.config, "test.json"), ".", options, *components);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string kTenMegabytes(10 << 20, 'x');

std::vector<Mistake> mistakes() {
  const std::string deep = nested_arrays(50'000);
  std::string long_path = "a";
  for (int i = 0; i < 100; ++i)
    long_path += ".a";
  return {
      // Duplicate keys: the library would keep the last silently.
      {edit(R"("seed": 1,)", R"("seed": 1, "seed": 2,)"), {}, "seed", "given twice"},
      // A key with a line break in it (found by fuzz_topology): the path shown escaped, one line.
      {edit(R"("seed": 1,)", R"("a\nb": 1, "a\nb": 2, "seed": 1,)"), {}, "a\\x0ab", "given twice"},
      {edit(R"("latency": "5 us")", R"("latency": "5 us", "latency": "6 us")"),
       {},
       "cluster.nic.latency",
       "given twice"},
      {kBase,
       {R"(cluster.nic={"bandwidth": "1 Gbps", "bandwidth": "2 Gbps", "latency": "1 us"})"},
       "cluster.nic.bandwidth",
       "given twice"},
      {edit(R"("optimizer": {"name": "sgd", "lr": 0.5},)",
            R"("optimizer": {"name": "sgd", "lr": 0.5},
               "sweep": {"axes": {"algorithm": [{"name": "bytegrad", "name": "qadam"}]}},)"),
       {},
       "sweep.axes.algorithm[0].name",
       "given twice"},
      // Numbers beyond a double's or an integer's range.
      {edit(R"("iterations": 100)", R"("iterations": 1e400)"),
       {},
       "schedule.iterations",
       "out of range"},
      {edit(R"("lr": 0.5)", R"("lr": -1e400)"), {}, "optimizer.lr", "out of range"},
      {kBase, {"schedule.iterations=1e400"}, "schedule.iterations", "out of range"},
      {edit(R"("seed": 1)", R"("seed": 18446744073709551615)"), {}, "seed", "integer out of range"},
      {edit(R"("iterations": 100)", R"("iterations": 1e16)"),
       {},
       "schedule.iterations",
       "integer out of range"},
      {edit(R"("hosts": 2)", R"("hosts": 4294967297)"), {}, "cluster.hosts", "<= 16777216"},
      {kBase,
       {R"(cluster.factors={"connections_per_peer": 1e10})"},
       "cluster.factors.connections_per_peer",
       "<="},
      // Nesting beyond kMaxJsonDepth, in a file, in --set, and as a dotted path.
      {edit(R"("seed": 1,)", R"("seed": 1, "description": )" + deep + ","),
       {},
       "description[0][0]",
       "nested deeper than 64"},
      {kBase, {"description=" + deep}, "description[0]", "nested deeper than 64"},
      {kBase, {long_path + "=1"}, "\"a.a.a", "more than 64 segments"},
      // Times the integer-nanosecond clock cannot add up, in the config and in --set.
      {edit(R"("latency": "5 us")", R"("latency": "1e18 ns")"),
       {},
       "cluster.nic.latency",
       "at most 86400 s"},
      {kBase, {"cluster.nic.latency=1e18 ns"}, "cluster.nic.latency", "at most 86400 s"},
      {kBase, {"cluster.intra_host.latency=2 days"}, "cluster.intra_host.latency", "unknown time unit"},
      {kBase, {"cluster.intra_host.latency=172800 s"}, "cluster.intra_host.latency", "at most"},
      {kBase,
       {R"(cluster.factors={"message_overhead": "1e18 ns"})"},
       "cluster.factors.message_overhead",
       "at most"},
      {kBase,
       {R"(cluster.factors={"message_gap": "1e400 s"})"},
       "cluster.factors.message_gap",
       "out of a double's range"},
      {kBase, {"cluster.nic.latency=-5 us"}, "cluster.nic.latency", ">= 0"},
      {kBase,
       {R"(cluster.factors={"latency_factor": 1e300})"},
       "cluster.factors.latency_factor",
       "<= 1000"},
      // Rates whose byte time leaves the clock's range (or that are no rate at all).
      {edit(R"("bandwidth": "100 Gbps")", R"("bandwidth": "1e-300 bps")"),
       {},
       "cluster.nic.bandwidth",
       "at least 1 Kbps"},
      {kBase, {"cluster.nic.bandwidth=1e-6 bps"}, "cluster.nic.bandwidth", "at least 1 Kbps"},
      {kBase, {"cluster.intra_host.bandwidth=1e30 Gbps"}, "cluster.intra_host.bandwidth", "at most"},
      {kBase, {"cluster.nic.bandwidth=1e400 Gbps"}, "cluster.nic.bandwidth", "out of a double's range"},
      {kBase,
       {R"(cluster.factors={"bandwidth_efficiency": 1e-12})"},
       "cluster.factors.bandwidth_efficiency",
       "below the least rate"},
      {kBase,
       {R"(cluster.device={"memory_bandwidth": "1e-6 bps"})"},
       "cluster.device.memory_bandwidth",
       "at least"},
      {kBase,
       {R"(cluster.device={"compute_capability": 8.05})"},
       "cluster.device.compute_capability",
       "one digit after the point"},
      {kBase,
       {R"(cluster.device={"compute_capability": 0.5})"},
       "cluster.device.compute_capability",
       ">= 1"},
      {kBase, {R"(cluster.device={"nic_path": "node"})"}, "cluster.device.nic_path", "pix"},
      {kBase,
       {R"(cluster.factors={"tcp_window": "1e30 B"})"},
       "cluster.factors.tcp_window",
       "out of range"},
      // Sizes whose memory would not fit, estimated before anything is allocated.
      {kBase, {"schedule.iterations=1e12"}, "schedule.iterations", "of memory"},
      {kBase, {"workload.samples=1e10", "workload.features=4096"}, "workload.samples", "of memory"},
      {edit(R"("optimizer": {"name": "sgd", "lr": 0.5},)",
            R"("optimizer": {"name": "sgd", "lr": 0.5},
               "sweep": {"axes": {"seed": [1,2,3,4,5,6,7,8,9,10], "schedule.eval_interval": [1,2,3,4,5,6,7,8,9,10],
                 "optimizer.lr": [1,2,3,4,5,6,7,8,9,10], "workload.batch_size": [1,2,3,4,5,6,7,8,9,10],
                 "workload.layers": [1,2,3,4,5,6,7,8,9,10], "workload.features": [1,2,3,4,5,6,7,8,9,10],
                 "workload.samples": [1,2,3,4,5,6,7,8,9,10]}},)"),
       {},
       "sweep.axes",
       "more than 1000000 points"},
      // Long values are echoed cut, and nothing breaks the line.
      {edit(R"("name": "quickstart")", R"("name": ")" + kTenMegabytes + R"(")"),
       {},
       "name",
       "(10485760 bytes)"},
      {kBase, {"cluster.nic.bandwidth=" + kTenMegabytes + " Gbps"}, "cluster.nic.bandwidth", "bytes)"},
      {edit(R"("seed": 1,)", R"("seed": 1, ")" + kTenMegabytes + R"(": 1,)"),
       {},
       "\"xxxx",
       "unknown key"},
      {kBase, {"name=two\nlines"}, "name", "\\n"},
      {kBase, {"description=\xff\xfe"}, "description", "not UTF-8"},
      // Near misses: "did you mean".
      {kBase, {"schedule.iterationz=5"}, "schedule.iterationz", R"(did you mean "iterations"?)"},
      {kBase,
       {R"(cluster.nic={"bandwith": "1 Gbps", "latency": "1 us"})"},
       "cluster.nic.bandwith",
       R"(did you mean "bandwidth"?)"},
      {edit(R"("workload":)", R"("workloads":)"), {}, "workloads", R"(did you mean "workload"?)"},
      {kBase,
       {"algorithm.name=gradient_allreduc"},
       "algorithm.name",
       R"(did you mean "gradient_allreduce"?)"},
      {kBase, {"cluster.nic.bandwidth=100 Gbpz"}, "cluster.nic.bandwidth", R"(did you mean "Gbps"?)"},
      {kBase, {"runtime=simm"}, "runtime", R"(did you mean "sim"?)"},
      // Bagua refuses QAdam without a warm-up (bagua/torch_api/algorithms/q_adam.py).
      {kBase, {R"(algorithm={"name": "qadam", "warmup_steps": 0})"}, "algorithm.warmup_steps", ">= 1"},
      // The collectives an algorithm runs: a choice outside the list is named with its path.
      {kBase,
       {R"(algorithm={"name": "bytegrad", "alltoall": "ring"})"},
       "algorithm.alltoall",
       R"(must be one of pairwise|nccl, got "ring")"},
      {kBase,
       {R"(algorithm={"name": "qadam", "allgather": "tree"})"},
       "algorithm.allgather",
       R"(must be one of ring|nccl, got "tree")"},
      {kBase,
       {R"(algorithm={"name": "decentralized", "intra_host": "tree"})"},
       "algorithm.intra_host",
       R"(must be one of auto|binomial|chain|nccl, got "tree")"},
      // Syntax errors name where they are.
      {edit(R"("latency": "5 us")", R"("latency": )"), {}, "cluster.nic.latency", "syntax error"},
      {kBase, {"oops"}, "--set \"oops\"", "expected dotted.path=value"},
      {kBase,
       {R"(sweep={"axes": {"cluster..nic": [1]}})"},
       "sweep.axes.cluster..nic",
       "not a dotted path"},
      {kBase, {"seed=-1"}, "seed", ">= 0"},
      {kBase, {"schedule.iterations=0"}, "schedule.iterations", ">= 1"},
      {kBase, {"schedule.eval_interval=1.5"}, "schedule.eval_interval", "expected integer"},
      {kBase, {R"(workload.batch_size="32")"}, "workload.batch_size", "expected integer"},
  };
}

// The message with any "test.json: " or "--set " in front removed: what names the path.
std::string after_origin(std::string m) {
  for (const char* prefix : {"test.json: ", "--set "})
    if (m.rfind(prefix, 0) == 0) return m.substr(std::string(prefix).size());
  return m;
}

TEST(Mistakes, EachIsOneLineNamingItsPath) {
  const std::vector<Mistake> table = mistakes();
  EXPECT_GE(table.size(), 40u);
  for (size_t i = 0; i < table.size(); ++i) {
    const Mistake& m = table[i];
    std::string what = m.sets.empty() ? "" : m.sets.front();
    if (what.size() > 60) what = what.substr(0, 60) + "...";
    SCOPED_TRACE("row " + std::to_string(i) + " " + what);
    const std::string message = error_of(m);
    ASSERT_FALSE(message.empty()) << "accepted";
    EXPECT_EQ(message.find('\n'), std::string::npos) << message.substr(0, 300);
    EXPECT_LE(message.size(), kMaxMessageChars + 20) << message.substr(0, 300);
    // The path starts the message, or (for a mistake inside a --set value) follows "--set ".
    const std::string named = m.path.rfind("--set", 0) == 0 ? message : after_origin(message);
    EXPECT_EQ(named.rfind(m.path, 0), 0u) << message;
    EXPECT_NE(message.find(m.also), std::string::npos) << message;
  }
}

TEST(Mistakes, DistinctRows) {
  const std::vector<Mistake> table = mistakes();
  for (size_t i = 0; i < table.size(); ++i)
    for (size_t j = i + 1; j < table.size(); ++j)
      EXPECT_FALSE(table[i].config == table[j].config && table[i].sets == table[j].sets)
          << i << " " << j;
}

TEST(Mistakes, EchoCutsAndEscapes) {
  EXPECT_EQ(echo("10 Gbpz"), "\"10 Gbpz\"");
  EXPECT_EQ(echo("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(echo(std::string(100, 'y')), "\"" + std::string(kMaxEchoChars, 'y') + "...\" (100 bytes)");
  // A cut never splits a UTF-8 sequence: 79 ASCII bytes and a 2-byte "µ" keep only the 79.
  EXPECT_EQ(echo(std::string(79, 'y') + "\xC2\xB5zz"),
            "\"" + std::string(79, 'y') + "...\" (83 bytes)");
  EXPECT_EQ(one_line("a\nb"), "a b");
  EXPECT_EQ(one_line(std::string(1000, 'm')).size(),
            kMaxMessageChars + std::string("... (message cut)").size());
}

TEST(Mistakes, DidYouMeanNeedsANearMiss) {
  const std::vector<std::string> keys = {"iterations", "eval_interval", "bucket_size", "overlap"};
  EXPECT_EQ(did_you_mean("iterationz", keys), "iterations");  // 1 substitution
  EXPECT_EQ(did_you_mean("itrations", keys), "iterations");   // 1 deletion
  EXPECT_EQ(did_you_mean("overlapp", keys), "overlap");       // 1 insertion
  EXPECT_EQ(did_you_mean("bucketsize", keys), "bucket_size");
  EXPECT_EQ(did_you_mean("speed", keys), std::nullopt);  // nothing near
  // Short words allow one edit only: "lr" for "lt", not for "xy".
  EXPECT_EQ(did_you_mean("lt", {"lr"}), "lr");
  EXPECT_EQ(did_you_mean("xy", {"lr"}), std::nullopt);
}

// A file with a key twice, a number out of range, nesting 50,000 deep; overrides of a latency of 1e18
// ns and of 1e12 iterations: `bagua validate` exits 2 with exactly one line on stderr naming the path.
TEST(Mistakes, BaguaExitsTwoWithOneLine) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("bagua_mistakes_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Case {
    std::string text;
    std::vector<std::string> sets;
    std::string starts;  // the start of stderr
  };
  const Case cases[] = {
      {edit(R"("seed": 1,)", R"("seed": 1, "seed": 2,)"), {}, "config error: "},
      {edit(R"("iterations": 100)", R"("iterations": 1e400)"), {}, "config error: "},
      {edit(R"("seed": 1,)", R"("seed": 1, "description": )" + nested_arrays(50'000) + ","),
       {},
       "config error: "},
      {kBase, {"cluster.nic.latency=1e18 ns"}, "config error: cluster.nic.latency: must be at most"},
      {kBase, {"schedule.iterations=1e12"}, "config error: schedule.iterations: "},
      {kBase, {"workload.samples=1e10", "workload.features=4096"}, "config error: workload.samples: "},
  };
  int n = 0;
  for (const Case& c : cases) {
    const fs::path config = dir / ("c" + std::to_string(n++) + ".json");
    bagua::testing::write_file(config, c.text);
    std::vector<std::string> args = {BAGUA_BINARY, "validate", config.string()};
    for (const std::string& s : c.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const bagua::testing::CommandResult r =
        bagua::testing::run_command(BAGUA_SOURCE_DIR, "", args, dir);
    EXPECT_EQ(r.exit_code, 2) << config << "\n" << r.err.substr(0, 300);
    EXPECT_EQ(r.err.rfind(c.starts, 0), 0u) << r.err.substr(0, 300);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 300);
    EXPECT_LE(r.err.size(), kMaxMessageChars + 40);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace bagua::experiments
