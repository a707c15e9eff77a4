// Number formatting shared by the reports (verify's verdicts, the Lax and float checks, the
// verifier fuzzer).
#pragma once

#include <cstdio>
#include <string>

namespace mugraph {

// `x` with 3 significant digits (printf's %.3g): 2.91e-11, 0.000616, 15.8.
inline std::string fmt_g3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace mugraph
