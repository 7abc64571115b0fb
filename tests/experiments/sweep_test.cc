#include "experiments/sweep.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/check.h"
#include "experiments/config.h"
#include "tests/experiments/fake_components.h"

namespace bagua::experiments {
namespace {

Sweep sweep_of(const char* text) {
  const Json j = parse_json(text, "sweep");
  return parse_sweep(&j);
}

std::string error_of(const char* text) {
  try {
    sweep_of(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Sweep, NoAxesIsOnePoint) {
  const auto points = expand(parse_sweep(nullptr));
  ASSERT_EQ(points.size(), 1u);
  EXPECT_TRUE(points[0].empty());
}

TEST(Sweep, GridIsTheCartesianProductFirstAxisSlowest) {
  const auto points = expand(sweep_of(R"({"axes": {"b": [1, 2], "a": ["x", "y", "z"]}})"));
  ASSERT_EQ(points.size(), 6u);  // 2 x 3
  const char* expected[6][2] = {{"1", "\"x\""}, {"1", "\"y\""}, {"1", "\"z\""},
                                {"2", "\"x\""}, {"2", "\"y\""}, {"2", "\"z\""}};
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_EQ(points[i].size(), 2u);
    EXPECT_EQ(points[i][0].first, "b");  // axis order as written, not sorted
    EXPECT_EQ(points[i][1].first, "a");
    EXPECT_EQ(points[i][0].second.dump(), expected[i][0]) << i;
    EXPECT_EQ(points[i][1].second.dump(), expected[i][1]) << i;
  }
  EXPECT_EQ(expand(sweep_of(R"({"axes": {"a": [1, 2], "b": [1, 2, 3], "c": [1, 2, 3, 4]}})")).size(),
            24u);
}

TEST(Sweep, ZipGoesInLockstep) {
  const auto points =
      expand(sweep_of(R"({"mode": "zip", "axes": {"a": [1, 2, 3], "b": ["x", "y", "z"]}})"));
  ASSERT_EQ(points.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(points[i][0].second.get<int>(), static_cast<int>(i) + 1);
    EXPECT_EQ(points[i][1].second.get<std::string>(), std::string(1, static_cast<char>('x' + i)));
  }
}

TEST(Sweep, ErrorsNameThePath) {
  EXPECT_EQ(error_of(R"({"mode": "zip", "axes": {"a": [1, 2, 3], "b": [1, 2]}})"),
            "sweep.axes.b: zip needs axes of equal length, but a has 3 values and b has 2");
  EXPECT_EQ(error_of(R"({"mode": "random", "axes": {"a": [1]}})"),
            "sweep.mode: must be one of grid|zip, got \"random\"");
  EXPECT_EQ(error_of(R"({"axes": {"a": []}})"),
            "sweep.axes.a: expected a non-empty array of values, got []");
  EXPECT_EQ(error_of(R"({"axes": {"a": "1 Gbps"}})"),
            "sweep.axes.a: expected a non-empty array of values, got \"1 Gbps\"");
  EXPECT_EQ(error_of(R"({"axes": {}})"),
            "sweep.axes: no axes (give at least one \"dotted.path\": [values])");
  EXPECT_EQ(error_of(R"({"axes": [1]})"),
            "sweep.axes: expected an object of {\"dotted.path\": [values]}, got [1]");
  EXPECT_EQ(error_of(R"({"axes": {"output.dir": ["a", "b"]}})"),
            "sweep.axes.output.dir: \"output\" cannot be swept");
  EXPECT_EQ(error_of(R"({"axes": {"a..b": [1]}})"),
            "sweep.axes.a..b: \"a..b\": not a dotted path such as cluster.nic.bandwidth");
  EXPECT_EQ(error_of(R"({"axis": {"a": [1]}})"),
            "sweep.axis: unknown key, did you mean \"axes\"? (known: mode, axes)");
}

Experiment load_with_sweep(const std::string& sweep) {
  static const auto components = testing::fake_components();
  Json config = parse_json(testing::fake_config_text(), "test.json");
  config["sweep"] = parse_json(sweep, "sweep");
  return load_experiment_json(config, ".", {}, *components);
}

TEST(Sweep, PointsCarryTheirValuesAndDistinctIds) {
  // Whole objects can be swept too: here each algorithm with its own parameters.
  const Experiment e = load_with_sweep(R"({"axes": {"cluster.nic.bandwidth": ["1 Gbps", "10 Gbps"],
      "algorithm": [{"name": "toy_allreduce", "peers": 2}, {"name": "toy_decentralized"}]}})");
  ASSERT_EQ(e.points.size(), 4u);
  EXPECT_EQ(e.axes, (std::vector<std::string>{"cluster.nic.bandwidth", "algorithm"}));
  EXPECT_DOUBLE_EQ(e.points[0].cluster.nic.bandwidth.gbps(), 1);
  EXPECT_EQ(e.points[0].algorithm.name, "toy_allreduce");
  EXPECT_EQ(e.points[0].algorithm.params.get_int("peers"), 2);
  EXPECT_FALSE(e.points[0].algorithm.params.get_bool("hierarchical"));  // replaced, not merged
  EXPECT_EQ(e.points[1].algorithm.name, "toy_decentralized");
  EXPECT_DOUBLE_EQ(e.points[3].cluster.nic.bandwidth.gbps(), 10);
  EXPECT_EQ(e.points[3].algorithm.name, "toy_decentralized");
  EXPECT_EQ(e.points[2].swept[0].second, "10 Gbps");
  EXPECT_EQ(e.points[2].swept[1].second.dump(), R"({"name":"toy_allreduce","peers":2})");
  std::set<std::string> ids;
  for (size_t i = 0; i < e.points.size(); ++i) {
    EXPECT_EQ(e.points[i].index, static_cast<int>(i));
    EXPECT_EQ(e.points[i].id.substr(0, 5), "p00" + std::to_string(i) + "-");
    ids.insert(e.points[i].id);
  }
  EXPECT_EQ(ids.size(), 4u);
}

TEST(Sweep, APointsErrorNamesThePoint) {
  try {
    load_with_sweep(R"({"axes": {"cluster.nic.bandwidth": ["10 Gbps", "0 Gbps"]}})");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cluster.nic.bandwidth: must be > 0, got \"0 Gbps\" (sweep point 2/2: "
              "cluster.nic.bandwidth=\"0 Gbps\")");
  }
  // Sweeping only the name keeps the first algorithm's parameters, which the second does not know.
  try {
    load_with_sweep(R"({"axes": {"algorithm.name": ["toy_allreduce", "toy_decentralized"]}})");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "algorithm.hierarchical: unknown key (known: name) (sweep point 2/2: "
              "algorithm.name=\"toy_decentralized\")");
  }
  try {
    load_with_sweep(R"({"axes": {"name.x": [1, 2]}})");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "sweep.axes.name.x: cannot set inside name, which is string \"unit\", not an object");
  }
}

}  // namespace
}  // namespace bagua::experiments
