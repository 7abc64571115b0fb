#include "core/check.h"

#include <algorithm>

namespace bagua::detail {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed (" << cond << "): " << msg;
  throw InternalError(os.str());
}

}  // namespace bagua::detail

namespace bagua {

std::string ConfigError::escape_control(const std::string& text) {
  const auto control = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == 0x7F;
  };
  if (std::none_of(text.begin(), text.end(), control)) return text;
  static const char kHex[] = "0123456789abcdef";
  // Escaping lengthens the text up to fourfold: what it adds is cut at 600 bytes (the readable length
  // of experiments/json_util.h's messages), at a character boundary.
  constexpr size_t kMaxBytes = 600;
  std::string out;
  for (const char ch : text) {
    if (out.size() >= kMaxBytes) {
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
        out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0xC0) out.pop_back();
      return out + "...";
    }
    if (control(ch)) {
      const auto c = static_cast<unsigned char>(ch);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace bagua
