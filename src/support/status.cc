#include "support/status.h"

namespace mugraph {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::ostringstream os;
  os << "internal error at " << file << ":" << line << ": check failed: " << cond;
  if (!msg.empty()) os << " (" << msg << ")";
  throw InternalError(os.str());
}

}  // namespace mugraph
