// Invariant checks that are never compiled out, and the exception type for user-caused errors.
//
// BAGUA_CHECK(cond, msg)        an internal invariant; throws InternalError naming file:line.
// BAGUA_CHECK_EQ(a, b, what)    prints both operands.
// throw ConfigError(...)        something the user can cause (bad config, bad input); the message names
//                               the culprit (JSON path, rank, expected and actual value).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace bagua {

// A user-caused error: bad config, bad input, an unsupported combination. One line, names the culprit.
class ConfigError : public std::runtime_error {
 public:
  // The message is one line whatever it quotes: control characters (a line break in a JSON key, a NUL
  // in a --set value) are written as \xHH.
  explicit ConfigError(const std::string& what) : std::runtime_error(escape_control(what)) {}
  explicit ConfigError(const char* what) : ConfigError(std::string(what)) {}

  static std::string escape_control(const std::string& text);
};

// A broken invariant: a bug in this project.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);
template <class A, class B>
[[noreturn]] void check_eq_failed(const char* file, int line, const char* ea, const char* eb,
                                  const A& a, const B& b, const std::string& what) {
  std::ostringstream os;
  os << what << ": " << ea << " = " << a << ", " << eb << " = " << b;
  check_failed(file, line, "equality", os.str());
}
}  // namespace detail

}  // namespace bagua

#define BAGUA_CHECK(cond, msg)                                                    \
  do {                                                                            \
    if (!(cond)) ::bagua::detail::check_failed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

#define BAGUA_CHECK_EQ(a, b, what)                                                              \
  do {                                                                                          \
    const auto& bagua_a_ = (a);                                                                 \
    const auto& bagua_b_ = (b);                                                                 \
    if (!(bagua_a_ == bagua_b_))                                                                \
      ::bagua::detail::check_eq_failed(__FILE__, __LINE__, #a, #b, bagua_a_, bagua_b_, (what)); \
  } while (0)
