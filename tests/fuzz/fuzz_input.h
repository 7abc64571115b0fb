// What a fuzz input is, for the targets of this folder: text, split at the first line that reads
// exactly "#set"; before it, a JSON document; after it, one `--set dotted.path=value` override per
// line. A seed is a config file of configs/ with, perhaps, a few overrides after "#set".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace bagua::fuzz {

// The loader's memory limit (LoadOptions::memory_limit) while fuzzing: 16 MB, so that an input's sweep
// (at most about 1,000 points) and topology (about 32,000 ranks) take milliseconds, not the seconds and
// gigabytes the machine's own limit allows. Larger sizes take the same code paths, only longer.
inline constexpr double kFuzzMemoryLimit = 16e6;

struct FuzzInput {
  std::string document;
  std::vector<std::string> sets;
};

inline FuzzInput split_input(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzInput in;
  constexpr std::string_view kMarker = "\n#set\n";
  const size_t at = text.find(kMarker);
  in.document = std::string(text.substr(0, at));
  if (at == std::string_view::npos) return in;
  std::string_view rest = text.substr(at + kMarker.size());
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    in.sets.emplace_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return in;
}

// Files a config names ("extends", a profile's "file") are looked up from the current directory:
// the fuzz targets run in the source tree (BAGUA_SOURCE_DIR, set by the build), so that the seeds'
// files are found.
inline void enter_source_dir() {
  std::filesystem::current_path(BAGUA_SOURCE_DIR);
}

}  // namespace bagua::fuzz
