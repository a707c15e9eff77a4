// mugraph's version: the project version, the git commit it was built from and a hash of its
// sources ("0.5.0+g1a2b3c4d5e6f.src0123456789"; "0.5.0+src..." outside a git checkout),
// recomputed at every build. It keys the result cache (driver/result_cache.h): results of a
// build whose code differs are never served.
#pragma once

namespace mugraph::driver {

const char* version();

}  // namespace mugraph::driver
