// mugraph's version: the project version and the git commit it was configured at ("0.5.0+g1a2b3c4",
// "-dirty" when the tree had uncommitted changes then). It keys the result cache
// (driver/result_cache.h): results of another build are never served.
#pragma once

namespace mugraph::driver {

const char* version();

}  // namespace mugraph::driver
