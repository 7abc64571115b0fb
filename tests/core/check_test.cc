#include "core/check.h"

#include <gtest/gtest.h>

#include <string>

namespace bagua {
namespace {

// A ConfigError is one line whatever it quotes: control characters become \xHH, the rest is kept.
TEST(ConfigError, EscapesControlCharacters) {
  EXPECT_STREQ(ConfigError("cluster.nic.bandwidth: must be > 0").what(),
               "cluster.nic.bandwidth: must be > 0");
  EXPECT_STREQ(ConfigError(std::string("--set a\nb\0c: unknown key", 24)).what(),
               "--set a\\x0ab\\x00c: unknown key");
  EXPECT_STREQ(ConfigError("tab\there\x7f").what(), "tab\\x09here\\x7f");
  // Escaping lengthens a message fourfold at most; it stays of readable length.
  const std::string long_message = "x: " + std::string(1000, '\x7f');
  EXPECT_LE(std::string(ConfigError(long_message).what()).size(), 600u + 3 + 3);  // + an escape, "..."
}

}  // namespace
}  // namespace bagua
