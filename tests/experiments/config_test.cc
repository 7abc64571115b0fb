#include "experiments/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/transport.h"
#include "experiments/profile_file.h"
#include "netsim/topology.h"
#include "tests/experiments/fake_components.h"

namespace bagua::experiments {
namespace {

Experiment load(const std::vector<std::string>& sets = {},
                const char* text = testing::fake_config_text()) {
  static const auto components = testing::fake_components();
  LoadOptions options;
  options.sets = sets;
  return load_experiment_json(parse_json(text, "test.json"), ".", options, *components);
}

// The one-line message of the ConfigError that loading with `sets` throws ("" if none).
std::string error_with(const std::vector<std::string>& sets,
                       const char* text = testing::fake_config_text()) {
  try {
    load(sets, text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, ValidConfigResolvesToCanonicalForm) {
  const Experiment e = load();
  ASSERT_EQ(e.points.size(), 1u);
  const PointConfig& p = e.points[0];
  EXPECT_EQ(e.name, "unit");
  EXPECT_EQ(e.output_dir, "results/unit");  // default: results/<name>
  EXPECT_EQ(p.seed, 7u);
  EXPECT_EQ(p.runtime, "sim");
  EXPECT_EQ(p.world_size(), 8);
  EXPECT_EQ(p.cluster.nic.bandwidth.bytes_per_second(), 12.5e9);
  EXPECT_EQ(p.cluster.nic.latency, Time::us(5));
  EXPECT_EQ(p.cluster.intra_host.bandwidth.bytes_per_second(), 150e9);
  EXPECT_EQ(p.cluster.device.peak_flops, 15.7e12);  // the V100 default
  EXPECT_EQ(p.workload.batch_size, 16);
  EXPECT_EQ(p.workload.params.get_int("dim"), 4);
  EXPECT_EQ(p.workload.params.get_string("partition"), "iid");  // default filled in
  EXPECT_TRUE(p.algorithm.params.get_bool("hierarchical"));
  EXPECT_EQ(p.optimizer.params.get_double("lr"), 1.0);
  EXPECT_EQ(p.schedule.iterations, 10);
  EXPECT_EQ(p.schedule.bucket_size.count(), 10 << 20);  // Bagua's default bucket

  const Json& r = p.resolved;
  EXPECT_EQ(r["cluster"]["intra_host"]["bandwidth"], "150 GB/s");
  EXPECT_EQ(r["cluster"]["nic"]["latency"], "5 us");
  EXPECT_EQ(r["cluster"]["topology"], "star");
  EXPECT_EQ(r["cluster"]["device"]["memory_bandwidth"], "900 GB/s");
  EXPECT_EQ(r["cluster"]["factors"]["flow_window_cap"], "inf");
  EXPECT_EQ(r["workload"].dump(), R"({"name":"toy","batch_size":16,"dim":4,"partition":"iid"})");
  EXPECT_EQ(r["optimizer"].dump(), R"({"name":"sgd","lr":1.0})");  // an integer given for a number
  EXPECT_EQ(r["schedule"]["bucket_size"], "10 MiB");
  EXPECT_FALSE(r["output"].contains("dir"));  // where results go is not part of what they are
  EXPECT_EQ(p.id.size(), std::string("p000-").size() + 8);
  EXPECT_EQ(p.id.substr(0, 5), "p000-");
}

TEST(Config, PointIdIsAHashOfTheResolvedConfig) {
  const std::string a = load().points[0].id;
  EXPECT_EQ(load({"cluster.nic.bandwidth=12.5 GB/s"}).points[0].id, a);  // same value, other unit
  EXPECT_EQ(load({"optimizer.lr=1.0"}).points[0].id, a);
  EXPECT_EQ(load({"output.dir=elsewhere"}).points[0].id, a);
  EXPECT_NE(load({"cluster.nic.bandwidth=10 Gbps"}).points[0].id, a);
  EXPECT_NE(load({"seed=8"}).points[0].id, a);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a64(load().points[0].resolved.dump())));
  EXPECT_EQ(a, "p000-" + std::string(hex, 8));
  // FNV-1a 64 reference values (the empty string is the offset basis; "a" from the published test
  // vectors).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

TEST(Config, OverridesAreJsonOrStrings) {
  const Experiment e = load({"schedule.iterations=3", R"(algorithm={"name": "toy_decentralized"})",
                             "output.dir=out/x", "cluster.nic.bandwidth=\"1 Gbps\""});
  EXPECT_EQ(e.points[0].schedule.iterations, 3);
  EXPECT_EQ(e.points[0].algorithm.name, "toy_decentralized");
  EXPECT_EQ(e.output_dir, "out/x");
  EXPECT_EQ(e.points[0].cluster.nic.bandwidth.gbps(), 1.0);
}

TEST(Config, ErrorsAreOneLineNamingThePath) {
  struct Case {
    std::vector<std::string> sets;
    std::string message;
  };
  const Case cases[] = {
      {{"schedule.iterationz=5"},
       "schedule.iterationz: unknown key, did you mean \"iterations\"? (known: iterations, "
       "eval_interval, bucket_size, overlap, measured_from)"},
      {{"schedule.iterations=3", "schedule.measured_from=3"},
       "schedule.measured_from: must be below schedule.iterations (3), got 3"},
      {{"algorithm.hierarchical=3"}, "algorithm.hierarchical: expected bool, got 3"},
      {{"cluster.nic.bandwidth=0 Gbps"}, "cluster.nic.bandwidth: must be > 0, got \"0 Gbps\""},
      {{"cluster.nic.bandwidth=-5 Gbps"}, "cluster.nic.bandwidth: must be > 0, got \"-5 Gbps\""},
      {{"cluster.nic.bandwidth=100"},
       "cluster.nic.bandwidth: expected a bandwidth with a unit, e.g. \"100 Gbps\" or \"12.5 GB/s\", "
       "got 100"},
      {{"cluster.nic.latency=5 min"},
       "cluster.nic.latency: unknown time unit \"min\" in \"5 min\" (known: ns us \xC2\xB5s ms s)"},
      {{"cluster.nic.latency=true"},
       "cluster.nic.latency: expected a time string such as \"5 us\" or \"1.5 ms\", got true"},
      {{"schedule.bucket_size=10"},
       "schedule.bucket_size: expected a size with a unit, e.g. \"10 MiB\" or \"4096 B\", got 10"},
      {{"cluster.hosts=0"}, "cluster.hosts: must be >= 1, got 0"},
      {{"cluster.hosts=\"2\""}, "cluster.hosts: expected integer, got \"2\""},
      {{"optimizer.lr=0"}, "optimizer.lr: must be > 0, got 0"},
      {{"algorithm.peers=9"}, "algorithm.peers: must be <= 4, got 9"},
      {{"workload.partition=shuffled"},
       "workload.partition: must be one of iid|sorted, got \"shuffled\""},
      {{"workload.dims=3"},
       "workload.dims: unknown key, did you mean \"dim\"? (known: name, batch_size, dim, partition)"},
      {{R"(workload={"name": "profile"})"},
       "workload.file: missing (required for \"profile\"), e.g. \"configs/workloads/vgg16.json\""},
      {{R"(workload={"name": "profile", "file": "nowhere.json"})"},
       "workload.file: file \"nowhere.json\" not found (looked in the current directory and above the "
       "config)"},
      {{"algorithm.name=nope"},
       "algorithm.name: unknown algorithm \"nope\" (known: toy_allreduce, toy_decentralized)"},
      {{"runtime=tcp"}, "runtime: must be one of sim|threads|mpi|nccl, got \"tcp\""},
      {{"nmae=x"},
       "nmae: unknown key (known: name, description, seed, runtime, runtime_options, cluster, "
       "workload, algorithm, optimizer, schedule, output, sweep)"},
      {{"cluster.topology={\"name\": \"star\", \"hosts_per_leaf\": 2}"},
       "cluster.topology.hosts_per_leaf: unknown key (known: name)"},
      {{"cluster.topology=leaf_spine"}, "cluster.topology.hosts_per_leaf: missing (required)"},
      {{"cluster.topology={\"name\": \"leaf_spine\", \"hosts_per_leaf\": 3}"},
       "cluster.topology.hosts_per_leaf: must divide hosts (2), got 3"},
      {{"cluster.topology={\"name\": \"leaf_spine\", \"hosts_per_leaf\": 0}"},
       "cluster.topology.hosts_per_leaf: must be >= 1, got 0"},
      {{"cluster.topology={\"name\": \"leaf_spine\", \"hosts_per_leaf\": 1, \"spine_bandwidth\": 5}"},
       "cluster.topology.spine_bandwidth: expected a bandwidth with a unit, e.g. \"100 Gbps\" or "
       "\"12.5 GB/s\", got 5"},
      {{"cluster.topology={\"name\": \"fat_tree\", \"k\": 3}"},
       "cluster.topology.k: must be even, got 3"},
      {{"cluster.topology={\"name\": \"torus\", \"x\": 2, \"y\": 1, \"z\": 0}"},
       "cluster.topology.z: must be >= 1, got 0"},
      {{"cluster.topology={\"name\": \"torus\", \"x\": 1, \"y\": 1}"},
       "cluster.topology.x * y * z: must hold the 2 hosts, got 1"},
      {{"cluster.topology=ring"},
       "cluster.topology.name: unknown topology \"ring\" (known: fat_tree, leaf_spine, rail_optimized, "
       "star, torus)"},
      {{"cluster.factors.bandwidth_efficiency=1.5"},
       "cluster.factors.bandwidth_efficiency: must be <= 1, got 1.5"},
      {{"cluster.factors.latency_factor=0"}, "cluster.factors.latency_factor: must be > 0, got 0"},
      {{"cluster.factors.connections_per_peer=0"},
       "cluster.factors.connections_per_peer: must be >= 1, got 0"},
      {{"cluster.factors.tcp_window=64"},
       "cluster.factors.tcp_window: expected a size with a unit, e.g. \"10 MiB\" or \"4096 B\", got "
       "64"},
      {{"cluster.factors.tcpwindow=\"1 MiB\""},
       "cluster.factors.tcpwindow: unknown key, did you mean \"tcp_window\"? (known: "
       "bandwidth_efficiency, latency_factor, "
       "flow_window_cap, tcp_window, connections_per_peer, host_bandwidth_ceiling, message_overhead, "
       "message_gap, tcp_slow_start)"},
      {{"cluster.transport.model=tcp"},
       "cluster.transport.model: must be one of alpha_beta|mpi|nccl, got \"tcp\""},
      {{"cluster.transport.slots=4"}, "cluster.transport.slots: only for \"model\": \"nccl\""},
      {{"cluster.transport.model=nccl", "cluster.transport.eager_limit=\"1 KiB\""},
       "cluster.transport.eager_limit: only for \"model\": \"mpi\""},
      {{"cluster.transport.model=nccl", "cluster.transport.slots=0"},
       "cluster.transport.slots: must be >= 1, got 0"},
      {{"cluster.transport.model=nccl", "cluster.transport.slot_bytes=\"0 B\""},
       "cluster.transport.slot_bytes: must be >= 1 B, got 0 B"},
      {{"cluster.transport.ordered=1"}, "cluster.transport.ordered: expected bool, got 1"},
      {{"cluster.transport.order=true"},
       "cluster.transport.order: unknown key (known: model, eager_limit, eager_limit_intra_host, "
       "slots, slot_bytes, ordered)"},
      {{"cluster.nic=3"}, "cluster.nic: expected an object, got 3"},
      {{"name=a b"},
       "name: use at most 100 letters, digits, '_', '-' and '.' (it names the output folder), got \"a "
       "b\""},
      {{"output.trace=1"}, "output.trace: expected bool, got 1"},
      {{"output.trace_ranks=[1]"}, "output.trace_ranks: needs \"trace\": true"},
      {{"foo"}, "--set \"foo\": expected dotted.path=value, e.g. cluster.nic.bandwidth=\"10 Gbps\""},
      {{"name.x=1"}, "--set name.x: cannot set inside name, which is string \"unit\", not an object"},
  };
  for (const Case& c : cases) {
    const std::string message = error_with(c.sets);
    EXPECT_EQ(message, c.message) << c.sets.front();
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(Config, OrderedTransferIsOffUnlessSetAndResolvedOnlyWhenOn) {
  // Off by default: the resolved cluster has no transport entry (point ids as before the option).
  const Experiment off = load();
  EXPECT_FALSE(off.points[0].cluster.transport.ordered);
  EXPECT_FALSE(off.points[0].resolved["cluster"].contains("transport"));
  EXPECT_EQ(load({"cluster.transport.ordered=false"}).points[0].id, off.points[0].id);
  // On, with the default model or another one.
  const Experiment on = load({"cluster.transport.ordered=true"});
  EXPECT_TRUE(on.points[0].cluster.transport.ordered);
  EXPECT_EQ(on.points[0].resolved["cluster"]["transport"].dump(),
            R"({"model":"alpha_beta","ordered":true})");
  EXPECT_NE(on.points[0].id, off.points[0].id);
  const Experiment nccl = load({"cluster.transport.model=nccl", "cluster.transport.ordered=true"});
  EXPECT_TRUE(nccl.points[0].cluster.transport.ordered);
  EXPECT_EQ(nccl.points[0].cluster.transport.completion, netsim::SendCompletion::kCreditSlots);
  EXPECT_EQ(nccl.points[0].resolved["cluster"]["transport"]["ordered"], true);
}

TEST(Config, TcpSlowStartIsOffUnlessSetAndResolvedOnlyWhenOn) {
  // Off by default and with false: no entry in the resolved factors (point ids as before the factor).
  const Experiment off = load({"cluster.factors.tcp_window=\"4 MiB\""});
  EXPECT_FALSE(off.points[0].cluster.factors.tcp_slow_start);
  EXPECT_FALSE(off.points[0].resolved["cluster"]["factors"].contains("tcp_slow_start"));
  EXPECT_EQ(load({"cluster.factors.tcp_window=\"4 MiB\"", "cluster.factors.tcp_slow_start=false"})
                .points[0]
                .id,
            off.points[0].id);
  // true: Linux's figures, written out in full.
  const Experiment on =
      load({"cluster.factors.tcp_window=\"4 MiB\"", "cluster.factors.tcp_slow_start=true"});
  EXPECT_TRUE(on.points[0].cluster.factors.tcp_slow_start);
  EXPECT_EQ(on.points[0].resolved["cluster"]["factors"]["tcp_slow_start"].dump(),
            R"({"initial_window":"14480 B","restart_after_idle":true,"rto_min":"200 ms"})");
  EXPECT_NE(on.points[0].id, off.points[0].id);
  // An object overrides them one by one.
  const netsim::ModelFactors f =
      load({"cluster.factors.tcp_window=\"4 MiB\"",
            R"(cluster.factors.tcp_slow_start={"initial_window": "4 KiB", "restart_after_idle": false,
                "rto_min": "1 ms"})"})
          .points[0]
          .cluster.factors;
  EXPECT_TRUE(f.tcp_slow_start);
  EXPECT_EQ(f.tcp_initial_window, Bytes(4096));
  EXPECT_FALSE(f.tcp_restart_after_idle);
  EXPECT_EQ(f.tcp_rto_min, Time::ms(1));
  // Mistakes: one line naming the path.
  EXPECT_EQ(error_with({"cluster.factors.tcp_slow_start=true"}),
            "cluster.factors.tcp_window must be > 0 with factors.tcp_slow_start (the window it grows "
            "to), got 0");
  EXPECT_EQ(error_with({"cluster.factors.tcp_slow_start=1"}),
            "cluster.factors.tcp_slow_start: expected true, false or an object, got 1");
  EXPECT_EQ(error_with({R"(cluster.factors.tcp_slow_start={"iw": "1 KiB"})"}),
            "cluster.factors.tcp_slow_start.iw: unknown key (known: initial_window, "
            "restart_after_idle, rto_min)");
  EXPECT_EQ(error_with({"cluster.factors.tcp_window=\"4 MiB\"",
                        R"(cluster.factors.tcp_slow_start={"initial_window": "0 B"})"}),
            "cluster.factors.tcp_slow_start.initial_window must be >= 1, got 0");
}

TEST(Config, MissingAndMalformedParts) {
  EXPECT_EQ(error_with({}, R"({"name": "x"})"), "cluster: missing (required)");
  EXPECT_EQ(error_with({}, "[1, 2]"), "config: expected an object, got [1,2]");
  try {
    parse_json("{\"name\": }", "broken.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    // The path of the value that does not parse, then the library's position.
    EXPECT_EQ(m.rfind("broken.json: name: invalid JSON: parse error at line 1, column 10", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
}

TEST(Config, ThreadsRuntimeKeepsOnlyTheHostLayout) {
  const Experiment e = load({"runtime=threads"});
  const Json& cluster = e.points[0].resolved["cluster"];
  EXPECT_EQ(cluster.dump(), R"({"hosts":2,"devices_per_host":4})");
  // The links are still checked.
  EXPECT_EQ(error_with({"runtime=threads", "cluster.nic.bandwidth=0 Gbps"}),
            "cluster.nic.bandwidth: must be > 0, got \"0 Gbps\"");
}

TEST(Config, LeafSpineDefaultsItsSpineFromTheNics) {
  const Experiment e =
      load({R"(cluster.topology={"name": "leaf_spine", "hosts_per_leaf": 2, "oversubscription": 4})"});
  const netsim::ClusterSpec& s = e.points[0].cluster;
  EXPECT_EQ(s.topology.name, "leaf_spine");
  // 2 hosts x 100 Gbps / 4 = 50 Gbps, with the NIC's latency (5 us).
  const auto topology = netsim::make_topology(s);
  const netsim::Link& up = topology->links()[static_cast<size_t>(2 * 8 + 2 * 2)];  // after dev, nic
  EXPECT_EQ(up.name, "leaf0.up");
  EXPECT_DOUBLE_EQ(up.bandwidth.gbps(), 50.0);
  EXPECT_EQ(up.latency, Time::us(5));
  // The resolved form: the parameters in the schema's order, the optional spine ones left out.
  EXPECT_EQ(e.points[0].resolved["cluster"]["topology"].dump(),
            R"({"name":"leaf_spine","hosts_per_leaf":2,"oversubscription":4.0})");
}

TEST(Config, ATopologyWithoutParametersResolvesToItsBareName) {
  // Both spellings of a star resolve alike, to the bare name (so star configs keep their point ids).
  const Experiment bare = load({"cluster.topology=star"});
  const Experiment object = load({R"(cluster.topology={"name": "star"})"});
  EXPECT_EQ(bare.points[0].resolved["cluster"]["topology"], "star");
  EXPECT_EQ(object.points[0].resolved["cluster"]["topology"], "star");
  EXPECT_EQ(bare.points[0].id, object.points[0].id);
  // Quantities of a topology resolve to their canonical text.
  const Experiment spine = load({R"(cluster.topology={"name": "leaf_spine", "hosts_per_leaf": 1,
                                    "spine_bandwidth": "0.4 Tbps", "spine_latency": "2000 ns"})"});
  const Json& t = spine.points[0].resolved["cluster"]["topology"];
  EXPECT_EQ(t["spine_bandwidth"], "400 Gbps");
  EXPECT_EQ(t["spine_latency"], "2 us");
  EXPECT_EQ(spine.points[0].cluster.topology.params.at("spine_latency"), ParamValue(int64_t{2000}));
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("bagua_config_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Config, ClusterExtendsAFileAndOverridesItsKeys) {
  TempDir dir;
  write(dir.path() / "clusters" / "base.json", R"({
    "hosts": 16, "devices_per_host": 8,
    "intra_host": {"bandwidth": "150 GB/s", "latency": "1 us"},
    "nic": {"bandwidth": "100 Gbps", "latency": "5 us"}
  })");
  write(dir.path() / "clusters" / "slow.json",
        R"({"extends": "clusters/base.json", "nic": {"bandwidth": "10 Gbps"}})");
  write(dir.path() / "exp" / "e.json", R"({
    "name": "e", "cluster": {"extends": "clusters/slow.json", "hosts": 2},
    "workload": {"name": "toy"}, "algorithm": {"name": "toy_allreduce"}, "optimizer": {"name": "sgd"}
  })");
  const auto components = testing::fake_components();
  // Found by walking up from the config's directory.
  const Experiment e = load_experiment(dir.path() / "exp" / "e.json", {}, *components);
  const netsim::ClusterSpec& s = e.points[0].cluster;
  EXPECT_EQ(s.hosts, 2);
  EXPECT_EQ(s.devices_per_host, 8);
  EXPECT_DOUBLE_EQ(s.nic.bandwidth.gbps(), 10.0);
  EXPECT_EQ(s.nic.latency, Time::us(5));  // kept from base.json: objects merge key by key
  EXPECT_FALSE(e.points[0].resolved["cluster"].contains("extends"));

  write(dir.path() / "exp" / "bad.json", R"({
    "name": "e", "cluster": {"extends": "clusters/slow.json", "nic": {"latency": "fast"}},
    "workload": {"name": "toy"}, "algorithm": {"name": "toy_allreduce"}, "optimizer": {"name": "sgd"}
  })");
  try {
    load_experiment(dir.path() / "exp" / "bad.json", {}, *components);
    FAIL() << "no error";
  } catch (const ConfigError& err) {
    EXPECT_EQ(std::string(err.what()),
              "cluster.nic.latency: expected a time such as \"5 us\" or \"1.5 ms\", got \"fast\" "
              "(cluster extends clusters/slow.json -> clusters/base.json)");
  }
  write(dir.path() / "exp" / "missing.json", R"({
    "name": "e", "cluster": {"extends": "clusters/nope.json"},
    "workload": {"name": "toy"}, "algorithm": {"name": "toy_allreduce"}, "optimizer": {"name": "sgd"}
  })");
  try {
    load_experiment(dir.path() / "exp" / "missing.json", {}, *components);
    FAIL() << "no error";
  } catch (const ConfigError& err) {
    EXPECT_EQ(
        std::string(err.what()).rfind("cluster.extends: file \"clusters/nope.json\" not found", 0), 0u);
  }
}

}  // namespace
}  // namespace bagua::experiments

namespace bagua::experiments {
namespace {

#ifdef BAGUA_SOURCE_DIR
// The paper's cluster files shipped in configs/clusters (paper*.json), loaded the way configs use them.
TEST(ShippedConfigs, ClusterFilesLoad) {
  const auto components = testing::fake_components();
  const std::filesystem::path source(BAGUA_SOURCE_DIR);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source / "configs" / "clusters")) {
    if (entry.path().extension() != ".json" || entry.path().filename().string().rfind("paper", 0) != 0)
      continue;
    ++files;
    Json config = parse_json(testing::fake_config_text(), "t");
    config["cluster"] = Json{{"extends", "configs/clusters/" + entry.path().filename().string()}};
    const Experiment e = load_experiment_json(config, source / "configs", {}, *components);
    const netsim::ClusterSpec& s = e.points[0].cluster;
    SCOPED_TRACE(entry.path().filename().string());
    // Every variant keeps the paper's 16 servers x 8 V100 with NVLink.
    EXPECT_EQ(s.world_size(), 128);
    EXPECT_EQ(s.intra_host.bandwidth.bytes_per_second(), 150e9);
    EXPECT_EQ(s.device.peak_flops, 15.7e12);
    EXPECT_EQ(s.device.memory_bandwidth.bytes_per_second(), 900e9);
  }
  EXPECT_GE(files, 3);
  Json config = parse_json(testing::fake_config_text(), "t");
  config["cluster"] = Json{{"extends", "configs/clusters/paper.json"}};
  const Experiment e = load_experiment_json(config, source / "configs", {}, *components);
  EXPECT_DOUBLE_EQ(e.points[0].cluster.nic.bandwidth.gbps(), 100.0);  // the paper's 100 Gbps TCP/IP
  // The TCP and RDMA presets carry each peer pair's messages as one ordered stream.
  for (const char* file : {"configs/clusters/paper_tcp.json", "configs/clusters/paper_rdma.json"}) {
    config["cluster"] = Json{{"extends", file}};
    EXPECT_TRUE(load_experiment_json(config, source / "configs", {}, *components)
                    .points[0]
                    .cluster.transport.ordered)
        << file;
  }
  // paper_tcp_slow_start is paper_tcp with Linux's slow start on.
  config["cluster"] = Json{{"extends", "configs/clusters/paper_tcp_slow_start.json"}};
  const netsim::ModelFactors slow =
      load_experiment_json(config, source / "configs", {}, *components).points[0].cluster.factors;
  config["cluster"] = Json{{"extends", "configs/clusters/paper_tcp.json"}};
  const netsim::ModelFactors tcp =
      load_experiment_json(config, source / "configs", {}, *components).points[0].cluster.factors;
  EXPECT_TRUE(slow.tcp_slow_start);
  EXPECT_FALSE(tcp.tcp_slow_start);
  EXPECT_EQ(slow.tcp_initial_window, Bytes(14'480));
  EXPECT_TRUE(slow.tcp_restart_after_idle);
  EXPECT_EQ(slow.tcp_rto_min, Time::ms(200));
  EXPECT_EQ(slow.tcp_window, tcp.tcp_window);
  EXPECT_EQ(slow.host_bandwidth_ceiling, tcp.host_bandwidth_ceiling);
}

// Today's presets: 8 DGX systems of 8 GPUs, one NIC per GPU on a rail-optimized fabric. Each loads and
// runs a tiny exchange with a closed-form time: rank 0 (host 0, GPU 0) sends 1 MB to rank 8 (host 1,
// GPU 0, the same rail): device link up 1 us + NIC up 5 us + NIC down 5 us + device link down 1 us =
// 12 us of latency, plus 1e6 B over the NIC: 400 Gbps = 50e9 B/s: 20 us; 200 Gbps = 25e9 B/s: 40 us;
// plus NCCL's per-step network overhead (factors.message_overhead: 1 us on the H100 systems' Intel CPUs,
// 2 us on the A100 systems' AMD ones) at the sender and again at the receiver: H100 32 + 2 = 34 us in
// all, A100 52 + 4 = 56 us. Rank 1 sends 1 MB to rank 9 at the same time over its own rail: no
// sharing, the same time. Both run NCCL's IB transport (credit slots, ordered connections).
TEST(ShippedConfigs, TodaysClusterPresetsLoadAndRun) {
  const auto components = testing::fake_components();
  const std::filesystem::path source(BAGUA_SOURCE_DIR);
  struct Preset {
    const char* file;
    double nvlink_bytes_per_second, nic_gbps, peak_flops, memory_bytes_per_second;
    int compute_capability;
    Time exchange;
  };
  for (const Preset& p : {Preset{"dgx_h100.json", 450e9, 400, 67e12, 3.35e12, 90, Time::us(34)},
                          Preset{"dgx_a100.json", 300e9, 200, 19.5e12, 2039e9, 80, Time::us(56)}}) {
    SCOPED_TRACE(p.file);
    Json config = parse_json(testing::fake_config_text(), "t");
    config["cluster"] = Json{{"extends", std::string("configs/clusters/") + p.file}};
    const Experiment e = load_experiment_json(config, source / "configs", {}, *components);
    const netsim::ClusterSpec& s = e.points[0].cluster;
    EXPECT_EQ(s.hosts, 8);
    EXPECT_EQ(s.devices_per_host, 8);
    EXPECT_EQ(s.topology.name, "rail_optimized");
    EXPECT_EQ(s.intra_host.bandwidth.bytes_per_second(), p.nvlink_bytes_per_second);
    EXPECT_DOUBLE_EQ(s.nic.bandwidth.gbps(), p.nic_gbps);
    EXPECT_EQ(s.device.peak_flops, p.peak_flops);
    EXPECT_EQ(s.device.memory_bandwidth.bytes_per_second(), p.memory_bytes_per_second);
    EXPECT_EQ(s.device.compute_capability, p.compute_capability);
    EXPECT_EQ(s.device.nic_path, netsim::NicPath::kPxb);
    EXPECT_EQ(s.transport.completion, netsim::SendCompletion::kCreditSlots);
    EXPECT_TRUE(s.transport.ordered);
    // The resolved config writes the compute capability (not the V100's default) and leaves out the
    // default NIC path.
    const Json& device = e.points[0].resolved["cluster"]["device"];
    EXPECT_EQ(device["compute_capability"], p.compute_capability / 10.0) << device.dump();
    EXPECT_FALSE(device.contains("nic_path")) << device.dump();
    std::vector<Time> done(64);
    netsim::Simulation(s).run([&](RankContext& ctx) {
      Transport& t = ctx.transport();
      const BufferView mb(nullptr, 1'000'000, DType::kU8, &meta_space());
      if (t.rank() < 2) t.send(mb, t.rank() + 8, 0);
      if (t.rank() == 8 || t.rank() == 9) t.recv(mb, t.rank() - 8, 0);
      done[static_cast<size_t>(t.rank())] = ctx.clock().now();
    });
    EXPECT_EQ(done[8], p.exchange);
    EXPECT_EQ(done[9], p.exchange);
  }
}

TEST(ShippedConfigs, ProfileWorkloadsLoad) {
  const auto components = testing::fake_components();
  const std::filesystem::path source(BAGUA_SOURCE_DIR);
  for (const char* file : {"vgg16.json", "resnet50.json", "bert_large_squad.json"}) {
    Json config = parse_json(testing::fake_config_text(), "t");
    config["workload"] = Json{{"name", "profile"}, {"file", std::string("configs/workloads/") + file}};
    const Experiment e = load_experiment_json(config, source / "configs", {}, *components);
    EXPECT_EQ(e.points[0].workload.file, std::string("configs/workloads/") + file);
    EXPECT_TRUE(std::filesystem::exists(e.points[0].workload.file_found));
  }
}
#endif

TEST(Profiles, ErrorsNameTheFileAndThePathInIt) {
  auto error_of = [](const char* text) {
    try {
      parse_profile(parse_json(text, "p.json"), "p.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const char* layer = R"("name": "fc", "params": 10, "forward_us": 1.5, "backward_us": 3)";
  EXPECT_EQ(
      error_of((std::string(R"({"name": "n", "batch_size": 8, "layers": [{)") + layer + "}]}").c_str()),
      "");
  EXPECT_EQ(
      error_of(
          R"({"name": "n", "batch_size": 8, "layers": [{"name": "fc", "params": 0, "forward_us": 1, "backward_us": 1}]})"),
      "p.json: layers[0].params: must be >= 1, got 0");
  EXPECT_EQ(
      error_of(
          R"({"name": "n", "batch_size": 8, "layers": [{"name": "fc", "params": 1, "forward_us": 1}]})"),
      "p.json: layers[0].backward_us: missing (required)");
  EXPECT_EQ(
      error_of((std::string(R"({"name": "n", "batch_size": 8, "total_params": 11, "layers": [{)") +
                layer + "}]}")
                   .c_str()),
      "p.json: total_params: 11 differs from the sum of the layers' params, 10");
  EXPECT_EQ(
      error_of(R"({"name": "n", "batch": 8, "layers": []})").rfind("p.json: batch: unknown key", 0),
      0u);
  const ProfileSpec spec = parse_profile(
      parse_json((std::string(R"({"name": "n", "batch_size": 8, "layers": [{)") + layer + "}]}"), "p"),
      "p");
  ASSERT_EQ(spec.layers.size(), 1u);
  EXPECT_EQ(spec.layers[0].params, 10u);
  EXPECT_EQ(spec.layers[0].forward, Time::ns(1500));
  EXPECT_EQ(spec.layers[0].backward, Time::us(3));
  EXPECT_EQ(spec.batch_size, 8);
}

}  // namespace
}  // namespace bagua::experiments
