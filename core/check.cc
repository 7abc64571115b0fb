#include "core/check.h"

namespace bagua::detail {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::ostringstream os;
  os << file << ":" << line << ": check failed (" << cond << "): " << msg;
  throw InternalError(os.str());
}

}  // namespace bagua::detail
