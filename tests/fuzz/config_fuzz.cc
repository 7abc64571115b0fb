// libFuzzer target: the config loader, as `bagua run` drives it. The input (tests/fuzz/fuzz_input.h)
// is a config document and --set overrides; loading parses the JSON, applies the overrides, expands the
// sweep and validates every point against the real components. The only outcome allowed besides a
// loaded experiment is a ConfigError of one line; anything else escaping (InternalError, a library
// exception, std::bad_alloc) aborts, as does every crash and every finding of AddressSanitizer and
// UndefinedBehaviorSanitizer.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "experiments/components.h"
#include "experiments/config.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bagua;
  using namespace bagua::experiments;
  static const std::unique_ptr<Components> components = [] {
    fuzz::enter_source_dir();
    return make_components();
  }();
  const fuzz::FuzzInput in = fuzz::split_input(data, size);
  LoadOptions options;
  options.sets = in.sets;
  options.memory_limit = fuzz::kFuzzMemoryLimit;
  try {
    Json config = parse_json(in.document, "fuzz.json");
    const Experiment e = load_experiment_json(std::move(config), "configs", options, *components);
    // What a run does next with every point: its id and resolved config as text.
    for (const PointConfig& p : e.points)
      BAGUA_CHECK(!p.id.empty() && !p.resolved.dump().empty(), "a point without id or config");
  } catch (const ConfigError& err) {
    const std::string m = err.what();
    if (m.empty() || m.find('\n') != std::string::npos || m.size() > kMaxMessageChars + 40) {
      std::fprintf(stderr, "config error not one line of readable length: %.300s\n", m.c_str());
      std::abort();
    }
  }
  return 0;
}
