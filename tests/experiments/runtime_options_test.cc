// runtime_options in a config (experiments/config.h, RuntimeOptions): the watchdog's limit, Bagua's
// 300 s by default, validated, and never part of the resolved config or of a point's id.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "experiments/config.h"
#include "tests/experiments/fake_components.h"

namespace bagua::experiments {
namespace {

// Apart from the same-named helpers of test_experiments's other files: the sanitizer presets
// compile several files of a program as one (CMAKE_UNITY_BUILD, CMakePresets.json).
namespace runtime_options_test {

Experiment load(const std::vector<std::string>& sets = {}) {
  static const auto components = testing::fake_components();
  LoadOptions options;
  options.sets = sets;
  return load_experiment_json(parse_json(testing::fake_config_text(), "test.json"), ".", options,
                              *components);
}

std::string error_with(const std::vector<std::string>& sets) {
  try {
    load(sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(RuntimeOptions, TheWatchdogDefaultsToBaguasThreeHundredSeconds) {
  EXPECT_EQ(load().points.at(0).runtime_options.watchdog, Time::s(300));
}

TEST(RuntimeOptions, TheWatchdogIsATimeAboveZero) {
  EXPECT_EQ(load({R"(runtime_options.watchdog=1.5 s)"}).points.at(0).runtime_options.watchdog,
            Time::ms(1500));
  EXPECT_EQ(error_with({R"(runtime_options.watchdog=0 s)"}),
            R"(runtime_options.watchdog: must be > 0, got "0 s")");
  EXPECT_EQ(error_with({R"(runtime_options.watchdog=-1 s)"}).rfind("runtime_options.watchdog: ", 0),
            0u);
  EXPECT_EQ(error_with({"runtime_options.watchdog=5"}).rfind("runtime_options.watchdog: ", 0), 0u);
  EXPECT_EQ(
      error_with({"runtime_options.timeout=5 s"}).rfind("runtime_options.timeout: unknown key", 0), 0u)
      << error_with({"runtime_options.timeout=5 s"});
  EXPECT_EQ(error_with({"runtime_options=3"}).rfind("runtime_options: ", 0), 0u)
      << error_with({"runtime_options=3"});
}

// A limit of the run, not of the experiment: the resolved config and the point id stay the same, so
// that a rerun with another limit resumes the same points.
TEST(RuntimeOptions, TheWatchdogChangesNeitherTheResolvedConfigNorThePointId) {
  const PointConfig plain = load().points.at(0);
  const PointConfig watched = load({"runtime_options.watchdog=2 s"}).points.at(0);
  EXPECT_EQ(watched.resolved, plain.resolved);
  EXPECT_EQ(watched.id, plain.id);
  EXPECT_FALSE(plain.resolved.contains("runtime_options"));
}

}  // namespace runtime_options_test
}  // namespace
}  // namespace bagua::experiments
